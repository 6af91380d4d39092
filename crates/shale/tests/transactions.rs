//! Transactions end to end (issue #7): librdkafka's transactional producer and read_committed
//! consumers against the real `shale` binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod txn_clients;

use common::Shale;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};
use txn_clients::*;

fn start() -> Shale {
    Shale::start_with(&[
        "transaction.state.log.num.partitions=4",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
        "num.partitions=1",
    ])
}

#[test]
fn committed_records_become_visible_to_read_committed() {
    let shale = start();
    let producer = txn_producer(&shale, "txn-commit", &[]);
    producer.begin_transaction().unwrap();
    for i in 0..3 {
        send(&producer, "txn-commit-topic", &format!("record-{i}"));
    }
    producer.commit_transaction(TIMEOUT).expect("commit");
    let reader = consumer(&shale, "txn-commit-topic", "read_committed");
    assert_eq!(
        read(&reader, 3, TIMEOUT),
        vec!["record-0", "record-1", "record-2"]
    );
}

#[test]
fn aborted_records_are_hidden_from_read_committed_only() {
    let shale = start();
    let topic = "txn-abort-topic";
    let producer = txn_producer(&shale, "txn-abort", &[]);
    producer.begin_transaction().unwrap();
    send(&producer, topic, "aborted-0");
    send(&producer, topic, "aborted-1");
    producer.abort_transaction(TIMEOUT).expect("abort");
    producer.begin_transaction().unwrap();
    send(&producer, topic, "committed");
    producer.commit_transaction(TIMEOUT).expect("commit");

    let committed = consumer(&shale, topic, "read_committed");
    assert_eq!(read(&committed, 1, TIMEOUT), vec!["committed"]);
    assert!(read_quietly(&committed).is_empty());

    let uncommitted = consumer(&shale, topic, "read_uncommitted");
    assert_eq!(
        read(&uncommitted, 3, TIMEOUT),
        vec!["aborted-0", "aborted-1", "committed"]
    );
}

fn is_fenced(error: &KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::ProducerFenced
                | RDKafkaErrorCode::InvalidProducerEpoch
                | RDKafkaErrorCode::Fenced
        )
    ) || error.to_string().to_lowercase().contains("fenced")
}

#[test]
fn a_zombie_producer_is_fenced_and_its_transaction_aborted() {
    let shale = start();
    let topic = "txn-zombie-topic";
    let zombie = txn_producer(&shale, "txn-zombie", &[]);
    zombie.begin_transaction().unwrap();
    send(&zombie, topic, "from-zombie");

    // The new instance aborts the zombie's open transaction and takes a newer epoch.
    let successor = txn_producer(&shale, "txn-zombie", &[]);
    successor.begin_transaction().unwrap();
    send(&successor, topic, "from-successor");
    successor.commit_transaction(TIMEOUT).expect("commit");

    let error = zombie
        .commit_transaction(TIMEOUT)
        .expect_err("the zombie must not commit");
    assert!(is_fenced(&error), "unexpected error: {error:?}");

    let reader = consumer(&shale, topic, "read_committed");
    assert_eq!(read(&reader, 1, TIMEOUT), vec!["from-successor"]);
    assert!(read_quietly(&reader).is_empty());
}

#[test]
fn a_transaction_left_open_is_aborted_after_its_timeout() {
    let shale = start();
    let topic = "txn-timeout-topic";
    let abandoned = txn_producer(
        &shale,
        "txn-abandoned",
        &[
            ("transaction.timeout.ms", "2000"),
            ("message.timeout.ms", "1500"),
        ],
    );
    abandoned.begin_transaction().unwrap();
    send(&abandoned, topic, "abandoned");

    // A later committed transaction stays invisible while the abandoned one holds the last
    // stable offset; the coordinator's timer aborts it and releases the partition.
    let later = txn_producer(&shale, "txn-later", &[]);
    later.begin_transaction().unwrap();
    send(&later, topic, "later");
    later.commit_transaction(TIMEOUT).expect("commit");

    let reader = consumer(&shale, topic, "read_committed");
    assert_eq!(read(&reader, 1, TIMEOUT), vec!["later"]);
    assert!(read_quietly(&reader).is_empty());

    let error = abandoned
        .commit_transaction(TIMEOUT)
        .expect_err("a timed-out transaction cannot commit");
    assert!(
        is_fenced(&error) || error.rdkafka_error_code().is_some(),
        "unexpected error: {error:?}"
    );
}

