//! Multi-node clusters of real `shale` processes: three combined nodes (topics through any
//! node, failover after kill -9 of the active controller, catch-up after a restart, a restart
//! of all nodes at once), three controllers with two broker-only nodes, and the start-up
//! refusals of misconfigured or unformatted nodes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use cluster_support::{call, describe_quorum, view, Cluster, ClusterView, Role, WAIT_MAX};
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, ApiKey, BrokerId, CreatePartitionsRequest,
    CreateTopicsRequest, DeleteTopicsRequest, ElectLeadersRequest, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

/// CreateTopics through `addr`; the error code of the one topic.
fn create_topic(addr: &str, name: &str, partitions: i32) -> i16 {
    create_topic_within(addr, name, partitions, 30_000)
}

fn create_topic_within(addr: &str, name: &str, partitions: i32, timeout_ms: i32) -> i16 {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(name.into())))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(timeout_ms);
    match call(
        addr,
        ApiKey::CreateTopics,
        7,
        RequestKind::CreateTopics(request),
    ) {
        ResponseKind::CreateTopics(r) => r.topics[0].error_code,
        other => panic!("{other:?}"),
    }
}

/// Creates a topic as a client would: through any running broker, retrying retriable errors.
/// A retry that finds the topic means an earlier attempt (whose answer was lost with a
/// crashed controller) committed it.
fn create_retrying(cluster: &mut Cluster, name: &str, partitions: i32) {
    let deadline = Instant::now() + WAIT_MAX;
    let mut retried = false;
    loop {
        for id in cluster.brokers() {
            let code = create_topic(&cluster.node(id).bootstrap(), name, partitions);
            if code == 0 || (retried && code == ResponseError::TopicAlreadyExists.code()) {
                return;
            }
            assert!(
                code == ResponseError::NotController.code()
                    || code == ResponseError::RequestTimedOut.code(),
                "creating {name} through node {id}: error {code}"
            );
            retried = true;
        }
        assert!(Instant::now() < deadline, "creating {name}: no controller");
    }
}

