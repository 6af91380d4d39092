//! Transactions on a three-node cluster (issue #7): coordinators, partition leaders and group
//! coordinators on different brokers, so leaders verify batches with (AddPartitionsToTxn v5)
//! and coordinators send markers to (WriteTxnMarkers) other brokers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use cluster_support::{call, Cluster, WAIT_MAX};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, RequestKind, ResponseKind, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

const TIMEOUT: Duration = Duration::from_secs(30);
const PARTITIONS: i32 = 3;

fn create_replicated_topic(addr: &str, name: &str) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(name.into())))
            .with_num_partitions(PARTITIONS)
            .with_replication_factor(3)])
        .with_timeout_ms(30_000);
    match call(
        addr,
        ApiKey::CreateTopics,
        7,
        RequestKind::CreateTopics(request),
    ) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0),
        other => panic!("{other:?}"),
    }
}

fn txn_producer(bootstrap: &str, transactional_id: &str) -> BaseProducer {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", transactional_id)
        .set("linger.ms", "0")
        .create()
        .expect("producer");
    producer
        .init_transactions(TIMEOUT)
        .expect("init_transactions");
    producer
}

#[test]
fn transactions_span_brokers_commit_and_abort_whole() {
    let cluster = Cluster::combined(3);
    let bootstrap = (1..=3)
        .map(|id| cluster.node(id).bootstrap())
        .collect::<Vec<_>>()
        .join(",");
    let topic = "txn-cluster";
    create_replicated_topic(&cluster.node(1).bootstrap(), topic);

    // Several transactional ids, so that their coordinators land on different brokers.
    let mut expected = BTreeSet::new();
    for (n, transactional_id) in ["span-a", "span-b", "span-c", "span-d"].iter().enumerate() {
        let producer = txn_producer(&bootstrap, transactional_id);
        for round in 0..2 {
            producer.begin_transaction().unwrap();
            for partition in 0..PARTITIONS {
                let payload = format!("{transactional_id}-{round}-{partition}");
                producer
                    .send(
                        BaseRecord::<(), str>::to(topic)
                            .payload(&payload)
                            .partition(partition),
                    )
                    .map_err(|(e, _)| e)
                    .expect("enqueue");
                if (n + round) % 2 == 0 {
                    expected.insert(payload);
                }
            }
            producer.flush(TIMEOUT).expect("flush");
            if (n + round) % 2 == 0 {
                producer.commit_transaction(TIMEOUT).expect("commit");
            } else {
                producer.abort_transaction(TIMEOUT).expect("abort");
            }
        }
    }

    let reader: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("group.id", "txn-cluster-reader")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for partition in 0..PARTITIONS {
        tpl.add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    reader.assign(&tpl).unwrap();
    let mut seen = BTreeSet::new();
    let deadline = Instant::now() + WAIT_MAX;
    while seen.len() < expected.len() && Instant::now() < deadline {
        if let Some(message) = reader.poll(Duration::from_millis(100)) {
            let message = message.expect("consume");
            let payload = String::from_utf8_lossy(message.payload().unwrap_or_default());
            assert!(
                expected.contains(payload.as_ref()),
                "an aborted record was read: {payload}"
            );
            seen.insert(payload.into_owned());
        }
    }
    assert_eq!(seen, expected);
}