#[test]
fn an_open_transaction_survives_a_restart_and_holds_the_last_stable_offset() {
    let mut shale = start();
    let topic = "txn-restart-topic";
    let producer = txn_producer(&shale, "txn-restart", &[]);
    producer.begin_transaction().unwrap();
    send(&producer, topic, "open");

    shale.restart();

    // Another producer's committed record lands after the open transaction.
    let other = txn_producer(&shale, "txn-restart-other", &[]);
    other.begin_transaction().unwrap();
    send(&other, topic, "after");
    other.commit_transaction(TIMEOUT).expect("commit");

    let uncommitted = consumer(&shale, topic, "read_uncommitted");
    assert_eq!(read(&uncommitted, 2, TIMEOUT), vec!["open", "after"]);
    let committed = consumer(&shale, topic, "read_committed");
    assert!(
        read_quietly(&committed).is_empty(),
        "the open transaction must hold back the last stable offset"
    );

    producer
        .commit_transaction(TIMEOUT)
        .expect("commit after restart");
    assert_eq!(read(&committed, 2, TIMEOUT), vec!["open", "after"]);
}

fn committed_offset(consumer: &BaseConsumer, topic: &str) -> Offset {
    let committed = consumer.committed(TIMEOUT).expect("committed offsets");
    committed
        .find_partition(topic, 0)
        .map(|p| p.offset())
        .unwrap_or(Offset::Invalid)
}

#[test]
fn offsets_sent_to_a_transaction_commit_and_abort_with_it() {
    let shale = start();
    let topic = "txn-offsets-topic";
    let producer = txn_producer(&shale, "txn-offsets", &[]);
    producer.begin_transaction().unwrap();
    send(&producer, topic, "input");
    producer.commit_transaction(TIMEOUT).expect("commit");

    let reader = consumer(&shale, topic, "read_committed");
    let group = reader.group_metadata().expect("group metadata");
    let offsets = |offset: i64| {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, 0, Offset::Offset(offset))
            .unwrap();
        tpl
    };

    producer.begin_transaction().unwrap();
    producer
        .send_offsets_to_transaction(&offsets(1), &group, TIMEOUT)
        .expect("send offsets");
    producer.commit_transaction(TIMEOUT).expect("commit");
    assert_eq!(committed_offset(&reader, topic), Offset::Offset(1));

    producer.begin_transaction().unwrap();
    producer
        .send_offsets_to_transaction(&offsets(5), &group, TIMEOUT)
        .expect("send offsets");
    producer.abort_transaction(TIMEOUT).expect("abort");
    assert_eq!(committed_offset(&reader, topic), Offset::Offset(1));
}

/// Every partition of a transaction is verified with the coordinator before its first batch
/// is appended (KIP-890): a transaction over several partitions and topics, with offsets,
/// commits and aborts as a whole.
#[test]
fn transactions_over_several_partitions_and_topics_commit_and_abort_whole() {
    let shale = Shale::start_with(&[
        "transaction.state.log.num.partitions=4",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "num.partitions=3",
    ]);
    let topics = ["txn-multi-a", "txn-multi-b"];
    let producer = txn_producer(&shale, "txn-multi", &[]);
    let send_everywhere = |tag: &str| {
        for topic in topics {
            for partition in 0..3 {
                producer
                    .send(
                        BaseRecord::<(), str>::to(topic)
                            .payload(&format!("{tag}-{partition}"))
                            .partition(partition),
                    )
                    .map_err(|(e, _)| e)
                    .expect("enqueue");
            }
        }
        producer.flush(TIMEOUT).expect("flush");
    };
    producer.begin_transaction().unwrap();
    send_everywhere("aborted");
    producer.abort_transaction(TIMEOUT).expect("abort");
    producer.begin_transaction().unwrap();
    send_everywhere("committed");
    producer.commit_transaction(TIMEOUT).expect("commit");

    for topic in topics {
        let reader: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", shale.bootstrap())
            .set("group.id", format!("multi-{topic}"))
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .create()
            .expect("consumer");
        let mut tpl = TopicPartitionList::new();
        for partition in 0..3 {
            tpl.add_partition_offset(topic, partition, Offset::Beginning)
                .unwrap();
        }
        reader.assign(&tpl).unwrap();
        let mut seen = read(&reader, 3, TIMEOUT);
        seen.sort();
        assert_eq!(seen, vec!["committed-0", "committed-1", "committed-2"]);
        assert!(read_quietly(&reader).is_empty());
    }
}
