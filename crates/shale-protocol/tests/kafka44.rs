//! The versions Kafka 4.4 added past kafka-protocol 0.18, against bytes written by Kafka
//! 4.4's own message classes (`kafka44/KafkaFixtures.java` made `kafka44/kafka44.txt`):
//! every request decodes to the values the fixture set and encodes back to the same bytes,
//! and every response Shale would send for those values is byte for byte Kafka's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersionsResponse;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{
    ApiKey, GroupId, ListOffsetsResponse, OffsetCommitResponse, OffsetFetchResponse, ProducerId,
    RequestKind, ResponseKind, TopicName, WriteTxnMarkersResponse,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::newer::{
    delete_groups_response as delete_groups, describe_log_dirs_response as log_dirs,
    offset_commit_request, offset_fetch_request, txn_offset_commit_response as txn_commit, Decoder,
    Encoder,
};
use shale_protocol::{
    decode_any_request, decode_any_response, encode_any_response, encode_newer_request,
    NewerRequest, NewerResponse, Request, RequestHeader, Response,
};
use uuid::Uuid;

const FIXTURES: &str = include_str!("kafka44/kafka44.txt");
const TOPIC_ID: Uuid = Uuid::from_bytes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);

/// The fixture bodies of `message` at `version`, in file order.
fn fixtures(message: &str, version: i16) -> Vec<Bytes> {
    let found: Vec<Bytes> = FIXTURES
        .lines()
        .filter_map(|line| {
            let mut parts = line.split(' ');
            let (name, v, hex) = (parts.next()?, parts.next()?, parts.next().unwrap_or(""));
            (name == message && v.parse::<i16>().ok()? == version).then(|| unhex(hex))
        })
        .collect();
    assert!(!found.is_empty(), "no fixture {message} v{version}");
    found
}

fn fixture(message: &str, version: i16) -> Bytes {
    fixtures(message, version).remove(0)
}

fn unhex(hex: &str) -> Bytes {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect::<Vec<u8>>()
        .into()
}

fn header(key: ApiKey, version: i16) -> RequestHeader {
    RequestHeader {
        api_key: key as i16,
        api_version: version,
        correlation_id: 7,
        client_id: Some("kafka44".into()),
        header_version: key.request_header_version(version),
    }
}

fn s(text: &'static str) -> StrBytes {
    StrBytes::from_static_str(text)
}

/// The body of a response frame: after the length prefix, the correlation id and (for
/// flexible versions but ApiVersions') the header's tagged fields.
fn response_body(key: ApiKey, version: i16, frame: &BytesMut) -> Bytes {
    let mut skip = 8;
    if key != ApiKey::ApiVersions && key.response_header_version(version) >= 1 {
        skip += 1;
    }
    Bytes::copy_from_slice(&frame[skip..])
}

/// Encodes `response` as Shale sends it and checks it against Kafka's bytes, then decodes
/// Kafka's bytes back to the same value.
fn check_response(key: ApiKey, version: i16, response: Response) {
    let expected = fixture(&format!("{key:?}Response"), version);
    let frame = encode_any_response(&header(key, version), &response).unwrap();
    assert_eq!(
        response_body(key, version, &frame),
        expected,
        "{key:?} v{version}"
    );
    let mut as_received = BytesMut::from(&frame[4..]);
    let (correlation, decoded) =
        decode_any_response(key as i16, version, as_received.split().freeze()).unwrap();
    assert_eq!(correlation, 7);
    assert_eq!(decoded, response, "{key:?} v{version}");
}

fn decode(key: ApiKey, version: i16, body: Bytes) -> Request {
    decode_any_request(&header(key, version), body).unwrap()
}

