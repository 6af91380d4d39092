//! DescribeTopicPartitions (KIP-966) and the `eligible.leader.replicas.version` feature, in
//! raw protocol frames against a real process: pagination with cursors, unknown topics, and
//! the ELR fields of each partition.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod txn_raw;

use common::Shale;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
use kafka_protocol::messages::describe_topic_partitions_response::DescribeTopicPartitionsResponse;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, BrokerId, CreateTopicsRequest, DescribeTopicPartitionsRequest,
    RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use txn_raw::{name, Conn};

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn create(conn: &mut Conn, topic: &str, partitions: i32) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    match conn.call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(request)) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0),
        other => panic!("{other:?}"),
    }
}

fn describe(
    conn: &mut Conn,
    topics: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> DescribeTopicPartitionsResponse {
    let request = DescribeTopicPartitionsRequest::default()
        .with_topics(
            topics
                .iter()
                .map(|t| TopicRequest::default().with_name(name(t)))
                .collect(),
        )
        .with_response_partition_limit(limit)
        .with_cursor(cursor.map(|(t, p)| {
            Cursor::default()
                .with_topic_name(name(t))
                .with_partition_index(p)
        }));
    match conn.call(
        ApiKey::DescribeTopicPartitions,
        0,
        RequestKind::DescribeTopicPartitions(request),
    ) {
        ResponseKind::DescribeTopicPartitions(r) => r,
        other => panic!("{other:?}"),
    }
}

/// (topic, partition indexes) in answer order.
fn listed(r: &DescribeTopicPartitionsResponse) -> Vec<(String, Vec<i32>)> {
    r.topics
        .iter()
        .map(|t| {
            (
                t.name.as_ref().unwrap().0.to_string(),
                t.partitions.iter().map(|p| p.partition_index).collect(),
            )
        })
        .collect()
}

#[test]
fn describe_topic_partitions_pages_and_reports_elr_fields() {
    let shale = Shale::start();
    let mut conn = Conn::open(&shale);
    create(&mut conn, "dtp-b", 3);
    create(&mut conn, "dtp-a", 2);

    // Requested names are answered in name order, unknown ones with their error.
    let r = describe(&mut conn, &["dtp-b", "dtp-missing", "dtp-a"], 2000, None);
    assert_eq!(
        listed(&r),
        vec![
            ("dtp-a".into(), vec![0, 1]),
            ("dtp-b".into(), vec![0, 1, 2]),
            ("dtp-missing".into(), vec![]),
        ]
    );
    assert_eq!(r.topics[2].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    assert!(r.next_cursor.is_none());
    for p in r.topics[..2].iter().flat_map(|t| t.partitions.iter()) {
        assert_eq!(p.error_code, 0);
        assert_eq!(p.leader_id, BrokerId(1));
        assert_eq!(p.replica_nodes, vec![BrokerId(1)]);
        assert_eq!(p.isr_nodes, vec![BrokerId(1)]);
        assert_eq!(p.eligible_leader_replicas, Some(vec![]));
        assert_eq!(p.last_known_elr, Some(vec![]));
        assert!(p.offline_replicas.is_empty());
    }
    assert!(!r.topics[0].topic_id.is_nil());
    assert!(!r.topics[0].is_internal);

    // Three partitions per page: the cursor names where the next page starts.
    let first = describe(&mut conn, &["dtp-a", "dtp-b"], 3, None);
    assert_eq!(
        listed(&first),
        vec![("dtp-a".into(), vec![0, 1]), ("dtp-b".into(), vec![0])]
    );
    let next = first.next_cursor.expect("more partitions");
    assert_eq!(
        (next.topic_name.0.as_str(), next.partition_index),
        ("dtp-b", 1)
    );
    let second = describe(&mut conn, &["dtp-a", "dtp-b"], 3, Some(("dtp-b", 1)));
    assert_eq!(listed(&second), vec![("dtp-b".into(), vec![1, 2])]);
    assert!(second.next_cursor.is_none());

    // No names: every topic from the cursor on.
    let all = describe(&mut conn, &[], 1, Some(("dtp-b", 2)));
    assert_eq!(listed(&all), vec![("dtp-b".into(), vec![2])]);
}

#[test]
fn api_versions_finalizes_eligible_leader_replicas_version_1() {
    let shale = Shale::start();
    let mut conn = Conn::open(&shale);
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("elr-test"))
        .with_client_software_version(StrBytes::from_static_str("1.0"));
    let ResponseKind::ApiVersions(v4) =
        conn.call(ApiKey::ApiVersions, 4, RequestKind::ApiVersions(request))
    else {
        panic!("not an ApiVersions response")
    };
    let feature = "eligible.leader.replicas.version";
    let supported = v4
        .supported_features
        .iter()
        .find(|f| f.name.as_str() == feature)
        .expect("supported");
    assert_eq!((supported.min_version, supported.max_version), (0, 1));
    let finalized = v4
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == feature)
        .expect("finalized");
    assert_eq!(
        (finalized.min_version_level, finalized.max_version_level),
        (1, 1)
    );
    let api = v4
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::DescribeTopicPartitions as i16)
        .expect("DescribeTopicPartitions advertised");
    assert_eq!((api.min_version, api.max_version), (0, 0));
}
