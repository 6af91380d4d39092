//! A three-node cluster with nothing in plain text: every listener (client, inter-broker,
//! controller) on SASL_SSL, or on SSL with client certificates required. A replicated topic
//! takes acks=all writes (which need the followers' fetches over the secured inter-broker
//! listener), the partition leader is killed and writes continue on the new leader (elected
//! through the secured controller port). A node with a wrong password, or a certificate the
//! cluster does not trust, cannot join: the voters refuse its connections and it never
//! becomes ready. The certificates are made here, with a throw-away CA.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;
#[path = "common/kafka_conn.rs"]
mod kafka_conn;

use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::Bytes;
use cluster_support::{Cluster, Role, WAIT_MAX};
use kafka_conn::{ca, leaf, topic_name, Conn, Pki};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, FetchRequest, MetadataRequest, MetadataResponse,
    ProduceRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use shale_testkit::{wait_for, wait_until};

const TOPIC: &str = "secured";
const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required";
/// What a voter logs when it refuses a connection on the controller port.
const REFUSED_LINE: &str = "not authenticated as a node";

/// How the cluster is secured.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// SASL_SSL everywhere, PLAIN between nodes and for clients.
    SaslSsl,
    /// SSL everywhere, client certificates required.
    MutualTls,
}

/// The trusted CA, one certificate for every node (`localhost`, `127.0.0.1`), a client's, and
/// a node certificate from a CA the cluster does not trust.
fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let trusted = ca("shale cluster ca");
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let (node_chain, node_key) = leaf(names.clone(), "node", &trusted);
    std::fs::write(dir.path().join("node.pem"), node_key + &node_chain).unwrap();
    std::fs::write(dir.path().join("ca.pem"), trusted.0.pem()).unwrap();
    let stranger = ca("stranger ca");
    let (stranger_chain, stranger_key) = leaf(names, "node", &stranger);
    std::fs::write(
        dir.path().join("stranger-node.pem"),
        stranger_key.clone() + &stranger_chain,
    )
    .unwrap();
    std::fs::write(dir.path().join("stranger-ca.pem"), stranger.0.pem()).unwrap();
    let (client_chain_pem, client_key_pem) = leaf(Vec::new(), "alice", &trusted);
    Pki {
        ca_pem: trusted.0.pem(),
        dir,
        client_chain_pem,
        client_key_pem,
        stranger_chain_pem: stranger_chain,
        stranger_key_pem: stranger_key,
    }
}

fn jaas(username: &str, password: &str, users: &[(&str, &str)]) -> String {
    let users: String = users
        .iter()
        .map(|(u, p)| format!(" user_{u}=\"{p}\""))
        .collect();
    format!("{PLAIN_MODULE} username=\"{username}\" password=\"{password}\"{users};")
}

/// Every node's overrides: the client listener SECURE is also the inter-broker listener.
fn overrides(mode: Mode, pki: &Pki) -> Vec<String> {
    let mut props = vec![
        "inter.broker.listener.name=SECURE".to_string(),
        "ssl.keystore.type=PEM".to_string(),
        format!("ssl.keystore.location={}", pki.path("node.pem")),
        "ssl.truststore.type=PEM".to_string(),
        format!("ssl.truststore.location={}", pki.path("ca.pem")),
    ];
    match mode {
        Mode::SaslSsl => props.extend([
            "listener.security.protocol.map=SECURE:SASL_SSL,CONTROLLER:SASL_SSL".to_string(),
            "sasl.enabled.mechanisms=PLAIN".to_string(),
            "sasl.mechanism.inter.broker.protocol=PLAIN".to_string(),
            "sasl.mechanism.controller.protocol=PLAIN".to_string(),
            format!(
                "listener.name.secure.plain.sasl.jaas.config={}",
                jaas(
                    "broker",
                    "broker-secret",
                    &[("broker", "broker-secret"), ("alice", "alice-secret")]
                )
            ),
            format!(
                "listener.name.controller.plain.sasl.jaas.config={}",
                jaas(
                    "controller",
                    "controller-secret",
                    &[("controller", "controller-secret")]
                )
            ),
        ]),
        Mode::MutualTls => props.extend([
            "listener.security.protocol.map=SECURE:SSL,CONTROLLER:SSL".to_string(),
            "ssl.client.auth=required".to_string(),
        ]),
    }
    props
}

fn start(mode: Mode, pki: &Pki) -> Cluster {
    let props = overrides(mode, pki);
    let refs: Vec<&str> = props.iter().map(String::as_str).collect();
    Cluster::combined_secured(3, "SECURE", &refs)
}

