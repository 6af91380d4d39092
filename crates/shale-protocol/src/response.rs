use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseKind};

use crate::header::skip_tagged_fields;
use crate::newer::{NewerResponse, Response};
use crate::reader::Reader;
use crate::routes::{response_route, Route};
use crate::{validate_response_body, ProtocolError, RequestHeader, FRAME_LEN_PREFIX_BYTES};

/// Kafka's UNSUPPORTED_VERSION error code.
pub const UNSUPPORTED_VERSION_ERROR_CODE: i16 = 35;

/// Encodes a complete response frame: length prefix, response header and body at the
/// request's API version. A version past kafka-protocol whose wire layout equals an older
/// one it encodes is encoded at that older version.
///
/// The ApiVersions response header is always v0, even for flexible versions: clients
/// parse it before they know which version the broker picked (KIP-511).
pub fn encode_response(
    header: &RequestHeader,
    response: &ResponseKind,
) -> Result<BytesMut, ProtocolError> {
    let response_key = crate::schema_generated::response_api_key(response);
    if response_key != Some(header.api_key) {
        return Err(ProtocolError::Encode(format!(
            "response for api key {response_key:?} answers a request with api key {}",
            header.api_key
        )));
    }
    let version = match response_route(header.api_key, header.api_version) {
        Some(Route::KafkaAt(version)) => version,
        // kafka-protocol's encoder refuses the version; it says why.
        _ => header.api_version,
    };
    encode_frame(header, |frame| {
        response
            .encode(frame, version)
            .map_err(|error| ProtocolError::Encode(format!("{error:#}")))
    })
}

/// Encodes a complete response frame for either kind of response.
pub fn encode_any_response(
    header: &RequestHeader,
    response: &Response,
) -> Result<BytesMut, ProtocolError> {
    match response {
        Response::Kafka(response) => encode_response(header, response),
        Response::Newer(response) => {
            if response.api_key() != header.api_key {
                return Err(ProtocolError::Encode(format!(
                    "response for api key {} answers a request with api key {}",
                    response.api_key(),
                    header.api_key
                )));
            }
            encode_frame(header, |frame| response.encode(frame, header.api_version))
        }
    }
}

fn encode_frame(
    header: &RequestHeader,
    body: impl FnOnce(&mut BytesMut) -> Result<(), ProtocolError>,
) -> Result<BytesMut, ProtocolError> {
    let key = ApiKey::try_from(header.api_key)
        .map_err(|()| ProtocolError::Encode(format!("unknown api key {}", header.api_key)))?;
    let header_version = if key == ApiKey::ApiVersions {
        0
    } else {
        key.response_header_version(header.api_version)
    };
    let mut frame = BytesMut::with_capacity(64);
    frame.put_i32(0);
    frame.put_i32(header.correlation_id);
    if header_version >= 1 {
        // The response header has no tagged fields of its own: an empty section.
        frame.put_u8(0);
    }
    body(&mut frame)?;
    write_len_prefix(&mut frame)?;
    Ok(frame)
}

/// Splits a response frame (after its length prefix) into its correlation id and the
/// decoded body, for responses to Shale's own outgoing requests. The body is validated
/// against Kafka's response schema first, so a hostile peer cannot make the decoder
/// reserve memory it did not send.
pub fn decode_response(
    api_key: i16,
    api_version: i16,
    frame: Bytes,
) -> Result<(i32, ResponseKind), ProtocolError> {
    match decode_any_response(api_key, api_version, frame)? {
        (correlation_id, Response::Kafka(response)) => Ok((correlation_id, response)),
        (_, Response::Newer(_)) => Err(ProtocolError::UnsupportedVersion {
            api_key,
            api_version,
        }),
    }
}

/// [`decode_response`] for either kind of response.
pub fn decode_any_response(
    api_key: i16,
    api_version: i16,
    frame: Bytes,
) -> Result<(i32, Response), ProtocolError> {
    let unsupported = ProtocolError::UnsupportedVersion {
        api_key,
        api_version,
    };
    let key = ApiKey::try_from(api_key).map_err(|()| unsupported.clone())?;
    let route = response_route(api_key, api_version).ok_or(unsupported.clone())?;
    let mut reader = Reader::new(&frame);
    let correlation_id = reader.i32("correlation id")?;
    if key != ApiKey::ApiVersions && key.response_header_version(api_version) >= 1 {
        skip_tagged_fields(&mut reader, "response header")?;
    }
    let mut body = frame.slice(reader.position()..);
    validate_response_body(api_key, api_version, &body)?;
    let response = match route {
        Route::KafkaAt(version) => Response::Kafka(
            ResponseKind::decode(key, &mut body, version)
                .map_err(|error| ProtocolError::Malformed(format!("{error:#}")))?,
        ),
        Route::Newer => Response::Newer(NewerResponse::decode(api_key, api_version, body)?),
        Route::Converted => return Err(unsupported),
    };
    Ok((correlation_id, response))
}

