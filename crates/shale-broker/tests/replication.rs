//! Replicated partitions on a three-node cluster of in-process brokers (combined broker and
//! controller roles, a Raft metadata quorum on loopback): followers copy the leader's
//! batches byte for byte, the ISR and high watermark follow them, acks=all waits for the
//! ISR, `min.insync.replicas` refuses writes, and leadership moves on controlled shutdown
//! without losing an acknowledged record.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::describe_topic_partitions_request::TopicRequest;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, ApiKey, BrokerId, DescribeTopicPartitionsRequest,
    ElectLeadersRequest, FetchRequest, ListPartitionReassignmentsRequest, MetadataRequest,
    ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shale_broker::config::{BrokerConfig, StaticProperties, ValueOrigin};
use shale_broker::replication::client::BrokerClient;
use shale_broker::{Broker, BrokerHandle};
use shale_log::TopicPartition;
use shale_metadata::{ControllerRequest, ControllerResponse, CreatableTopic};

const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";

use shale_testkit::free_port;

struct Node {
    id: i32,
    config: BrokerConfig,
    handle: Option<BrokerHandle>,
    _dir: tempfile::TempDir,
}

impl Node {
    fn broker(&self) -> &Arc<Broker> {
        &self.handle.as_ref().expect("running").broker
    }

    fn bootstrap(&self) -> String {
        let (_, addr) = &self.handle.as_ref().expect("running").bound[0];
        addr.to_string()
    }
}

struct Cluster {
    nodes: Vec<Node>,
}

impl Cluster {
    async fn start(size: i32, extra: &[(&str, &str)]) -> Cluster {
        let controller_ports: Vec<u16> = (0..size).map(|_| free_port()).collect();
        let voters = (1..=size)
            .map(|id| format!("{id}@127.0.0.1:{}", controller_ports[(id - 1) as usize]))
            .collect::<Vec<_>>()
            .join(",");
        let mut nodes = Vec::new();
        for id in 1..=size {
            let dir = tempfile::tempdir().unwrap();
            let data = dir.path().join("data");
            let mut props = StaticProperties::default();
            let controller_port = controller_ports[(id - 1) as usize];
            let listeners =
                format!("PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{controller_port}");
            let id_text = id.to_string();
            let data_text = data.display().to_string();
            let base: Vec<(&str, &str)> = vec![
                ("node.id", &id_text),
                ("process.roles", "broker,controller"),
                ("controller.quorum.voters", &voters),
                ("controller.listener.names", "CONTROLLER"),
                ("listeners", &listeners),
                ("advertised.listeners", "PLAINTEXT://127.0.0.1:0"),
                ("log.dirs", &data_text),
                ("replica.fetch.backoff.ms", "50"),
                ("replica.fetch.wait.max.ms", "100"),
                ("broker.heartbeat.interval.ms", "200"),
                ("broker.session.timeout.ms", "3000"),
                ("offsets.topic.replication.factor", "3"),
            ];
            for (k, v) in base.iter().chain(extra.iter()) {
                props.set(k, v, ValueOrigin::Override);
            }
            let config = BrokerConfig::from_properties(props).unwrap();
            shale_metadata::meta_properties::format(&config.log_dirs, id, CLUSTER_ID, true)
                .unwrap();
            nodes.push((id, config, dir));
        }
        // Every voter must be up for the quorum to elect, so they start together.
        let started = futures_start(nodes.iter().map(|(_, c, _)| c.clone()).collect()).await;
        let nodes = nodes
            .into_iter()
            .zip(started)
            .map(|((id, config, dir), handle)| Node {
                id,
                config,
                handle: Some(handle),
                _dir: dir,
            })
            .collect();
        let cluster = Cluster { nodes };
        cluster
            .wait(|image| image.brokers().filter(|b| b.is_active()).count() == size as usize)
            .await;
        cluster
    }

