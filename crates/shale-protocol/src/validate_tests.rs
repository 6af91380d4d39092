//! Hostile and edge-case request bodies: every one must be refused or decoded without
//! allocating from a declared length.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    produce_request::{PartitionProduceData, TopicProduceData},
    ProduceRequest, RequestKind, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};

use crate::{decode_request, validate_request_body, ProtocolError, RequestHeader};

const PRODUCE: i16 = 0;
const FETCH: i16 = 1;
const METADATA: i16 = 3;

fn header(api_key: i16, api_version: i16) -> RequestHeader {
    RequestHeader {
        api_key,
        api_version,
        correlation_id: 1,
        client_id: None,
        header_version: 1,
    }
}

fn is_malformed<T: std::fmt::Debug>(result: Result<T, ProtocolError>) -> bool {
    matches!(result, Err(ProtocolError::Malformed(_)))
}

#[test]
fn metadata_body_with_max_array_count_is_refused_for_every_version() {
    for version in 0..=8 {
        let body = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]);
        assert!(
            is_malformed(validate_request_body(METADATA, version, &body)),
            "v{version}"
        );
        assert!(
            is_malformed(decode_request(&header(METADATA, version), body)),
            "v{version}"
        );
    }
    for version in 9..=13 {
        // Compact array: varint count+1 = 2^31.
        let body = Bytes::from_static(&[0x80, 0x80, 0x80, 0x80, 0x08, 0x00]);
        assert!(
            is_malformed(decode_request(&header(METADATA, version), body)),
            "v{version}"
        );
    }
}

#[test]
fn metadata_null_topics_and_empty_bodies() {
    // Null topics (all topics) is allowed from v1, not in v0.
    let body = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]);
    assert!(is_malformed(decode_request(
        &header(METADATA, 0),
        body.clone()
    )));
    let decoded = decode_request(&header(METADATA, 1), body).unwrap();
    assert!(matches!(decoded, RequestKind::Metadata(ref m) if m.topics.is_none()));
    for version in 0..=13 {
        assert!(
            is_malformed(decode_request(&header(METADATA, version), Bytes::new())),
            "v{version}"
        );
    }
}

#[test]
fn truncated_compact_string_is_refused() {
    let mut body = BytesMut::new();
    body.put_u8(2); // one topic
    body.put_slice(&[0u8; 16]); // topic id
    body.put_u8(16); // name of 15 bytes ...
    body.put_slice(b"abc"); // ... of which 3 arrive
    assert!(is_malformed(validate_request_body(METADATA, 12, &body)));
}

#[test]
fn oversized_compact_string_is_refused_like_kafka() {
    let mut body = BytesMut::new();
    body.put_u8(2);
    body.put_slice(&[0u8; 16]);
    body.put_slice(&[0x81, 0x80, 0x02]); // 32769 - 1 = 32768 bytes
    body.put_slice(&vec![b'a'; 32_768]);
    body.put_slice(&[0, 1, 0, 0]);
    assert!(is_malformed(validate_request_body(METADATA, 12, &body)));
}

fn metadata_v12_body(tagged_section: &[u8]) -> Bytes {
    let mut body = BytesMut::new();
    body.put_u8(2); // one topic
    body.put_slice(&[0u8; 16]);
    body.put_u8(2);
    body.put_u8(b't');
    body.put_u8(0); // topic tagged fields
    body.put_u8(1); // allow auto topic creation
    body.put_u8(0); // include topic authorized operations
    body.put_slice(tagged_section);
    body.freeze()
}

#[test]
fn unknown_tagged_fields_are_skipped() {
    let body = metadata_v12_body(&[2, 7, 3, 1, 2, 3, 9, 0]);
    let decoded = decode_request(&header(METADATA, 12), body).unwrap();
    let RequestKind::Metadata(metadata) = decoded else {
        panic!("not metadata")
    };
    assert_eq!(metadata.unknown_tagged_fields.len(), 2);
    assert_eq!(
        metadata.topics.unwrap()[0].name.as_ref().unwrap().as_str(),
        "t"
    );
}

