/// Everything that can go wrong between the socket and a typed request or response.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ProtocolError {
    /// The length prefix announces more bytes than the broker accepts in one request.
    #[error("frame of {len_bytes} bytes exceeds the limit of {max_bytes} bytes")]
    FrameTooLarge { len_bytes: usize, max_bytes: usize },
    /// The length prefix is negative.
    #[error("negative frame length {len}")]
    NegativeFrameLength { len: i32 },
    /// The bytes do not form a valid request for the declared API and version.
    #[error("malformed request: {0}")]
    Malformed(String),
    /// The API key is unknown, or the version is outside what `kafka-protocol` can decode.
    /// The correlation id is known, so the broker can still answer (ApiVersions fallback).
    #[error("unsupported api key {api_key} version {api_version}")]
    UnsupportedApi {
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
    },
    /// A body was handed over for an API version the schema table does not describe.
    #[error("api key {api_key} has no version {api_version}")]
    UnsupportedVersion { api_key: i16, api_version: i16 },
    /// `kafka-protocol` refused to encode a response (for example a field that the
    /// requested version cannot carry), or the response does not fit a frame.
    #[error("cannot encode response: {0}")]
    Encode(String),
}