    fn running(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.handle.is_some())
    }

    fn node(&self, id: i32) -> &Node {
        self.nodes.iter().find(|n| n.id == id).unwrap()
    }

    /// Waits until every running node's image satisfies `f` and its partitions follow it.
    async fn wait(&self, f: impl Fn(&shale_metadata::MetadataImage) -> bool) {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let images: Vec<_> = self.running().map(|n| n.broker().image()).collect();
                if images.iter().all(|i| f(i)) {
                    for (n, image) in self.running().zip(images) {
                        n.broker().wait_reconciled(image.offset).await;
                    }
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("cluster state not reached in time");
    }

    async fn create_topic(&self, name: &str, partitions: i32, configs: &[(&str, &str)]) {
        let broker = self.running().next().unwrap().broker().clone();
        let topic = CreatableTopic {
            name: name.to_string(),
            num_partitions: partitions,
            replication_factor: 3,
            assignments: Vec::new(),
            configs: configs
                .iter()
                .map(|(k, v)| (k.to_string(), Some(v.to_string())))
                .collect(),
        };
        let response = broker
            .metadata
            .submit(ControllerRequest::CreateTopics {
                topics: vec![topic],
                validate_only: false,
            })
            .await
            .unwrap();
        let ControllerResponse::CreateTopics(results) = response else {
            panic!("{response:?}");
        };
        assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
        self.wait(|image| image.topic(name).is_some()).await;
    }

    /// Creates a one-partition topic on `replicas` (the first leads).
    async fn create_assigned(&self, name: &str, replicas: Vec<i32>, configs: &[(&str, &str)]) {
        let broker = self.running().next().unwrap().broker().clone();
        let response = broker
            .metadata
            .submit(ControllerRequest::CreateTopics {
                topics: vec![CreatableTopic {
                    name: name.into(),
                    num_partitions: -1,
                    replication_factor: -1,
                    assignments: vec![(0, replicas.clone())],
                    configs: configs
                        .iter()
                        .map(|(k, v)| (k.to_string(), Some(v.to_string())))
                        .collect(),
                }],
                validate_only: false,
            })
            .await
            .unwrap();
        assert!(
            matches!(response, ControllerResponse::CreateTopics(ref r) if r[0].1.is_ok()),
            "{response:?}"
        );
        self.wait(|image| {
            image
                .topic(name)
                .is_some_and(|t| t.partitions[&0].isr.len() == replicas.len())
        })
        .await;
    }

    /// The partition's log on node `id`: (log end, bytes up to it).
    fn log_of(&self, id: i32, topic: &str) -> (i64, Bytes) {
        let p = self
            .node(id)
            .broker()
            .replicas
            .get(&TopicPartition::new(topic, 0))
            .unwrap();
        let end = p.log.log_end_offset();
        let bytes = p
            .log
            .read(p.log.log_start_offset(), usize::MAX >> 1, end, true)
            .unwrap()
            .to_bytes()
            .unwrap();
        (end, bytes)
    }

    fn leader_of(&self, topic: &str, partition: i32) -> i32 {
        let image = self.running().next().unwrap().broker().image();
        image.topic(topic).unwrap().partitions[&partition].leader
    }

    /// Waits until every replica of the partition has the leader's log up to the same end
    /// and high watermark, then checks they are byte-identical.
    async fn wait_replicas_identical(&self, topic: &str, partition: i32) -> (i64, Bytes) {
        let tp = TopicPartition::new(topic, partition);
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let states: Vec<(i64, i64)> = self
                    .running()
                    .filter_map(|n| n.broker().replicas.get(&tp))
                    .map(|p| (p.log.log_end_offset(), p.high_watermark()))
                    .collect();
                if states.len() == self.running().count()
                    && states.windows(2).all(|w| w[0] == w[1])
                    && states.iter().all(|(leo, hw)| leo == hw)
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("replicas did not converge");
        let mut logs = Vec::new();
        for n in self.running() {
            let p = n.broker().replicas.get(&tp).unwrap();
            let hw = p.high_watermark();
            let bytes = p
                .log
                .read(p.log.log_start_offset(), usize::MAX >> 1, hw, true)
                .unwrap()
                .to_bytes()
                .unwrap();
            logs.push((n.id, hw, bytes));
        }
        for w in logs.windows(2) {
            assert_eq!(
                w[0].1, w[1].1,
                "high watermarks of {} and {}",
                w[0].0, w[1].0
            );
            if w[0].2 != w[1].2 {
                let at = w[0].2.iter().zip(w[1].2.iter()).position(|(a, b)| a != b);
                panic!(
                    "logs of {} and {} differ: {} and {} bytes, first difference at {at:?}\n{:?}\n{:?}",
                    w[0].0,
                    w[1].0,
                    w[0].2.len(),
                    w[1].2.len(),
                    shale_log::batch::parse_batches(&w[0].2).unwrap(),
                    shale_log::batch::parse_batches(&w[1].2).unwrap()
                );
            }
        }
        let (_, hw, bytes) = logs.remove(0);
        (hw, bytes)
    }

    /// Waits until nodes `ids` hold the same log end and bytes for partition 0 of `topic`.
    async fn wait_replicas_identical_on(&self, ids: &[i32], topic: &str) {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let logs: Vec<(i64, Bytes)> =
                    ids.iter().map(|id| self.log_of(*id, topic)).collect();
                if logs.windows(2).all(|w| w[0] == w[1]) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("replicas did not converge");
    }

    async fn shutdown(&mut self, id: i32) {
        let node = self.nodes.iter_mut().find(|n| n.id == id).unwrap();
        node.handle.take().unwrap().shutdown().await;
    }

    /// Starts a stopped node again on its data (its client port changes).
    async fn restart(&mut self, id: i32) {
        let node = self.nodes.iter_mut().find(|n| n.id == id).unwrap();
        assert!(node.handle.is_none());
        node.handle = Some(Broker::start(node.config.clone()).await.unwrap());
    }

    async fn shutdown_all(mut self) {
        for n in self.nodes.iter_mut() {
            if let Some(h) = n.handle.take() {
                h.shutdown().await;
            }
        }
    }
}

async fn futures_start(configs: Vec<BrokerConfig>) -> Vec<BrokerHandle> {
    let tasks: Vec<_> = configs
        .into_iter()
        .map(|c| tokio::spawn(async move { Broker::start(c).await.unwrap() }))
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// One record batch (magic 2, uncompressed, no producer) holding `values`.
fn batch(values: &[&[u8]]) -> Vec<u8> {
    let mut records = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let mut body = Vec::new();
        body.push(0u8); // attributes
        put_varint(&mut body, 0); // timestamp delta
        put_varint(&mut body, i as i64); // offset delta
        put_varint(&mut body, -1); // key
        put_varint(&mut body, v.len() as i64);
        body.extend_from_slice(v);
        put_varint(&mut body, 0); // headers
        put_varint(&mut records, body.len() as i64);
        records.extend_from_slice(&body);
    }
    // Current timestamps: time-based retention would delete older ones.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut after_crc = Vec::new();
    after_crc.extend_from_slice(&0i16.to_be_bytes()); // attributes
    after_crc.extend_from_slice(&(values.len() as i32 - 1).to_be_bytes());
    after_crc.extend_from_slice(&now.to_be_bytes());
    after_crc.extend_from_slice(&now.to_be_bytes());
    after_crc.extend_from_slice(&(-1i64).to_be_bytes()); // producer id
    after_crc.extend_from_slice(&(-1i16).to_be_bytes());
    after_crc.extend_from_slice(&(-1i32).to_be_bytes());
    after_crc.extend_from_slice(&(values.len() as i32).to_be_bytes());
    after_crc.extend_from_slice(&records);
    let crc = crc32c(&after_crc);
    let mut out = Vec::new();
    out.extend_from_slice(&0i64.to_be_bytes()); // base offset
    out.extend_from_slice(&((after_crc.len() + 9) as i32).to_be_bytes()); // batch length
    out.extend_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch
    out.push(2); // magic
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&after_crc);
    out
}

/// CRC-32C (Castagnoli), bit by bit: the test builds a handful of small batches.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        if z < 0x80 {
            out.push(z as u8);
            return;
        }
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
}

