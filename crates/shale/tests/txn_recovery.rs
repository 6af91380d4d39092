//! Exactly-once across a crash (issue #7): a partition leader killed with SIGKILL while a
//! transaction is open reports the same last stable offset after recovery, read_committed
//! readers still do not see the open records, and the transaction can still be ended. A torn
//! per-segment transaction index is rebuilt from the log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod txn_clients;

use std::time::{Duration, Instant};

use common::Shale;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::Producer;
use txn_clients::*;

fn start() -> Shale {
    Shale::start_with(&[
        "transaction.state.log.num.partitions=2",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "num.partitions=1",
    ])
}

/// The high end ListOffsets answers for a consumer of this isolation level: the last stable
/// offset for read_committed, the high watermark otherwise. Retries while the broker is still
/// loading after a restart.
fn end_offset(shale: &Shale, topic: &str, isolation: &str) -> i64 {
    let client: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .set("isolation.level", isolation)
        .create()
        .expect("consumer");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match client.fetch_watermarks(topic, 0, Duration::from_secs(5)) {
            Ok((_, high)) => return high,
            Err(e) if Instant::now() < deadline => {
                eprintln!("ListOffsets not answered yet: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("ListOffsets: {e}"),
        }
    }
}

#[test]
fn an_open_transaction_keeps_the_last_stable_offset_across_a_kill() {
    let mut shale = start();
    let topic = "recover-open";
    let producer = txn_producer(&shale, "recover-open-txn", &[]);
    producer.begin_transaction().unwrap();
    send(&producer, topic, "committed-0");
    producer.commit_transaction(TIMEOUT).expect("commit");
    // committed-0 at 0, its COMMIT marker at 1: the open transaction starts at 2.
    producer.begin_transaction().unwrap();
    send(&producer, topic, "open-0");
    send(&producer, topic, "open-1");
    assert_eq!(end_offset(&shale, topic, "read_committed"), 2);
    assert_eq!(end_offset(&shale, topic, "read_uncommitted"), 4);

    shale.kill();
    shale.restart();

    assert_eq!(
        end_offset(&shale, topic, "read_committed"),
        2,
        "the open transaction still holds the last stable offset"
    );
    assert_eq!(end_offset(&shale, topic, "read_uncommitted"), 4);
    let committed = consumer(&shale, topic, "read_committed");
    assert_eq!(read(&committed, 1, TIMEOUT), vec!["committed-0"]);
    assert!(read(&committed, usize::MAX, QUIET).is_empty());
    let uncommitted = consumer(&shale, topic, "read_uncommitted");
    assert_eq!(
        read(&uncommitted, 3, TIMEOUT),
        vec!["committed-0", "open-0", "open-1"]
    );

    // The transaction survived the crash and can still be committed.
    producer
        .commit_transaction(TIMEOUT)
        .expect("commit after the restart");
    assert_eq!(read(&committed, 2, TIMEOUT), vec!["open-0", "open-1"]);
    assert_eq!(end_offset(&shale, topic, "read_committed"), 5);
}

#[test]
fn an_open_transaction_aborted_after_a_kill_stays_hidden_even_with_a_torn_index() {
    let mut shale = start();
    let topic = "recover-abort";
    let producer = txn_producer(&shale, "recover-abort-txn", &[]);
    producer.begin_transaction().unwrap();
    send(&producer, topic, "aborted-before-0");
    producer.abort_transaction(TIMEOUT).expect("abort");
    producer.begin_transaction().unwrap();
    send(&producer, topic, "open-then-aborted");

    shale.kill();
    // A crash that tore the segment's transaction index: the restart rebuilds it from the log.
    let index = shale
        .data_dir()
        .join(format!("{topic}-0"))
        .join(format!("{:020}.txnindex", 0));
    let len = std::fs::metadata(&index)
        .expect("the abort was indexed")
        .len();
    assert_eq!(len, 34, "one entry in Kafka's layout");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap()
        .set_len(len - 7)
        .unwrap();
    shale.restart();
    assert_eq!(end_offset(&shale, topic, "read_committed"), 2);

    producer
        .abort_transaction(TIMEOUT)
        .expect("abort after the restart");
    producer.begin_transaction().unwrap();
    send(&producer, topic, "committed");
    producer.commit_transaction(TIMEOUT).expect("commit");

    let committed = consumer(&shale, topic, "read_committed");
    assert_eq!(read(&committed, 1, TIMEOUT), vec!["committed"]);
    assert!(read(&committed, usize::MAX, QUIET).is_empty());
    let uncommitted = consumer(&shale, topic, "read_uncommitted");
    assert_eq!(
        read(&uncommitted, 3, TIMEOUT),
        vec!["aborted-before-0", "open-then-aborted", "committed"]
    );
    assert_eq!(
        std::fs::metadata(&index).unwrap().len(),
        68,
        "both aborts indexed again"
    );
}
