//! ShareFetch and ShareAcknowledge frames written out byte by byte from Kafka 4.4's specs
//! (ShareFetchRequest/Response.json, ShareAcknowledgeRequest/Response.json): each request
//! frame decodes to the values it spells and encodes back to the same bytes, and each
//! response Shale sends for those values is exactly the frame.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestKind};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::newer::{
    share_acknowledge_request as ack_req, share_acknowledge_response as ack_resp,
    share_fetch_request as fetch_req, share_fetch_response as fetch_resp,
};
use shale_protocol::{
    decode_any_request, decode_any_response, encode_any_response, encode_newer_request,
    parse_request_header, NewerRequest, NewerResponse, ProtocolError, Request, RequestHeader,
    Response,
};
use uuid::Uuid;

const TOPIC_ID: Uuid = Uuid::from_bytes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
const TOPIC_ID_BYTES: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
const CORRELATION_ID: i32 = 7;

fn s(text: &'static str) -> StrBytes {
    StrBytes::from_static_str(text)
}

fn header(key: ApiKey, version: i16) -> RequestHeader {
    RequestHeader {
        api_key: key as i16,
        api_version: version,
        correlation_id: CORRELATION_ID,
        client_id: Some("c".to_owned()),
        header_version: key.request_header_version(version),
    }
}

/// A request frame: length prefix, request header v2 (client id "c"), body.
fn request_frame(key: ApiKey, version: i16, body: &[u8]) -> Vec<u8> {
    let head: Vec<u8> = [
        &(key as i16).to_be_bytes()[..],
        &version.to_be_bytes(),
        &CORRELATION_ID.to_be_bytes(),
        &[0, 1, b'c'], // client id: classic nullable string, even in header v2
        &[0],          // header tagged fields
    ]
    .concat();
    let len = (head.len() + body.len()) as i32;
    [&len.to_be_bytes()[..], &head, body].concat()
}

/// A response frame: length prefix, response header v1, body.
fn response_frame(body: &[u8]) -> Vec<u8> {
    let len = (4 + 1 + body.len()) as i32;
    [
        &len.to_be_bytes()[..],
        &CORRELATION_ID.to_be_bytes(),
        &[0],
        body,
    ]
    .concat()
}

fn decode_request_frame(frame: &[u8]) -> Request {
    let frame = Bytes::copy_from_slice(&frame[4..]);
    let (header, body) = parse_request_header(&frame).unwrap();
    decode_any_request(&header, body).unwrap()
}

/// The request frame decodes to `expected` and `expected` encodes to the frame.
fn check_request(key: ApiKey, version: i16, body: &[u8], expected: NewerRequest) {
    let frame = request_frame(key, version, body);
    assert_eq!(
        decode_request_frame(&frame),
        Request::Newer(expected.clone()),
        "{key:?} v{version}"
    );
    let encoded = encode_newer_request(&header(key, version), &expected).unwrap();
    assert_eq!(&encoded[..], &frame[..], "{key:?} v{version}");
    // Every cut of the body is refused, never read as something shorter.
    for cut in 0..body.len() {
        let frame = request_frame(key, version, &body[..cut]);
        let frame = Bytes::copy_from_slice(&frame[4..]);
        let (header, body) = parse_request_header(&frame).unwrap();
        assert!(decode_any_request(&header, body).is_err(), "cut at {cut}");
    }
}

/// `response` encodes to the frame and the frame decodes to `response`.
fn check_response(key: ApiKey, version: i16, body: &[u8], response: NewerResponse) {
    let frame = response_frame(body);
    let response = Response::Newer(response);
    let encoded = encode_any_response(&header(key, version), &response).unwrap();
    assert_eq!(&encoded[..], &frame[..], "{key:?} v{version}");
    let (correlation_id, decoded) =
        decode_any_response(key as i16, version, Bytes::copy_from_slice(&frame[4..])).unwrap();
    assert_eq!(correlation_id, CORRELATION_ID);
    assert_eq!(decoded, response, "{key:?} v{version}");
}