/// Produces one batch with `acks` to `bootstrap`; returns (error code, base offset).
async fn produce(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    acks: i16,
    timeout_ms: i32,
    values: &[&[u8]],
) -> (i16, i64) {
    let mut client = BrokerClient::connect(bootstrap, "test".into(), Duration::from_secs(5))
        .await
        .unwrap();
    let request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(timeout_ms)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(Bytes::from(batch(values))))])]);
    let response = client
        .call(
            ApiKey::Produce,
            9,
            RequestKind::Produce(request),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    let ResponseKind::Produce(response) = response else {
        panic!("{response:?}");
    };
    let p = &response.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// One request to `bootstrap` over a fresh connection.
async fn call(bootstrap: &str, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
    let mut client = BrokerClient::connect(bootstrap, "test".into(), Duration::from_secs(5))
        .await
        .unwrap();
    client
        .call(key, version, request, Duration::from_secs(60))
        .await
        .unwrap()
}

/// A consumer Fetch of partition 0 at offset 0 with `current_leader_epoch`: its error code.
async fn fetch_error(bootstrap: &str, topic: &str, current_leader_epoch: i32) -> i16 {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(current_leader_epoch)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let ResponseKind::Fetch(response) =
        call(bootstrap, ApiKey::Fetch, 12, RequestKind::Fetch(request)).await
    else {
        panic!("not a Fetch answer")
    };
    response.responses[0].partitions[0].error_code
}

fn count_records(bytes: &Bytes) -> i64 {
    shale_log::batch::parse_batches(bytes)
        .unwrap()
        .iter()
        .map(|h| i64::from(h.record_count))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acks_all_is_answered_once_every_isr_member_has_the_batch() {
    let cluster = Cluster::start(3, &[]).await;
    cluster.create_topic("r3", 1, &[]).await;
    cluster
        .wait(|image| image.topic("r3").unwrap().partitions[&0].isr.len() == 3)
        .await;
    let leader = cluster.leader_of("r3", 0);
    let bootstrap = cluster.node(leader).bootstrap();
    let mut offsets = Vec::new();
    for i in 0..20 {
        let value = format!("record-{i}");
        let (code, base) = produce(&bootstrap, "r3", 0, -1, 10_000, &[value.as_bytes()]).await;
        assert_eq!(code, 0, "produce {i}");
        // acks=all: by the time of the answer the leader's high watermark covers the batch.
        let p = cluster
            .node(leader)
            .broker()
            .replicas
            .get(&TopicPartition::new("r3", 0))
            .unwrap();
        assert!(p.high_watermark() > base);
        offsets.push(base);
    }
    assert_eq!(offsets, (0..20).collect::<Vec<i64>>());
    // A follower refuses produce with NOT_LEADER_OR_FOLLOWER.
    let follower = cluster.running().find(|n| n.id != leader).unwrap();
    let (code, _) = produce(&follower.bootstrap(), "r3", 0, -1, 1_000, &[b"x"]).await;
    assert_eq!(code, 6);

    let (hw, bytes) = cluster.wait_replicas_identical("r3", 0).await;
    assert_eq!(hw, 20);
    assert_eq!(count_records(&bytes), 20);
    cluster.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn controlled_shutdown_of_the_leader_keeps_every_acknowledged_record() {
    let mut cluster = Cluster::start(3, &[]).await;
    cluster
        .create_topic("failover", 1, &[("min.insync.replicas", "2")])
        .await;
    cluster
        .wait(|image| image.topic("failover").unwrap().partitions[&0].isr.len() == 3)
        .await;
    let first_leader = cluster.leader_of("failover", 0);
    let bootstrap = cluster.node(first_leader).bootstrap();
    for i in 0..10 {
        let value = format!("before-{i}");
        let (code, _) = produce(&bootstrap, "failover", 0, -1, 10_000, &[value.as_bytes()]).await;
        assert_eq!(code, 0);
    }
    cluster.shutdown(first_leader).await;
    cluster
        .wait(|image| {
            let p = &image.topic("failover").unwrap().partitions[&0];
            p.leader >= 0 && p.leader != first_leader
        })
        .await;
    let second_leader = cluster.leader_of("failover", 0);
    let bootstrap = cluster.node(second_leader).bootstrap();
    // Clients with stale metadata: an older leader epoch is fenced, a newer one unknown, and
    // Metadata shows the stopped broker offline and out of the ISR.
    let epoch = cluster
        .node(second_leader)
        .broker()
        .image()
        .topic("failover")
        .unwrap()
        .partitions[&0]
        .leader_epoch;
    assert_eq!(fetch_error(&bootstrap, "failover", epoch - 1).await, 74);
    assert_eq!(fetch_error(&bootstrap, "failover", epoch + 1).await, 75);
    assert_eq!(fetch_error(&bootstrap, "failover", epoch).await, 0);
    cluster
        .wait(|image| image.broker(first_leader).is_some_and(|b| b.fenced))
        .await;
    let ResponseKind::Metadata(metadata) = call(
        &bootstrap,
        ApiKey::Metadata,
        12,
        RequestKind::Metadata(MetadataRequest::default().with_topics(None)),
    )
    .await
    else {
        panic!("not a Metadata answer")
    };
    let topic = metadata
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "failover"))
        .unwrap();
    let p = &topic.partitions[0];
    assert_eq!(p.leader_id.0, second_leader);
    assert_eq!(p.leader_epoch, epoch);
    assert_eq!(p.replica_nodes.len(), 3);
    assert!(!p.isr_nodes.contains(&BrokerId(first_leader)));
    assert_eq!(p.offline_replicas, vec![BrokerId(first_leader)]);
    for i in 0..10 {
        let value = format!("after-{i}");
        let (code, base) =
            produce(&bootstrap, "failover", 0, -1, 10_000, &[value.as_bytes()]).await;
        assert_eq!(code, 0, "produce after failover");
        assert_eq!(base, 10 + i);
    }
    let (hw, bytes) = cluster.wait_replicas_identical("failover", 0).await;
    assert_eq!(hw, 20);
    assert_eq!(count_records(&bytes), 20);

    // The first leader comes back, rejoins the ISR, and a preferred election (ElectLeaders)
    // gives it back its leadership.
    cluster.restart(first_leader).await;
    cluster
        .wait(|image| image.topic("failover").unwrap().partitions[&0].isr.len() == 3)
        .await;
    let preferred = cluster
        .node(1)
        .broker()
        .image()
        .topic("failover")
        .unwrap()
        .partitions[&0]
        .replicas[0];
    assert_eq!(preferred, first_leader);
    let request = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_topic_partitions(Some(vec![TopicPartitions::default()
            .with_topic(TopicName(StrBytes::from_static_str("failover")))
            .with_partitions(vec![0])]))
        .with_timeout_ms(10_000);
    let ResponseKind::ElectLeaders(response) = call(
        &cluster.node(second_leader).bootstrap(),
        ApiKey::ElectLeaders,
        2,
        RequestKind::ElectLeaders(request),
    )
    .await
    else {
        panic!("not an ElectLeaders answer")
    };
    let result = &response.replica_election_results[0].partition_result[0];
    assert_eq!(result.error_code, 0, "{response:?}");
    cluster
        .wait(|image| image.topic("failover").unwrap().partitions[&0].leader == first_leader)
        .await;
    let (code, base) = produce(
        &cluster.node(first_leader).bootstrap(),
        "failover",
        0,
        -1,
        10_000,
        &[b"back-home"],
    )
    .await;
    assert_eq!((code, base), (0, 20));
    cluster.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn min_insync_replicas_refuses_acks_all_when_the_isr_is_too_small() {
    let mut cluster = Cluster::start(3, &[]).await;
    cluster
        .create_topic("strict", 1, &[("min.insync.replicas", "3")])
        .await;
    cluster
        .wait(|image| image.topic("strict").unwrap().partitions[&0].isr.len() == 3)
        .await;
    let leader = cluster.leader_of("strict", 0);
    let bootstrap = cluster.node(leader).bootstrap();
    assert_eq!(
        produce(&bootstrap, "strict", 0, -1, 10_000, &[b"a"])
            .await
            .0,
        0
    );
    let follower = cluster
        .running()
        .map(|n| n.id)
        .find(|id| *id != leader)
        .unwrap();
    cluster.shutdown(follower).await;
    cluster
        .wait(|image| image.topic("strict").unwrap().partitions[&0].isr.len() == 2)
        .await;
    // NOT_ENOUGH_REPLICAS (19) for acks=all; acks=1 still writes.
    assert_eq!(
        produce(&bootstrap, "strict", 0, -1, 10_000, &[b"b"])
            .await
            .0,
        19
    );
    assert_eq!(
        produce(&bootstrap, "strict", 0, 1, 10_000, &[b"c"]).await.0,
        0
    );
    let isr: BTreeMap<i32, usize> = cluster
        .running()
        .map(|n| {
            (
                n.id,
                n.broker().image().topic("strict").unwrap().partitions[&0]
                    .isr
                    .len(),
            )
        })
        .collect();
    assert!(isr.values().all(|l| *l == 2), "{isr:?}");
    cluster.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_follower_catches_up_and_rejoins_the_isr() {
    let mut cluster = Cluster::start(3, &[]).await;
    cluster
        .create_topic("rejoin", 1, &[("min.insync.replicas", "2")])
        .await;
    cluster
        .wait(|image| image.topic("rejoin").unwrap().partitions[&0].isr.len() == 3)
        .await;
    let leader = cluster.leader_of("rejoin", 0);
    let bootstrap = cluster.node(leader).bootstrap();
    for i in 0..5 {
        let value = format!("all-three-{i}");
        assert_eq!(
            produce(&bootstrap, "rejoin", 0, -1, 10_000, &[value.as_bytes()])
                .await
                .0,
            0
        );
    }
    let follower = cluster
        .running()
        .map(|n| n.id)
        .find(|id| *id != leader)
        .unwrap();
    cluster.shutdown(follower).await;
    cluster
        .wait(|image| {
            !image.topic("rejoin").unwrap().partitions[&0]
                .isr
                .contains(&follower)
        })
        .await;
    // Two in sync still satisfy min.insync.replicas=2.
    for i in 0..5 {
        let value = format!("two-of-three-{i}");
        assert_eq!(
            produce(&bootstrap, "rejoin", 0, -1, 10_000, &[value.as_bytes()])
                .await
                .0,
            0
        );
    }
    cluster.restart(follower).await;
    // The leader proposes the caught-up follower back (AlterPartition).
    cluster
        .wait(|image| image.topic("rejoin").unwrap().partitions[&0].isr.len() == 3)
        .await;
    let (hw, bytes) = cluster.wait_replicas_identical("rejoin", 0).await;
    assert_eq!(hw, 10);
    assert_eq!(count_records(&bytes), 10);
    cluster.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reassignment_moves_a_replica_while_the_partition_stays_writable() {
    let cluster = Cluster::start(3, &[]).await;
    let broker = cluster.node(1).broker().clone();
    let response = broker
        .metadata
        .submit(ControllerRequest::CreateTopics {
            topics: vec![CreatableTopic {
                name: "moving".into(),
                num_partitions: -1,
                replication_factor: -1,
                assignments: vec![(0, vec![1, 2])],
                configs: Vec::new(),
            }],
            validate_only: false,
        })
        .await
        .unwrap();
    assert!(matches!(response, ControllerResponse::CreateTopics(ref r) if r[0].1.is_ok()));
    cluster
        .wait(|image| {
            image
                .topic("moving")
                .is_some_and(|t| t.partitions[&0].isr.len() == 2)
        })
        .await;
    let leader = cluster.leader_of("moving", 0);
    for i in 0..5 {
        let value = format!("before-move-{i}");
        let bootstrap = cluster.node(leader).bootstrap();
        assert_eq!(
            produce(&bootstrap, "moving", 0, -1, 10_000, &[value.as_bytes()])
                .await
                .0,
            0
        );
    }
    let request = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(10_000)
        .with_allow_replication_factor_change(false)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("moving")))
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(0)
                .with_replicas(Some(vec![BrokerId(1), BrokerId(3)]))])]);
    let ResponseKind::AlterPartitionReassignments(response) = call(
        &cluster.node(3).bootstrap(),
        ApiKey::AlterPartitionReassignments,
        1,
        RequestKind::AlterPartitionReassignments(request),
    )
    .await
    else {
        panic!("not an AlterPartitionReassignments answer")
    };
    assert_eq!(response.error_code, 0, "{response:?}");
    assert_eq!(
        response.responses[0].partitions[0].error_code, 0,
        "{response:?}"
    );
    // Broker 3 catches up, joins the ISR, and the controller completes the move.
    cluster
        .wait(|image| {
            let p = &image.topic("moving").unwrap().partitions[&0];
            p.replicas == vec![1, 3] && !p.is_reassigning() && p.isr.len() == 2
        })
        .await;
    let leader = cluster.leader_of("moving", 0);
    let bootstrap = cluster.node(leader).bootstrap();
    assert_eq!(
        produce(&bootstrap, "moving", 0, -1, 10_000, &[b"after-move"])
            .await
            .0,
        0
    );
    let tp = TopicPartition::new("moving", 0);
    tokio::time::timeout(Duration::from_secs(30), async {
        while cluster.node(2).broker().replicas.get(&tp).is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the removed replica is deleted");
    let ResponseKind::ListPartitionReassignments(listed) = call(
        &cluster.node(1).bootstrap(),
        ApiKey::ListPartitionReassignments,
        0,
        RequestKind::ListPartitionReassignments(
            ListPartitionReassignmentsRequest::default().with_timeout_ms(10_000),
        ),
    )
    .await
    else {
        panic!("not a ListPartitionReassignments answer")
    };
    assert!(listed.topics.is_empty(), "{listed:?}");
    for id in [1, 3] {
        let p = cluster.node(id).broker().replicas.get(&tp).unwrap();
        tokio::time::timeout(Duration::from_secs(30), async {
            while p.high_watermark() < 6 || p.log.log_end_offset() < 6 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("both replicas hold every record");
    }
    cluster.shutdown_all().await;
}

/// KIP-101, first scenario: a follower that restarts must not cut its log back to its own
/// high watermark (which lags the leader's, and here starts at the log start): if it did and
/// then became leader, acknowledged records would be gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kip101_a_restarted_follower_keeps_acknowledged_records_and_can_lead() {
    let mut cluster = Cluster::start(3, &[]).await;
    cluster.create_assigned("kip101a", vec![1, 2], &[]).await;
    for i in 0..10 {
        let value = format!("acked-{i}");
        let (code, _) = produce(
            &cluster.node(1).bootstrap(),
            "kip101a",
            0,
            -1,
            10_000,
            &[value.as_bytes()],
        )
        .await;
        assert_eq!(code, 0);
    }
    cluster.shutdown(2).await;
    cluster.restart(2).await;
    cluster
        .wait(|image| image.topic("kip101a").unwrap().partitions[&0].isr.len() == 2)
        .await;
    cluster.shutdown(1).await;
    cluster
        .wait(|image| image.topic("kip101a").unwrap().partitions[&0].leader == 2)
        .await;
    let (end, bytes) = cluster.log_of(2, "kip101a");
    assert_eq!(end, 10);
    assert_eq!(count_records(&bytes), 10);
    let (code, base) = produce(
        &cluster.node(2).bootstrap(),
        "kip101a",
        0,
        -1,
        10_000,
        &[b"after"],
    )
    .await;
    assert_eq!((code, base), (0, 10));
    cluster.shutdown_all().await;
}

/// KIP-101, second scenario: two replicas whose logs diverge at the same offset under
/// different leader epochs. The old leader, back as follower, must drop its divergent record
/// (OffsetForLeaderEpoch) and copy the new leader's, leaving byte-identical logs. The
/// divergence needs an unclean election, which the topic allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kip101_divergent_logs_are_truncated_to_the_new_leaders_epoch() {
    let mut cluster = Cluster::start(3, &[]).await;
    cluster
        .create_assigned(
            "kip101b",
            vec![1, 2],
            &[("unclean.leader.election.enable", "true")],
        )
        .await;
    let (code, _) = produce(
        &cluster.node(1).bootstrap(),
        "kip101b",
        0,
        -1,
        10_000,
        &[b"m1"],
    )
    .await;
    assert_eq!(code, 0);
    cluster.wait_replicas_identical_on(&[1, 2], "kip101b").await;
    // The follower leaves (controlled: out of the ISR); the leader alone writes m2.
    cluster.shutdown(2).await;
    cluster
        .wait(|image| image.topic("kip101b").unwrap().partitions[&0].isr == vec![1])
        .await;
    let (code, base) = produce(
        &cluster.node(1).bootstrap(),
        "kip101b",
        0,
        -1,
        10_000,
        &[b"m2-old"],
    )
    .await;
    assert_eq!((code, base), (0, 1));
    cluster.shutdown(1).await;
    // The out-of-sync replica comes back and is elected uncleanly; it writes its own offset 1.
    cluster.restart(2).await;
    cluster
        .wait(|image| image.topic("kip101b").unwrap().partitions[&0].leader == 2)
        .await;
    let (code, base) = produce(
        &cluster.node(2).bootstrap(),
        "kip101b",
        0,
        -1,
        10_000,
        &[b"m2-new"],
    )
    .await;
    assert_eq!((code, base), (0, 1));
    cluster.restart(1).await;
    cluster
        .wait(|image| image.topic("kip101b").unwrap().partitions[&0].isr.len() == 2)
        .await;
    cluster.wait_replicas_identical_on(&[1, 2], "kip101b").await;
    let (end, bytes) = cluster.log_of(1, "kip101b");
    assert_eq!(end, 2);
    assert!(
        bytes.windows(6).any(|w| w == b"m2-new") && !bytes.windows(6).any(|w| w == b"m2-old"),
        "the old leader kept its divergent record"
    );
    cluster.shutdown_all().await;
}

/// A follower whose log ends below the leader's log start (records deleted while it was
/// away) restarts its log at the leader's log start and catches up from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_follower_behind_the_leaders_log_start_restarts_there() {
    let mut cluster = Cluster::start(3, &[]).await;
    cluster.create_assigned("trimmed", vec![1, 2], &[]).await;
    cluster.shutdown(2).await;
    cluster
        .wait(|image| image.topic("trimmed").unwrap().partitions[&0].isr == vec![1])
        .await;
    for i in 0..10 {
        let value = format!("r{i}");
        let (code, _) = produce(
            &cluster.node(1).bootstrap(),
            "trimmed",
            0,
            -1,
            10_000,
            &[value.as_bytes()],
        )
        .await;
        assert_eq!(code, 0);
    }
    let leader = cluster
        .node(1)
        .broker()
        .replicas
        .get(&TopicPartition::new("trimmed", 0))
        .unwrap();
    assert_eq!(leader.delete_records_before(8).unwrap(), 8);
    cluster.restart(2).await;
    cluster
        .wait(|image| image.topic("trimmed").unwrap().partitions[&0].isr.len() == 2)
        .await;
    cluster.wait_replicas_identical_on(&[1, 2], "trimmed").await;
    let follower = cluster
        .node(2)
        .broker()
        .replicas
        .get(&TopicPartition::new("trimmed", 0))
        .unwrap();
    assert_eq!(follower.log.log_start_offset(), 8);
    assert_eq!(follower.log.log_end_offset(), 10);
    cluster.shutdown_all().await;
}

