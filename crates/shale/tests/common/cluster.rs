//! Multi-node clusters of real `shale` processes on free loopback ports: combined nodes,
//! controller-only and broker-only nodes, formatted with one cluster id. Also a raw Kafka
//! protocol call for the APIs the tests compare across nodes (Metadata, DescribeQuorum).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kafka_protocol::messages::{
    ApiKey, DescribeQuorumRequest, DescribeQuorumResponse, MetadataRequest, MetadataResponse,
    RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::RequestHeader;

use crate::common::{free_port, READY_LINE};

/// Safety net for awaited conditions (elections, catch-up); never a pacing delay.
pub const WAIT_MAX: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Combined,
    Controller,
    Broker,
}

/// How a node learns the cluster id before its first start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Formatting {
    /// `shale format --cluster-id ...` (Kafka's `kafka-storage.sh format`).
    Command,
    /// The container convention: `CLUSTER_ID` in the environment of `shale serve`.
    Environment,
}

pub struct Node {
    pub id: i32,
    pub role: Role,
    /// The Kafka listener (none on a controller-only node).
    pub client_port: Option<u16>,
    /// The controller listener (voters only).
    pub controller_port: Option<u16>,
    /// A SASL_PLAINTEXT listener beside the Kafka one, when the cluster has them.
    pub sasl_port: Option<u16>,
    pub data: PathBuf,
    child: Option<Child>,
    pub log: Arc<Mutex<Vec<String>>>,
    ready: Option<mpsc::Receiver<()>>,
}

impl Node {
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.client_port.expect("a broker"))
    }

    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().unwrap().is_none(),
            None => false,
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

pub struct Cluster {
    _tmp: tempfile::TempDir,
    pub cluster_id: String,
    pub voters: String,
    pub nodes: BTreeMap<i32, Node>,
    formatting: Formatting,
    /// Extra `key=value` overrides for every node.
    pub overrides: Vec<String>,
    /// Start from the repository's `config/<dir>/node-N.properties` (`cluster`,
    /// `secure-cluster`), overriding only the ports, the data directories and the fencing
    /// pace (and what `overrides` holds).
    example_configs: Option<&'static str>,
    /// The name of every broker's client listener (`PLAINTEXT` unless a test secures it;
    /// its protocol then comes from the overrides' `listener.security.protocol.map`).
    pub client_listener: String,
    /// Overrides of single nodes, after the cluster's.
    pub node_overrides: BTreeMap<i32, Vec<String>>,
}

/// Whether each broker also gets a SASL_PLAINTEXT listener (its mechanisms and JAAS entries
/// come with the cluster's overrides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SaslListener {
    No,
    Yes,
}

fn shale() -> Command {
    Command::new(env!("CARGO_BIN_EXE_shale"))
}

impl Cluster {
    /// Three combined nodes (`process.roles=broker,controller`), ids 1-3.
    pub fn combined(size: i32) -> Cluster {
        let roles = (1..=size).map(|id| (id, Role::Combined)).collect();
        Cluster::start(roles, Formatting::Command)
    }

    /// `controllers` controller-only voters (ids 1..) and `brokers` broker-only nodes after them.
    pub fn separated(controllers: i32, brokers: i32) -> Cluster {
        let mut roles: Vec<(i32, Role)> =
            (1..=controllers).map(|id| (id, Role::Controller)).collect();
        roles.extend((controllers + 1..=controllers + brokers).map(|id| (id, Role::Broker)));
        Cluster::start(roles, Formatting::Environment)
    }

    pub fn start(roles: Vec<(i32, Role)>, formatting: Formatting) -> Cluster {
        Cluster::start_with(roles, formatting, &[])
    }

    /// Three (or `size`) combined nodes whose every start, the first included, has the
    /// `key=value` `overrides`.
    pub fn combined_with(size: i32, overrides: &[&str]) -> Cluster {
        let roles = (1..=size).map(|id| (id, Role::Combined)).collect();
        Cluster::start_with(roles, Formatting::Command, overrides)
    }

    /// `size` combined nodes, each with a SASL_PLAINTEXT listener (`Node::sasl_port`) beside
    /// its PLAINTEXT one, which the brokers keep using between themselves.
    pub fn combined_with_sasl(size: i32, overrides: &[&str]) -> Cluster {
        let roles = (1..=size).map(|id| (id, Role::Combined)).collect();
        Cluster::start_full(
            roles,
            Formatting::Command,
            overrides,
            None,
            "PLAINTEXT",
            SaslListener::Yes,
        )
    }