/// A ShareFetch request body; `v2` adds ShareAcquireMode and IsRenewAck.
fn share_fetch_request_body(v2: bool) -> Vec<u8> {
    let v2_fields: &[u8] = if v2 {
        &[
            1, // ShareAcquireMode: record-limit
            1, // IsRenewAck: true
        ]
    } else {
        &[]
    };
    [
        &[2, b'g'][..],            // GroupId "g": compact nullable string, length + 1
        &[3, b'm', b'1'],          // MemberId "m1"
        &[0, 0, 0, 1],             // ShareSessionEpoch 1
        &[0, 0, 1, 0xf4],          // MaxWaitMs 500
        &[0, 0, 0, 1],             // MinBytes 1
        &[0, 0x10, 0, 0],          // MaxBytes 1048576
        &[0, 0, 1, 0xf4],          // MaxRecords 500
        &[0, 0, 0, 0x64],          // BatchSize 100
        v2_fields,                 //
        &[2],                      // Topics: one
        &TOPIC_ID_BYTES,           //   TopicId
        &[2],                      //   Partitions: one
        &[0, 0, 0, 3],             //     PartitionIndex 3
        &[2],                      //     AcknowledgementBatches: one
        &[0, 0, 0, 0, 0, 0, 0, 5], //       FirstOffset 5
        &[0, 0, 0, 0, 0, 0, 0, 6], //       LastOffset 6
        &[3, 1, 4],                //       AcknowledgeTypes [Accept, Renew]
        &[0],                      //       (batch tagged fields)
        &[0],                      //     (partition tagged fields)
        &[0],                      //   (topic tagged fields)
        &[2],                      // ForgottenTopicsData: one
        &TOPIC_ID_BYTES,           //   TopicId
        &[2, 0, 0, 0, 9],          //   Partitions [9]
        &[0],                      //   (tagged fields)
        &[0],                      // (tagged fields)
    ]
    .concat()
}

fn share_fetch_request(v2: bool) -> fetch_req::ShareFetchRequest {
    fetch_req::ShareFetchRequest {
        group_id: Some(s("g")),
        member_id: Some(s("m1")),
        share_session_epoch: 1,
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 1_048_576,
        max_records: 500,
        batch_size: 100,
        share_acquire_mode: if v2 { 1 } else { 0 },
        is_renew_ack: v2,
        topics: vec![fetch_req::FetchTopic {
            topic_id: TOPIC_ID,
            partitions: vec![fetch_req::FetchPartition {
                partition_index: 3,
                acknowledgement_batches: vec![fetch_req::AcknowledgementBatch {
                    first_offset: 5,
                    last_offset: 6,
                    acknowledge_types: vec![1, 4],
                }],
                ..Default::default()
            }],
        }],
        forgotten_topics_data: vec![fetch_req::ForgottenTopic {
            topic_id: TOPIC_ID,
            partitions: vec![9],
        }],
    }
}

#[test]
fn share_fetch_v1_and_v2_requests_byte_for_byte() {
    for (version, v2) in [(1, false), (2, true)] {
        check_request(
            ApiKey::ShareFetch,
            version,
            &share_fetch_request_body(v2),
            NewerRequest::ShareFetch(share_fetch_request(v2)),
        );
    }
}

/// At v1, as Kafka's writers do: the ignorable ShareAcquireMode is left out, a set
/// IsRenewAck (not ignorable) is refused.
#[test]
fn share_fetch_v2_fields_at_v1_follow_kafka() {
    let header_v1 = header(ApiKey::ShareFetch, 1);
    let mut request = share_fetch_request(true);
    let refused = encode_newer_request(&header_v1, &NewerRequest::ShareFetch(request.clone()));
    assert!(
        matches!(&refused, Err(ProtocolError::Encode(message))
            if message == "Attempted to write a non-default IsRenewAck at version 1"),
        "{refused:?}"
    );
    request.is_renew_ack = false;
    let encoded = encode_newer_request(&header_v1, &NewerRequest::ShareFetch(request)).unwrap();
    assert_eq!(
        &encoded[..],
        &request_frame(ApiKey::ShareFetch, 1, &share_fetch_request_body(false))[..]
    );
}