/// KIP-279: leadership moves twice in quick succession between replicas that each wrote
/// records the other never saw. The last follower's log holds an epoch the leader never
/// had; it must cut back to where its own older epoch ends, not to the leader's end of that
/// epoch, or it would keep a record that diverges.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kip279_fast_double_failover_leaves_identical_logs() {
    let mut cluster = Cluster::start(3, &[]).await;
    let unclean = [("unclean.leader.election.enable", "true")];
    cluster
        .create_assigned("kip279", vec![1, 2], &unclean)
        .await;
    let write = |cluster: &Cluster, id: i32, value: &'static [u8]| {
        let addr = cluster.node(id).bootstrap();
        async move { produce(&addr, "kip279", 0, -1, 10_000, &[value]).await }
    };
    assert_eq!(write(&cluster, 1, b"value-m0").await, (0, 0));
    cluster.wait_replicas_identical_on(&[1, 2], "kip279").await;
    // Node 1 alone writes a1 at offset 1.
    cluster.shutdown(2).await;
    cluster
        .wait(|image| image.topic("kip279").unwrap().partitions[&0].isr == vec![1])
        .await;
    assert_eq!(write(&cluster, 1, b"value-a1").await, (0, 1));
    // Node 2 leads next (uncleanly) and writes b1, b2 at offsets 1 and 2.
    cluster.shutdown(1).await;
    cluster.restart(2).await;
    cluster
        .wait(|image| image.topic("kip279").unwrap().partitions[&0].leader == 2)
        .await;
    assert_eq!(write(&cluster, 2, b"value-b1").await, (0, 1));
    assert_eq!(write(&cluster, 2, b"value-b2").await, (0, 2));
    // Node 1 leads again before node 2 is back, and writes c2 at offset 2.
    cluster.shutdown(2).await;
    cluster.restart(1).await;
    cluster
        .wait(|image| image.topic("kip279").unwrap().partitions[&0].leader == 1)
        .await;
    assert_eq!(write(&cluster, 1, b"value-c2").await, (0, 2));
    // Node 2 returns as follower: its b1 and b2 go, node 1's a1 and c2 come.
    cluster.restart(2).await;
    cluster
        .wait(|image| image.topic("kip279").unwrap().partitions[&0].isr.len() == 2)
        .await;
    cluster.wait_replicas_identical_on(&[1, 2], "kip279").await;
    let (end, bytes) = cluster.log_of(2, "kip279");
    assert_eq!(end, 3);
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"value-a1") && has(b"value-c2") && !has(b"value-b1") && !has(b"value-b2"));
    cluster.shutdown_all().await;
}

