//! The generated codec against the schema table and against kafka-protocol: random bodies
//! that follow Kafka 4.4's specs decode and encode back byte for byte at every version, and
//! where kafka-protocol also decodes a version both read the same values.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, OffsetCommitRequest, OffsetFetchRequest, RequestKind};

use crate::codec::{Decoder, Encoder};
use crate::codec_generated::*;
use crate::schema::decodable_versions;
use crate::schema_testgen::{random_body, random_response_body, Rng};
use crate::{validate_request_body, validate_response_body, ProtocolError};

const BODIES_PER_VERSION: u64 = 200;

type RoundTrip = fn(Bytes, i16) -> Result<Bytes, ProtocolError>;

fn round_trip<T>(
    body: Bytes,
    version: i16,
    decode: fn(&mut Decoder, i16) -> Result<T, ProtocolError>,
    encode: fn(&T, &mut Encoder, i16) -> Result<(), ProtocolError>,
) -> Result<Bytes, ProtocolError> {
    let value = decode(&mut Decoder::new(body), version)?;
    let mut out = BytesMut::new();
    encode(&value, &mut Encoder::new(&mut out), version)?;
    Ok(out.freeze())
}

macro_rules! codec {
    ($module:ident :: $ty:ident) => {
        (
            $module::API_KEY,
            $module::VERSIONS,
            (|body, version| round_trip(body, version, $module::$ty::decode, $module::$ty::encode))
                as RoundTrip,
        )
    };
}

#[test]
fn random_requests_round_trip_through_the_codec_at_every_version() {
    let codecs = [
        codec!(offset_commit_request::OffsetCommitRequest),
        codec!(offset_fetch_request::OffsetFetchRequest),
        codec!(txn_offset_commit_request::TxnOffsetCommitRequest),
        codec!(write_txn_markers_request::WriteTxnMarkersRequest),
        codec!(api_versions_request::ApiVersionsRequest),
    ];
    for (api_key, versions, round_trip) in codecs {
        for version in versions.0..=versions.1 {
            for seed in 0..BODIES_PER_VERSION {
                let body = Bytes::from(random_body(api_key, version, false, &mut Rng::new(seed)));
                validate_request_body(api_key, version, &body).unwrap();
                let again = round_trip(body.clone(), version)
                    .unwrap_or_else(|e| panic!("api {api_key} v{version} seed {seed}: {e}"));
                assert_eq!(again, body, "api {api_key} v{version} seed {seed}");
            }
        }
    }
}

#[test]
fn random_responses_round_trip_through_the_codec_at_every_version() {
    let codecs = [
        codec!(txn_offset_commit_response::TxnOffsetCommitResponse),
        codec!(delete_groups_response::DeleteGroupsResponse),
        codec!(describe_log_dirs_response::DescribeLogDirsResponse),
    ];
    for (api_key, versions, round_trip) in codecs {
        for version in versions.0..=versions.1 {
            for seed in 0..BODIES_PER_VERSION {
                let body = Bytes::from(random_response_body(
                    api_key,
                    version,
                    false,
                    &mut Rng::new(seed),
                ));
                validate_response_body(api_key, version, &body).unwrap();
                let again = round_trip(body.clone(), version)
                    .unwrap_or_else(|e| panic!("api {api_key} v{version} seed {seed}: {e}"));
                assert_eq!(again, body, "api {api_key} v{version} seed {seed}");
            }
        }
    }
}

/// Where kafka-protocol decodes a version too, Shale's codec (converted to kafka-protocol's
/// type) reads exactly what kafka-protocol reads: same fields, same order, same meaning.
#[test]
fn codec_and_kafka_protocol_agree_on_offset_commit_and_fetch() {
    for key in [ApiKey::OffsetCommit, ApiKey::OffsetFetch] {
        let range = decodable_versions(key as i16).unwrap();
        for version in range.0..=range.1 {
            for seed in 0..BODIES_PER_VERSION {
                let body =
                    Bytes::from(random_body(key as i16, version, false, &mut Rng::new(seed)));
                let ours: RequestKind = match key {
                    ApiKey::OffsetCommit => RequestKind::OffsetCommit(OffsetCommitRequest::from(
                        offset_commit_request::OffsetCommitRequest::decode(
                            &mut Decoder::new(body.clone()),
                            version,
                        )
                        .unwrap(),
                    )),
                    _ => RequestKind::OffsetFetch(OffsetFetchRequest::from(
                        offset_fetch_request::OffsetFetchRequest::decode(
                            &mut Decoder::new(body.clone()),
                            version,
                        )
                        .unwrap(),
                    )),
                };
                let theirs = RequestKind::decode(key, &mut body.clone(), version).unwrap();
                assert_eq!(ours, theirs, "{key:?} v{version} seed {seed}");
            }
        }
    }
}

/// Every prefix of a valid body is refused with an error, and so is garbage, never a panic.
#[test]
fn truncated_or_random_bodies_are_errors_not_panics() {
    for seed in 0..50 {
        let mut rng = Rng::new(seed);
        let body = Bytes::from(random_body(
            ApiKey::TxnOffsetCommit as i16,
            6,
            false,
            &mut rng,
        ));
        for cut in 0..body.len() {
            let result = txn_offset_commit_request::TxnOffsetCommitRequest::decode(
                &mut Decoder::new(body.slice(..cut)),
                6,
            );
            assert!(result.is_err(), "seed {seed} cut {cut}");
        }
        let noise: Vec<u8> = (0..rng.below(64)).map(|_| rng.below(256) as u8).collect();
        let _ = write_txn_markers_request::WriteTxnMarkersRequest::decode(
            &mut Decoder::new(Bytes::from(noise)),
            2,
        );
    }
}