#[test]
fn offset_commit_v10_carries_topic_ids() {
    let body = fixture("OffsetCommitRequest", 10);
    let Request::Kafka(RequestKind::OffsetCommit(request)) =
        decode(ApiKey::OffsetCommit, 10, body.clone())
    else {
        panic!("not an OffsetCommit");
    };
    assert_eq!(request.group_id.0.as_str(), "group-1");
    assert_eq!(request.generation_id_or_member_epoch, 7);
    assert_eq!(request.member_id.as_str(), "member-1");
    assert_eq!(request.group_instance_id, Some(s("instance-1")));
    let topic = &request.topics[0];
    assert_eq!(topic.topic_id, TOPIC_ID);
    assert_eq!(topic.name.0.as_str(), "", "v10 has no names");
    let p = &topic.partitions;
    assert_eq!(
        (
            p[0].partition_index,
            p[0].committed_offset,
            p[0].committed_leader_epoch
        ),
        (0, 42, 3)
    );
    assert_eq!(p[0].committed_metadata, Some(s("meta")));
    assert_eq!((p[1].partition_index, p[1].committed_offset), (1, 43));
    assert_eq!(p[1].committed_metadata, None);

    let codec =
        offset_commit_request::OffsetCommitRequest::decode(&mut Decoder::new(body.clone()), 10)
            .unwrap();
    let mut again = BytesMut::new();
    codec.encode(&mut Encoder::new(&mut again), 10).unwrap();
    assert_eq!(again.freeze(), body);

    check_response(
        ApiKey::OffsetCommit,
        10,
        Response::Kafka(ResponseKind::OffsetCommit(
            OffsetCommitResponse::default().with_topics(vec![OffsetCommitResponseTopic::default()
                .with_topic_id(TOPIC_ID)
                .with_partitions(vec![
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(0)
                        .with_error_code(0),
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(1)
                        .with_error_code(100),
                ])]),
        )),
    );
}

#[test]
fn offset_fetch_v10_carries_topic_ids() {
    let body = fixture("OffsetFetchRequest", 10);
    let Request::Kafka(RequestKind::OffsetFetch(request)) =
        decode(ApiKey::OffsetFetch, 10, body.clone())
    else {
        panic!("not an OffsetFetch");
    };
    assert!(request.require_stable);
    let [first, second] = &request.groups[..] else {
        panic!("two groups");
    };
    assert_eq!(first.group_id.0.as_str(), "group-1");
    assert_eq!(first.member_id, Some(s("member-1")));
    assert_eq!(first.member_epoch, 5);
    let topics = first.topics.as_ref().unwrap();
    assert_eq!(topics[0].topic_id, TOPIC_ID);
    assert_eq!(topics[0].partition_indexes, vec![0, 2]);
    assert_eq!(second.group_id.0.as_str(), "group-2");
    assert_eq!((second.member_id.as_ref(), second.member_epoch), (None, -1));
    assert_eq!(second.topics, None, "null: every topic");

    let codec =
        offset_fetch_request::OffsetFetchRequest::decode(&mut Decoder::new(body.clone()), 10)
            .unwrap();
    let mut again = BytesMut::new();
    codec.encode(&mut Encoder::new(&mut again), 10).unwrap();
    assert_eq!(again.freeze(), body);

    check_response(
        ApiKey::OffsetFetch,
        10,
        Response::Kafka(ResponseKind::OffsetFetch(
            OffsetFetchResponse::default().with_groups(vec![OffsetFetchResponseGroup::default()
                .with_group_id(GroupId(s("group-1")))
                .with_topics(vec![OffsetFetchResponseTopics::default()
                    .with_topic_id(TOPIC_ID)
                    .with_partitions(vec![OffsetFetchResponsePartitions::default()
                        .with_partition_index(0)
                        .with_committed_offset(42)
                        .with_committed_leader_epoch(3)
                        .with_metadata(Some(s("meta")))])])]),
        )),
    );
}

#[test]
fn list_offsets_v11_travels_as_v10() {
    let body = fixture("ListOffsetsRequest", 11);
    let Request::Kafka(RequestKind::ListOffsets(request)) = decode(ApiKey::ListOffsets, 11, body)
    else {
        panic!("not a ListOffsets");
    };
    assert_eq!((request.replica_id.0, request.isolation_level), (-1, 1));
    assert_eq!(request.timeout_ms, 30_000);
    let partition = &request.topics[0].partitions[0];
    assert_eq!(request.topics[0].name.0.as_str(), "topic-a");
    assert_eq!(
        (
            partition.partition_index,
            partition.current_leader_epoch,
            partition.timestamp
        ),
        (0, 2, -6),
        "EARLIEST_PENDING_UPLOAD (KIP-1023)"
    );
    check_response(
        ApiKey::ListOffsets,
        11,
        Response::Kafka(ResponseKind::ListOffsets(
            ListOffsetsResponse::default().with_topics(vec![ListOffsetsTopicResponse::default()
                .with_name(TopicName(s("topic-a")))
                .with_partitions(vec![ListOffsetsPartitionResponse::default()
                    .with_partition_index(0)
                    .with_timestamp(-1)
                    .with_offset(5)
                    .with_leader_epoch(0)])]),
        )),
    );
}