/// kafka-protocol reads the same v1 bytes to the same values.
#[test]
fn share_fetch_v1_request_reads_as_kafka_protocol_reads_it() {
    let mut body = Bytes::from(share_fetch_request_body(false));
    let RequestKind::ShareFetch(theirs) =
        RequestKind::decode(ApiKey::ShareFetch, &mut body, 1).unwrap()
    else {
        panic!("not a ShareFetch");
    };
    let ours = share_fetch_request(false);
    assert_eq!(theirs.group_id.map(|g| g.0), ours.group_id);
    assert_eq!(theirs.member_id, ours.member_id);
    assert_eq!(theirs.share_session_epoch, ours.share_session_epoch);
    assert_eq!(theirs.max_wait_ms, ours.max_wait_ms);
    assert_eq!(theirs.min_bytes, ours.min_bytes);
    assert_eq!(theirs.max_bytes, ours.max_bytes);
    assert_eq!(theirs.max_records, ours.max_records);
    assert_eq!(theirs.batch_size, ours.batch_size);
    let (topic, partition) = (&theirs.topics[0], &theirs.topics[0].partitions[0]);
    assert_eq!(topic.topic_id, TOPIC_ID);
    assert_eq!(partition.partition_index, 3);
    let batch = &partition.acknowledgement_batches[0];
    assert_eq!(
        (
            batch.first_offset,
            batch.last_offset,
            batch.acknowledge_types.clone()
        ),
        (5, 6, vec![1, 4])
    );
    assert_eq!(theirs.forgotten_topics_data[0].partitions, vec![9]);
}

/// A ShareFetch response body; v1 and v2 have the same layout.
fn share_fetch_response_body() -> Vec<u8> {
    [
        &[0, 0, 0, 0][..],            // ThrottleTimeMs 0
        &[0, 0],                      // ErrorCode 0
        &[0],                         // ErrorMessage null
        &[0, 0, 0x75, 0x30],          // AcquisitionLockTimeoutMs 30000
        &[2],                         // Responses: one
        &TOPIC_ID_BYTES,              //   TopicId
        &[2],                         //   Partitions: one
        &[0, 0, 0, 3],                //     PartitionIndex 3
        &[0, 0],                      //     ErrorCode 0
        &[0],                         //     ErrorMessage null
        &[0, 0],                      //     AcknowledgeErrorCode 0
        &[0],                         //     AcknowledgeErrorMessage null
        &[0, 0, 0, 1],                //     CurrentLeader.LeaderId 1
        &[0, 0, 0, 2],                //     CurrentLeader.LeaderEpoch 2
        &[0],                         //     (CurrentLeader tagged fields)
        &[4, b'a', b'b', b'c'],       // Records: compact bytes, length + 1
        &[2],                         //     AcquiredRecords: one
        &[0, 0, 0, 0, 0, 0, 0, 0x0a], //       FirstOffset 10
        &[0, 0, 0, 0, 0, 0, 0, 0x0c], //       LastOffset 12
        &[0, 1],                      //       DeliveryCount 1
        &[0],                         //       (tagged fields)
        &[0],                         //     (partition tagged fields)
        &[0],                         //   (topic tagged fields)
        &[2],                         // NodeEndpoints: one
        &[0, 0, 0, 1],                //   NodeId 1
        &[2, b'h'],                   //   Host "h"
        &[0, 0, 0x23, 0x84],          // Port 9092
        &[0],                         //   Rack null
        &[0],                         //   (tagged fields)
        &[0],                         // (tagged fields)
    ]
    .concat()
}

fn share_fetch_response() -> fetch_resp::ShareFetchResponse {
    fetch_resp::ShareFetchResponse {
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
        ..Default::default()
    }
}

#[test]
fn share_fetch_v1_and_v2_responses_byte_for_byte() {
    for version in [1, 2] {
        check_response(
            ApiKey::ShareFetch,
            version,
            &share_fetch_response_body(),
            NewerResponse::ShareFetch(share_fetch_response()),
        );
    }
}

/// The records of a decoded response are a slice of the frame, not a copy.
#[test]
fn share_fetch_response_records_stay_zero_copy() {
    let frame = Bytes::from(response_frame(&share_fetch_response_body()));
    let (_, decoded) = decode_any_response(ApiKey::ShareFetch as i16, 2, frame.slice(4..)).unwrap();
    let Response::Newer(NewerResponse::ShareFetch(response)) = decoded else {
        panic!("not a ShareFetch response");
    };
    let records = &response.responses[0].partitions[0].records;
    let start = frame.as_ptr() as usize;
    let at = records.as_ptr() as usize;
    assert!(
        at > start && at < start + frame.len(),
        "records were copied"
    );
}

