use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestKind};

use crate::schema::decodable_versions;
use crate::{validate_request_body, ProtocolError, RequestHeader};

/// Validates `body` against Kafka's schema for the header's API and version, then
/// decodes it with `kafka-protocol`. Record sets stay zero-copy slices of `body`; they
/// are never run through `kafka-protocol`'s record decoder.
pub fn decode_request(header: &RequestHeader, body: Bytes) -> Result<RequestKind, ProtocolError> {
    let (api_key, api_version) = (header.api_key, header.api_version);
    let key = ApiKey::try_from(api_key).map_err(|()| ProtocolError::UnsupportedApi {
        api_key,
        api_version,
        correlation_id: header.correlation_id,
    })?;
    if !decodable_versions(api_key).is_some_and(|range| range.contains(api_version)) {
        return Err(ProtocolError::UnsupportedApi {
            api_key,
            api_version,
            correlation_id: header.correlation_id,
        });
    }
    validate_request_body(api_key, api_version, &body)?;
    let mut body = body;
    RequestKind::decode(key, &mut body, api_version)
        .map_err(|error| ProtocolError::Malformed(format!("{error:#}")))
}

/// The lowest request version of `api_key` that this crate can decode.
pub fn min_supported_request_version(api_key: i16) -> Option<i16> {
    decodable_versions(api_key).map(|range| range.0)
}

/// The highest request version of `api_key` that this crate can decode. Kafka's
/// unstable latest versions (OffsetCommit 10, OffsetFetch 10, InitProducerId 6 in
/// 4.1) are excluded: kafka-protocol's decoders refuse them.
pub fn max_supported_request_version(api_key: i16) -> Option<i16> {
    decodable_versions(api_key).map(|range| range.1)
}