fn reencode(key: ApiKey, version: i16, request: &NewerRequest) -> Bytes {
    let frame = encode_newer_request(&header(key, version), request).unwrap();
    // length, key, version, correlation id, client id "kafka44", empty tagged fields
    Bytes::copy_from_slice(&frame[4 + 8 + 2 + 7 + 1..])
}

#[test]
fn txn_offset_commit_v6_carries_topic_ids() {
    let body = fixture("TxnOffsetCommitRequest", 6);
    let Request::Newer(newer) = decode(ApiKey::TxnOffsetCommit, 6, body.clone()) else {
        panic!("decoded by kafka-protocol");
    };
    let NewerRequest::TxnOffsetCommit(request) = &newer else {
        panic!("{newer:?}");
    };
    assert_eq!(request.transactional_id.as_str(), "txn-1");
    assert_eq!(request.group_id.as_str(), "group-1");
    assert_eq!((request.producer_id, request.producer_epoch), (1234, 5));
    assert_eq!(request.generation_id_or_member_epoch, 3);
    assert_eq!(request.member_id.as_str(), "member-1");
    assert_eq!(request.group_instance_id, None);
    let topic = &request.topics[0];
    assert_eq!(topic.topic_id, TOPIC_ID);
    let p = &topic.partitions[0];
    assert_eq!(
        (
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch
        ),
        (0, 100, 4)
    );
    assert_eq!(p.committed_metadata, Some(s("md")));
    assert_eq!(reencode(ApiKey::TxnOffsetCommit, 6, &newer), body);

    check_response(
        ApiKey::TxnOffsetCommit,
        6,
        Response::Newer(NewerResponse::TxnOffsetCommit(
            txn_commit::TxnOffsetCommitResponse {
                throttle_time_ms: 0,
                topics: vec![txn_commit::TxnOffsetCommitResponseTopic {
                    topic_id: TOPIC_ID,
                    partitions: vec![txn_commit::TxnOffsetCommitResponsePartition {
                        partition_index: 0,
                        error_code: 0,
                    }],
                    ..Default::default()
                }],
            },
        )),
    );
}

#[test]
fn write_txn_markers_v2_carries_the_transaction_version() {
    let body = fixture("WriteTxnMarkersRequest", 2);
    let Request::Newer(newer) = decode(ApiKey::WriteTxnMarkers, 2, body.clone()) else {
        panic!("decoded by kafka-protocol");
    };
    let NewerRequest::WriteTxnMarkers(request) = &newer else {
        panic!("{newer:?}");
    };
    let marker = &request.markers[0];
    assert_eq!((marker.producer_id, marker.producer_epoch), (1234, 6));
    assert!(marker.transaction_result);
    assert_eq!(marker.coordinator_epoch, 9);
    assert_eq!(marker.transaction_version, 2);
    assert_eq!(marker.topics[0].name.as_str(), "topic-a");
    assert_eq!(marker.topics[0].partition_indexes, vec![0, 1]);
    assert_eq!(reencode(ApiKey::WriteTxnMarkers, 2, &newer), body);

    check_response(
        ApiKey::WriteTxnMarkers,
        2,
        Response::Kafka(ResponseKind::WriteTxnMarkers(
            WriteTxnMarkersResponse::default().with_markers(vec![
                WritableTxnMarkerResult::default()
                    .with_producer_id(ProducerId(1234))
                    .with_topics(vec![WritableTxnMarkerTopicResult::default()
                        .with_name(TopicName(s("topic-a")))
                        .with_partitions(vec![WritableTxnMarkerPartitionResult::default()
                            .with_partition_index(0)
                            .with_error_code(0)])]),
            ]),
        )),
    );
}