/// A ShareAcknowledge request body; `v2` adds IsRenewAck.
fn share_acknowledge_request_body(v2: bool) -> Vec<u8> {
    let renew: &[u8] = if v2 { &[1] } else { &[] }; // IsRenewAck: true
    [
        &[2, b'g'][..],            // GroupId "g"
        &[3, b'm', b'1'],          // MemberId "m1"
        &[0, 0, 0, 2],             // ShareSessionEpoch 2
        renew,                     //
        &[2],                      // Topics: one
        &TOPIC_ID_BYTES,           //   TopicId
        &[2],                      //   Partitions: one
        &[0, 0, 0, 3],             //     PartitionIndex 3
        &[3],                      //     AcknowledgementBatches: two
        &[0, 0, 0, 0, 0, 0, 0, 5], //       FirstOffset 5
        &[0, 0, 0, 0, 0, 0, 0, 7], //       LastOffset 7
        &[4, 4, 1, 0],             //       AcknowledgeTypes [Renew, Accept, Gap]
        &[0],                      //       (tagged fields)
        &[0, 0, 0, 0, 0, 0, 0, 8], //       FirstOffset 8
        &[0, 0, 0, 0, 0, 0, 0, 8], //       LastOffset 8
        &[2, 3],                   //       AcknowledgeTypes [Reject]
        &[0],                      //       (tagged fields)
        &[0],                      //     (partition tagged fields)
        &[0],                      //   (topic tagged fields)
        &[0],                      // (tagged fields)
    ]
    .concat()
}

fn share_acknowledge_request(v2: bool) -> ack_req::ShareAcknowledgeRequest {
    ack_req::ShareAcknowledgeRequest {
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
    }
}

#[test]
fn share_acknowledge_v1_and_v2_requests_byte_for_byte() {
    for (version, v2) in [(1, false), (2, true)] {
        check_request(
            ApiKey::ShareAcknowledge,
            version,
            &share_acknowledge_request_body(v2),
            NewerRequest::ShareAcknowledge(share_acknowledge_request(v2)),
        );
    }
}

/// A ShareAcknowledge response body; `v2` adds AcquisitionLockTimeoutMs.
fn share_acknowledge_response_body(v2: bool) -> Vec<u8> {
    let lock: &[u8] = if v2 { &[0, 0, 0x75, 0x30] } else { &[] }; // 30000 ms
    [
        &[0, 0, 0, 5][..],      // ThrottleTimeMs 5
        &[0, 0],                // ErrorCode 0
        &[0],                   // ErrorMessage null
        lock,                   // AcquisitionLockTimeoutMs (v2)
        &[2],                   // Responses: one
        &TOPIC_ID_BYTES,        //   TopicId
        &[2],                   //   Partitions: one
        &[0, 0, 0, 3],          //     PartitionIndex 3
        &[0, 6],                //     ErrorCode 6 NOT_LEADER_OR_FOLLOWER
        &[4, b'n', b'o', b't'], // ErrorMessage "not"
        &[0, 0, 0, 2],          //     CurrentLeader.LeaderId 2
        &[0, 0, 0, 9],          //     CurrentLeader.LeaderEpoch 9
        &[0],                   //     (CurrentLeader tagged fields)
        &[0],                   //     (partition tagged fields)
        &[0],                   //   (topic tagged fields)
        &[2],                   // NodeEndpoints: one
        &[0, 0, 0, 2],          //   NodeId 2
        &[2, b'h'],             //   Host "h"
        &[0, 0, 0x23, 0x85],    //   Port 9093
        &[3, b'r', b'1'],       //   Rack "r1"
        &[0],                   //   (tagged fields)
        &[0],                   // (tagged fields)
    ]
    .concat()
}

fn share_acknowledge_response(v2: bool) -> ack_resp::ShareAcknowledgeResponse {
    ack_resp::ShareAcknowledgeResponse {
        throttle_time_ms: 5,
        acquisition_lock_timeout_ms: if v2 { 30_000 } else { 0 },
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
        ..Default::default()
    }
}

#[test]
fn share_acknowledge_v1_and_v2_responses_byte_for_byte() {
    for (version, v2) in [(1, false), (2, true)] {
        check_response(
            ApiKey::ShareAcknowledge,
            version,
            &share_acknowledge_response_body(v2),
            NewerResponse::ShareAcknowledge(share_acknowledge_response(v2)),
        );
    }
}

/// A response with a field the version cannot carry travels without it, as Kafka writes it.
#[test]
fn share_acknowledge_lock_timeout_is_dropped_at_v1() {
    let response = Response::Newer(NewerResponse::ShareAcknowledge(share_acknowledge_response(
        true,
    )));
    let encoded = encode_any_response(&header(ApiKey::ShareAcknowledge, 1), &response).unwrap();
    assert_eq!(
        &encoded[..],
        &response_frame(&share_acknowledge_response_body(false))[..]
    );
}
