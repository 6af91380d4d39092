//! The response half of the schema table against kafka-protocol, and whole frames
//! through encode/decode in both directions.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseKind};

use crate::routes::codec_owned;
use crate::schema::{decodable_response_versions, decodable_versions};
use crate::schema_testgen::{random_body, random_response_body, Rng};
use crate::{
    decode_request, decode_response, encode_request, encode_response, parse_request_header,
    validate_response_body, RequestHeader, FRAME_LEN_PREFIX_BYTES,
};

const SEEDS_PER_VERSION: u64 = 16;

fn header(key: ApiKey, api_version: i16, correlation_id: i32) -> RequestHeader {
    RequestHeader {
        api_key: key as i16,
        api_version,
        correlation_id,
        client_id: Some("shale-test".to_owned()),
        header_version: key.request_header_version(api_version),
    }
}

/// Random response bodies built from the table decode with kafka-protocol, are fully
/// consumed and re-encode byte for byte; as frames they survive encode_response and
/// decode_response.
#[test]
fn schema_generated_responses_round_trip() {
    let mut checked = 0;
    // The APIs Shale's codec owns decode into its types: share_codec_tests.rs.
    for key in ApiKey::iter().filter(|key| !codec_owned(*key as i16)) {
        let range = decodable_response_versions(key as i16).unwrap();
        for version in range.0..=range.1 {
            for seed in 0..SEEDS_PER_VERSION {
                let mut rng = Rng::new(seed);
                let body = random_response_body(key as i16, version, seed % 2 == 1, &mut rng);
                let context = format!("{key:?} v{version} seed {seed}: {body:02x?}");
                validate_response_body(key as i16, version, &body)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let mut bytes = Bytes::from(body.clone());
                let decoded = ResponseKind::decode(key, &mut bytes, version)
                    .unwrap_or_else(|e| panic!("{context}: {e:#}"));
                assert!(bytes.is_empty(), "{context}: {} bytes left", bytes.len());
                if seed % 2 == 0 {
                    let mut encoded = BytesMut::new();
                    decoded
                        .encode(&mut encoded, version)
                        .unwrap_or_else(|e| panic!("{context}: {e:#}"));
                    assert_eq!(&encoded[..], &body[..], "{context}");
                }
                let frame = encode_response(&header(key, version, seed as i32), &decoded)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let frame = frame.freeze().slice(FRAME_LEN_PREFIX_BYTES..);
                let (correlation_id, again) = decode_response(key as i16, version, frame)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                assert_eq!(correlation_id, seed as i32);
                assert_eq!(again, decoded, "{context}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 280 * SEEDS_PER_VERSION as usize, "{checked}");
}

/// Requests decoded from random bodies, re-encoded as frames by encode_request, come
/// back identical through parse_request_header and decode_request.
#[test]
fn request_frames_round_trip() {
    // The APIs Shale's codec owns decode into its types: share_codec_tests.rs.
    for key in ApiKey::iter().filter(|key| !codec_owned(*key as i16)) {
        let range = decodable_versions(key as i16).unwrap();
        for version in range.0..=range.1 {
            for seed in 0..4 {
                let mut rng = Rng::new(seed + 77);
                let body = Bytes::from(random_body(key as i16, version, true, &mut rng));
                let sent = header(key, version, 1234);
                let request = decode_request(&sent, body).unwrap();
                let frame = encode_request(&sent, &request).unwrap();
                let len = i32::from_be_bytes(frame[..4].try_into().unwrap());
                assert_eq!(len as usize, frame.len() - FRAME_LEN_PREFIX_BYTES);
                let frame = frame.freeze().slice(FRAME_LEN_PREFIX_BYTES..);
                let (received, body) = parse_request_header(&frame).unwrap();
                assert_eq!(received, sent, "{key:?} v{version}");
                assert_eq!(decode_request(&received, body).unwrap(), request);
            }
        }
    }
}

#[test]
fn hostile_response_bodies_are_refused() {
    // Metadata response v0: brokers array claiming i32::MAX entries.
    let frame = Bytes::from_static(&[0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff]);
    assert!(decode_response(3, 0, frame).is_err());
    // Fetch response v12 (header v1): a response tagged-field count that cannot fit.
    let frame = Bytes::from_static(&[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(decode_response(1, 12, frame).is_err());
    // Short frames.
    assert!(decode_response(3, 0, Bytes::from_static(&[0, 0])).is_err());
    assert!(decode_response(3, 99, Bytes::new()).is_err());
}