    /// The README's three-node cluster: the repository's `config/cluster/node-N.properties` as
    /// they are, on free ports and temporary data directories.
    pub fn from_example_configs() -> Cluster {
        let roles = (1..=3).map(|id| (id, Role::Combined)).collect();
        Cluster::start_from(
            roles,
            Formatting::Command,
            &[],
            Some("cluster"),
            "PLAINTEXT",
        )
    }

    /// The README's secured three-node cluster: `config/secure-cluster/node-N.properties` on
    /// free ports and temporary data directories, with `overrides` (the test's certificates).
    pub fn from_secure_example_configs(overrides: &[&str]) -> Cluster {
        let roles = (1..=3).map(|id| (id, Role::Combined)).collect();
        Cluster::start_from(
            roles,
            Formatting::Command,
            overrides,
            Some("secure-cluster"),
            "SECURE",
        )
    }

    pub fn start_with(
        roles: Vec<(i32, Role)>,
        formatting: Formatting,
        overrides: &[&str],
    ) -> Cluster {
        Cluster::start_from(roles, formatting, overrides, None, "PLAINTEXT")
    }

    /// `size` combined nodes whose client listener is named `client_listener` (its protocol,
    /// and the controller listener's, set in `overrides`).
    pub fn combined_secured(size: i32, client_listener: &str, overrides: &[&str]) -> Cluster {
        let roles = (1..=size).map(|id| (id, Role::Combined)).collect();
        Cluster::start_from(roles, Formatting::Command, overrides, None, client_listener)
    }

    fn start_from(
        roles: Vec<(i32, Role)>,
        formatting: Formatting,
        overrides: &[&str],
        example_configs: Option<&'static str>,
        client_listener: &str,
    ) -> Cluster {
        Cluster::start_full(
            roles,
            formatting,
            overrides,
            example_configs,
            client_listener,
            SaslListener::No,
        )
    }

    fn start_full(
        roles: Vec<(i32, Role)>,
        formatting: Formatting,
        overrides: &[&str],
        example_configs: Option<&'static str>,
        client_listener: &str,
        sasl: SaslListener,
    ) -> Cluster {
        let tmp = tempfile::tempdir().unwrap();
        let mut nodes = BTreeMap::new();
        for (id, role) in roles {
            nodes.insert(
                id,
                Node {
                    id,
                    role,
                    client_port: (role != Role::Controller).then(free_port),
                    controller_port: (role != Role::Broker).then(free_port),
                    sasl_port: (role != Role::Controller && sasl == SaslListener::Yes)
                        .then(free_port),
                    data: tmp.path().join(format!("node-{id}")),
                    child: None,
                    log: Default::default(),
                    ready: None,
                },
            );
        }
        let voters = nodes
            .values()
            .filter_map(|n| {
                n.controller_port
                    .map(|port| format!("{}@127.0.0.1:{port}", n.id))
            })
            .collect::<Vec<_>>()
            .join(",");
        let cluster_id = String::from_utf8(shale().arg("random-uuid").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        let mut cluster = Cluster {
            _tmp: tmp,
            cluster_id,
            voters,
            nodes,
            formatting,
            overrides: overrides.iter().map(|o| o.to_string()).collect(),
            example_configs,
            client_listener: client_listener.to_string(),
            node_overrides: BTreeMap::new(),
        };
        if formatting == Formatting::Command {
            let ids: Vec<i32> = cluster.nodes.keys().copied().collect();
            for id in ids {
                cluster.format(id);
            }
        }
        let ids: Vec<i32> = cluster.nodes.keys().copied().collect();
        cluster.start_nodes(&ids);
        cluster
    }

    fn format(&self, id: i32) {
        let out = shale()
            .arg("format")
            .arg("--cluster-id")
            .arg(&self.cluster_id)
            .args(self.node_args(id))
            .output()
            .unwrap();
        assert!(out.status.success(), "format node {id}: {out:?}");
    }

    /// Adds node `id` with `role` and its own `overrides` to the running cluster and starts
    /// it without waiting for it to become ready.
    pub fn spawn_extra(&mut self, id: i32, role: Role, overrides: &[String]) {
        let dir = self.nodes.values().next().expect("a node").data.clone();
        let data = dir.with_file_name(format!("node-{id}"));
        self.nodes.insert(
            id,
            Node {
                id,
                role,
                client_port: (role != Role::Controller).then(free_port),
                controller_port: None,
                sasl_port: None,
                data,
                child: None,
                log: Default::default(),
                ready: None,
            },
        );
        self.node_overrides.insert(id, overrides.to_vec());
        if self.formatting == Formatting::Command {
            self.format(id);
        }
        self.spawn(id);
    }

    /// Whether node `id` printed that it is ready.
    pub fn became_ready(&self, id: i32) -> bool {
        self.node(id)
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|line| line.contains(READY_LINE))
    }

