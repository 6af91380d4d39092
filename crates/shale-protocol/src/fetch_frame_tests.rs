//! The chunked Fetch encoder against `kafka-protocol`'s encoder: byte-identical frames for
//! random responses at every Fetch version it serves.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint,
    PartitionData, SnapshotId,
};
use kafka_protocol::messages::{BrokerId, FetchResponse, ProducerId, ResponseKind, TopicName};
use kafka_protocol::protocol::StrBytes;
use proptest::prelude::*;

use crate::{
    encode_fetch_frame, encode_response, FrameChunk, RequestHeader, FETCH_FRAME_VERSION_MAX,
    FETCH_FRAME_VERSION_MIN,
};

fn unknown_tags() -> impl Strategy<Value = BTreeMap<i32, Bytes>> {
    prop_oneof![
        4 => Just(BTreeMap::new()),
        1 => proptest::collection::btree_map(
            0i32..6,
            proptest::collection::vec(any::<u8>(), 0..4).prop_map(Bytes::from),
            0..3,
        ),
    ]
}

fn records() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        2 => Just(Bytes::new()),
        3 => proptest::collection::vec(any::<u8>(), 1..300).prop_map(Bytes::from),
    ]
}

fn partition(version: i16) -> impl Strategy<Value = PartitionData> {
    let aborted = proptest::option::of(proptest::collection::vec(
        (any::<i64>(), any::<i64>()).prop_map(|(pid, first)| {
            AbortedTransaction::default()
                .with_producer_id(ProducerId(pid))
                .with_first_offset(first)
        }),
        0..3,
    ));
    let diverging = prop_oneof![
        Just(EpochEndOffset::default()),
        (any::<i32>(), any::<i64>())
            .prop_map(|(e, o)| EpochEndOffset::default().with_epoch(e).with_end_offset(o)),
    ];
    let leader = prop_oneof![
        Just(LeaderIdAndEpoch::default()),
        (any::<i32>(), any::<i32>()).prop_map(|(id, e)| LeaderIdAndEpoch::default()
            .with_leader_id(BrokerId(id))
            .with_leader_epoch(e)),
    ];
    let snapshot = prop_oneof![
        Just(SnapshotId::default()),
        (any::<i64>(), any::<i32>())
            .prop_map(|(o, e)| SnapshotId::default().with_end_offset(o).with_epoch(e)),
    ];
    let preferred = if version >= 11 {
        prop_oneof![Just(-1), any::<i32>()].boxed()
    } else {
        Just(-1).boxed()
    };
    (
        (
            any::<i32>(),
            any::<i16>(),
            any::<i64>(),
            any::<i64>(),
            any::<i64>(),
        ),
        aborted,
        preferred,
        records(),
        (diverging, leader, snapshot, unknown_tags()),
    )
        .prop_map(
            |((index, error, hw, lso, lstart), aborted, preferred, records, tagged)| {
                let (diverging, leader, snapshot, unknown) = tagged;
                PartitionData::default()
                    .with_partition_index(index)
                    .with_error_code(error)
                    .with_high_watermark(hw)
                    .with_last_stable_offset(lso)
                    .with_log_start_offset(lstart)
                    .with_aborted_transactions(aborted)
                    .with_preferred_read_replica(BrokerId(preferred))
                    .with_records(Some(records))
                    .with_diverging_epoch(diverging)
                    .with_current_leader(leader)
                    .with_snapshot_id(snapshot)
                    .with_unknown_tagged_fields(unknown)
            },
        )
}

fn topic(version: i16) -> impl Strategy<Value = FetchableTopicResponse> {
    (
        "[a-zA-Z0-9._-]{0,20}",
        any::<[u8; 16]>(),
        proptest::collection::vec(partition(version), 0..5),
        unknown_tags(),
    )
        .prop_map(|(name, id, partitions, unknown)| {
            FetchableTopicResponse::default()
                .with_topic(TopicName(StrBytes::from_string(name)))
                .with_topic_id(uuid::Uuid::from_bytes(id))
                .with_partitions(partitions)
                .with_unknown_tagged_fields(unknown)
        })
}