/// The KIP-511 answer to an ApiVersions request at a version the broker does not know:
/// an ApiVersions v0 body with UNSUPPORTED_VERSION (35) and the full API list, under a
/// v0 response header, so that the client can retry at a version both sides know.
pub fn encode_api_versions_fallback(correlation_id: i32, apis: &[(i16, i16, i16)]) -> BytesMut {
    const API_ENTRY_BYTES: usize = 6;
    let mut frame =
        BytesMut::with_capacity(FRAME_LEN_PREFIX_BYTES + 4 + 2 + 4 + apis.len() * API_ENTRY_BYTES);
    frame.put_i32(0);
    frame.put_i32(correlation_id);
    frame.put_i16(UNSUPPORTED_VERSION_ERROR_CODE);
    // The API table has at most a few hundred entries; it always fits an i32 count.
    frame.put_i32(i32::try_from(apis.len()).unwrap_or(i32::MAX));
    for &(api_key, min_version, max_version) in apis.iter().take(i32::MAX as usize) {
        frame.put_i16(api_key);
        frame.put_i16(min_version);
        frame.put_i16(max_version);
    }
    let body_len = (frame.len() - FRAME_LEN_PREFIX_BYTES) as i32;
    frame[..FRAME_LEN_PREFIX_BYTES].copy_from_slice(&body_len.to_be_bytes());
    frame
}

pub(crate) fn write_len_prefix(frame: &mut BytesMut) -> Result<(), ProtocolError> {
    let len = i32::try_from(frame.len() - FRAME_LEN_PREFIX_BYTES).map_err(|_| {
        ProtocolError::Encode(format!("response of {} bytes exceeds a frame", frame.len()))
    })?;
    frame[..FRAME_LEN_PREFIX_BYTES].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::{ApiVersionsResponse, MetadataResponse, ResponseKind};

    use super::*;

    fn header(api_key: i16, api_version: i16, correlation_id: i32) -> RequestHeader {
        RequestHeader {
            api_key,
            api_version,
            correlation_id,
            client_id: None,
            header_version: 2,
        }
    }

    #[test]
    fn fallback_is_an_api_versions_v0_body_under_a_v0_header() {
        let frame = encode_api_versions_fallback(77, &[(0, 0, 13), (18, 0, 4)]);
        let expected: Vec<u8> = [
            &[0, 0, 0, 22][..],   // length
            &[0, 0, 0, 77],       // correlation id
            &[0, 35],             // UNSUPPORTED_VERSION
            &[0, 0, 0, 2],        // two APIs
            &[0, 0, 0, 0, 0, 13], // Produce 0-13
            &[0, 18, 0, 0, 0, 4], // ApiVersions 0-4
        ]
        .concat();
        assert_eq!(&frame[..], &expected[..]);
        let mut body = frame.freeze().slice(8..);
        let decoded = ResponseKind::decode(ApiKey::ApiVersions, &mut body, 0).unwrap();
        let ResponseKind::ApiVersions(decoded) = decoded else {
            panic!("not api versions")
        };
        assert_eq!(decoded.error_code, 35);
        assert_eq!(decoded.api_keys.len(), 2);
    }

    #[test]
    fn api_versions_response_header_is_v0_even_when_flexible() {
        let response = ResponseKind::ApiVersions(ApiVersionsResponse::default().with_api_keys(
            vec![ApiVersion::default().with_api_key(18).with_min_version(0).with_max_version(4)],
        ));
        let frame = encode_response(&header(18, 3, 5), &response).unwrap();
        assert_eq!(&frame[4..8], &[0, 0, 0, 5]);
        let mut body = frame.freeze().slice(8..);
        let decoded = ResponseKind::decode(ApiKey::ApiVersions, &mut body, 3).unwrap();
        assert_eq!(decoded, response);
        assert!(body.is_empty());
    }

    #[test]
    fn flexible_responses_get_header_v1() {
        let response = ResponseKind::Metadata(MetadataResponse::default());
        let frame = encode_response(&header(3, 12, 9), &response).unwrap();
        let len = i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4);
        assert_eq!(&frame[4..8], &[0, 0, 0, 9]);
        assert_eq!(frame[8], 0, "empty header tagged fields");
        let mut body = frame.freeze().slice(9..);
        assert_eq!(
            ResponseKind::decode(ApiKey::Metadata, &mut body, 12).unwrap(),
            response
        );
        assert!(body.is_empty());

        let frame = encode_response(&header(3, 8, 9), &response).unwrap();
        let mut body = frame.freeze().slice(8..);
        assert_eq!(
            ResponseKind::decode(ApiKey::Metadata, &mut body, 8).unwrap(),
            response
        );
        assert!(body.is_empty());
    }

    #[test]
    fn mismatched_or_unencodable_responses_are_errors() {
        let response = ResponseKind::Metadata(MetadataResponse::default());
        assert!(matches!(
            encode_response(&header(0, 9, 1), &response),
            Err(ProtocolError::Encode(_))
        ));
        assert!(matches!(
            encode_response(&header(3, 99, 1), &response),
            Err(ProtocolError::Encode(_))
        ));
        assert!(matches!(
            encode_response(&header(-5, 0, 1), &response),
            Err(ProtocolError::Encode(_))
        ));
    }
}