#[test]
fn api_versions_v5_carries_the_cluster_and_node_the_client_expects() {
    let bodies = fixtures("ApiVersionsRequest", 5);
    let expected = [(Some("Fe8-5tBYQ1eUcxyUTGXPgA"), 1), (None, -1)];
    for (body, (cluster_id, node_id)) in bodies.into_iter().zip(expected) {
        let Request::Newer(newer) = decode(ApiKey::ApiVersions, 5, body.clone()) else {
            panic!("decoded by kafka-protocol");
        };
        let NewerRequest::ApiVersions(request) = &newer else {
            panic!("{newer:?}");
        };
        assert_eq!(request.client_software_name.as_str(), "apache-kafka-java");
        assert_eq!(request.client_software_version.as_str(), "4.4.0");
        assert_eq!(request.cluster_id.as_ref().map(|c| c.as_str()), cluster_id);
        assert_eq!(request.node_id, node_id);
        assert_eq!(reencode(ApiKey::ApiVersions, 5, &newer), body);
    }
    // REBOOTSTRAP_REQUIRED as Kafka 4.4 answers a mismatch: no API list.
    check_response(
        ApiKey::ApiVersions,
        5,
        Response::Kafka(ResponseKind::ApiVersions(
            ApiVersionsResponse::default().with_error_code(129),
        )),
    );
}

#[test]
fn delete_groups_v3_answers_with_error_messages() {
    let Request::Kafka(RequestKind::DeleteGroups(request)) =
        decode(ApiKey::DeleteGroups, 3, fixture("DeleteGroupsRequest", 3))
    else {
        panic!("not a DeleteGroups");
    };
    let names: Vec<&str> = request.groups_names.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(names, ["group-1", "group-2"]);
    check_response(
        ApiKey::DeleteGroups,
        3,
        Response::Newer(NewerResponse::DeleteGroups(
            delete_groups::DeleteGroupsResponse {
                throttle_time_ms: 0,
                results: vec![
                    delete_groups::DeletableGroupResult {
                        group_id: s("group-1"),
                        error_code: 0,
                        error_message: None,
                    },
                    delete_groups::DeletableGroupResult {
                        group_id: s("group-2"),
                        error_code: 68,
                        error_message: Some(s("The group is not empty.")),
                    },
                ],
            },
        )),
    );
}

#[test]
fn describe_log_dirs_v5_says_whether_a_directory_is_cordoned() {
    let Request::Kafka(RequestKind::DescribeLogDirs(request)) = decode(
        ApiKey::DescribeLogDirs,
        5,
        fixture("DescribeLogDirsRequest", 5),
    ) else {
        panic!("not a DescribeLogDirs");
    };
    assert_eq!(request.topics, None, "null: every topic");
    check_response(
        ApiKey::DescribeLogDirs,
        5,
        Response::Newer(NewerResponse::DescribeLogDirs(
            log_dirs::DescribeLogDirsResponse {
                throttle_time_ms: 0,
                error_code: 0,
                results: vec![log_dirs::DescribeLogDirsResult {
                    error_code: 0,
                    log_dir: s("/var/lib/shale"),
                    topics: vec![log_dirs::DescribeLogDirsTopic {
                        name: s("topic-a"),
                        partitions: vec![log_dirs::DescribeLogDirsPartition {
                            partition_index: 0,
                            partition_size: 100,
                            offset_lag: 0,
                            is_future_key: false,
                        }],
                    }],
                    total_bytes: 1000,
                    usable_bytes: 500,
                    is_cordoned: false,
                }],
            },
        )),
    );
}

/// A truncated body of a newer version is a clear error, never a panic.
#[test]
fn every_fixture_cut_short_is_refused() {
    let requests = [
        ("OffsetCommitRequest", ApiKey::OffsetCommit, 10),
        ("OffsetFetchRequest", ApiKey::OffsetFetch, 10),
        ("TxnOffsetCommitRequest", ApiKey::TxnOffsetCommit, 6),
        ("WriteTxnMarkersRequest", ApiKey::WriteTxnMarkers, 2),
        ("ApiVersionsRequest", ApiKey::ApiVersions, 5),
        ("ListOffsetsRequest", ApiKey::ListOffsets, 11),
        ("DeleteGroupsRequest", ApiKey::DeleteGroups, 3),
    ];
    for (name, key, version) in requests {
        let body = fixture(name, version);
        for cut in 0..body.len() {
            assert!(
                decode_any_request(&header(key, version), body.slice(..cut)).is_err(),
                "{name} v{version} cut at {cut}"
            );
        }
    }
}
