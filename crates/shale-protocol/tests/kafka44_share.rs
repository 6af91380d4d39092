//! The share-group messages Shale's codec carries, against bytes written by Kafka 4.4's
//! own message classes at every version (`kafka44/KafkaFixtures.java`, `shareFixtures`):
//! each request decodes to the values the fixture set (less the fields its version lacks)
//! and encodes back to the same bytes; each response Shale would send for those values is
//! byte for byte Kafka's, and Kafka's bytes decode to it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;
use shale_protocol::newer::{
    describe_share_group_offsets_request as dsgo_req,
    describe_share_group_offsets_response as dsgo_resp,
    read_share_group_state_summary_request as summary_req,
    read_share_group_state_summary_response as summary_resp, share_acknowledge_request as ack_req,
    share_acknowledge_response as ack_resp, share_fetch_request as fetch_req,
    share_fetch_response as fetch_resp, write_share_group_state_request as write_req,
    write_share_group_state_response as write_resp,
};
use shale_protocol::{
    decode_any_request, decode_any_response, encode_any_response, encode_newer_request,
    NewerRequest, NewerResponse, Request, RequestHeader, Response,
};
use uuid::Uuid;

const FIXTURES: &str = include_str!("kafka44/kafka44.txt");
const TOPIC_ID: Uuid = Uuid::from_bytes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);

