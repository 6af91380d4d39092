//! Share groups (KIP-932) on a three-node cluster: kill -9 of the share-partition leader while
//! two members fetch and acknowledge. Nothing is lost (every record is acknowledged in the
//! end) and no record whose acknowledgement succeeded is delivered again; records delivered
//! but not acknowledged before the kill may come back. Once with the partition leader also
//! leading the share state partition (both move at the kill), once with the state on another
//! node (only the partition moves; its new leader reads the state remotely) and, when the group
//! coordinator is a third node, the partition on the group coordinator (it moves too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;
#[path = "common/share_client.rs"]
mod share_client;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cluster_support::{Cluster, WAIT_MAX};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, IncrementalAlterConfigsRequest, MetadataRequest,
    ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use shale_testkit::{wait_for, wait_until};
use share_client::{
    find_coordinator, partition_leader, s, share_start_offset, AckStyle, Link, Nodes, ShareMember,
    Shared, KEY_TYPE_GROUP, KEY_TYPE_SHARE,
};

const GROUP: &str = "workers";
const TOPIC: &str = "jobs";
const RECORDS: i64 = 200;
const RECORDS_PER_BATCH: usize = 5;
const GROUP_RESOURCE: i8 = 32;
/// `group.share.delivery.count.limit` in `OVERRIDES`.
const DELIVERY_COUNT_LIMIT: i16 = 10;
/// Any share-partition key: with one `__share_group_state` partition they all map to it.
const PROBE_KEY: &str = "probe:MdHnS0XKS0u7VNIXiT6Bhw:0";

/// Replicated internal topics, one partition each so that the test knows where the group
/// and the share state live, fast fencing of the killed node (the cluster helper's
/// `broker.session.timeout.ms`), and short share-group timeouts. The delivery count limit
/// is Kafka's highest so that records redelivered around the kill are not archived.
const OVERRIDES: &[&str] = &[
    "offsets.topic.replication.factor=3",
    "offsets.topic.num.partitions=1",
    "min.insync.replicas=2",
    "share.coordinator.state.topic.replication.factor=3",
    "share.coordinator.state.topic.min.isr=2",
    "share.coordinator.state.topic.num.partitions=1",
    "group.share.min.session.timeout.ms=1000",
    "group.share.session.timeout.ms=10000",
    "group.share.min.heartbeat.interval.ms=500",
    "group.share.heartbeat.interval.ms=500",
    "group.share.min.record.lock.duration.ms=1000",
    "group.share.record.lock.duration.ms=5000",
    "group.share.delivery.count.limit=10",
    "replica.fetch.backoff.ms=100",
    "replica.fetch.wait.max.ms=200",
];

/// Where the share state partition's leader is relative to the topic partition's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StatePlacement {
    OnThePartitionLeader,
    OnAnotherNode,
}

fn nodes(cluster: &mut Cluster) -> Nodes {
    cluster
        .brokers()
        .into_iter()
        .map(|id| (id, cluster.node(id).bootstrap()))
        .collect()
}

fn addr_of(nodes: &Nodes, id: i32) -> &str {
    &nodes.iter().find(|(n, _)| *n == id).expect("a node").1
}

/// The topic on `replicas` (the first is its preferred leader), `min.insync.replicas=2`.
fn create_topic(addr: &str, replicas: &[i32]) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(s(TOPIC)))
            .with_num_partitions(-1)
            .with_replication_factor(-1)
            .with_assignments(vec![CreatableReplicaAssignment::default()
                .with_partition_index(0)
                .with_broker_ids(replicas.iter().map(|r| BrokerId(*r)).collect())])
            .with_configs(vec![CreatableTopicConfig::default()
                .with_name(s("min.insync.replicas"))
                .with_value(Some(s("2")))])])
        .with_timeout_ms(30_000);
    let mut link = Link::open(addr).expect("a running node");
    match link.kafka(ApiKey::CreateTopics, 5, RequestKind::CreateTopics(request)) {
        Some(ResponseKind::CreateTopics(r)) => {
            assert_eq!(r.topics[0].error_code, 0, "{r:?}")
        }
        other => panic!("{other:?}"),
    }
}