/// Waits until every running broker answers Metadata with the same view, holding `brokers`
/// and `topics`; returns that view.
fn await_same_view(cluster: &mut Cluster, brokers: &[i32], topics: &[&str]) -> ClusterView {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let views: BTreeMap<i32, ClusterView> = cluster
            .brokers()
            .into_iter()
            .map(|id| (id, view(&cluster.node(id).bootstrap())))
            .collect();
        let first = views.values().next().unwrap().clone();
        let complete = views.values().all(|v| *v == first)
            && first.brokers.iter().map(|b| b.0).collect::<Vec<_>>() == brokers
            && topics.iter().all(|t| first.topics.contains_key(*t));
        if complete {
            return first;
        }
        assert!(
            Instant::now() < deadline,
            "nodes never agreed on brokers {brokers:?} and topics {topics:?}: {views:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the quorum leader reports every voter's log end at the high watermark, and
/// checks that every broker is told the same quorum. Returns the high watermark.
fn await_quorum_settled(cluster: &mut Cluster, voters: &[i32]) -> i64 {
    let deadline = Instant::now() + WAIT_MAX;
    let via = cluster.brokers()[0];
    loop {
        let response = cluster.describe_quorum(via);
        let p = &response.topics[0].partitions[0];
        let ids: Vec<i32> = p.current_voters.iter().map(|v| v.replica_id.0).collect();
        assert_eq!(ids, voters);
        if p.current_voters
            .iter()
            .all(|v| v.log_end_offset == p.high_watermark)
        {
            for id in cluster.brokers() {
                let other = describe_quorum(&cluster.node(id).bootstrap());
                let q = &other.topics[0].partitions[0];
                assert_eq!(q.leader_id, p.leader_id, "node {id}");
                assert!(q.high_watermark >= p.high_watermark, "node {id}");
            }
            return p.high_watermark;
        }
        assert!(
            Instant::now() < deadline,
            "voters never caught up: {response:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn bootstrap_all(cluster: &mut Cluster) -> String {
    cluster.bootstrap_all()
}

/// Produces one record to each partition of `topic` through any broker: the client finds
/// each partition's leader.
fn produce_to_every_partition(cluster: &mut Cluster, topic: &str, partitions: i32, tag: &str) {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap_all(cluster))
        .set("message.timeout.ms", "30000")
        .create()
        .unwrap();
    for partition in 0..partitions {
        let payload = format!("{tag}-{partition}");
        producer
            .send(
                BaseRecord::<(), _>::to(topic)
                    .partition(partition)
                    .payload(&payload),
            )
            .unwrap();
    }
    producer.flush(WAIT_MAX).unwrap();
}

/// Every record of every partition of `topic`, read from the leaders.
fn consume_all(cluster: &mut Cluster, topic: &str, partitions: i32, count: usize) -> Vec<String> {
    cluster_support::read_from_beginning(&bootstrap_all(cluster), topic, partitions, count)
}

#[test]
fn three_combined_nodes_agree_fail_over_catch_up_and_restart_together() {
    let mut cluster = Cluster::combined(3);
    let all = [1, 2, 3];
    // Topics created through any node appear on all, with every broker listed.
    for id in all {
        let code = create_topic(&cluster.node(id).bootstrap(), &format!("from-{id}"), 3);
        assert_eq!(code, 0, "through node {id}");
    }
    let before = await_same_view(&mut cluster, &all, &["from-1", "from-2", "from-3"]);
    assert_eq!(
        before.cluster_id.as_deref(),
        Some(cluster.cluster_id.as_str())
    );
    for (id, host, port) in &before.brokers {
        assert_eq!(host, "127.0.0.1");
        assert_eq!(Some(*port as u16), cluster.node(*id).client_port);
    }
    // Partitions with one replica are spread over the brokers and served by their leaders.
    produce_to_every_partition(&mut cluster, "from-1", 3, "first");
    assert_eq!(
        consume_all(&mut cluster, "from-1", 3, 3),
        vec!["first-0", "first-1", "first-2"]
    );
    await_quorum_settled(&mut cluster, &all);

    // kill -9 of the active controller: another voter takes over and the next change commits.
    let leader = cluster.quorum_leader(1);
    cluster.kill(leader);
    let killed_at = Instant::now();
    // Before the survivors have elected anyone, clients are already told a live controller
    // (KRaft names a live broker): an admin client must not wait for the dead one.
    for id in all.iter().copied().filter(|id| *id != leader) {
        let told = cluster_support::metadata(&cluster.node(id).bootstrap())
            .controller_id
            .0;
        assert_ne!(told, leader, "node {id} named the killed controller");
        assert!(all.contains(&told), "node {id} named {told}");
    }
    create_retrying(&mut cluster, "after-failover", 2);
    let failover = killed_at.elapsed();
    let survivors: Vec<i32> = all.iter().copied().filter(|id| *id != leader).collect();
    let new_leader = cluster.quorum_leader(survivors[0]);
    assert_ne!(new_leader, leader);
    eprintln!("kill -9 of controller {leader} to the next committed topic: {failover:?}");

    // The restarted node catches up with what it missed.
    cluster.start_nodes(&[leader]);
    let topics = ["from-1", "from-2", "from-3", "after-failover"];
    let caught_up = await_same_view(&mut cluster, &all, &topics);
    assert_eq!(caught_up.topics["from-1"], before.topics["from-1"]);
    await_quorum_settled(&mut cluster, &all);

    // All three crash at once and come back: every record is kept.
    cluster.kill_all();
    cluster.start_nodes(&all);
    create_retrying(&mut cluster, "after-full-restart", 1);
    let after = await_same_view(
        &mut cluster,
        &all,
        &[
            "from-1",
            "from-2",
            "from-3",
            "after-failover",
            "after-full-restart",
        ],
    );
    for topic in topics {
        assert_eq!(after.topics[topic].0, caught_up.topics[topic].0, "{topic}");
    }
    await_quorum_settled(&mut cluster, &all);
    // The records written before the crashes are still served by their partitions' leaders.
    assert_eq!(
        consume_all(&mut cluster, "from-1", 3, 3),
        vec!["first-0", "first-1", "first-2"]
    );

    // Without a quorum nothing commits: each request is answered once its own timeout passes.
    cluster.kill(1);
    cluster.kill(2);
    let survivor = cluster.node(3).bootstrap();
    let code = create_topic_within(&survivor, "without-quorum", 1, 500);
    assert_eq!(code, ResponseError::RequestTimedOut.code());
    for (api, code) in other_controller_calls(&survivor, "from-1", 500) {
        assert_eq!(code, ResponseError::RequestTimedOut.code(), "{api:?}");
    }
}

/// DeleteTopics, CreatePartitions, ElectLeaders and AlterPartitionReassignments for `topic`
/// (its partition 0 where one is named) through `addr`, each with `timeout_ms`; the error code
/// each answers with.
fn other_controller_calls(addr: &str, topic: &str, timeout_ms: i32) -> Vec<(ApiKey, i16)> {
    let name = || TopicName(StrBytes::from_string(topic.into()));
    let delete = DeleteTopicsRequest::default()
        .with_topic_names(vec![name()])
        .with_timeout_ms(timeout_ms);
    let grow = CreatePartitionsRequest::default()
        .with_topics(vec![CreatePartitionsTopic::default()
            .with_name(name())
            .with_count(5)])
        .with_timeout_ms(timeout_ms);
    let elect = ElectLeadersRequest::default()
        .with_topic_partitions(Some(vec![TopicPartitions::default()
            .with_topic(name())
            .with_partitions(vec![0])]))
        .with_timeout_ms(timeout_ms);
    let reassign = AlterPartitionReassignmentsRequest::default()
        .with_topics(vec![ReassignableTopic::default()
            .with_name(name())
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(0)
                .with_replicas(Some(vec![BrokerId(3)]))])])
        .with_timeout_ms(timeout_ms);
    [
        (ApiKey::DeleteTopics, 4, RequestKind::DeleteTopics(delete)),
        (
            ApiKey::CreatePartitions,
            3,
            RequestKind::CreatePartitions(grow),
        ),
        (ApiKey::ElectLeaders, 2, RequestKind::ElectLeaders(elect)),
        (
            ApiKey::AlterPartitionReassignments,
            0,
            RequestKind::AlterPartitionReassignments(reassign),
        ),
    ]
    .into_iter()
    .map(|(api, version, request)| (api, first_error_code(call(addr, api, version, request))))
    .collect()
}

/// The error code of the first topic or partition in an answer of one of the calls above (the
/// answer's own code for AlterPartitionReassignments, which has one for the whole request).
fn first_error_code(response: ResponseKind) -> i16 {
    match response {
        ResponseKind::DeleteTopics(r) => r.responses[0].error_code,
        ResponseKind::CreatePartitions(r) => r.results[0].error_code,
        ResponseKind::ElectLeaders(r) => {
            r.replica_election_results[0].partition_result[0].error_code
        }
        ResponseKind::AlterPartitionReassignments(r) => r.error_code,
        other => panic!("{other:?}"),
    }
}

#[test]
fn three_controllers_serve_two_broker_only_nodes() {
    let mut cluster = Cluster::separated(3, 2);
    let brokers = [4, 5];
    create_topic(&cluster.node(4).bootstrap(), "spread", 4);
    let seen = await_same_view(&mut cluster, &brokers, &["spread"]);
    // Only the brokers are listed and host partitions; clients are told a broker as the
    // controller, since they cannot reach controller-only nodes.
    for (_, leader, replicas) in &seen.topics["spread"].1 {
        assert!(brokers.contains(leader));
        assert!(replicas.iter().all(|r| brokers.contains(r)));
    }
    for id in brokers {
        let m = cluster_support::metadata(&cluster.node(id).bootstrap());
        assert!(
            brokers.contains(&m.controller_id.0),
            "told {:?}",
            m.controller_id
        );
    }
    // The quorum: three voters; the brokers follow as observers.
    let quorum = cluster.describe_quorum(5);
    let p = &quorum.topics[0].partitions[0];
    assert!([1, 2, 3].contains(&p.leader_id.0));
    let mut observers: Vec<i32> = p.observers.iter().map(|o| o.replica_id.0).collect();
    observers.sort();
    assert_eq!(observers, brokers);
    assert_eq!(quorum.nodes.len(), 3);
    produce_to_every_partition(&mut cluster, "spread", 4, "sep");
    assert_eq!(consume_all(&mut cluster, "spread", 4, 4).len(), 4);

    // Losing the active controller leaves two of three: the brokers carry on with the next.
    let leader = p.leader_id.0;
    cluster.kill(leader);
    create_retrying(&mut cluster, "after-controller-loss", 1);
    await_same_view(&mut cluster, &brokers, &["spread", "after-controller-loss"]);
}

/// Runs `shale serve` with these overrides and returns its failure output.
fn refused_start(data: &std::path::Path, overrides: &[String], env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shale"));
    cmd.arg("serve")
        .arg("--override")
        .arg(format!("log.dirs={}", data.display()));
    for o in overrides {
        cmd.arg("--override").arg(o);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.env("RUST_BACKTRACE", "0").output().unwrap();
    assert!(!out.status.success(), "started: {out:?}");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn misconfigured_and_unformatted_nodes_refuse_to_start() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let port = common::free_port();
    let controller = common::free_port();
    let voters = format!(
        "1@127.0.0.1:{controller},2@127.0.0.1:{}",
        common::free_port()
    );
    let combined = vec![
        "node.id=1".to_string(),
        format!("listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}"),
        format!("controller.quorum.voters={voters}"),
    ];
    // A quorum node that was never formatted.
    let out = refused_start(&data, &combined, &[]);
    assert!(out.contains("shale format"), "{out}");

    // Formatted for one cluster, started for another.
    let format = Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(["format", "--cluster-id", "MkU3OEVBNTcwNTJENDM2Qk"])
        .arg("--override")
        .arg(format!("log.dirs={}", data.display()))
        .args(combined.iter().flat_map(|o| ["--override", o.as_str()]))
        .output()
        .unwrap();
    assert!(format.status.success(), "{format:?}");
    let out = refused_start(
        &data,
        &combined,
        &[("CLUSTER_ID", "AAAAAAAAAAAAAAAAAAAAAA")],
    );
    assert!(out.contains("another cluster"), "{out}");

    // A broker-only node listed as a voter; a controller without its listener.
    let out = refused_start(
        &data,
        &[
            "node.id=1".to_string(),
            "process.roles=broker".to_string(),
            format!("listeners=PLAINTEXT://127.0.0.1:{port}"),
            format!("controller.quorum.voters={voters}"),
        ],
        &[],
    );
    assert!(
        out.contains("controller.quorum.voters") && out.contains("broker role"),
        "{out}"
    );
    let out = refused_start(
        &data,
        &[
            "node.id=1".to_string(),
            format!("listeners=PLAINTEXT://127.0.0.1:{port}"),
            format!("controller.quorum.voters={voters}"),
        ],
        &[],
    );
    assert!(out.contains("controller.listener.names"), "{out}");
    let _ = Role::Combined;
}
