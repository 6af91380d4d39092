use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind};

use crate::codec::Decoder;
use crate::codec_generated::{offset_commit_request, offset_fetch_request};
use crate::newer::{NewerRequest, Request};
use crate::response::write_len_prefix;
use crate::routes::{request_route, request_versions, Route};
use crate::{validate_request_body, ProtocolError, RequestHeader};

/// Validates `body` against Kafka's schema for the header's API and version, then decodes
/// it into kafka-protocol's type. Record sets stay zero-copy slices of `body`; they are
/// never run through `kafka-protocol`'s record decoder.
///
/// Versions whose fields kafka-protocol's types lack, and every version of the APIs Shale's
/// codec owns (the share-group APIs whose Kafka 4.4 versions add fields), are refused here
/// as unsupported: [`decode_any_request`] decodes those too.
pub fn decode_request(header: &RequestHeader, body: Bytes) -> Result<RequestKind, ProtocolError> {
    match decode_any_request(header, body)? {
        Request::Kafka(request) => Ok(request),
        Request::Newer(_) => Err(unsupported(header)),
    }
}

/// Validates `body` against Kafka 4.4's schema for the header's API and version, then
/// decodes it: with kafka-protocol where its types hold every field of the version (at an
/// older version when the wire layout is the same), otherwise with Shale's codec.
pub fn decode_any_request(header: &RequestHeader, body: Bytes) -> Result<Request, ProtocolError> {
    let (api_key, api_version) = (header.api_key, header.api_version);
    let key = ApiKey::try_from(api_key).map_err(|()| unsupported(header))?;
    let route = request_route(api_key, api_version).ok_or_else(|| unsupported(header))?;
    validate_request_body(api_key, api_version, &body)?;
    match route {
        Route::KafkaAt(version) => {
            let mut body = body;
            RequestKind::decode(key, &mut body, version)
                .map(Request::Kafka)
                .map_err(|error| ProtocolError::Malformed(format!("{error:#}")))
        }
        Route::Converted => {
            let mut decoder = Decoder::new(body);
            let request = match key {
                ApiKey::OffsetCommit => RequestKind::OffsetCommit(
                    offset_commit_request::OffsetCommitRequest::decode(&mut decoder, api_version)?
                        .into(),
                ),
                ApiKey::OffsetFetch => RequestKind::OffsetFetch(
                    offset_fetch_request::OffsetFetchRequest::decode(&mut decoder, api_version)?
                        .into(),
                ),
                _ => return Err(unsupported(header)),
            };
            Ok(Request::Kafka(request))
        }
        Route::Newer => NewerRequest::decode(api_key, api_version, body).map(Request::Newer),
    }
}

fn unsupported(header: &RequestHeader) -> ProtocolError {
    ProtocolError::UnsupportedApi {
        api_key: header.api_key,
        api_version: header.api_version,
        correlation_id: header.correlation_id,
    }
}

/// The lowest request version of `api_key` that this crate can decode.
pub fn min_supported_request_version(api_key: i16) -> Option<i16> {
    request_versions(api_key).map(|range| range.0)
}

/// The highest request version of `api_key` that this crate can decode (Kafka 4.4's newest,
/// except its unstable versions and the versions neither kafka-protocol nor Shale's codec
/// carries).
pub fn max_supported_request_version(api_key: i16) -> Option<i16> {
    request_versions(api_key).map(|range| range.1)
}

/// Encodes a complete request frame (length prefix, header, body) for Shale's own
/// outgoing requests, such as a follower's Fetch to its leader. The header version is
/// derived from the API key and version; `header.header_version` is not consulted.
pub fn encode_request(
    header: &RequestHeader,
    request: &RequestKind,
) -> Result<BytesMut, ProtocolError> {
    let version = match request_route(header.api_key, header.api_version) {
        Some(Route::KafkaAt(version)) => version,
        // Converted and newer versions have no kafka-protocol encoder.
        _ => header.api_version,
    };
    encode_frame(header, |frame| {
        request
            .encode(frame, version)
            .map_err(|error| ProtocolError::Encode(format!("{error:#}")))
    })
}

/// Encodes a complete request frame for a request in Shale's own types.
pub fn encode_newer_request(
    header: &RequestHeader,
    request: &NewerRequest,
) -> Result<BytesMut, ProtocolError> {
    if request.api_key() != header.api_key {
        return Err(ProtocolError::Encode(format!(
            "request for api key {} under a header for api key {}",
            request.api_key(),
            header.api_key
        )));
    }
    encode_frame(header, |frame| request.encode(frame, header.api_version))
}

fn encode_frame(
    header: &RequestHeader,
    body: impl FnOnce(&mut BytesMut) -> Result<(), ProtocolError>,
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
    body(&mut frame)?;
    write_len_prefix(&mut frame)?;
    Ok(frame)
}
