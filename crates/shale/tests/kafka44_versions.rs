//! The versions Shale serves past kafka-protocol 0.18, spoken to the real binary in raw
//! frames: ApiVersions 5, ListOffsets 11, OffsetCommit and OffsetFetch 10, TxnOffsetCommit 6,
//! WriteTxnMarkers 2, DeleteGroups 3 and DescribeLogDirs 5. Bodies that kafka-protocol cannot
//! encode are written with shale-protocol's generated codec, whose bytes are checked against
//! Kafka 4.4's own serializer in shale-protocol's tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod txn_raw;

use std::time::{Duration, Instant};

use bytes::BytesMut;
use common::Shale;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, DeleteGroupsRequest, DescribeLogDirsRequest, GroupId,
    ListOffsetsRequest, MetadataRequest, OffsetFetchRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::newer::{
    api_versions_request, offset_commit_request as commit, offset_fetch_request as fetch,
    txn_offset_commit_request as txn_commit, write_txn_markers_request as markers, Encoder,
};
use shale_protocol::{NewerResponse, Response};
use txn_raw::*;
use uuid::Uuid;

const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const UNSUPPORTED_VERSION: i16 = 35;
const INVALID_REQUEST: i16 = 42;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const GROUP_ID_NOT_FOUND: i16 = 69;
const UNKNOWN_TOPIC_ID: i16 = 100;
const REBOOTSTRAP_REQUIRED: i16 = 129;

/// An id no topic has.
const UNKNOWN_ID: Uuid = Uuid::from_u128(0x0bad_0bad_0bad_0bad_0bad_0bad_0bad_0bad);

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// Encodes a body in Shale's generated codec at `version`.
fn body(version: i16, encode: impl FnOnce(&mut Encoder, i16)) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode(&mut Encoder::new(&mut out), version);
    out.to_vec()
}

fn kafka(response: Response) -> ResponseKind {
    match response {
        Response::Kafka(r) => r,
        Response::Newer(r) => panic!("answered in Shale's types: {r:?}"),
    }
}

/// The cluster id, this node's id and the id of `topic`, from Metadata v12.
fn cluster_node_and_topic_id(conn: &mut Conn, topic: &str) -> (String, i32, Uuid) {
    let request = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(name(topic))),
    ]));
    let ResponseKind::Metadata(metadata) =
        conn.call(ApiKey::Metadata, 12, RequestKind::Metadata(request))
    else {
        panic!("not a Metadata response");
    };
    let cluster_id = metadata.cluster_id.unwrap().to_string();
    let node_id = metadata.brokers[0].node_id.0;
    let topic_id = metadata.topics[0].topic_id;
    assert!(!topic_id.is_nil());
    (cluster_id, node_id, topic_id)
}

