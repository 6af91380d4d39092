//! Kafka 4.4's share-group APIs through the whole decode and encode path, at every version
//! of each request and response: bodies generated from the schema table decode (into
//! Shale's types for the APIs its codec owns, kafka-protocol's for the others), encode
//! back byte for byte, and survive whole frames in both directions.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;

use crate::fuzzing::SHARE_APIS;
use crate::routes::{codec_owned, request_versions, response_versions};
use crate::schema_testgen::{random_body, random_response_body, Rng};
use crate::{
    decode_any_request, decode_any_response, encode_any_response, encode_newer_request,
    encode_request, parse_request_header, validate_request_body, validate_response_body, Request,
    RequestHeader, Response, FRAME_LEN_PREFIX_BYTES,
};

const SEEDS_PER_VERSION: u64 = 64;

fn header(key: ApiKey, api_version: i16, correlation_id: i32) -> RequestHeader {
    RequestHeader {
        api_key: key as i16,
        api_version,
        correlation_id,
        client_id: Some("shale-test".to_owned()),
        header_version: key.request_header_version(api_version),
    }
}

fn encode_request_body(request: &Request, version: i16) -> BytesMut {
    let mut out = BytesMut::new();
    match request {
        Request::Kafka(request) => request.encode(&mut out, version).unwrap(),
        Request::Newer(request) => request.encode(&mut out, version).unwrap(),
    }
    out
}

fn encode_response_body(response: &Response, version: i16) -> BytesMut {
    let mut out = BytesMut::new();
    match response {
        Response::Kafka(response) => response.encode(&mut out, version).unwrap(),
        Response::Newer(response) => response.encode(&mut out, version).unwrap(),
    }
    out
}

fn assert_carried_by_the_right_codec(key: ApiKey, newer: Option<i16>, context: &str) {
    if codec_owned(key as i16) {
        assert_eq!(newer, Some(key as i16), "{context}: not in Shale's types");
    } else {
        assert_eq!(newer, None, "{context}: not in kafka-protocol's types");
    }
}

#[test]
fn share_requests_round_trip_at_every_version() {
    let mut checked = 0;
    for key in SHARE_APIS {
        let (low, high) = request_versions(key as i16).unwrap();
        for version in low..=high {
            for seed in 0..SEEDS_PER_VERSION {
                let body = random_body(key as i16, version, false, &mut Rng::new(seed));
                let context = format!("{key:?} v{version} seed {seed}: {body:02x?}");
                validate_request_body(key as i16, version, &body).unwrap();
                let sent = header(key, version, seed as i32);
                let request = decode_any_request(&sent, Bytes::from(body.clone()))
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let newer = match &request {
                    Request::Newer(newer) => Some(newer.api_key()),
                    Request::Kafka(_) => None,
                };
                assert_carried_by_the_right_codec(key, newer, &context);
                assert_eq!(
                    &encode_request_body(&request, version)[..],
                    &body[..],
                    "{context}"
                );

                let frame = match &request {
                    Request::Newer(newer) => encode_newer_request(&sent, newer),
                    Request::Kafka(kafka) => encode_request(&sent, kafka),
                }
                .unwrap();
                let frame = frame.freeze().slice(FRAME_LEN_PREFIX_BYTES..);
                let (received, body) = parse_request_header(&frame).unwrap();
                assert_eq!(received, sent, "{context}");
                assert_eq!(
                    decode_any_request(&received, body).unwrap(),
                    request,
                    "{context}"
                );
                checked += 1;
            }
        }
    }
    // 12 APIs, 17 request versions between them.
    assert_eq!(checked, 17 * SEEDS_PER_VERSION);
}

#[test]
fn share_responses_round_trip_at_every_version() {
    let mut checked = 0;
    for key in SHARE_APIS {
        let (low, high) = response_versions(key as i16).unwrap();
        for version in low..=high {
            for seed in 0..SEEDS_PER_VERSION {
                let body = random_response_body(key as i16, version, false, &mut Rng::new(seed));
                let context = format!("{key:?} v{version} seed {seed}: {body:02x?}");
                validate_response_body(key as i16, version, &body).unwrap();
                let mut frame = (seed as i32).to_be_bytes().to_vec();
                frame.push(0); // every share response is flexible: header v1
                frame.extend_from_slice(&body);
                let (correlation_id, response) =
                    decode_any_response(key as i16, version, Bytes::from(frame))
                        .unwrap_or_else(|e| panic!("{context}: {e}"));
                assert_eq!(correlation_id, seed as i32);
                let newer = match &response {
                    Response::Newer(newer) => Some(newer.api_key()),
                    Response::Kafka(_) => None,
                };
                assert_carried_by_the_right_codec(key, newer, &context);
                assert_eq!(
                    &encode_response_body(&response, version)[..],
                    &body[..],
                    "{context}"
                );

                let frame = encode_any_response(&header(key, version, 9), &response).unwrap();
                let frame = frame.freeze().slice(FRAME_LEN_PREFIX_BYTES..);
                let (correlation_id, again) =
                    decode_any_response(key as i16, version, frame).unwrap();
                assert_eq!(correlation_id, 9);
                assert_eq!(again, response, "{context}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 17 * SEEDS_PER_VERSION);
}

/// Unknown tagged fields (none of the share messages declares one) are skipped, and what
/// is encoded again passes the validator.
#[test]
fn share_bodies_with_unknown_tagged_fields_decode_and_revalidate() {
    for key in SHARE_APIS {
        let (low, high) = request_versions(key as i16).unwrap();
        for version in low..=high {
            for seed in 0..SEEDS_PER_VERSION {
                let mut rng = Rng::new(seed ^ 0x5a5a);
                let body = random_body(key as i16, version, true, &mut rng);
                let context = format!("{key:?} v{version} seed {seed}: {body:02x?}");
                let request = decode_any_request(&header(key, version, 0), Bytes::from(body))
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let encoded = encode_request_body(&request, version);
                validate_request_body(key as i16, version, &encoded)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));

                let body = random_response_body(key as i16, version, true, &mut rng);
                let context = format!("{key:?} response v{version} seed {seed}: {body:02x?}");
                let mut frame = vec![0, 0, 0, 1, 0];
                frame.extend_from_slice(&body);
                let (_, response) = decode_any_response(key as i16, version, Bytes::from(frame))
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let encoded = encode_response_body(&response, version);
                validate_response_body(key as i16, version, &encoded)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
            }
        }
    }
}

/// Every cut of a valid body of a codec-owned message is refused with an error (the
/// validator sees it first), and so are versions outside Kafka 4.4's.
#[test]
fn truncated_share_bodies_and_unknown_versions_are_errors() {
    for key in SHARE_APIS
        .into_iter()
        .filter(|key| codec_owned(*key as i16))
    {
        let (low, high) = request_versions(key as i16).unwrap();
        for version in low..=high {
            for seed in 0..8 {
                let body =
                    Bytes::from(random_body(key as i16, version, false, &mut Rng::new(seed)));
                for cut in 0..body.len() {
                    let result = decode_any_request(&header(key, version, 0), body.slice(..cut));
                    assert!(result.is_err(), "{key:?} v{version} seed {seed} cut {cut}");
                }
            }
        }
        for version in [low - 1, high + 1] {
            assert!(decode_any_request(&header(key, version, 0), Bytes::new()).is_err());
            assert!(decode_any_response(key as i16, version, Bytes::from_static(&[0; 5])).is_err());
        }
    }
}