/// `auto.leader.rebalance.enable`: once the preferred replica is back in the ISR, the
/// controller's periodic check (`leader.imbalance.check.interval.seconds`) moves leadership
/// back to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leadership_returns_to_the_preferred_replica_by_itself() {
    let mut cluster = Cluster::start(3, &[("leader.imbalance.check.interval.seconds", "1")]).await;
    cluster
        .create_assigned("rebalanced", vec![1, 2, 3], &[])
        .await;
    cluster.shutdown(1).await;
    cluster
        .wait(|image| {
            let p = &image.topic("rebalanced").unwrap().partitions[&0];
            p.leader > 1 && !p.isr.contains(&1)
        })
        .await;
    cluster.restart(1).await;
    cluster
        .wait(|image| image.topic("rebalanced").unwrap().partitions[&0].leader == 1)
        .await;
    let (code, base) = produce(
        &cluster.node(1).bootstrap(),
        "rebalanced",
        0,
        -1,
        10_000,
        &[b"home-again"],
    )
    .await;
    assert_eq!((code, base), (0, 0));
    cluster.shutdown_all().await;
}

/// KIP-966's "last replica standing": replicas 1, 2 and 3 hold ten acknowledged records;
/// 3 and 2 leave the ISR, so 1 is its last member; then 1 loses power and its unflushed
/// tail (no clean-shutdown marker, three batches cut off). Back first, it must not lead: its
/// followers would truncate to its shorter log and the acknowledged records would be gone
/// everywhere. Nodes 4 and 5 only keep the metadata quorum alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kip966_the_last_isr_member_with_a_lost_tail_is_not_elected() {
    let mut cluster = Cluster::start(5, &[]).await;
    cluster.create_assigned("kip966", vec![1, 2, 3], &[]).await;
    for i in 0..10 {
        let value = format!("acked-{i}");
        let (code, _) = produce(
            &cluster.node(1).bootstrap(),
            "kip966",
            0,
            -1,
            10_000,
            &[value.as_bytes()],
        )
        .await;
        assert_eq!(code, 0);
    }
    cluster
        .wait_replicas_identical_on(&[1, 2, 3], "kip966")
        .await;
    assert_eq!(cluster.log_of(2, "kip966").0, 10);
    cluster.shutdown(3).await;
    cluster.shutdown(2).await;
    cluster
        .wait(|image| image.topic("kip966").unwrap().partitions[&0].isr == vec![1])
        .await;
    cluster.shutdown(1).await;

    // The power loss: no clean-shutdown marker, and the last three batches never reached
    // the disk.
    let data = cluster.node(1).config.log_dirs[0].clone();
    std::fs::remove_file(data.join(".kafka_cleanshutdown")).unwrap();
    let segment = data.join("kip966-0").join("00000000000000000000.log");
    let bytes = std::fs::read(&segment).unwrap();
    let batches = shale_log::batch::parse_batches(&bytes).unwrap();
    assert_eq!(batches.len(), 10);
    let kept: usize = batches[..7]
        .iter()
        .map(|b| b.batch_length as usize + 12)
        .sum();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len(kept as u64)
        .unwrap();

    cluster.restart(1).await;
    cluster
        .wait(|image| image.broker(1).is_some_and(|b| b.is_active()))
        .await;
    assert_eq!(cluster.log_of(1, "kip966").0, 7);
    let p = cluster
        .node(1)
        .broker()
        .image()
        .topic("kip966")
        .unwrap()
        .partitions[&0]
        .clone();
    assert_eq!(
        (p.leader, p.isr.clone()),
        (-1, vec![]),
        "the replica that lost its tail may not lead"
    );

    // The replicas that still hold every acknowledged record return: they left the ISR
    // before, so none of them is elected cleanly either, and none truncates.
    cluster.restart(2).await;
    cluster.restart(3).await;
    cluster
        .wait(|image| {
            (1..=5).all(|id| image.broker(id).is_some_and(|b| b.is_active()))
                && image.topic("kip966").unwrap().partitions[&0].leader == -1
        })
        .await;
    for id in [2, 3] {
        let (end, bytes) = cluster.log_of(id, "kip966");
        assert_eq!((end, count_records(&bytes)), (10, 10), "replica {id}");
    }
    assert_ne!(
        fetch_error(&cluster.node(2).bootstrap(), "kip966", -1).await,
        0,
        "nobody serves the leaderless partition"
    );
    cluster.shutdown_all().await;
}