fn fixture(message: &str, version: i16) -> Bytes {
    let hex = FIXTURES
        .lines()
        .find_map(|line| {
            let mut parts = line.split(' ');
            let (name, v, hex) = (parts.next()?, parts.next()?, parts.next().unwrap_or(""));
            (name == message && v.parse::<i16>().ok()? == version).then_some(hex)
        })
        .unwrap_or_else(|| panic!("no fixture {message} v{version}"));
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

/// Kafka's request bytes decode to `expected`, which encodes back to them.
fn check_request(key: ApiKey, version: i16, expected: NewerRequest) {
    let body = fixture(&format!("{key:?}Request"), version);
    let decoded = decode_any_request(&header(key, version), body.clone()).unwrap();
    assert_eq!(
        decoded,
        Request::Newer(expected.clone()),
        "{key:?} v{version}"
    );
    let frame = encode_newer_request(&header(key, version), &expected).unwrap();
    // Length, api key, version, correlation id, client id "kafka44", header tagged fields.
    let head = 4 + 2 + 2 + 4 + 2 + 7 + 1;
    assert_eq!(&frame[head..], &body[..], "{key:?} v{version}");
}

/// `sent` encodes to Kafka's response bytes, which decode to `received` (`sent` less the
/// fields the version lacks).
fn check_response(key: ApiKey, version: i16, sent: NewerResponse, received: NewerResponse) {
    let body = fixture(&format!("{key:?}Response"), version);
    let frame = encode_any_response(&header(key, version), &Response::Newer(sent)).unwrap();
    // Length, correlation id, header tagged fields.
    assert_eq!(&frame[9..], &body[..], "{key:?} v{version}");
    let mut as_received = BytesMut::from(&frame[4..]);
    let (correlation_id, decoded) =
        decode_any_response(key as i16, version, as_received.split().freeze()).unwrap();
    assert_eq!(correlation_id, 7);
    assert_eq!(decoded, Response::Newer(received), "{key:?} v{version}");
}

#[test]
fn share_fetch_at_every_version() {
    for version in 1..=2 {
        let v2 = version >= 2;
        let request = fetch_req::ShareFetchRequest {
            group_id: Some(s("g")),
            member_id: Some(s("m1")),
            share_session_epoch: 1,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 1_048_576,
            max_records: 500,
            batch_size: 100,
            // Ignorable: Kafka leaves it out of v1.
            share_acquire_mode: if v2 { 1 } else { 0 },
            is_renew_ack: v2,
            topics: vec![fetch_req::FetchTopic {
                topic_id: TOPIC_ID,
                partitions: vec![fetch_req::FetchPartition {
                    partition_index: 3,
                    partition_max_bytes: 0,
                    acknowledgement_batches: vec![fetch_req::AcknowledgementBatch {
                        first_offset: 5,
                        last_offset: 6,
                        acknowledge_types: vec![1, 4],
                    }],
                }],
            }],
            forgotten_topics_data: vec![fetch_req::ForgottenTopic {
                topic_id: TOPIC_ID,
                partitions: vec![9],
            }],
        };
        check_request(
            ApiKey::ShareFetch,
            version,
            NewerRequest::ShareFetch(request),
        );

        let response = fetch_resp::ShareFetchResponse {
            throttle_time_ms: 0,
            error_code: 0,
            error_message: None,
            acquisition_lock_timeout_ms: 30_000,
            responses: vec![fetch_resp::ShareFetchableTopicResponse {
                topic_id: TOPIC_ID,
                partitions: vec![fetch_resp::PartitionData {
                    partition_index: 3,
                    current_leader: fetch_resp::LeaderIdAndEpoch {
                        leader_id: 1,
                        leader_epoch: 2,
                    },
                    records: Bytes::from_static(b"abc"),
                    acquired_records: vec![fetch_resp::AcquiredRecords {
                        first_offset: 10,
                        last_offset: 12,
                        delivery_count: 1,
                    }],
                    ..Default::default()
                }],
            }],
            node_endpoints: vec![fetch_resp::NodeEndpoint {
                node_id: 1,
                host: s("h"),
                port: 9092,
                rack: None,
            }],
        };
        check_response(
            ApiKey::ShareFetch,
            version,
            NewerResponse::ShareFetch(response.clone()),
            NewerResponse::ShareFetch(response),
        );
    }
}

#[test]
fn share_acknowledge_at_every_version() {
    for version in 1..=2 {
        let v2 = version >= 2;
        let request = ack_req::ShareAcknowledgeRequest {
            group_id: Some(s("g")),
            member_id: Some(s("m1")),
            share_session_epoch: 2,
            is_renew_ack: v2,
            topics: vec![ack_req::AcknowledgeTopic {
                topic_id: TOPIC_ID,
                partitions: vec![ack_req::AcknowledgePartition {
                    partition_index: 3,
                    acknowledgement_batches: vec![
                        ack_req::AcknowledgementBatch {
                            first_offset: 5,
                            last_offset: 7,
                            acknowledge_types: vec![4, 1, 0],
                        },
                        ack_req::AcknowledgementBatch {
                            first_offset: 8,
                            last_offset: 8,
                            acknowledge_types: vec![3],
                        },
                    ],
                }],
            }],
        };
        check_request(
            ApiKey::ShareAcknowledge,
            version,
            NewerRequest::ShareAcknowledge(request),
        );

        let sent = ack_resp::ShareAcknowledgeResponse {
            throttle_time_ms: 5,
            error_code: 0,
            error_message: None,
            acquisition_lock_timeout_ms: 30_000,
            responses: vec![ack_resp::ShareAcknowledgeTopicResponse {
                topic_id: TOPIC_ID,
                partitions: vec![ack_resp::PartitionData {
                    partition_index: 3,
                    error_code: 6,
                    error_message: Some(s("not")),
                    current_leader: ack_resp::LeaderIdAndEpoch {
                        leader_id: 2,
                        leader_epoch: 9,
                    },
                }],
            }],
            node_endpoints: vec![ack_resp::NodeEndpoint {
                node_id: 2,
                host: s("h"),
                port: 9093,
                rack: Some(s("r1")),
            }],
        };
        // Ignorable: v1 has no lock timeout, so it is left out and reads back as 0.
        let received = ack_resp::ShareAcknowledgeResponse {
            acquisition_lock_timeout_ms: if v2 { 30_000 } else { 0 },
            ..sent.clone()
        };
        check_response(
            ApiKey::ShareAcknowledge,
            version,
            NewerResponse::ShareAcknowledge(sent),
            NewerResponse::ShareAcknowledge(received),
        );
    }
}

#[test]
fn write_share_group_state_at_every_version() {
    for version in 0..=1 {
        let request = write_req::WriteShareGroupStateRequest {
            group_id: s("g"),
            topics: vec![write_req::WriteStateData {
                topic_id: TOPIC_ID,
                partitions: vec![write_req::PartitionData {
                    partition: 3,
                    state_epoch: 4,
                    leader_epoch: 5,
                    start_offset: 100,
                    // Ignorable: Kafka leaves it out of v0; its default is -1.
                    delivery_complete_count: if version >= 1 { 7 } else { -1 },
                    state_batches: vec![write_req::StateBatch {
                        first_offset: 100,
                        last_offset: 109,
                        delivery_state: 2,
                        delivery_count: 1,
                    }],
                }],
            }],
        };
        check_request(
            ApiKey::WriteShareGroupState,
            version,
            NewerRequest::WriteShareGroupState(request),
        );

        let response = write_resp::WriteShareGroupStateResponse {
            results: vec![write_resp::WriteStateResult {
                topic_id: TOPIC_ID,
                partitions: vec![write_resp::PartitionResult {
                    partition: 3,
                    error_code: 124,
                    error_message: Some(s("fenced")),
                }],
            }],
        };
        check_response(
            ApiKey::WriteShareGroupState,
            version,
            NewerResponse::WriteShareGroupState(response.clone()),
            NewerResponse::WriteShareGroupState(response),
        );
    }
}

#[test]
fn read_share_group_state_summary_at_every_version() {
    for version in 0..=1 {
        let request = summary_req::ReadShareGroupStateSummaryRequest {
            group_id: s("g"),
            topics: vec![summary_req::ReadStateSummaryData {
                topic_id: TOPIC_ID,
                partitions: vec![summary_req::PartitionData {
                    partition: 3,
                    leader_epoch: 5,
                }],
            }],
        };
        check_request(
            ApiKey::ReadShareGroupStateSummary,
            version,
            NewerRequest::ReadShareGroupStateSummary(request),
        );

        let partition = summary_resp::PartitionResult {
            partition: 3,
            error_code: 0,
            error_message: None,
            state_epoch: 4,
            leader_epoch: 5,
            start_offset: 100,
            delivery_complete_count: 7,
        };
        let with = |delivery_complete_count| summary_resp::ReadShareGroupStateSummaryResponse {
            results: vec![summary_resp::ReadStateSummaryResult {
                topic_id: TOPIC_ID,
                partitions: vec![summary_resp::PartitionResult {
                    delivery_complete_count,
                    ..partition.clone()
                }],
            }],
        };
        check_response(
            ApiKey::ReadShareGroupStateSummary,
            version,
            NewerResponse::ReadShareGroupStateSummary(with(7)),
            NewerResponse::ReadShareGroupStateSummary(with(if version >= 1 { 7 } else { -1 })),
        );
    }
}

#[test]
fn describe_share_group_offsets_at_every_version() {
    for version in 0..=1 {
        let request = dsgo_req::DescribeShareGroupOffsetsRequest {
            groups: vec![
                dsgo_req::DescribeShareGroupOffsetsRequestGroup {
                    group_id: s("g"),
                    topics: Some(vec![dsgo_req::DescribeShareGroupOffsetsRequestTopic {
                        topic_name: s("topic-a"),
                        partitions: vec![0, 1],
                    }]),
                },
                dsgo_req::DescribeShareGroupOffsetsRequestGroup {
                    group_id: s("h"),
                    topics: None,
                },
            ],
        };
        check_request(
            ApiKey::DescribeShareGroupOffsets,
            version,
            NewerRequest::DescribeShareGroupOffsets(request),
        );

        let with = |lag| dsgo_resp::DescribeShareGroupOffsetsResponse {
            throttle_time_ms: 0,
            groups: vec![dsgo_resp::DescribeShareGroupOffsetsResponseGroup {
                group_id: s("g"),
                topics: vec![dsgo_resp::DescribeShareGroupOffsetsResponseTopic {
                    topic_name: s("topic-a"),
                    topic_id: TOPIC_ID,
                    partitions: vec![dsgo_resp::DescribeShareGroupOffsetsResponsePartition {
                        partition_index: 0,
                        start_offset: 100,
                        leader_epoch: 5,
                        lag,
                        error_code: 0,
                        error_message: None,
                    }],
                }],
                error_code: 0,
                error_message: None,
            }],
        };
        // Lag is v1's and ignorable: left out of v0, read back as its default -1.
        check_response(
            ApiKey::DescribeShareGroupOffsets,
            version,
            NewerResponse::DescribeShareGroupOffsets(with(42)),
            NewerResponse::DescribeShareGroupOffsets(with(if version >= 1 { 42 } else { -1 })),
        );
    }
}
