//! End-to-end tests with librdkafka (the rdkafka crate) against the real `shale` binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{admin, block_on, Shale};
use rdkafka::admin::{
    AdminOptions, AlterConfig, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication,
};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};

const TIMEOUT: Duration = Duration::from_secs(30);

fn producer(shale: &Shale, extra: &[(&str, &str)]) -> BaseProducer {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", shale.bootstrap())
        .set("message.timeout.ms", "20000")
        .set("linger.ms", "5");
    for (k, v) in extra {
        cfg.set(*k, *v);
    }
    cfg.create().expect("producer")
}

fn create_topic(shale: &Shale, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    let admin = admin(shale);
    let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        topic = topic.set(k, v);
    }
    let results = block_on(admin.create_topics(&[topic], &AdminOptions::new())).unwrap();
    for r in results {
        r.expect("topic created");
    }
}

/// Reads `count` records of one partition from the beginning.
fn consume(
    shale: &Shale,
    topic: &str,
    partition: i32,
    count: usize,
) -> Vec<rdkafka::message::OwnedMessage> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .set("group.id", "unused-assign-only")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, Offset::Beginning)
        .unwrap();
    consumer.assign(&tpl).unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let mut out = Vec::new();
    while out.len() < count && Instant::now() < deadline {
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            out.push(m.expect("consume").detach());
        }
    }
    out
}

#[test]
fn produce_and_consume_with_every_codec() {
    let shale = Shale::start();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("codec-{codec}");
        create_topic(&shale, &topic, 1, &[]);
        let p = producer(&shale, &[("compression.type", codec)]);
        for i in 0..100 {
            let key = format!("key-{i}");
            let value = format!("value-{i}-{}", "x".repeat(i * 10));
            let headers = OwnedHeaders::new().insert(Header {
                key: "h",
                value: Some(format!("hv-{i}").as_bytes()),
            });
            p.send(
                BaseRecord::to(&topic)
                    .key(&key)
                    .payload(&value)
                    .headers(headers)
                    .timestamp(1_700_000_000_000 + i as i64),
            )
            .unwrap();
        }
        p.flush(TIMEOUT).unwrap();
        let got = consume(&shale, &topic, 0, 100);
        assert_eq!(got.len(), 100, "codec {codec}");
        for (i, m) in got.iter().enumerate() {
            assert_eq!(m.offset(), i as i64);
            assert_eq!(m.key().unwrap(), format!("key-{i}").as_bytes());
            assert_eq!(
                m.payload().unwrap(),
                format!("value-{i}-{}", "x".repeat(i * 10)).as_bytes()
            );
            assert_eq!(
                m.timestamp().to_millis(),
                Some(1_700_000_000_000 + i as i64)
            );
            let h = m.headers().unwrap().get(0);
            assert_eq!(h.key, "h");
            assert_eq!(h.value.unwrap(), format!("hv-{i}").as_bytes());
        }
    }
}

#[test]
fn null_values_and_auto_created_topics() {
    let shale = Shale::start();
    let p = producer(&shale, &[]);
    p.send(BaseRecord::<str, [u8]>::to("auto-created").key("tombstone"))
        .unwrap();
    p.send(
        BaseRecord::<str, str>::to("auto-created")
            .key("k")
            .payload("v"),
    )
    .unwrap();
    p.flush(TIMEOUT).unwrap();
    let got = consume(&shale, "auto-created", 0, 2);
    assert_eq!(got.len(), 2);
    assert!(got[0].payload().is_none());
    assert_eq!(got[1].payload().unwrap(), b"v");
}