    /// `--override` arguments that make up node `id`'s configuration.
    pub fn node_args(&self, id: i32) -> Vec<String> {
        let node = &self.nodes[&id];
        let mut listeners = Vec::new();
        if let Some(port) = node.client_port {
            listeners.push(format!("{}://127.0.0.1:{port}", self.client_listener));
        }
        if let Some(port) = node.controller_port {
            listeners.push(format!("CONTROLLER://127.0.0.1:{port}"));
        }
        if let Some(port) = node.sasl_port {
            listeners.push(format!("SASL_PLAINTEXT://127.0.0.1:{port}"));
        }
        let roles = match node.role {
            Role::Combined => "broker,controller",
            Role::Controller => "controller",
            Role::Broker => "broker",
        };
        if let Some(dir) = self.example_configs {
            let file = format!(
                "{}/../../config/{dir}/node-{id}.properties",
                env!("CARGO_MANIFEST_DIR")
            );
            let port = node.client_port.expect("combined nodes");
            let mut props = vec![
                format!("listeners={}", listeners.join(",")),
                format!(
                    "advertised.listeners={}://127.0.0.1:{port}",
                    self.client_listener
                ),
                format!("controller.quorum.voters={}", self.voters),
                format!("log.dirs={}", node.data.display()),
                "broker.heartbeat.interval.ms=200".to_string(),
                "broker.session.timeout.ms=2000".to_string(),
            ];
            props.extend(self.overrides.iter().cloned());
            let mut args = vec!["--config".to_string(), file];
            args.extend(
                props
                    .into_iter()
                    .flat_map(|p| ["--override".to_string(), p]),
            );
            return args;
        }
        let mut props = vec![
            format!("node.id={id}"),
            format!("process.roles={roles}"),
            format!("listeners={}", listeners.join(",")),
            format!("controller.quorum.voters={}", self.voters),
            "controller.listener.names=CONTROLLER".to_string(),
            format!("log.dirs={}", node.data.display()),
            "offsets.topic.replication.factor=1".to_string(),
            "offsets.topic.num.partitions=4".to_string(),
            "transaction.state.log.replication.factor=1".to_string(),
            "transaction.state.log.min.isr=1".to_string(),
            "group.initial.rebalance.delay.ms=0".to_string(),
            // Fast fencing of a killed broker keeps the tests short.
            "broker.heartbeat.interval.ms=200".to_string(),
            "broker.session.timeout.ms=2000".to_string(),
        ];
        props.extend(self.overrides.iter().cloned());
        props.extend(self.node_overrides.get(&id).into_iter().flatten().cloned());
        props
            .into_iter()
            .flat_map(|p| ["--override".to_string(), p])
            .collect()
    }

