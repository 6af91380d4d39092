//! A consumer-protocol group (KIP-848) survives the kill -9 of its coordinator's broker on a
//! three-node cluster: the new coordinator loads the group from `__consumer_offsets` (members,
//! epochs, assignments), the members keep their partitions and go on consuming, and nothing
//! committed is lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use cluster_support::{call, Cluster, WAIT_MAX};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, CreateTopicsRequest, FindCoordinatorRequest, GroupId,
    RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

const GROUP: &str = "survivor";
const TOPIC: &str = "events";
const PARTITIONS: i32 = 4;

fn cluster() -> Cluster {
    Cluster::combined_with(
        3,
        &[
            "offsets.topic.replication.factor=3",
            "offsets.topic.num.partitions=3",
            "default.replication.factor=3",
            "min.insync.replicas=2",
            "group.consumer.min.session.timeout.ms=1000",
            "group.consumer.session.timeout.ms=20000",
            "group.consumer.min.heartbeat.interval.ms=100",
            "group.consumer.heartbeat.interval.ms=500",
            "replica.fetch.backoff.ms=100",
            "replica.fetch.wait.max.ms=200",
        ],
    )
}

fn create_topic(addr: &str) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_num_partitions(PARTITIONS)
            .with_replication_factor(3)])
        .with_timeout_ms(30_000);
    match call(
        addr,
        ApiKey::CreateTopics,
        5,
        RequestKind::CreateTopics(request),
    ) {
        ResponseKind::CreateTopics(response) => {
            assert_eq!(response.topics[0].error_code, 0, "{response:?}")
        }
        other => panic!("{other:?}"),
    }
}

/// The node coordinating `GROUP`, asked through `addr`.
fn coordinator(addr: &str) -> Option<i32> {
    let request = FindCoordinatorRequest::default()
        .with_key_type(0)
        .with_coordinator_keys(vec![StrBytes::from_static_str(GROUP)]);
    match call(
        addr,
        ApiKey::FindCoordinator,
        4,
        RequestKind::FindCoordinator(request),
    ) {
        ResponseKind::FindCoordinator(response) => {
            let found = &response.coordinators[0];
            (found.error_code == 0).then_some(found.node_id.0)
        }
        other => panic!("{other:?}"),
    }
}

fn consumer(bootstrap: &str) -> BaseConsumer {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", GROUP)
        .set("group.protocol", "consumer")
        .set("enable.auto.commit", "true")
        .set("auto.commit.interval.ms", "200")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    consumer.subscribe(&[TOPIC]).expect("subscribe");
    consumer
}

fn produce(bootstrap: &str, from: usize, count: usize) {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .create()
        .expect("producer");
    for i in from..from + count {
        let key = format!("k{i}");
        let payload = format!("v{i}");
        producer
            .send(BaseRecord::to(TOPIC).key(&key).payload(&payload))
            .expect("enqueue");
    }
    producer.flush(Duration::from_secs(60)).expect("flush");
}

fn assignment(consumer: &BaseConsumer) -> BTreeSet<i32> {
    consumer
        .assignment()
        .map(|list| list.elements().iter().map(|e| e.partition()).collect())
        .unwrap_or_default()
}

/// Polls both members until every payload of `wanted` was seen by one of them.
fn consume_until(
    members: &[&BaseConsumer],
    seen: &mut BTreeSet<String>,
    wanted: &BTreeSet<String>,
) {
    let deadline = Instant::now() + WAIT_MAX * 2;
    while !wanted.is_subset(seen) {
        assert!(
            Instant::now() < deadline,
            "timed out: {} of {} records consumed",
            wanted.intersection(seen).count(),
            wanted.len()
        );
        for member in members {
            if let Some(Ok(message)) = member.poll(Duration::from_millis(20)) {
                if let Some(Ok(payload)) = message.payload_view::<str>() {
                    seen.insert(payload.to_string());
                }
            }
        }
    }
}

fn payloads(range: std::ops::Range<usize>) -> BTreeSet<String> {
    range.map(|i| format!("v{i}")).collect()
}

#[test]
fn a_consumer_group_survives_the_kill_of_its_coordinator() {
    let mut cluster = cluster();
    let bootstrap = cluster.bootstrap_all();
    let first_node = cluster.brokers()[0];
    create_topic(&cluster.node(first_node).bootstrap());
    produce(&bootstrap, 0, 100);

    let a = consumer(&bootstrap);
    let b = consumer(&bootstrap);
    let mut seen = BTreeSet::new();
    consume_until(&[&a, &b], &mut seen, &payloads(0..100));
    let deadline = Instant::now() + WAIT_MAX;
    while assignment(&a).len() + assignment(&b).len() != PARTITIONS as usize
        || assignment(&a).is_empty()
        || assignment(&b).is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the members never split the partitions"
        );
        let _ = a.poll(Duration::from_millis(20));
        let _ = b.poll(Duration::from_millis(20));
    }
    let before = (assignment(&a), assignment(&b));

    let victim = shale_testkit::wait_for("a coordinator for the group", WAIT_MAX, || {
        coordinator(&cluster.node(first_node).bootstrap())
    });
    cluster.kill(victim);
    let survivors = cluster.bootstrap_all();
    let survivor = cluster.brokers()[0];
    let new_coordinator = shale_testkit::wait_for("a new coordinator", WAIT_MAX, || {
        coordinator(&cluster.node(survivor).bootstrap()).filter(|node| *node != victim)
    });

    produce(&survivors, 100, 100);
    consume_until(&[&a, &b], &mut seen, &payloads(100..200));
    assert_eq!(
        (assignment(&a), assignment(&b)),
        before,
        "the members kept their partitions across the coordinator's failover"
    );

    let described = match call(
        &cluster.node(new_coordinator).bootstrap(),
        ApiKey::ConsumerGroupDescribe,
        1,
        RequestKind::ConsumerGroupDescribe(
            ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![GroupId(StrBytes::from_static_str(GROUP))]),
        ),
    ) {
        ResponseKind::ConsumerGroupDescribe(response) => response,
        other => panic!("{other:?}"),
    };
    let group = &described.groups[0];
    assert_eq!(group.error_code, 0, "{group:?}");
    assert_eq!(group.group_state.as_str(), "Stable", "{group:?}");
    assert_eq!(group.members.len(), 2, "{group:?}");
}