#[test]
fn data_survives_clean_restart_and_kill() {
    let mut shale = Shale::start();
    create_topic(&shale, "durable", 2, &[]);
    let p = producer(&shale, &[]);
    for i in 0..50 {
        p.send(
            BaseRecord::to("durable")
                .partition(i % 2)
                .key("k")
                .payload(&format!("v{i}")),
        )
        .unwrap();
    }
    p.flush(TIMEOUT).unwrap();
    drop(p);
    let status = shale.stop();
    assert!(status.success(), "clean shutdown exit status {status}");
    shale.restart();
    assert_eq!(consume(&shale, "durable", 0, 25).len(), 25);
    assert_eq!(consume(&shale, "durable", 1, 25).len(), 25);

    // An unclean stop loses nothing that reached the page cache, and appends continue.
    shale.restart_after_kill();
    let p = producer(&shale, &[]);
    p.send(
        BaseRecord::to("durable")
            .partition(0)
            .key("k")
            .payload("after"),
    )
    .unwrap();
    p.flush(TIMEOUT).unwrap();
    let got = consume(&shale, "durable", 0, 26);
    assert_eq!(got.len(), 26);
    assert_eq!(got[25].offset(), 25);
    assert_eq!(got[25].payload().unwrap(), b"after");
}

#[test]
fn idempotent_producer_writes_each_record_once() {
    let mut shale = Shale::start();
    create_topic(&shale, "idem", 1, &[]);
    let p = producer(&shale, &[("enable.idempotence", "true"), ("acks", "all")]);
    for i in 0..500 {
        p.send(BaseRecord::to("idem").key("k").payload(&format!("{i}")))
            .unwrap();
    }
    p.flush(TIMEOUT).unwrap();
    drop(p);
    // Producer state survives a restart.
    shale.restart();
    let p = producer(&shale, &[("enable.idempotence", "true"), ("acks", "all")]);
    for i in 500..600 {
        p.send(BaseRecord::to("idem").key("k").payload(&format!("{i}")))
            .unwrap();
    }
    p.flush(TIMEOUT).unwrap();
    let got = consume(&shale, "idem", 0, 600);
    assert_eq!(got.len(), 600);
    for (i, m) in got.iter().enumerate() {
        assert_eq!(m.payload().unwrap(), format!("{i}").as_bytes());
    }
}

#[test]
fn admin_operations() {
    let shale = Shale::start();
    let admin = admin(&shale);
    let opts = AdminOptions::new();

    // Create with a config; a duplicate is refused as Kafka refuses it.
    create_topic(&shale, "admin-t", 2, &[("retention.ms", "3600000")]);
    let dup = block_on(admin.create_topics(
        &[NewTopic::new("admin-t", 1, TopicReplication::Fixed(1))],
        &opts,
    ))
    .unwrap();
    assert_eq!(
        dup[0].as_ref().unwrap_err().1,
        RDKafkaErrorCode::TopicAlreadyExists
    );
    // Replication factor above the broker count.
    let rf = block_on(admin.create_topics(
        &[NewTopic::new("admin-rf", 1, TopicReplication::Fixed(3))],
        &opts,
    ))
    .unwrap();
    assert_eq!(
        rf[0].as_ref().unwrap_err().1,
        RDKafkaErrorCode::InvalidReplicationFactor
    );
    // Invalid config value.
    let bad = block_on(admin.create_topics(
        &[NewTopic::new("admin-bad", 1, TopicReplication::Fixed(1)).set("retention.ms", "soon")],
        &opts,
    ))
    .unwrap();
    assert_eq!(
        bad[0].as_ref().unwrap_err().1,
        RDKafkaErrorCode::InvalidConfig
    );

    // Describe: the override and Kafka's defaults.
    let described =
        block_on(admin.describe_configs(&[ResourceSpecifier::Topic("admin-t")], &opts)).unwrap();
    let res = described[0].as_ref().unwrap();
    let get = |name: &str| {
        res.entries
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.value.clone())
    };
    assert_eq!(get("retention.ms").as_deref(), Some("3600000"));
    assert_eq!(get("max.message.bytes").as_deref(), Some("1048588"));
    assert_eq!(get("cleanup.policy").as_deref(), Some("delete"));

    // Alter (legacy AlterConfigs replaces the set).
    let altered = block_on(admin.alter_configs(
        &[AlterConfig::new(ResourceSpecifier::Topic("admin-t")).set("retention.ms", "1000")],
        &opts,
    ))
    .unwrap();
    assert!(altered[0].is_ok());
    let described =
        block_on(admin.describe_configs(&[ResourceSpecifier::Topic("admin-t")], &opts)).unwrap();
    let value = described[0]
        .as_ref()
        .unwrap()
        .entries
        .iter()
        .find(|e| e.name == "retention.ms")
        .and_then(|e| e.value.clone());
    assert_eq!(value.as_deref(), Some("1000"));

    // Partitions can grow, not shrink.
    let grown =
        block_on(admin.create_partitions(&[NewPartitions::new("admin-t", 4)], &opts)).unwrap();
    assert!(grown[0].is_ok());
    let shrink =
        block_on(admin.create_partitions(&[NewPartitions::new("admin-t", 1)], &opts)).unwrap();
    assert_eq!(
        shrink[0].as_ref().unwrap_err().1,
        RDKafkaErrorCode::InvalidPartitions
    );
    let md = admin
        .inner()
        .fetch_metadata(Some("admin-t"), TIMEOUT)
        .unwrap();
    assert_eq!(md.topics()[0].partitions().len(), 4);

    // Delete records, then the topic.
    let p = producer(&shale, &[]);
    for i in 0..10 {
        p.send(
            BaseRecord::to("admin-t")
                .partition(0)
                .key("k")
                .payload(&format!("{i}")),
        )
        .unwrap();
    }
    p.flush(TIMEOUT).unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("admin-t", 0, Offset::Offset(4))
        .unwrap();
    let deleted = block_on(admin.delete_records(&tpl, &opts)).unwrap();
    let low = deleted.find_partition("admin-t", 0).unwrap();
    assert_eq!(low.offset(), Offset::Offset(4));
    let got = consume(&shale, "admin-t", 0, 6);
    assert_eq!(got.first().map(|m| m.offset()), Some(4));

    let gone = block_on(admin.delete_topics(&["admin-t"], &opts)).unwrap();
    assert!(gone[0].is_ok());
    let md = admin.inner().fetch_metadata(None, TIMEOUT).unwrap();
    assert!(md.topics().iter().all(|t| t.name() != "admin-t"));
}

