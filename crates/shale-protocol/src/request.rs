use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind};

use crate::response::write_len_prefix;
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

/// Encodes a complete request frame (length prefix, header, body) for Shale's own
/// outgoing requests, such as a follower's Fetch to its leader. The header version is
/// derived from the API key and version; `header.header_version` is not consulted.
pub fn encode_request(
    header: &RequestHeader,
    request: &RequestKind,
) -> Result<BytesMut, ProtocolError> {
    let key = ApiKey::try_from(header.api_key)
        .map_err(|()| ProtocolError::Encode(format!("unknown api key {}", header.api_key)))?;
    let header_version = key.request_header_version(header.api_version);
    let mut frame = BytesMut::with_capacity(64);
    frame.put_i32(0);
    frame.put_i16(header.api_key);
    frame.put_i16(header.api_version);
    frame.put_i32(header.correlation_id);
    if header_version >= 1 {
        match &header.client_id {
            None => frame.put_i16(-1),
            Some(client_id) => {
                let len = i16::try_from(client_id.len()).map_err(|_| {
                    ProtocolError::Encode(format!("client id of {} bytes", client_id.len()))
                })?;
                frame.put_i16(len);
                frame.put_slice(client_id.as_bytes());
            }
        }
    }
    if header_version >= 2 {
        frame.put_u8(0);
    }
    request
        .encode(&mut frame, header.api_version)
        .map_err(|error| ProtocolError::Encode(format!("{error:#}")))?;
    write_len_prefix(&mut frame)?;
    Ok(frame)
}