fn api_versions_v5(conn: &mut Conn, cluster_id: Option<&str>, node_id: i32) -> ApiVersionsResponse {
    let request = api_versions_request::ApiVersionsRequest {
        client_software_name: s("shale-test"),
        client_software_version: s("1.0"),
        cluster_id: cluster_id.map(s),
        node_id,
    };
    let bytes = body(5, |e, v| request.encode(e, v).unwrap());
    match kafka(conn.call_body(ApiKey::ApiVersions, 5, &bytes)) {
        ResponseKind::ApiVersions(r) => r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn api_versions_v5_checks_the_cluster_and_node_the_client_expects() {
    let shale = Shale::start();
    let mut conn = Conn::open(&shale);
    create_topic(&mut conn, "av5");
    let (cluster_id, node_id, _) = cluster_node_and_topic_id(&mut conn, "av5");

    // A client that knows nothing yet, and one that knows this cluster and node.
    for (cluster, node) in [(None, -1), (Some(cluster_id.as_str()), node_id)] {
        let r = api_versions_v5(&mut conn, cluster, node);
        assert_eq!(r.error_code, 0);
        let max = |key: ApiKey| {
            r.api_keys
                .iter()
                .find(|k| k.api_key == key as i16)
                .map(|k| (k.min_version, k.max_version))
        };
        assert_eq!(max(ApiKey::ApiVersions), Some((0, 5)));
        assert_eq!(max(ApiKey::ListOffsets), Some((1, 11)));
        assert_eq!(max(ApiKey::OffsetCommit), Some((2, 10)));
        assert_eq!(max(ApiKey::OffsetFetch), Some((1, 10)));
        assert_eq!(max(ApiKey::TxnOffsetCommit), Some((0, 6)));
        assert_eq!(max(ApiKey::WriteTxnMarkers), Some((1, 2)));
        assert_eq!(max(ApiKey::DeleteGroups), Some((0, 3)));
        assert_eq!(max(ApiKey::DescribeLogDirs), Some((1, 5)));
        assert!(!r.finalized_features.is_empty(), "features as in v4");
    }
    // Another cluster, or another node behind this address: rebootstrap, no API list.
    for (cluster, node) in [
        ("another-cluster", node_id),
        (cluster_id.as_str(), node_id + 7),
    ] {
        let r = api_versions_v5(&mut conn, Some(cluster), node);
        assert_eq!(r.error_code, REBOOTSTRAP_REQUIRED);
        assert!(r.api_keys.is_empty());
    }
    // One without the other is an invalid request.
    assert_eq!(
        api_versions_v5(&mut conn, Some(cluster_id.as_str()), -1).error_code,
        INVALID_REQUEST
    );
    assert_eq!(
        api_versions_v5(&mut conn, None, node_id).error_code,
        INVALID_REQUEST
    );
    // The connection is still good.
    assert_eq!(api_versions_v5(&mut conn, None, -1).error_code, 0);
}

#[test]
fn list_offsets_v11_answers_earliest_pending_upload() {
    let shale = Shale::start();
    let mut conn = Conn::open(&shale);
    create_topic(&mut conn, "lo11");
    let list = |conn: &mut Conn, version: i16, timestamp: i64| {
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_timeout_ms(30_000)
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(name("lo11"))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(timestamp)])]);
        match conn.call(
            ApiKey::ListOffsets,
            version,
            RequestKind::ListOffsets(request),
        ) {
            ResponseKind::ListOffsets(r) => r.topics[0].partitions[0].clone(),
            other => panic!("{other:?}"),
        }
    };
    // Nothing waits for a tiered upload: no offset, as Kafka answers.
    let pending = list(&mut conn, 11, -6);
    assert_eq!(
        (pending.error_code, pending.offset, pending.timestamp),
        (0, -1, -1)
    );
    assert_eq!(list(&mut conn, 10, -6).error_code, UNSUPPORTED_VERSION);
    let latest = list(&mut conn, 11, -1);
    assert_eq!((latest.error_code, latest.offset), (0, 0));
}

fn commit_v10(conn: &mut Conn, group: &str, topics: Vec<(Uuid, i64)>) -> Vec<(Uuid, i16)> {
    let request = commit::OffsetCommitRequest {
        group_id: s(group),
        topics: topics
            .into_iter()
            .map(|(topic_id, offset)| commit::OffsetCommitRequestTopic {
                topic_id,
                partitions: vec![commit::OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: offset,
                    committed_leader_epoch: -1,
                    committed_metadata: Some(s("v10")),
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let bytes = body(10, |e, v| request.encode(e, v).unwrap());
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let ResponseKind::OffsetCommit(r) = kafka(conn.call_body(ApiKey::OffsetCommit, 10, &bytes))
        else {
            panic!("not an OffsetCommit response");
        };
        let answered: Vec<(Uuid, i16)> = r
            .topics
            .iter()
            .map(|t| (t.topic_id, t.partitions[0].error_code))
            .collect();
        // The offsets topic was just created: its coordinator may still be loading.
        let loading = answered
            .iter()
            .any(|(_, code)| *code == COORDINATOR_LOAD_IN_PROGRESS);
        if !loading || Instant::now() > deadline {
            return answered;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// OffsetFetch v10 of one group: (topic id, offset, metadata, error) per answered topic.
fn fetch_v10(
    conn: &mut Conn,
    group: &str,
    topics: Option<Vec<Uuid>>,
) -> Vec<(Uuid, i64, String, i16)> {
    let request = fetch::OffsetFetchRequest {
        groups: vec![fetch::OffsetFetchRequestGroup {
            group_id: s(group),
            member_id: None,
            member_epoch: -1,
            topics: topics.map(|ids| {
                ids.into_iter()
                    .map(|topic_id| fetch::OffsetFetchRequestTopics {
                        topic_id,
                        partition_indexes: vec![0],
                        ..Default::default()
                    })
                    .collect()
            }),
        }],
        ..Default::default()
    };
    let bytes = body(10, |e, v| request.encode(e, v).unwrap());
    let ResponseKind::OffsetFetch(r) = kafka(conn.call_body(ApiKey::OffsetFetch, 10, &bytes))
    else {
        panic!("not an OffsetFetch response");
    };
    assert_eq!(r.groups[0].error_code, 0);
    r.groups[0]
        .topics
        .iter()
        .map(|t| {
            let p = &t.partitions[0];
            let metadata = p
                .metadata
                .as_ref()
                .map(|m| m.to_string())
                .unwrap_or_default();
            (t.topic_id, p.committed_offset, metadata, p.error_code)
        })
        .collect()
}

#[test]
fn offset_commit_and_fetch_v10_name_topics_by_id() {
    let shale = Shale::start();
    let mut conn = Conn::open(&shale);
    create_topic(&mut conn, "ids10");
    let (_, _, topic_id) = cluster_node_and_topic_id(&mut conn, "ids10");

    let committed = commit_v10(&mut conn, "g10", vec![(topic_id, 42), (UNKNOWN_ID, 1)]);
    assert_eq!(
        committed,
        vec![(topic_id, 0), (UNKNOWN_ID, UNKNOWN_TOPIC_ID)]
    );

    let fetched = fetch_v10(&mut conn, "g10", Some(vec![topic_id, UNKNOWN_ID]));
    assert_eq!(fetched.len(), 2, "{fetched:?}");
    assert_eq!(fetched[0], (topic_id, 42, "v10".to_string(), 0));
    assert_eq!(
        (fetched[1].0, fetched[1].1, fetched[1].3),
        (UNKNOWN_ID, -1, UNKNOWN_TOPIC_ID)
    );
    // Every topic of the group, by id.
    assert_eq!(
        fetch_v10(&mut conn, "g10", None),
        vec![(topic_id, 42, "v10".to_string(), 0)]
    );

    // The same offsets by name, at v9.
    let request =
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s("g10")))
            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                .with_name(name("ids10"))
                .with_partition_indexes(vec![0])]))]);
    let ResponseKind::OffsetFetch(r) =
        conn.call(ApiKey::OffsetFetch, 9, RequestKind::OffsetFetch(request))
    else {
        panic!("not an OffsetFetch response");
    };
    assert_eq!(r.groups[0].topics[0].partitions[0].committed_offset, 42);
}