#[test]
fn offsets_for_times_and_watermarks() {
    let shale = Shale::start();
    create_topic(&shale, "times", 1, &[]);
    let p = producer(&shale, &[]);
    for i in 0..10i64 {
        p.send(
            BaseRecord::to("times")
                .key("k")
                .payload("v")
                .timestamp(1_000_000 + i * 1000),
        )
        .unwrap();
        p.flush(TIMEOUT).unwrap();
    }
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .set("group.id", "unused")
        .create()
        .unwrap();
    let (low, high) = consumer.fetch_watermarks("times", 0, TIMEOUT).unwrap();
    assert_eq!((low, high), (0, 10));
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("times", 0, Offset::Offset(1_004_500))
        .unwrap();
    let found = consumer.offsets_for_times(tpl, TIMEOUT).unwrap();
    assert_eq!(
        found.find_partition("times", 0).unwrap().offset(),
        Offset::Offset(5)
    );
}

#[test]
fn record_too_large_is_refused() {
    let shale = Shale::start();
    create_topic(&shale, "small", 1, &[("max.message.bytes", "1000")]);
    let p = producer(&shale, &[("message.max.bytes", "100000")]);
    let big = vec![7u8; 5000];
    p.send(BaseRecord::<str, [u8]>::to("small").payload(&big))
        .unwrap();
    let start = Instant::now();
    // The delivery report carries MESSAGE_TOO_LARGE; flush returns once it is delivered.
    let _ = p.flush(TIMEOUT);
    assert!(start.elapsed() < TIMEOUT);
    assert_eq!(consume_all_count(&shale, "small"), 0);
}

fn consume_all_count(shale: &Shale, topic: &str) -> i64 {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .set("group.id", "unused")
        .create()
        .unwrap();
    let (low, high) = consumer.fetch_watermarks(topic, 0, TIMEOUT).unwrap();
    high - low
}