fn set_group_config(addr: &str, name: &str, value: &str) {
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(GROUP_RESOURCE)
            .with_resource_name(s(GROUP))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s(name))
                .with_config_operation(0)
                .with_value(Some(s(value)))]),
    ]);
    let mut link = Link::open(addr).expect("a running node");
    match link.kafka(
        ApiKey::IncrementalAlterConfigs,
        1,
        RequestKind::IncrementalAlterConfigs(request),
    ) {
        Some(ResponseKind::IncrementalAlterConfigs(r)) => {
            assert_eq!(r.responses[0].error_code, 0, "{:?}", r.responses[0]);
        }
        other => panic!("{other:?}"),
    }
}

/// Records `from..to` in batches of `RECORDS_PER_BATCH` to the partition's leader, each
/// acknowledged by the in-sync replicas (acks=all) before the next goes. A batch refused before
/// it was appended (a leader not yet serving, or gone) goes again to the leader of the moment;
/// nothing else is retried, so that no record is written twice.
fn produce(nodes: &Nodes, from: i64, to: i64) {
    let values: Vec<String> = (from..to).map(|i| format!("job-{i}")).collect();
    for chunk in values.chunks(RECORDS_PER_BATCH) {
        let records: Vec<_> = chunk.iter().map(|v| (None, Some(v.as_bytes()))).collect();
        let batch = Bytes::from(shale_testkit::record_batch(&records, 1_700_000_000_000));
        wait_for("a batch written", WAIT_MAX, || {
            produce_once(nodes, batch.clone())
        });
    }
}

fn produce_once(nodes: &Nodes, batch: Bytes) -> Option<()> {
    const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    const LEADER_NOT_AVAILABLE: i16 = 5;
    const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    const NOT_ENOUGH_REPLICAS: i16 = 19;
    let (leader, _) = partition_leader(nodes, TOPIC)?;
    let mut link = Link::open(addr_of(nodes, leader))?;
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(s(TOPIC)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch))])]);
    match link.kafka(ApiKey::Produce, 9, RequestKind::Produce(request)) {
        Some(ResponseKind::Produce(r)) => {
            let p = &r.responses[0].partition_responses[0];
            match p.error_code {
                0 => Some(()),
                UNKNOWN_TOPIC_OR_PARTITION
                | LEADER_NOT_AVAILABLE
                | NOT_LEADER_OR_FOLLOWER
                | NOT_ENOUGH_REPLICAS => None,
                _ => panic!("produce to node {leader}: {p:?}"),
            }
        }
        Some(other) => panic!("{other:?}"),
        // The leader died with the batch: it may be written, so it is not sent again.
        None => panic!("node {leader} did not answer a produce"),
    }
}

/// A partition as Metadata describes it: topic, partition, leader, leader epoch, ISR.
type PartitionState = (String, i32, i32, i32, Vec<i32>);

/// Each topic's partitions as the node at `addr` sees them, for a failure's message.
fn isr_view(addr: &str) -> Option<Vec<PartitionState>> {
    let request = MetadataRequest::default().with_topics(None);
    match Link::open(addr)?.kafka(ApiKey::Metadata, 12, RequestKind::Metadata(request))? {
        ResponseKind::Metadata(r) => Some(
            r.topics
                .iter()
                .flat_map(|t| {
                    let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
                    t.partitions.iter().map(move |p| {
                        (
                            name.clone(),
                            p.partition_index,
                            p.leader_id.0,
                            p.leader_epoch,
                            p.isr_nodes.iter().map(|n| n.0).collect(),
                        )
                    })
                })
                .collect(),
        ),
        _ => None,
    }
}

/// Runs `member` in its own thread until every record is settled or `stop` is set.
fn spawn_member(
    mut member: ShareMember,
    ledger: Arc<Shared>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) && !ledger.lock().settled(RECORDS) {
            member.round();
        }
    })
}