#[test]
fn txn_offset_commit_v6_names_topics_by_id() {
    let shale = Shale::start_with(&["transaction.state.log.num.partitions=2"]);
    let mut conn = Conn::open(&shale);
    create_topic(&mut conn, "txn6");
    let (_, _, topic_id) = cluster_node_and_topic_id(&mut conn, "txn6");
    let txn = "raw-txn6";
    let id = init_producer_id(&mut conn, txn);

    let request = txn_commit::TxnOffsetCommitRequest {
        transactional_id: s(txn),
        group_id: s("g6"),
        producer_id: id.0,
        producer_epoch: id.1,
        topics: [(topic_id, 7), (UNKNOWN_ID, 1)]
            .into_iter()
            .map(
                |(topic_id, offset)| txn_commit::TxnOffsetCommitRequestTopic {
                    topic_id,
                    partitions: vec![txn_commit::TxnOffsetCommitRequestPartition {
                        partition_index: 0,
                        committed_offset: offset,
                        committed_leader_epoch: -1,
                        committed_metadata: None,
                    }],
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    };
    let bytes = body(6, |e, v| request.encode(e, v).unwrap());
    let Response::Newer(NewerResponse::TxnOffsetCommit(r)) =
        conn.call_body(ApiKey::TxnOffsetCommit, 6, &bytes)
    else {
        panic!("not a TxnOffsetCommit v6 response");
    };
    let answered: Vec<(Uuid, i16)> = r
        .topics
        .iter()
        .map(|t| (t.topic_id, t.partitions[0].error_code))
        .collect();
    assert_eq!(
        answered,
        vec![(topic_id, 0), (UNKNOWN_ID, UNKNOWN_TOPIC_ID)]
    );

    // Not visible until the transaction commits (transaction version 2: EndTxn v5).
    let (code, _) = end_txn(&mut conn, txn, id, true);
    assert_eq!(code, 0);
    let fetched = fetch_v10(&mut conn, "g6", Some(vec![topic_id]));
    assert_eq!((fetched[0].1, fetched[0].3), (7, 0));
}

fn marker_v2(conn: &mut Conn, id: (i64, i16), topic: &str, transaction_version: i8) -> i16 {
    let request = markers::WriteTxnMarkersRequest {
        markers: vec![markers::WritableTxnMarker {
            producer_id: id.0,
            producer_epoch: id.1,
            transaction_result: false,
            topics: vec![markers::WritableTxnMarkerTopic {
                name: s(topic),
                partition_indexes: vec![0],
            }],
            coordinator_epoch: 0,
            transaction_version,
        }],
    };
    let bytes = body(2, |e, v| request.encode(e, v).unwrap());
    match kafka(conn.call_body(ApiKey::WriteTxnMarkers, 2, &bytes)) {
        ResponseKind::WriteTxnMarkers(r) => r.markers[0].topics[0].partitions[0].error_code,
        other => panic!("{other:?}"),
    }
}

#[test]
fn write_txn_markers_v2_checks_each_marker_with_its_transaction_versions_rule() {
    let shale = Shale::start_with(&["transaction.state.log.num.partitions=2"]);
    let mut conn = Conn::open(&shale);
    let (topic, txn) = ("markers2", "raw-markers2");
    create_topic(&mut conn, topic);
    let id = init_producer_id(&mut conn, txn);
    assert_eq!(add_partition(&mut conn, txn, id, topic), 0);
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 0, "open")),
        0
    );
    assert_eq!(stable_and_end(&mut conn, topic), (0, 1));

    // Transaction version 2 bumps the epoch for its marker: one at the transaction's own
    // epoch is a stale marker and is refused.
    assert_eq!(marker_v2(&mut conn, id, topic, 2), INVALID_PRODUCER_EPOCH);
    assert_eq!(stable_and_end(&mut conn, topic), (0, 1), "nothing written");
    // The legacy rule (transaction version 1) takes the same marker.
    assert_eq!(marker_v2(&mut conn, id, topic, 1), 0);
    assert_eq!(stable_and_end(&mut conn, topic), (2, 2));
    // A version 2 marker at a newer epoch is taken.
    assert_eq!(marker_v2(&mut conn, (id.0, id.1 + 1), topic, 2), 0);
}