#[test]
fn tagged_field_counts_and_sizes_are_bounded() {
    // 2^32-1 tagged fields.
    let body = metadata_v12_body(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(is_malformed(decode_request(&header(METADATA, 12), body)));
    // One tagged field claiming 2^32-1 bytes.
    let body = metadata_v12_body(&[1, 7, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(is_malformed(decode_request(&header(METADATA, 12), body)));
    // A six-byte varint.
    let body = metadata_v12_body(&[1, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0]);
    assert!(is_malformed(decode_request(&header(METADATA, 12), body)));
}

fn fetch_v12_body(tagged_section: &[u8]) -> Bytes {
    let mut body = BytesMut::new();
    body.put_i32(-1); // replica id
    body.put_i32(500); // max wait
    body.put_i32(1); // min bytes
    body.put_i32(1 << 20); // max bytes
    body.put_i8(0); // isolation level
    body.put_i32(0); // session id
    body.put_i32(-1); // session epoch
    body.put_u8(1); // no topics
    body.put_u8(1); // no forgotten topics
    body.put_u8(1); // rack id ""
    body.put_slice(tagged_section);
    body.freeze()
}

#[test]
fn known_tagged_field_must_fill_its_declared_size() {
    // ClusterId (tag 0), compact string "ab".
    let exact = fetch_v12_body(&[1, 0, 3, 3, b'a', b'b']);
    let RequestKind::Fetch(fetch) = decode_request(&header(FETCH, 12), exact).unwrap() else {
        panic!("not fetch")
    };
    assert_eq!(fetch.cluster_id.unwrap().as_str(), "ab");
    // The size says 2 bytes, but the string inside claims 2 bytes after its length byte.
    let short = fetch_v12_body(&[1, 0, 2, 3, b'a', b'b']);
    assert!(is_malformed(decode_request(&header(FETCH, 12), short)));
    // The size says 5 bytes but the string uses 3.
    let long = fetch_v12_body(&[1, 0, 5, 3, b'a', b'b', 0, 0]);
    assert!(is_malformed(decode_request(&header(FETCH, 12), long)));
}

#[test]
fn nested_array_with_huge_count_is_refused() {
    let mut body = BytesMut::new();
    body.put_i16(-1); // transactional id
    body.put_i16(-1); // acks
    body.put_i32(30_000);
    body.put_i32(1); // one topic
    body.put_i16(1);
    body.put_u8(b't');
    body.put_i32(0x7fff_ffff); // partitions
    body.put_slice(&[0u8; 64]);
    assert!(is_malformed(decode_request(
        &header(PRODUCE, 3),
        body.freeze()
    )));
    // DeleteTopics v1 is [names], timeout: three names need at least 6 bytes, 4 remain.
    let mut body = BytesMut::new();
    body.put_i32(3);
    body.put_i32(0);
    assert!(is_malformed(validate_request_body(20, 1, &body)));
}

#[test]
fn array_of_empty_elements_is_bounded_by_remaining_bytes() {
    // Count larger than remaining bytes is refused even when elements could be tiny.
    let mut body = BytesMut::new();
    body.put_i32(1_000);
    body.put_slice(&[0u8; 10]);
    assert!(is_malformed(validate_request_body(20, 1, &body)));
}

fn produce_with_records(version: i16, records: Bytes) -> Bytes {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(1000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])]);
    let mut body = BytesMut::new();
    request.encode(&mut body, version).unwrap();
    body.freeze()
}

/// A RecordBatch v2 header whose record count claims 2^31-1 records.
fn batch_claiming_max_records() -> Bytes {
    let mut batch = BytesMut::new();
    batch.put_i64(0); // base offset
    batch.put_i32(49); // batch length
    batch.put_i32(0); // partition leader epoch
    batch.put_i8(2); // magic
    batch.put_u32(0); // crc
    batch.put_i16(0); // attributes
    batch.put_i32(0); // last offset delta
    batch.put_i64(0);
    batch.put_i64(0);
    batch.put_i64(-1); // producer id
    batch.put_i16(-1);
    batch.put_i32(-1);
    batch.put_i32(i32::MAX); // record count
    batch.freeze()
}

#[test]
fn produce_records_stay_opaque_and_zero_copy() {
    for version in [3, 8, 9, 12, 13] {
        let records = batch_claiming_max_records();
        let body = produce_with_records(version, records.clone());
        let decoded = decode_request(&header(PRODUCE, version), body.clone()).unwrap();
        let RequestKind::Produce(produce) = decoded else {
            panic!("not produce")
        };
        let got = produce.topic_data[0].partition_data[0]
            .records
            .clone()
            .unwrap();
        assert_eq!(got, records, "v{version}");
        let body_range = body.as_ptr() as usize..body.as_ptr() as usize + body.len();
        assert!(
            body_range.contains(&(got.as_ptr() as usize)),
            "records copied at v{version}"
        );
    }
}

#[test]
fn produce_records_longer_than_the_body_are_refused() {
    let body = produce_with_records(9, Bytes::from_static(b"0123456789"));
    // Cut the body inside the records.
    let cut = body.slice(..body.len() - 6);
    assert!(is_malformed(decode_request(&header(PRODUCE, 9), cut)));
}

#[test]
fn nullable_struct_markers_other_than_minus_one_and_one_are_refused() {
    // DescribeTopicPartitions v0: topics [], partition limit, nullable Cursor.
    let api = 75;
    let body = |marker: u8| Bytes::from(vec![1, 0, 0, 0, 10, marker, 0]);
    assert!(decode_request(&header(api, 0), body(0xff)).is_ok());
    assert!(is_malformed(decode_request(&header(api, 0), body(0))));
    assert!(is_malformed(decode_request(&header(api, 0), body(2))));
    let mut present = vec![1, 0, 0, 0, 10, 1, 2, b't', 0, 0, 0, 3, 0, 0];
    assert!(decode_request(&header(api, 0), Bytes::from(present.clone())).is_ok());
    present.truncate(9);
    assert!(is_malformed(decode_request(
        &header(api, 0),
        Bytes::from(present)
    )));
}

#[test]
fn unsupported_versions_and_keys_are_reported() {
    assert_eq!(
        validate_request_body(METADATA, 14, &[]),
        Err(ProtocolError::UnsupportedVersion {
            api_key: METADATA,
            api_version: 14
        })
    );
    assert_eq!(
        validate_request_body(4, 0, &[]),
        Err(ProtocolError::UnsupportedVersion {
            api_key: 4,
            api_version: 0
        })
    );
    assert!(matches!(
        decode_request(&header(1000, 0), Bytes::new()),
        Err(ProtocolError::UnsupportedApi { api_key: 1000, .. })
    ));
    assert!(matches!(
        decode_request(&header(PRODUCE, 2), Bytes::new()),
        Err(ProtocolError::UnsupportedApi {
            api_key: PRODUCE,
            api_version: 2,
            ..
        })
    ));
}

#[test]
fn tags_above_i32_max_are_refused() {
    let body = metadata_v12_body(&[1, 0x80, 0x80, 0x80, 0x80, 0x08, 1, 0]);
    assert!(is_malformed(decode_request(&header(METADATA, 12), body)));
    let body = metadata_v12_body(&[1, 0xff, 0xff, 0xff, 0xff, 0x07, 1, 0]);
    assert!(decode_request(&header(METADATA, 12), body).is_ok());
}
