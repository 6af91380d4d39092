//! The generated schema table against kafka-protocol's own encoder and decoder, for
//! every request API and version both know.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind};

use crate::routes::codec_owned;
use crate::schema::{decodable_versions, request_spec};
use crate::schema_generated::{default_request, kafka_protocol_request_versions};
use crate::schema_testgen::{random_body, Rng};
use crate::{decode_request, validate_request_body, RequestHeader};

/// The table (Kafka 4.4's specs) must describe every version kafka-protocol (Kafka 4.1's)
/// decodes, so that every one of them is validated before it is decoded.
#[test]
fn schema_table_covers_every_kafka_protocol_request_version() {
    for key in ApiKey::iter() {
        let spec =
            request_spec(key as i16).unwrap_or_else(|| panic!("{key:?} missing from schema"));
        let known = kafka_protocol_request_versions(key as i16).unwrap();
        assert!(
            spec.valid.0 <= known.0 && known.1 <= spec.valid.1,
            "{key:?}: kafka-protocol decodes {known:?}, Kafka 4.4 defines {:?}",
            spec.valid
        );
        assert_eq!(decodable_versions(key as i16), Some(known), "{key:?}");
    }
}

#[test]
fn default_requests_encoded_by_kafka_protocol_validate_and_decode() {
    let mut checked = 0;
    let mut unencodable = Vec::new();
    // The APIs Shale's codec owns decode into its types: share_codec_tests.rs.
    for key in ApiKey::iter().filter(|key| !codec_owned(*key as i16)) {
        let request = default_request(key as i16).unwrap();
        let range = decodable_versions(key as i16).unwrap();
        for version in range.0..=range.1 {
            let mut body = BytesMut::new();
            if request.encode(&mut body, version).is_err() {
                unencodable.push(format!("{key:?} v{version}"));
                continue;
            }
            validate_request_body(key as i16, version, &body)
                .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
            let header = RequestHeader {
                api_key: key as i16,
                api_version: version,
                correlation_id: 0,
                client_id: None,
                header_version: key.request_header_version(version),
            };
            let decoded = decode_request(&header, body.freeze()).unwrap();
            assert_eq!(decoded, request, "{key:?} v{version}");
            checked += 1;
        }
    }
    assert!(checked >= 280, "only {checked} api versions checked");
    assert!(unencodable.is_empty(), "unencodable: {unencodable:?}");
}

const SEEDS_PER_VERSION: u64 = 24;

/// Random bodies built from the schema table must decode with kafka-protocol, be fully
/// consumed, and re-encode to the same bytes: any field the table gets wrong (order,
/// type, versions, nullability, flexible encoding) breaks one of the three.
#[test]
fn schema_generated_bodies_round_trip_through_kafka_protocol() {
    let mut checked = 0;
    for key in ApiKey::iter() {
        let range = decodable_versions(key as i16).unwrap();
        for version in range.0..=range.1 {
            for seed in 0..SEEDS_PER_VERSION {
                let mut rng = Rng::new(seed);
                let body = random_body(key as i16, version, false, &mut rng);
                let context = format!("{key:?} v{version} seed {seed}: {body:02x?}");
                validate_request_body(key as i16, version, &body)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let mut bytes = Bytes::from(body.clone());
                let decoded = RequestKind::decode(key, &mut bytes, version)
                    .unwrap_or_else(|e| panic!("{context}: {e:#}"));
                assert!(bytes.is_empty(), "{context}: {} bytes left", bytes.len());
                let mut encoded = BytesMut::new();
                decoded
                    .encode(&mut encoded, version)
                    .unwrap_or_else(|e| panic!("{context}: {e:#}"));
                assert_eq!(&encoded[..], &body[..], "{context}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 280 * SEEDS_PER_VERSION as usize);
}

/// With known and unknown tagged fields: decode must consume everything, and what
/// kafka-protocol re-encodes must pass the validator.
#[test]
fn schema_generated_bodies_with_tagged_fields_decode_and_revalidate() {
    // The APIs Shale's codec owns decode into its types: share_codec_tests.rs.
    for key in ApiKey::iter().filter(|key| !codec_owned(*key as i16)) {
        let range = decodable_versions(key as i16).unwrap();
        for version in range.0..=range.1 {
            for seed in 0..SEEDS_PER_VERSION {
                let mut rng = Rng::new(seed ^ 0xabcd);
                let body = random_body(key as i16, version, true, &mut rng);
                let context = format!("{key:?} v{version} seed {seed}: {body:02x?}");
                let header = RequestHeader {
                    api_key: key as i16,
                    api_version: version,
                    correlation_id: 0,
                    client_id: None,
                    header_version: key.request_header_version(version),
                };
                let decoded = decode_request(&header, Bytes::from(body))
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                let mut encoded = BytesMut::new();
                decoded
                    .encode(&mut encoded, version)
                    .unwrap_or_else(|e| panic!("{context}: {e:#}"));
                validate_request_body(key as i16, version, &encoded)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
            }
        }
    }
}