#[test]
fn delete_groups_v3_and_describe_log_dirs_v5_answer_in_their_newer_layouts() {
    let shale = Shale::start();
    let mut conn = Conn::open(&shale);
    create_topic(&mut conn, "dg3");
    let (_, _, topic_id) = cluster_node_and_topic_id(&mut conn, "dg3");
    assert_eq!(
        commit_v10(&mut conn, "g-del", vec![(topic_id, 3)]),
        vec![(topic_id, 0)]
    );

    let request = DeleteGroupsRequest::default()
        .with_groups_names(vec![GroupId(s("g-del")), GroupId(s("g-missing"))]);
    let Response::Newer(NewerResponse::DeleteGroups(r)) =
        conn.call_any(ApiKey::DeleteGroups, 3, RequestKind::DeleteGroups(request))
    else {
        panic!("not a DeleteGroups v3 response");
    };
    let results: Vec<(&str, i16, Option<&str>)> = r
        .results
        .iter()
        .map(|g| {
            (
                g.group_id.as_str(),
                g.error_code,
                g.error_message.as_ref().map(|m| m.as_str()),
            )
        })
        .collect();
    // A group's own outcome carries no message, as in Kafka 4.4.
    assert_eq!(
        results,
        vec![("g-del", 0, None), ("g-missing", GROUP_ID_NOT_FOUND, None)]
    );

    let Response::Newer(NewerResponse::DescribeLogDirs(r)) = conn.call_any(
        ApiKey::DescribeLogDirs,
        5,
        RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default().with_topics(None)),
    ) else {
        panic!("not a DescribeLogDirs v5 response");
    };
    assert_eq!(r.error_code, 0);
    let dir = &r.results[0];
    assert_eq!(dir.error_code, 0);
    assert_eq!(dir.log_dir.as_str(), shale.data_dir().display().to_string());
    assert!(!dir.is_cordoned);
    assert!(dir.total_bytes > 0 && dir.usable_bytes > 0);
    assert!(dir.topics.iter().any(|t| t.name.as_str() == "dg3"));
}

/// A malformed body of a newer version closes that connection only.
#[test]
fn a_truncated_newer_request_closes_only_its_connection() {
    let shale = Shale::start();
    let mut conn = Conn::open(&shale);
    create_topic(&mut conn, "cut10");
    let (_, _, topic_id) = cluster_node_and_topic_id(&mut conn, "cut10");
    let request = commit::OffsetCommitRequest {
        group_id: s("g-cut"),
        topics: vec![commit::OffsetCommitRequestTopic {
            topic_id,
            ..Default::default()
        }],
        ..Default::default()
    };
    let bytes = body(10, |e, v| request.encode(e, v).unwrap());
    let mut bad = Conn::open(&shale);
    bad.send_body(ApiKey::OffsetCommit, 10, &bytes[..bytes.len() - 3]);
    assert!(bad.is_closed());
    // An array count far beyond the bytes sent: refused before anything is reserved.
    let mut lying = Conn::open(&shale);
    lying.send_body(
        ApiKey::TxnOffsetCommit,
        6,
        &[0x05, b'a', b'b', b'c', b'd', 0xff, 0xff, 0xff, 0xff, 0x0f],
    );
    assert!(lying.is_closed());
    assert_eq!(api_versions_v5(&mut conn, None, -1).error_code, 0);
}