fn kill_the_partition_leader_while_members_acknowledge(placement: StatePlacement) {
    let mut cluster = Cluster::combined_with(3, OVERRIDES);
    let nodes = nodes(&mut cluster);

    // The internal topics take the brokers registered when they are created: all three first.
    wait_until("three brokers registered", WAIT_MAX, || {
        let request = MetadataRequest::default().with_topics(Some(Vec::new()));
        matches!(
            Link::open(&nodes[0].1).and_then(|mut l| {
                l.kafka(ApiKey::Metadata, 12, RequestKind::Metadata(request))
            }),
            Some(ResponseKind::Metadata(r)) if r.brokers.len() == 3
        )
    });
    // The share state topic is created on first use; asking for a share coordinator is one.
    let state_leader = wait_for("a share coordinator", WAIT_MAX, || {
        find_coordinator(&nodes, KEY_TYPE_SHARE, PROBE_KEY)
    });
    wait_until(
        "the share state partition on three in-sync replicas",
        WAIT_MAX,
        || {
            isr_view(&nodes[0].1).is_some_and(|partitions| {
                partitions
                    .iter()
                    .any(|(topic, _, _, _, isr)| topic == "__share_group_state" && isr.len() == 3)
            })
        },
    );
    let group_coordinator = wait_for("a group coordinator", WAIT_MAX, || {
        find_coordinator(&nodes, KEY_TYPE_GROUP, GROUP)
    });
    // Beside the state, the partition goes to the group coordinator when that is another
    // node: between the two placements, one kill always moves the group coordinator too.
    let leader = match placement {
        StatePlacement::OnThePartitionLeader => state_leader,
        StatePlacement::OnAnotherNode if group_coordinator != state_leader => group_coordinator,
        StatePlacement::OnAnotherNode => nodes
            .iter()
            .map(|(id, _)| *id)
            .find(|id| *id != state_leader)
            .expect("three nodes"),
    };
    let mut replicas = vec![leader];
    replicas.extend(nodes.iter().map(|(id, _)| *id).filter(|id| *id != leader));
    create_topic(&nodes[0].1, &replicas);
    let (first_leader, _) = wait_for("a leader for the topic", WAIT_MAX, || {
        partition_leader(&nodes, TOPIC)
    });
    assert_eq!(first_leader, leader, "the preferred replica leads");
    set_group_config(&nodes[0].1, "share.auto.offset.reset", "earliest");
    produce(&nodes, 0, RECORDS);

    let ledger = Arc::new(Shared::default());
    let stop = Arc::new(AtomicBool::new(false));
    let members = [
        ("separate", AckStyle::Separate),
        ("piggybacked", AckStyle::Piggybacked),
    ]
    .map(|(name, style)| {
        let member = ShareMember::new(name, GROUP, TOPIC, style, nodes.clone(), ledger.clone());
        spawn_member(member, ledger.clone(), stop.clone())
    });

    // Killed the moment half the records are acknowledged, with the members' requests in
    // flight (they wait for the ledger meanwhile, and go on as soon as the node is gone).
    let (killed_at, acked_before_kill) = {
        let mut ledger = ledger.wait_until("half the records acknowledged", WAIT_MAX, |l| {
            l.acknowledged.len() >= (RECORDS / 2) as usize
        });
        let killed_at = ledger.next_step();
        cluster.kill(leader);
        (killed_at, ledger.acknowledged.clone())
    };
    let killed_at_time = Instant::now();

    let survivors: Nodes = nodes
        .iter()
        .filter(|(id, _)| *id != leader)
        .cloned()
        .collect();
    let finished = Instant::now() + WAIT_MAX;
    while !ledger.lock().settled(RECORDS) {
        if Instant::now() >= finished || members.iter().any(|m| m.is_finished()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    for member in members {
        member.join().expect("a member thread panicked");
    }
    let failover = killed_at_time.elapsed();

    // Records whose acknowledgement got no answer may or may not have been taken: a member
    // on a new share session gets whatever is still to be delivered, and acknowledges it.
    let mut drain = ShareMember::new(
        "drain",
        GROUP,
        TOPIC,
        AckStyle::Separate,
        survivors.clone(),
        ledger.clone(),
    );
    drain.max_records = 500;
    let mut empty_answers = 0;
    let drained_by = Instant::now() + WAIT_MAX;
    let mut outcomes: BTreeMap<Option<usize>, usize> = BTreeMap::new();
    while empty_answers < 5 {
        if Instant::now() >= drained_by {
            let ledger = ledger.lock();
            let last: Vec<_> = ledger.deliveries.iter().rev().take(12).collect();
            let warnings: Vec<String> = survivors
                .iter()
                .flat_map(|(id, _)| {
                    cluster
                        .node(*id)
                        .log_text()
                        .lines()
                        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
                        .map(|l| format!("node {id}: {l}"))
                        .collect::<Vec<_>>()
                })
                .collect();
            let isr: Vec<String> = survivors
                .iter()
                .map(|(id, addr)| format!("node {id}: {:?}", isr_view(addr)))
                .collect();
            panic!(
                "the drain never got an empty answer: {outcomes:?}, {}; failed acknowledgements \
                 {:?}; last deliveries {last:?}\nleaders and ISRs {isr:?}\n{}",
                drain.describe(),
                ledger.ack_errors,
                warnings.join("\n")
            );
        }
        let outcome = drain.round();
        *outcomes.entry(outcome).or_default() += 1;
        match outcome {
            Some(0) => empty_answers += 1,
            Some(_) => empty_answers = 0,
            None => {}
        }
    }
    // One more record, acknowledged: the start offset that write carries is past every
    // record before it only if none of them is still to be delivered.
    produce(&survivors, RECORDS, RECORDS + 1);
    while !ledger.lock().acknowledged.contains_key(&RECORDS) {
        assert!(
            Instant::now() < drained_by,
            "the record after the kill was never acknowledged"
        );
        drain.round();
    }
    drop(drain);

    let ledger = ledger.lock();
    let summary = format!(
        "placement {placement:?}: killed node {leader} (state leader {state_leader}, group \
         coordinator {group_coordinator}) after {} acknowledgements; {} deliveries, {} \
         acknowledged, {} unanswered, failed acknowledgements by code {:?}, {failover:?} to \
         settle",
        acked_before_kill.len(),
        ledger.deliveries.len(),
        ledger.acknowledged.len(),
        ledger.unanswered.len(),
        ledger.ack_errors,
    );
    eprintln!("{summary}");

    let redelivered: Vec<_> = ledger
        .deliveries
        .iter()
        .filter(|d| {
            ledger
                .acknowledged
                .get(&d.offset)
                .is_some_and(|at| *at < d.step)
        })
        .collect();
    assert!(
        redelivered.is_empty(),
        "acknowledged records delivered again: {redelivered:?}\n{summary}"
    );
    let after_kill: Vec<_> = ledger
        .deliveries
        .iter()
        .filter(|d| d.step > killed_at)
        .collect();
    assert!(
        after_kill
            .iter()
            .all(|d| !acked_before_kill.contains_key(&d.offset)),
        "records acknowledged before the kill delivered after it\n{summary}"
    );
    assert!(
        !after_kill.is_empty(),
        "nothing was delivered by the new leader\n{summary}"
    );
    let lost: Vec<i64> = (0..RECORDS)
        .filter(|o| !ledger.acknowledged.contains_key(o))
        .filter(|o| {
            // Unanswered and never delivered again: the broker took it; delivered again and
            // never acknowledged: lost.
            !ledger.unanswered.get(o).is_some_and(|at| {
                !ledger
                    .deliveries
                    .iter()
                    .any(|d| d.offset == *o && d.step > *at)
            })
        })
        .collect();
    assert!(
        lost.is_empty(),
        "records never acknowledged: {lost:?}\n{summary}"
    );
    assert!(
        (0..RECORDS).all(|o| ledger.deliveries.iter().any(|d| d.offset == o)),
        "a record was never delivered\n{summary}"
    );
    // Every record up to the one produced after the kill is done with in the persisted state.
    let start_offset = wait_for("the share group's start offset", WAIT_MAX, || {
        share_start_offset(&survivors, GROUP, TOPIC)
    });
    assert!(
        start_offset >= RECORDS,
        "the persisted start offset is {start_offset}\n{summary}"
    );
    let most_deliveries = ledger.deliveries.iter().map(|d| d.delivery_count).max();
    assert!(
        most_deliveries < Some(DELIVERY_COUNT_LIMIT),
        "a record may have been archived at its delivery limit\n{summary}"
    );
}

#[test]
fn no_acknowledged_record_comes_back_when_the_partition_and_state_leader_dies() {
    kill_the_partition_leader_while_members_acknowledge(StatePlacement::OnThePartitionLeader);
}

#[test]
fn no_acknowledged_record_comes_back_when_the_partition_leader_dies_beside_the_state() {
    kill_the_partition_leader_while_members_acknowledge(StatePlacement::OnAnotherNode);
}