/// A client connection to broker `id`, authenticated as alice.
fn client(cluster: &Cluster, id: i32, mode: Mode, pki: &Pki) -> Conn {
    let port = cluster.node(id).client_port.unwrap();
    match mode {
        Mode::SaslSsl => {
            let mut conn = Conn::tls(port, pki.client_config(None));
            conn.plain_login("alice", "alice-secret");
            conn
        }
        Mode::MutualTls => {
            let identity = (pki.client_chain_pem.as_str(), pki.client_key_pem.as_str());
            Conn::tls(port, pki.client_config(Some(identity)))
        }
    }
}

fn metadata(conn: &mut Conn) -> MetadataResponse {
    let request = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic_name(TOPIC)))
        ]))
        .with_allow_auto_topic_creation(false);
    match conn.call(ApiKey::Metadata, 12, RequestKind::Metadata(request)) {
        ResponseKind::Metadata(r) => r,
        other => panic!("{other:?}"),
    }
}

/// The partition's leader and ISR, once it has a leader.
fn leader_and_isr(conn: &mut Conn) -> Option<(i32, Vec<i32>)> {
    let m = metadata(conn);
    let partition = m.topics.first()?.partitions.first()?;
    (partition.error_code == 0 && partition.leader_id.0 >= 0).then(|| {
        let isr = partition.isr_nodes.iter().map(|b| b.0).collect();
        (partition.leader_id.0, isr)
    })
}

/// A replicated topic: three replicas, `min.insync.replicas=2`.
fn create_replicated_topic(conn: &mut Conn) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(topic_name(TOPIC))
            .with_num_partitions(1)
            .with_replication_factor(3)
            .with_configs(vec![CreatableTopicConfig::default()
                .with_name(StrBytes::from_static_str("min.insync.replicas"))
                .with_value(Some(StrBytes::from_static_str("2")))])])
        .with_timeout_ms(30_000);
    match conn.call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(request)) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0, "{r:?}"),
        other => panic!("{other:?}"),
    }
}

/// One acks=all batch of `values`; the partition's error code.
fn produce_all(conn: &mut Conn, values: &[String]) -> i16 {
    let records: Vec<_> = values.iter().map(|v| (None, Some(v.as_bytes()))).collect();
    let batch = shale_testkit::record_batch(&records, 1_700_000_000_000);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(Bytes::from(batch)))])]);
    match conn.call(ApiKey::Produce, 9, RequestKind::Produce(request)) {
        ResponseKind::Produce(r) => r.responses[0].partition_responses[0].error_code,
        other => panic!("{other:?}"),
    }
}

/// A consumer fetch from offset 0: the high watermark and the record bytes.
fn fetch_all(conn: &mut Conn) -> (i64, Bytes) {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(8 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(TOPIC))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(8 << 20)])]);
    match conn.call(ApiKey::Fetch, 12, RequestKind::Fetch(request)) {
        ResponseKind::Fetch(r) => {
            let p = &r.responses[0].partitions[0];
            assert_eq!(p.error_code, 0);
            (p.high_watermark, p.records.clone().unwrap_or_default())
        }
        other => panic!("{other:?}"),
    }
}

fn values(prefix: &str) -> Vec<String> {
    (0..5).map(|i| format!("{prefix}-{i}")).collect()
}

/// A connection that speaks the controller port's protocol without authenticating is closed
/// before anything of it is read.
fn unauthenticated_preamble_is_closed(cluster: &Cluster) {
    let port = cluster.node(1).controller_port.unwrap();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(WAIT_MAX)).unwrap();
    let mut preamble = b"SHRF".to_vec();
    preamble.push(1);
    preamble.push(cluster.cluster_id.len() as u8);
    preamble.extend_from_slice(cluster.cluster_id.as_bytes());
    preamble.extend_from_slice(&[0, 0, 0, 2, 1, 0]);
    // The write may already fail: the node closes on the first bytes that are not TLS.
    let _ = stream.write_all(&preamble);
    let mut answer = [0u8; 64];
    match stream.read(&mut answer) {
        Ok(0) | Err(_) => {}
        Ok(n) => {
            // A TLS alert is all a stranger gets: never a frame of the controller protocol.
            assert_eq!(
                answer[0],
                0x15,
                "a TLS alert, not an answer: {:?}",
                &answer[..n]
            );
        }
    }
}

/// How many connections the voters refused so far.
fn refusals(cluster: &Cluster) -> usize {
    (1..=3)
        .map(|id| cluster.node(id).log_text().matches(REFUSED_LINE).count())
        .sum()
}

