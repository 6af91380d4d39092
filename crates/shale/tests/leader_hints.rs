//! KIP-951 leader hints on three real `shale` processes: a Produce (v10+) or Fetch (v16+)
//! answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names the partition's current leader
//! and epoch and lists that leader's endpoint, so a client moves without asking for metadata.
//! Older versions carry no hint, as from Kafka.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use bytes::Bytes;
use cluster_support::{call, metadata, Cluster, WAIT_MAX};
use kafka_protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, FetchRequest, ProduceRequest, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_testkit::{wait_for, wait_until};

const TOPIC: &str = "hinted";

/// What an answer told the client: error code, hinted (leader, epoch), listed endpoints.
#[derive(Debug, PartialEq, Eq)]
struct Hint {
    code: i16,
    leader: (i32, i32),
    endpoints: Vec<(i32, String, i32)>,
}

fn produce(addr: &str, version: i16) -> Hint {
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                // Never read: the leadership check comes first.
                .with_records(Some(Bytes::from_static(b"not a batch")))])]);
    match call(
        addr,
        ApiKey::Produce,
        version,
        RequestKind::Produce(request),
    ) {
        ResponseKind::Produce(r) => {
            let p = &r.responses[0].partition_responses[0];
            Hint {
                code: p.error_code,
                leader: (p.current_leader.leader_id.0, p.current_leader.leader_epoch),
                endpoints: r
                    .node_endpoints
                    .iter()
                    .map(|e| (e.node_id.0, e.host.to_string(), e.port))
                    .collect(),
            }
        }
        other => panic!("{other:?}"),
    }
}

fn fetch(addr: &str, version: i16, current_leader_epoch: i32) -> Hint {
    let topic_id = metadata(addr)
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == TOPIC))
        .map(|t| t.topic_id)
        .unwrap();
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_topic_id(topic_id)
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(current_leader_epoch)
                .with_partition_max_bytes(1 << 20)])]);
    match call(addr, ApiKey::Fetch, version, RequestKind::Fetch(request)) {
        ResponseKind::Fetch(r) => {
            let p = &r.responses[0].partitions[0];
            Hint {
                code: p.error_code,
                leader: (p.current_leader.leader_id.0, p.current_leader.leader_epoch),
                endpoints: r
                    .node_endpoints
                    .iter()
                    .map(|e| (e.node_id.0, e.host.to_string(), e.port))
                    .collect(),
            }
        }
        other => panic!("{other:?}"),
    }
}

/// The partition's (leader, leader epoch, ISR size) as `addr` reports it.
fn leader_of(addr: &str) -> (i32, i32, usize) {
    let m = metadata(addr);
    let p = m
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == TOPIC))
        .and_then(|t| t.partitions.first())
        .map(|p| (p.leader_id.0, p.leader_epoch, p.isr_nodes.len()));
    p.unwrap_or((-1, -1, 0))
}

#[test]
fn produce_and_fetch_answers_name_the_current_leader() {
    let mut cluster = Cluster::combined_with(
        3,
        &[
            "broker.session.timeout.ms=600000",
            "replica.fetch.backoff.ms=100",
            "replica.fetch.wait.max.ms=200",
        ],
    );
    // The leader is not the active controller, so killing it fences it at once.
    let controller = cluster.quorum_leader(1);
    let leader = controller % 3 + 1;
    let follower = leader % 3 + 1;
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_num_partitions(-1)
            .with_replication_factor(-1)
            .with_assignments(vec![CreatableReplicaAssignment::default()
                .with_partition_index(0)
                .with_broker_ids(vec![
                    BrokerId(leader),
                    BrokerId(follower),
                    BrokerId(controller),
                ])])])
        .with_timeout_ms(30_000);
    match call(
        &cluster.node(controller).bootstrap(),
        ApiKey::CreateTopics,
        7,
        RequestKind::CreateTopics(request),
    ) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0, "{r:?}"),
        other => panic!("{other:?}"),
    }
    let via = cluster.node(follower).bootstrap();
    wait_until("a full ISR led by the first replica", WAIT_MAX, || {
        leader_of(&via) == (leader, leader_of(&via).1, 3)
    });
    let epoch = leader_of(&via).1;
    let ports: Vec<i32> = (1..=3)
        .map(|id| i32::from(cluster.node(id).client_port.unwrap()))
        .collect();
    let endpoint = |id: i32| (id, "127.0.0.1".to_string(), ports[id as usize - 1]);
    let not_leader = ResponseError::NotLeaderOrFollower.code();
    let hinted = |code, id, epoch| Hint {
        code,
        leader: (id, epoch),
        endpoints: vec![endpoint(id)],
    };
    let unhinted = |code| Hint {
        code,
        leader: (-1, -1),
        endpoints: vec![],
    };

    // A follower sends producers and consumers to the leader.
    assert_eq!(produce(&via, 11), hinted(not_leader, leader, epoch));
    assert_eq!(produce(&via, 10), hinted(not_leader, leader, epoch));
    assert_eq!(fetch(&via, 16, -1), hinted(not_leader, leader, epoch));
    // Before KIP-951's versions, only the error.
    assert_eq!(produce(&via, 9), unhinted(not_leader));
    assert_eq!(fetch(&via, 15, -1), unhinted(not_leader));

    // The leader dies; a consumer still on the old epoch is fenced by the new leader and told
    // who leads now, in which epoch.
    cluster.kill(leader);
    let (new_leader, new_epoch) = wait_for("a new leader", WAIT_MAX, || {
        let (id, e, _) = leader_of(&via);
        (id != leader && id >= 0).then_some((id, e))
    });
    assert!(new_epoch > epoch);
    let at_new = cluster.node(new_leader).bootstrap();
    assert_eq!(
        fetch(&at_new, 16, epoch),
        hinted(
            ResponseError::FencedLeaderEpoch.code(),
            new_leader,
            new_epoch
        )
    );
    let other = [follower, controller]
        .into_iter()
        .find(|id| *id != new_leader)
        .unwrap();
    let at_other = cluster.node(other).bootstrap();
    assert_eq!(
        produce(&at_other, 11),
        hinted(not_leader, new_leader, new_epoch)
    );
}
