//! The generated schema table against kafka-protocol's own encoder and decoder, for
//! every request API and version both know.

use bytes::BytesMut;
use kafka_protocol::messages::ApiKey;

use crate::schema::request_spec;
use crate::schema_generated::default_request;
use crate::{decode_request, validate_request_body, RequestHeader};

#[test]
fn schema_table_covers_every_kafka_protocol_request_version() {
    for key in ApiKey::iter() {
        let spec =
            request_spec(key as i16).unwrap_or_else(|| panic!("{key:?} missing from schema"));
        let range = key.valid_versions();
        assert_eq!(
            (spec.valid.0, spec.valid.1),
            (range.min, range.max),
            "{key:?}"
        );
    }
}

#[test]
fn default_requests_encoded_by_kafka_protocol_validate_and_decode() {
    let mut checked = 0;
    let mut unencodable = Vec::new();
    for key in ApiKey::iter() {
        let request = default_request(key as i16).unwrap();
        let range = key.valid_versions();
        for version in range.min..=range.max {
            let mut body = BytesMut::new();
            // Some defaults cannot be encoded at some versions (a field that the version
            // cannot carry holds a non-default value); populated requests cover those.
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
    assert!(
        checked >= 280,
        "only {checked} api versions checked; unencodable: {unencodable:?}"
    );
    assert!(unencodable.len() < 10, "unencodable: {unencodable:?}");
}
