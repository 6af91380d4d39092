//! Failover without waiting for the session timeout: three real `shale` processes (combined
//! roles) with `broker.session.timeout.ms=600000`, so only the failure detection of a killed
//! process can move leadership within the test's bounds. kill -9 of a partition leader that is
//! not the active controller (its session link to the controller closes), then of one that is
//! (the next controller finds its port closed): each time a new leader appears in Metadata, an
//! idempotent acks=all write succeeds, and the killed node restarts at once (its old
//! registration is fenced, so it need not wait for the session to expire) and rejoins the ISR.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use std::time::Duration;

use cluster_support::{call, metadata, Cluster, WAIT_MAX};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};

/// Far beyond every wait of this test: a session expiry can never be what fences a node.
const SESSION_TIMEOUT_MS: &str = "600000";

fn cluster() -> Cluster {
    Cluster::combined_with(
        3,
        &[
            &format!("broker.session.timeout.ms={SESSION_TIMEOUT_MS}"),
            "replica.fetch.backoff.ms=100",
            "replica.fetch.wait.max.ms=200",
        ],
    )
}

/// Waits on other processes' state, at most `WAIT_MAX`.
fn wait_until(what: &str, f: impl FnMut() -> bool) {
    shale_testkit::wait_until(what, WAIT_MAX, f);
}

/// Creates `topic` with one partition on `replicas` (the first leads) and
/// `min.insync.replicas=2`.
fn create_topic(cluster: &Cluster, via: i32, topic: &str, replicas: [i32; 3]) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_num_partitions(-1)
            .with_replication_factor(-1)
            .with_assignments(vec![CreatableReplicaAssignment::default()
                .with_partition_index(0)
                .with_broker_ids(replicas.iter().map(|b| BrokerId(*b)).collect())])
            .with_configs(vec![CreatableTopicConfig::default()
                .with_name(StrBytes::from_static_str("min.insync.replicas"))
                .with_value(Some(StrBytes::from_static_str("2")))])])
        .with_timeout_ms(30_000);
    match call(
        &cluster.node(via).bootstrap(),
        ApiKey::CreateTopics,
        7,
        RequestKind::CreateTopics(request),
    ) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0, "{r:?}"),
        other => panic!("{other:?}"),
    }
}

/// The partition's leader and ISR as broker `via` reports them (leader -1 while unknown).
fn leader_and_isr(cluster: &Cluster, via: i32, topic: &str) -> (i32, Vec<i32>) {
    let m = metadata(&cluster.node(via).bootstrap());
    let Some(t) = m
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
    else {
        return (-1, Vec::new());
    };
    let p = &t.partitions[0];
    (p.leader_id.0, p.isr_nodes.iter().map(|b| b.0).collect())
}

/// One record written by an idempotent acks=all producer through `bootstrap`, retried by the
/// client across leader changes; true once acknowledged.
fn write_acknowledged(bootstrap: &str, topic: &str) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "0")
        .set("message.timeout.ms", "20000")
        .set("request.timeout.ms", "5000")
        .create()
        .unwrap();
    let record = FutureRecord::to(topic)
        .partition(0)
        .key("failover")
        .payload("failover");
    runtime
        .block_on(producer.send(record, Duration::from_secs(20)))
        .is_ok()
}

/// Kills the leader `victim` of `topic` (replicas `victim`, then the two others, all in the
/// ISR) and checks the failover and the victim's return.
fn kill_leader_and_recover(cluster: &mut Cluster, victim: i32, topic: &str) {
    let survivors: Vec<i32> = (1..=3).filter(|id| *id != victim).collect();
    let via = survivors[0];
    let bootstrap = survivors
        .iter()
        .map(|id| cluster.node(*id).bootstrap())
        .collect::<Vec<_>>()
        .join(",");
    wait_until("the victim leading a full ISR", || {
        let (leader, isr) = leader_and_isr(cluster, via, topic);
        leader == victim && isr.len() == 3
    });
    assert!(
        write_acknowledged(&bootstrap, topic),
        "a write before the kill"
    );

    cluster.kill(victim);
    wait_until("a new leader in Metadata", || {
        let (leader, isr) = leader_and_isr(cluster, via, topic);
        survivors.contains(&leader) && !isr.contains(&victim)
    });
    wait_until("an acknowledged acks=all write after the kill", || {
        write_acknowledged(&bootstrap, topic)
    });

    // Starts (registers) at once: its previous registration was fenced, not left to expire.
    cluster.start_nodes(&[victim]);
    wait_until("the restarted node back in the ISR", || {
        leader_and_isr(cluster, via, topic).1.len() == 3
    });
}

#[test]
fn killed_leaders_fail_over_without_waiting_for_the_session_timeout() {
    let mut cluster = cluster();
    let controller = cluster.quorum_leader(1);
    let follower_a = controller % 3 + 1;
    let follower_b = follower_a % 3 + 1;

    // The leader is not the controller: its session link closes when it dies.
    create_topic(
        &cluster,
        controller,
        "led-by-a-broker",
        [follower_a, follower_b, controller],
    );
    kill_leader_and_recover(&mut cluster, follower_a, "led-by-a-broker");

    // The leader is the active controller: the next controller finds nothing on its port.
    let controller = cluster.quorum_leader(1);
    let others: Vec<i32> = (1..=3).filter(|id| *id != controller).collect();
    create_topic(
        &cluster,
        others[0],
        "led-by-the-controller",
        [controller, others[0], others[1]],
    );
    kill_leader_and_recover(&mut cluster, controller, "led-by-the-controller");
    let new_controller = cluster.quorum_leader(others[0]);
    assert_ne!(new_controller, controller);
}