fn response() -> impl Strategy<Value = (i16, FetchResponse)> {
    (FETCH_FRAME_VERSION_MIN..=FETCH_FRAME_VERSION_MAX).prop_flat_map(|version| {
        let session = if version >= 7 {
            any::<i32>().boxed()
        } else {
            Just(0).boxed()
        };
        let endpoints = proptest::collection::vec(
            (
                any::<i32>(),
                "[a-z0-9.]{0,12}",
                any::<i32>(),
                proptest::option::of("[a-z]{0,6}"),
            )
                .prop_map(|(id, host, port, rack)| {
                    NodeEndpoint::default()
                        .with_node_id(BrokerId(id))
                        .with_host(StrBytes::from_string(host))
                        .with_port(port)
                        .with_rack(rack.map(StrBytes::from_string))
                }),
            0..3,
        );
        (
            Just(version),
            (any::<i32>(), any::<i16>(), session),
            proptest::collection::vec(topic(version), 0..4),
            endpoints,
            unknown_tags(),
        )
            .prop_map(
                |(version, (throttle, error, session), topics, endpoints, unknown)| {
                    let response = FetchResponse::default()
                        .with_throttle_time_ms(throttle)
                        .with_error_code(error)
                        .with_session_id(session)
                        .with_responses(topics)
                        .with_node_endpoints(endpoints)
                        .with_unknown_tagged_fields(unknown);
                    (version, response)
                },
            )
    })
}

fn header(version: i16, correlation_id: i32) -> RequestHeader {
    RequestHeader {
        api_key: 1,
        api_version: version,
        correlation_id,
        client_id: None,
        header_version: if version >= 12 { 2 } else { 1 },
    }
}

/// Moves the record sets out, in partition order, leaving `None` behind.
fn take_records(response: &mut FetchResponse) -> Vec<Bytes> {
    response
        .responses
        .iter_mut()
        .flat_map(|t| t.partitions.iter_mut())
        .map(|p| p.records.take().unwrap_or_default())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_500))]

    #[test]
    fn chunked_frame_matches_kafka_protocol(
        (version, response) in response(),
        correlation_id in any::<i32>(),
    ) {
        let expected = encode_response(
            &header(version, correlation_id),
            &ResponseKind::Fetch(response.clone()),
        )
        .unwrap();
        let mut stripped = response;
        let records = take_records(&mut stripped);
        let frame = encode_fetch_frame(correlation_id, version, &stripped, records).unwrap();
        prop_assert_eq!(frame.len_bytes, expected.len());
        prop_assert_eq!(&frame.to_contiguous()[..], &expected[..]);
        // Empty record sets stay inside framing chunks; every non-empty one is its own chunk.
        for chunk in &frame.chunks {
            match chunk {
                FrameChunk::Framing(b) => prop_assert!(!b.is_empty()),
                FrameChunk::Records(b) => prop_assert!(!b.is_empty()),
            }
        }
    }
}

#[test]
fn empty_record_sets_are_empty_bytes_not_null() {
    let response = FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
        .with_topic(TopicName(StrBytes::from_static_str("t")))
        .with_partitions(vec![PartitionData::default()])]);
    for version in [11i16, 12] {
        let frame = encode_fetch_frame(7, version, &response, vec![Bytes::new()]).unwrap();
        assert_eq!(frame.chunks.len(), 1);
        let bytes = frame.to_contiguous();
        let decoded = crate::decode_response(1, version, bytes.freeze().slice(4..)).unwrap();
        let ResponseKind::Fetch(decoded) = decoded.1 else {
            panic!("not a Fetch response");
        };
        assert_eq!(
            decoded.responses[0].partitions[0].records,
            Some(Bytes::new()),
            "v{version}"
        );
    }
}

#[test]
fn refuses_mismatched_record_sets_and_versions() {
    let response = FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
        .with_partitions(vec![PartitionData::default(), PartitionData::default()])]);
    assert!(encode_fetch_frame(1, 12, &response, vec![Bytes::new()]).is_err());
    assert!(encode_fetch_frame(1, 3, &response, vec![Bytes::new(), Bytes::new()]).is_err());
    assert!(encode_fetch_frame(1, 19, &response, vec![Bytes::new(), Bytes::new()]).is_err());
    let with_records =
        FetchResponse::default()
            .with_responses(vec![FetchableTopicResponse::default().with_partitions(
                vec![PartitionData::default().with_records(Some(Bytes::from_static(b"x")))],
            )]);
    assert!(encode_fetch_frame(1, 12, &with_records, vec![Bytes::new()]).is_err());
}
