//! librdkafka helpers shared by the transaction tests: a transactional producer, a
//! partition-0 sender, and readers at either isolation level.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

use crate::common::Shale;

pub const TIMEOUT: Duration = Duration::from_secs(30);
/// How long a consumer must stay empty to show records are hidden: absence cannot be awaited.
pub const QUIET: Duration = Duration::from_secs(3);

/// A producer with `transactional.id`, its transactions initialised.
pub fn txn_producer(shale: &Shale, transactional_id: &str, extra: &[(&str, &str)]) -> BaseProducer {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", shale.bootstrap())
        .set("transactional.id", transactional_id)
        .set("linger.ms", "0");
    for (k, v) in extra {
        cfg.set(*k, *v);
    }
    let producer: BaseProducer = cfg.create().expect("producer");
    producer
        .init_transactions(TIMEOUT)
        .expect("init_transactions");
    producer
}

/// Sends one record to partition 0 and waits for it to be delivered.
pub fn send(producer: &BaseProducer, topic: &str, payload: &str) {
    producer
        .send(
            BaseRecord::<(), str>::to(topic)
                .payload(payload)
                .partition(0),
        )
        .map_err(|(e, _)| e)
        .expect("enqueue");
    producer.flush(TIMEOUT).expect("flush");
}

/// A consumer of partition 0 from the beginning, at `isolation` (`read_committed` or
/// `read_uncommitted`).
pub fn consumer(shale: &Shale, topic: &str, isolation: &str) -> BaseConsumer {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .set("group.id", format!("reader-{topic}-{isolation}"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", isolation)
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&tpl).unwrap();
    consumer
}

/// Polls until `count` payloads arrived or `within` passed; returns them.
pub fn read(consumer: &BaseConsumer, count: usize, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    while seen.len() < count && Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message.expect("consume");
            seen.push(String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned());
        }
    }
    seen
}

/// Polls for [`QUIET`] and returns whatever arrived.
pub fn read_quietly(consumer: &BaseConsumer) -> Vec<String> {
    read(consumer, usize::MAX, QUIET)
}
