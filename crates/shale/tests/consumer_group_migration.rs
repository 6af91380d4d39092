//! Online migration between the classic and consumer protocols (KIP-848) end to end, with
//! librdkafka: a classic group (`group.protocol=classic`) is upgraded when a member of the
//! consumer protocol joins it; both members consume, each partition owned by exactly one of
//! them; when the consumer member leaves, the group is a classic group again and its classic
//! member takes every partition back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use cluster_support::call;
use common::{create_topic, produce, Shale};
use kafka_protocol::messages::{ApiKey, ListGroupsRequest, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;

const TIMEOUT: Duration = Duration::from_secs(90);
const GROUP: &str = "migrating";
const TOPIC: &str = "mixed";
const PARTITIONS: i32 = 4;

const BROKER_OVERRIDES: &[&str] = &[
    "group.initial.rebalance.delay.ms=0",
    "group.consumer.min.heartbeat.interval.ms=100",
    "group.consumer.heartbeat.interval.ms=300",
];

fn consumer(shale: &Shale, protocol: &str) -> BaseConsumer {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", shale.bootstrap())
        .set("group.id", GROUP)
        .set("group.protocol", protocol)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest");
    if protocol == "classic" {
        config
            .set("session.timeout.ms", "10000")
            .set("heartbeat.interval.ms", "500");
    }
    let consumer: BaseConsumer = config.create().expect("consumer");
    consumer.subscribe(&[TOPIC]).expect("subscribe");
    consumer
}

fn assignment(consumer: &BaseConsumer) -> BTreeSet<i32> {
    consumer
        .assignment()
        .map(|list| list.elements().iter().map(|e| e.partition()).collect())
        .unwrap_or_default()
}

/// The group's type as ListGroups v5 reports it.
fn group_type(shale: &Shale) -> Option<String> {
    match call(
        &shale.bootstrap(),
        ApiKey::ListGroups,
        5,
        RequestKind::ListGroups(ListGroupsRequest::default().with_types_filter(vec![
            StrBytes::from_static_str("classic"),
            StrBytes::from_static_str("consumer"),
        ])),
    ) {
        ResponseKind::ListGroups(response) => response
            .groups
            .into_iter()
            .find(|g| g.group_id.0.as_str() == GROUP)
            .map(|g| g.group_type.to_string()),
        other => panic!("{other:?}"),
    }
}

/// What each consumer received: (partition, offset) pairs, duplicates kept.
type Received = Vec<(i32, i64)>;

/// Polls every consumer until `done`; no partition may be owned by two of them at once.
fn poll_until(
    consumers: &[&BaseConsumer],
    received: &mut [Received],
    what: &str,
    mut done: impl FnMut(&[Received]) -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        for (index, consumer) in consumers.iter().enumerate() {
            if let Some(Ok(message)) = consumer.poll(Duration::from_millis(20)) {
                received[index].push((message.partition(), message.offset()));
            }
        }
        let mut owned = BTreeSet::new();
        for consumer in consumers {
            for partition in assignment(consumer) {
                assert!(
                    owned.insert(partition),
                    "while waiting for {what}: partition {partition} has two owners"
                );
            }
        }
        if done(received) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

fn produce_to_every_partition(shale: &Shale, per_partition: usize) {
    for partition in 0..PARTITIONS {
        produce(shale, TOPIC, partition, per_partition);
    }
}

#[test]
fn a_classic_group_upgrades_when_a_consumer_member_joins_and_downgrades_when_it_leaves() {
    let shale = Shale::start_with(BROKER_OVERRIDES);
    create_topic(&shale, TOPIC, PARTITIONS);
    let all: BTreeSet<i32> = (0..PARTITIONS).collect();

    let classic = consumer(&shale, "classic");
    let mut received = vec![Received::new(), Received::new()];
    poll_until(&[&classic], &mut received[..1], "the classic group", |_| {
        assignment(&classic) == all
    });
    assert_eq!(group_type(&shale).as_deref(), Some("classic"));

    // A member of the consumer protocol joins: the group is upgraded and the partitions are
    // split between the two members.
    let modern = consumer(&shale, "consumer");
    poll_until(
        &[&classic, &modern],
        &mut received,
        "the partitions split between a classic and a consumer member",
        |_| {
            let (old, new) = (assignment(&classic), assignment(&modern));
            !old.is_empty()
                && !new.is_empty()
                && old.union(&new).copied().collect::<BTreeSet<_>>() == all
        },
    );
    assert_eq!(group_type(&shale).as_deref(), Some("consumer"));

    // Both consume what is produced now, each from the partitions it owns, once.
    produce_to_every_partition(&shale, 5);
    let expected = (PARTITIONS as usize) * 5;
    poll_until(
        &[&classic, &modern],
        &mut received,
        "every message consumed",
        |received| received.iter().map(Vec::len).sum::<usize>() >= expected,
    );
    let mut seen = BTreeMap::new();
    for (index, messages) in received.iter().enumerate() {
        assert!(!messages.is_empty(), "consumer {index} consumed nothing");
        for message in messages {
            assert!(
                seen.insert(*message, index).is_none(),
                "{message:?} was consumed twice"
            );
        }
    }
    assert_eq!(seen.len(), expected);
    let classic_partitions: BTreeSet<i32> = received[0].iter().map(|(p, _)| *p).collect();
    let modern_partitions: BTreeSet<i32> = received[1].iter().map(|(p, _)| *p).collect();
    assert!(classic_partitions.is_disjoint(&modern_partitions));

    // The consumer member leaves: the group is classic again and rebalances to the classic
    // member, which owns every partition.
    modern.unsubscribe();
    drop(modern);
    let mut rest = vec![Received::new()];
    poll_until(
        &[&classic],
        &mut rest,
        "the classic member owns every partition again",
        |_| assignment(&classic) == all && group_type(&shale).as_deref() == Some("classic"),
    );
}