    fn spawn(&mut self, id: i32) {
        let args = self.node_args(id);
        let mut cmd = shale();
        cmd.arg("serve").args(args);
        if self.formatting == Formatting::Environment {
            cmd.env("CLUSTER_ID", &self.cluster_id);
        }
        cmd.env("RUST_BACKTRACE", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn shale");
        let node = self.nodes.get_mut(&id).unwrap();
        let (tx, rx) = mpsc::channel::<()>();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = node.log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains(READY_LINE) {
                    let _ = tx.send(());
                }
                log.lock().unwrap().push(line);
            }
        });
        let log = node.log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                log.lock().unwrap().push(line);
            }
        });
        node.child = Some(child);
        node.ready = Some(rx);
    }

    /// Starts the nodes at once (a voter waits for a majority before it is ready), then waits
    /// until each is ready.
    pub fn start_nodes(&mut self, ids: &[i32]) {
        for id in ids {
            self.spawn(*id);
        }
        for id in ids {
            let node = self.nodes.get_mut(id).unwrap();
            let ready = node.ready.take().unwrap();
            if ready.recv_timeout(WAIT_MAX).is_err() {
                panic!("node {id} did not become ready:\n{}", node.log_text());
            }
        }
    }

    /// SIGKILL: a crash.
    pub fn kill(&mut self, id: i32) {
        let node = self.nodes.get_mut(&id).unwrap();
        if let Some(mut child) = node.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn kill_all(&mut self) {
        let ids: Vec<i32> = self.nodes.keys().copied().collect();
        for id in ids {
            self.kill(id);
        }
    }

    /// The running nodes with the broker role.
    /// Every running broker's address, comma-separated, for `bootstrap.servers`.
    pub fn bootstrap_all(&mut self) -> String {
        self.brokers()
            .into_iter()
            .map(|id| self.node(id).bootstrap())
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn brokers(&mut self) -> Vec<i32> {
        self.nodes
            .values_mut()
            .filter(|n| n.role != Role::Controller)
            .filter_map(|n| n.is_running().then_some(n.id))
            .collect()
    }

    pub fn node(&self, id: i32) -> &Node {
        &self.nodes[&id]
    }

    /// DescribeQuorum through broker `id`, retried until a leader answers.
    pub fn describe_quorum(&self, id: i32) -> DescribeQuorumResponse {
        let deadline = Instant::now() + WAIT_MAX;
        loop {
            let response = describe_quorum(&self.node(id).bootstrap());
            let partition = &response.topics[0].partitions[0];
            if partition.error_code == 0 {
                return response;
            }
            assert!(
                Instant::now() < deadline,
                "no quorum leader answered: {response:?}"
            );
            // The node already waited for a leader; this only paces the retry.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The active controller (the quorum leader), as broker `via` learns it.
    pub fn quorum_leader(&self, via: i32) -> i32 {
        self.describe_quorum(via).topics[0].partitions[0]
            .leader_id
            .0
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// One request over a fresh connection; returns the decoded response.
pub fn call(addr: &str, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(WAIT_MAX)).unwrap();
    let header = RequestHeader {
        api_key: key as i16,
        api_version: version,
        correlation_id: 7,
        client_id: Some("cluster-test".into()),
        header_version: key.request_header_version(version),
    };
    let frame = shale_protocol::encode_request(&header, &request).unwrap();
    stream.write_all(&frame).unwrap();
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
    stream.read_exact(&mut buf).unwrap();
    let (correlation, response) =
        shale_protocol::decode_response(key as i16, version, Bytes::from(buf)).unwrap();
    assert_eq!(correlation, 7);
    response
}

pub fn describe_quorum(addr: &str) -> DescribeQuorumResponse {
    let request = DescribeQuorumRequest::default().with_topics(vec![TopicData::default()
        .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
        .with_partitions(vec![PartitionData::default().with_partition_index(0)])]);
    match call(
        addr,
        ApiKey::DescribeQuorum,
        2,
        RequestKind::DescribeQuorum(request),
    ) {
        ResponseKind::DescribeQuorum(r) => r,
        other => panic!("{other:?}"),
    }
}

/// Metadata for every topic, without auto-creation.
pub fn metadata(addr: &str) -> MetadataResponse {
    match call(
        addr,
        ApiKey::Metadata,
        12,
        RequestKind::Metadata(MetadataRequest::default().with_topics(None)),
    ) {
        ResponseKind::Metadata(r) => r,
        other => panic!("{other:?}"),
    }
}

/// A partition's index, leader and replicas.
pub type PartitionView = (i32, i32, Vec<i32>);

/// What a node's Metadata answer says about the cluster, in a comparable form: brokers with
/// their endpoints, and per topic its id and each partition's leader and replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    pub cluster_id: Option<String>,
    pub brokers: Vec<(i32, String, i32)>,
    pub topics: BTreeMap<String, (String, Vec<PartitionView>)>,
}

pub fn view(addr: &str) -> ClusterView {
    let m = metadata(addr);
    let mut brokers: Vec<(i32, String, i32)> = m
        .brokers
        .iter()
        .map(|b| (b.node_id.0, b.host.to_string(), b.port))
        .collect();
    brokers.sort();
    let topics = m
        .topics
        .iter()
        .map(|t| {
            let mut partitions: Vec<PartitionView> = t
                .partitions
                .iter()
                .map(|p| {
                    (
                        p.partition_index,
                        p.leader_id.0,
                        p.replica_nodes.iter().map(|r| r.0).collect(),
                    )
                })
                .collect();
            partitions.sort();
            (
                t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                (t.topic_id.to_string(), partitions),
            )
        })
        .collect();
    ClusterView {
        cluster_id: m.cluster_id.map(|c| c.to_string()),
        brokers,
        topics,
    }
}

/// Every record of partitions `0..partitions` of `topic`, read from the beginning through
/// `bootstrap` (values, sorted), waiting up to `WAIT_MAX` for `count` of them.
pub fn read_from_beginning(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    count: usize,
) -> Vec<String> {
    use rdkafka::config::ClientConfig;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{Message, Offset, TopicPartitionList};

    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "unused-assign-only")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for partition in 0..partitions {
        tpl.add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let deadline = Instant::now() + WAIT_MAX;
    let mut out = Vec::new();
    while out.len() < count && Instant::now() < deadline {
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            let m = m.expect("consume");
            out.push(String::from_utf8(m.payload().unwrap().to_vec()).unwrap());
        }
    }
    out.sort();
    out
}
