//! The README's three-node cluster, from the repository's own `config/cluster/node-N.properties`
//! (only ports and data directories overridden): topics get three replicas and
//! `min.insync.replicas=2`, the internal topics too, and a topic survives the loss of a node
//! without losing an acknowledged record.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use std::time::Duration;

use cluster_support::{call, metadata, read_from_beginning, Cluster, WAIT_MAX};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, DescribeConfigsRequest, FindCoordinatorRequest, RequestKind,
    ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};
use shale_testkit::wait_until;

const TOPIC: &str = "orders";

/// Each partition's replica count, as `addr` reports `topic`.
fn replica_counts(addr: &str, topic: &str) -> Vec<usize> {
    metadata(addr)
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
        .map(|t| t.partitions.iter().map(|p| p.replica_nodes.len()).collect())
        .unwrap_or_default()
}

/// Writes `records` with acks=all; every one must be acknowledged.
fn write_all(bootstrap: &str, tag: &str, records: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", "30000")
        .create()
        .unwrap();
    for i in 0..records {
        let payload = format!("{tag}-{i}");
        let key = i.to_string();
        let record = FutureRecord::to(TOPIC).key(&key).payload(&payload);
        runtime
            .block_on(producer.send(record, Duration::from_secs(30)))
            .unwrap_or_else(|(e, _)| panic!("{payload} not acknowledged: {e}"));
    }
}

#[test]
fn the_example_cluster_replicates_and_survives_a_lost_node() {
    let mut cluster = Cluster::from_example_configs();
    let addr = cluster.node(1).bootstrap();

    // A topic with the brokers' defaults: three partitions, three replicas each.
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_num_partitions(-1)
            .with_replication_factor(-1)])
        .with_timeout_ms(30_000);
    match call(
        &addr,
        ApiKey::CreateTopics,
        7,
        RequestKind::CreateTopics(request),
    ) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0, "{r:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(replica_counts(&addr, TOPIC), vec![3, 3, 3]);
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str(TOPIC))
            .with_configuration_keys(Some(vec![StrBytes::from_static_str(
                "min.insync.replicas",
            )]))]);
    match call(
        &addr,
        ApiKey::DescribeConfigs,
        4,
        RequestKind::DescribeConfigs(request),
    ) {
        ResponseKind::DescribeConfigs(r) => {
            let value = r.results[0].configs[0]
                .value
                .as_ref()
                .map(|v| v.to_string());
            assert_eq!(value.as_deref(), Some("2"));
        }
        other => panic!("{other:?}"),
    }
    // The group coordinator's topic is replicated the same way.
    let request = FindCoordinatorRequest::default()
        .with_key_type(0)
        .with_coordinator_keys(vec![StrBytes::from_static_str("example-group")]);
    call(
        &addr,
        ApiKey::FindCoordinator,
        4,
        RequestKind::FindCoordinator(request),
    );
    wait_until("__consumer_offsets with three replicas", WAIT_MAX, || {
        let counts = replica_counts(&addr, "__consumer_offsets");
        !counts.is_empty() && counts.iter().all(|c| *c == 3)
    });

    let servers = cluster.bootstrap_all();
    write_all(&servers, "before", 30);

    // One node is lost: the other two still acknowledge acks=all writes (two in-sync
    // replicas meet min.insync.replicas=2) and serve every acknowledged record.
    cluster.kill(3);
    let survivors = format!(
        "{},{}",
        cluster.node(1).bootstrap(),
        cluster.node(2).bootstrap()
    );
    write_all(&survivors, "after", 30);
    let mut expected: Vec<String> = (0..30)
        .flat_map(|i| [format!("before-{i}"), format!("after-{i}")])
        .collect();
    expected.sort();
    assert_eq!(read_from_beginning(&survivors, TOPIC, 3, 60), expected);
}