/// Node 4 (broker-only) with `overrides` after the cluster's never joins: the voters refuse
/// its connections (several: it retries), it logs `own_line` when given, it never becomes
/// ready and the cluster's brokers stay 1-3.
fn stranger_cannot_join(
    cluster: &mut Cluster,
    conn: &mut Conn,
    overrides: &[String],
    own_line: Option<&str>,
) {
    let before = refusals(cluster);
    cluster.spawn_extra(4, Role::Broker, overrides);
    wait_until("the voters to refuse node 4 repeatedly", WAIT_MAX, || {
        refusals(cluster) >= before + 3
    });
    if let Some(line) = own_line {
        wait_until("node 4 to say why it cannot join", WAIT_MAX, || {
            cluster.node(4).log_text().contains(line)
        });
    }
    assert!(!cluster.became_ready(4), "{}", cluster.node(4).log_text());
    let brokers: Vec<i32> = metadata(conn).brokers.iter().map(|b| b.node_id.0).collect();
    assert!(!brokers.contains(&4), "{brokers:?}");
    cluster.kill(4);
}

/// Replicated acks=all writes, the leader killed, writes continuing on the new leader.
fn replicate_and_fail_over(cluster: &mut Cluster, mode: Mode, pki: &Pki) {
    let mut conn = client(cluster, 1, mode, pki);
    create_replicated_topic(&mut conn);
    let (leader, isr) = wait_for("a leader with the full ISR", WAIT_MAX, || {
        leader_and_isr(&mut conn).filter(|(_, isr)| isr.len() == 3)
    });
    assert_eq!(isr.len(), 3);
    // acks=all: answered once both followers fetched the batch from the leader over the
    // secured inter-broker listener.
    let mut on_leader = client(cluster, leader, mode, pki);
    // The leader may still be applying the image that made it leader (NOT_LEADER_OR_FOLLOWER).
    wait_until("an acks=all write on the leader", WAIT_MAX, || {
        produce_all(&mut on_leader, &values("first")) == 0
    });
    assert!(fetch_all(&mut on_leader).0 >= 5);

    cluster.kill(leader);
    let survivor = (1..=3).find(|id| *id != leader).unwrap();
    let mut conn = client(cluster, survivor, mode, pki);
    let new_leader = wait_for("a new leader", WAIT_MAX, || {
        leader_and_isr(&mut conn)
            .map(|(l, _)| l)
            .filter(|l| *l != leader)
    });
    let mut on_new_leader = client(cluster, new_leader, mode, pki);
    // The remaining follower must follow the new leader before acks=all succeeds again.
    wait_until("an acks=all write on the new leader", WAIT_MAX, || {
        produce_all(&mut on_new_leader, &values("second")) == 0
    });
    let (high_watermark, records) = fetch_all(&mut on_new_leader);
    assert!(high_watermark >= 10, "{high_watermark}");
    for value in values("first").iter().chain(&values("second")) {
        let found = records.windows(value.len()).any(|w| w == value.as_bytes());
        assert!(found, "{value} is on the new leader");
    }
}

#[test]
fn a_sasl_ssl_cluster_replicates_fails_over_and_refuses_a_wrong_password() {
    let pki = pki();
    let mut cluster = start(Mode::SaslSsl, &pki);
    unauthenticated_preamble_is_closed(&cluster);
    let mut conn = client(&cluster, 1, Mode::SaslSsl, &pki);
    let wrong = format!(
        "listener.name.controller.plain.sasl.jaas.config={}",
        jaas("controller", "not-the-password", &[])
    );
    let own_line = "Authentication failed: Invalid username or password";
    stranger_cannot_join(&mut cluster, &mut conn, &[wrong], Some(own_line));
    replicate_and_fail_over(&mut cluster, Mode::SaslSsl, &pki);
}

#[test]
fn a_mutual_tls_cluster_replicates_fails_over_and_refuses_an_untrusted_certificate() {
    let pki = pki();
    let mut cluster = start(Mode::MutualTls, &pki);
    unauthenticated_preamble_is_closed(&cluster);
    let mut conn = client(&cluster, 1, Mode::MutualTls, &pki);
    // Its own CA, so it trusts itself and presents a certificate the cluster does not trust.
    let stranger = [
        format!("ssl.keystore.location={}", pki.path("stranger-node.pem")),
        format!("ssl.truststore.location={}", pki.path("ca.pem")),
    ];
    stranger_cannot_join(&mut cluster, &mut conn, &stranger, None);
    replicate_and_fail_over(&mut cluster, Mode::MutualTls, &pki);
}

/// The README's secured cluster: `config/secure-cluster/` as it is, with the test's
/// certificates in place of the ones `scripts/make-test-ca.sh` makes.
#[test]
fn the_secure_example_configs_form_a_cluster_that_replicates() {
    let pki = pki();
    let keystore = format!("ssl.keystore.location={}", pki.path("node.pem"));
    let truststore = format!("ssl.truststore.location={}", pki.path("ca.pem"));
    let mut cluster = Cluster::from_secure_example_configs(&[&keystore, &truststore]);
    replicate_and_fail_over(&mut cluster, Mode::SaslSsl, &pki);
}