/// `num.replica.fetchers=2`: each follower runs two fetchers (two connections) against each
/// leader, partitions spread between them, and every partition still replicates in full.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partitions_of_one_leader_spread_over_num_replica_fetchers() {
    let cluster = Cluster::start(3, &[("num.replica.fetchers", "2")]).await;
    let partitions = 12;
    cluster.create_topic("spread", partitions, &[]).await;
    cluster
        .wait(|image| {
            image
                .topic("spread")
                .unwrap()
                .partitions
                .values()
                .all(|p| p.isr.len() == 3)
        })
        .await;
    for p in 0..partitions {
        let leader = cluster.leader_of("spread", p);
        let bootstrap = cluster.node(leader).bootstrap();
        let value = format!("record-{p}");
        let (code, _) = produce(&bootstrap, "spread", p, -1, 10_000, &[value.as_bytes()]).await;
        assert_eq!(code, 0, "acks=all produce to partition {p}");
    }
    for p in 0..partitions {
        let (hw, bytes) = cluster.wait_replicas_identical("spread", p).await;
        assert_eq!(hw, 1, "partition {p}");
        assert_eq!(count_records(&bytes), 1, "partition {p}");
    }
    // Round-robin placement gives each broker four leaderships whose partition numbers
    // alternate in parity, so Kafka's spread (31 * hash(topic) + partition) % 2 uses both.
    for node in cluster.running() {
        let image = node.broker().image();
        let topic = image.topic("spread").unwrap();
        let mut sources: Vec<i32> = topic
            .partitions
            .values()
            .map(|p| p.leader)
            .filter(|l| *l != node.id)
            .collect();
        sources.sort_unstable();
        sources.dedup();
        assert_eq!(node.broker().replication.fetch_sources(), sources);
        for source in sources {
            assert_eq!(
                node.broker().replication.fetchers_of(source),
                2,
                "node {} fetching from {source}",
                node.id
            );
        }
    }
    cluster.shutdown_all().await;
}

/// Controlled shutdown moves leadership while the leaving broker still serves (Kafka's order):
/// by the time its listener refuses connections, the active controller already names another
/// leader, so clients are told NOT_LEADER_OR_FOLLOWER rather than finding the leader gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn controlled_shutdown_moves_leadership_before_the_listener_closes() {
    let mut cluster = Cluster::start(3, &[]).await;
    let controller = cluster
        .running()
        .find(|n| n.broker().metadata.is_active_controller())
        .expect("an active controller")
        .id;
    let mut replicas: Vec<i32> = cluster
        .running()
        .map(|n| n.id)
        .filter(|id| *id != controller)
        .collect();
    replicas.push(controller);
    let leader = replicas[0];
    cluster.create_assigned("leaving", replicas, &[]).await;
    assert_eq!(cluster.leader_of("leaving", 0), leader);
    let address = cluster.node(leader).bootstrap();

    let node = cluster.nodes.iter_mut().find(|n| n.id == leader).unwrap();
    let stopping = tokio::spawn(node.handle.take().unwrap().shutdown());
    tokio::time::timeout(Duration::from_secs(30), async {
        // Nothing announces the listener closing; its refusal is the signal.
        while tokio::net::TcpStream::connect(&address).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the leaving broker's listener never closed");
    let image = cluster.node(controller).broker().image();
    let partition = &image.topic("leaving").unwrap().partitions[&0];
    assert_ne!(
        partition.leader, leader,
        "the listener closed while the leaving broker still led"
    );
    assert!(!partition.isr.contains(&leader), "{partition:?}");
    stopping.await.unwrap();
    cluster.shutdown_all().await;
}

/// KIP-966 with `min.insync.replicas=2` on replicas [1, 2, 3] (Kafka 4.1+ defaults: the
/// eligible-leader-replicas feature is on). Followers 3 then 2 stop: 2 left an ISR below min
/// ISR, so it is in the ELR, and the leader's high watermark no longer moves (acks=1 writes
/// are appended, not committed). The leader stops too; 2 comes back first and is elected
/// from the ELR, holding every record acknowledged with acks=all. Nodes 4 and 5 keep the
/// metadata quorum alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kip966_an_elr_member_is_elected_and_keeps_every_acknowledged_record() {
    let mut cluster = Cluster::start(5, &[]).await;
    cluster
        .create_assigned("elr", vec![1, 2, 3], &[("min.insync.replicas", "2")])
        .await;
    for i in 0..5 {
        let value = format!("acked-{i}");
        let (code, _) = produce(
            &cluster.node(1).bootstrap(),
            "elr",
            0,
            -1,
            10_000,
            &[value.as_bytes()],
        )
        .await;
        assert_eq!(code, 0);
    }
    cluster.wait_replicas_identical_on(&[1, 2, 3], "elr").await;
    let partition =
        |image: &shale_metadata::MetadataImage| image.topic("elr").unwrap().partitions[&0].clone();

    cluster.shutdown(3).await;
    cluster
        .wait(|image| partition(image).isr == vec![1, 2])
        .await;
    // 3 left at min ISR: the high watermark could advance without it.
    assert!(partition(&cluster.node(1).broker().image())
        .eligible_leader_replicas
        .is_empty());
    cluster.shutdown(2).await;
    cluster
        .wait(|image| {
            let p = partition(image);
            p.isr == vec![1] && p.eligible_leader_replicas == vec![2]
        })
        .await;

    // Below min ISR: acks=all is refused, acks=1 is appended but not committed.
    let leader = cluster.node(1).bootstrap();
    assert_eq!(
        produce(&leader, "elr", 0, -1, 10_000, &[b"refused"])
            .await
            .0,
        19
    );
    assert_eq!(
        produce(&leader, "elr", 0, 1, 10_000, &[b"uncommitted-1"])
            .await
            .0,
        0
    );
    assert_eq!(
        produce(&leader, "elr", 0, 1, 10_000, &[b"uncommitted-2"])
            .await
            .0,
        0
    );
    let hosted = cluster
        .node(1)
        .broker()
        .replicas
        .get(&TopicPartition::new("elr", 0))
        .unwrap();
    assert_eq!(
        (hosted.log.log_end_offset(), hosted.high_watermark()),
        (7, 5),
        "the high watermark holds below min ISR"
    );
    drop(hosted);

    cluster.shutdown(1).await;
    cluster
        .wait(|image| {
            let p = partition(image);
            p.leader == -1 && p.isr.is_empty() && p.eligible_leader_replicas == vec![1, 2]
        })
        .await;
    assert_eq!(
        partition(&cluster.node(4).broker().image()).last_known_elr,
        vec![1]
    );
    // DescribeTopicPartitions shows the same over the wire.
    let request = DescribeTopicPartitionsRequest::default()
        .with_topics(vec![
            TopicRequest::default().with_name(TopicName(StrBytes::from_static_str("elr")))
        ])
        .with_response_partition_limit(2000);
    let ResponseKind::DescribeTopicPartitions(described) = call(
        &cluster.node(4).bootstrap(),
        ApiKey::DescribeTopicPartitions,
        0,
        RequestKind::DescribeTopicPartitions(request),
    )
    .await
    else {
        panic!("not a DescribeTopicPartitions answer")
    };
    let p = &described.topics[0].partitions[0];
    assert_eq!(p.leader_id, BrokerId(-1));
    assert!(p.isr_nodes.is_empty());
    assert_eq!(
        p.eligible_leader_replicas,
        Some(vec![BrokerId(1), BrokerId(2)])
    );
    assert_eq!(p.last_known_elr, Some(vec![BrokerId(1)]));
    assert_eq!(
        p.offline_replicas,
        vec![BrokerId(1), BrokerId(2), BrokerId(3)]
    );

    cluster.restart(2).await;
    cluster
        .wait(|image| {
            let p = partition(image);
            p.leader == 2 && p.isr == vec![2] && p.eligible_leader_replicas == vec![1]
        })
        .await;
    let (end, bytes) = cluster.log_of(2, "elr");
    assert_eq!(
        (end, count_records(&bytes)),
        (5, 5),
        "every acks=all record"
    );

    // The old leader returns as a follower: it drops its uncommitted tail, rejoins the ISR,
    // and the ISR back at min ISR empties the ELR and lets the high watermark move.
    cluster.restart(1).await;
    cluster
        .wait(|image| {
            let p = partition(image);
            p.leader == 2 && p.isr.len() == 2 && p.eligible_leader_replicas.is_empty()
        })
        .await;
    cluster.wait_replicas_identical_on(&[1, 2], "elr").await;
    let (end, bytes) = cluster.log_of(1, "elr");
    assert_eq!((end, count_records(&bytes)), (5, 5));
    let (code, offset) = produce(
        &cluster.node(2).bootstrap(),
        "elr",
        0,
        -1,
        10_000,
        &[b"after"],
    )
    .await;
    assert_eq!((code, offset), (0, 5));
    cluster.shutdown_all().await;
}

/// Controlled shutdown needs the controller; a node left without a quorum still shuts down,
/// once the controlled shutdown gives up after its bound (the session timeout), and closes
/// its listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_last_node_without_a_quorum_still_shuts_down() {
    let mut cluster = Cluster::start(3, &[("broker.session.timeout.ms", "2000")]).await;
    cluster.create_topic("alone", 1, &[]).await;
    let ids: Vec<i32> = cluster.running().map(|n| n.id).collect();
    for id in &ids[..2] {
        cluster.shutdown(*id).await;
    }
    let last = ids[2];
    let address = cluster.node(last).bootstrap();
    let node = cluster.nodes.iter_mut().find(|n| n.id == last).unwrap();
    let handle = node.handle.take().unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle.shutdown())
        .await
        .expect("shutdown without a quorum did not finish");
    assert!(
        tokio::net::TcpStream::connect(&address).await.is_err(),
        "the listener is still open after shutdown"
    );
    cluster.shutdown_all().await;
}
