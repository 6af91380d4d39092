//! Topic `compression.type` end to end: librdkafka (the rdkafka crate) produces uncompressed
//! records to a topic whose `compression.type` is zstd; the real `shale` binary stores them as
//! zstd batches (read from the segment file) and a consumer reads them back intact. Changing the
//! topic to `producer` stores the next batches as sent; the broker's `compression.type`, static
//! or dynamic, applies to topics without their own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{admin, block_on, Shale};
use rdkafka::admin::{AdminOptions, AlterConfig, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, OwnedMessage};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

const TIMEOUT: Duration = Duration::from_secs(30);
const TOPIC: &str = "recompressed";
const TS_MS: i64 = 1_700_000_000_000;

/// Codec ids of RecordBatch attributes (bits 0-2).
const CODEC_NONE: u8 = 0;
const CODEC_GZIP: u8 = 1;
const CODEC_LZ4: u8 = 3;
const CODEC_ZSTD: u8 = 4;

fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value {i} ").repeat(1 + i % 9).into_bytes();
    v.push((i % 256) as u8);
    v
}

fn key(i: usize) -> Option<Vec<u8>> {
    (!i.is_multiple_of(5)).then(|| vec![0, 0xfe, (i % 256) as u8])
}

/// Sends records `range` uncompressed in a few batches and waits for every acknowledgement.
fn produce(shale: &Shale, range: std::ops::Range<usize>) {
    produce_to(shale, TOPIC, range);
}

fn produce_to(shale: &Shale, topic: &str, range: std::ops::Range<usize>) {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .set("compression.type", "none")
        .set("linger.ms", "50")
        .set("message.timeout.ms", "20000")
        .create()
        .unwrap();
    for i in range {
        let k = key(i);
        let v = value(i);
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: "n",
                value: Some(i.to_string().as_bytes()),
            })
            .insert(Header::<&[u8]> {
                key: "null",
                value: None,
            });
        let mut r = BaseRecord::<[u8], [u8]>::to(topic)
            .payload(&v)
            .headers(headers)
            .timestamp(TS_MS + i as i64 * 3);
        if let Some(k) = &k {
            r = r.key(k);
        }
        p.send(r).map_err(|(e, _)| e).unwrap();
    }
    p.flush(TIMEOUT).unwrap();
}

fn consume(shale: &Shale, count: usize) -> Vec<OwnedMessage> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .set("group.id", "unused-assign-only")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(TOPIC, 0, Offset::Beginning)
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

/// `(base offset, record count, codec id)` of every batch in the partition's segment files,
/// read straight from the RecordBatch headers.
fn stored_batches(shale: &Shale) -> Vec<(i64, i32, u8)> {
    stored_batches_of(shale, TOPIC)
}

fn stored_batches_of(shale: &Shale, topic: &str) -> Vec<(i64, i32, u8)> {
    let dir = shale.data_dir().join(format!("{topic}-0"));
    let mut segments: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segments.sort();
    let mut out = Vec::new();
    for seg in segments {
        let b = std::fs::read(seg).unwrap();
        let mut pos = 0;
        while pos + 61 <= b.len() {
            let base = i64::from_be_bytes(b[pos..pos + 8].try_into().unwrap());
            let len = i32::from_be_bytes(b[pos + 8..pos + 12].try_into().unwrap()) as usize;
            let attributes = i16::from_be_bytes(b[pos + 21..pos + 23].try_into().unwrap());
            let count = i32::from_be_bytes(b[pos + 57..pos + 61].try_into().unwrap());
            out.push((base, count, (attributes & 0x07) as u8));
            pos += 12 + len;
        }
    }
    out
}

fn check_records(got: &[OwnedMessage]) {
    for (i, m) in got.iter().enumerate() {
        assert_eq!(m.offset(), i as i64);
        assert_eq!(m.key().map(<[u8]>::to_vec), key(i), "record {i}");
        assert_eq!(m.payload().unwrap(), &value(i)[..], "record {i}");
        assert_eq!(m.timestamp().to_millis(), Some(TS_MS + i as i64 * 3));
        let h = m.headers().unwrap();
        assert_eq!(h.count(), 2, "record {i}");
        assert_eq!(h.get(0).key, "n");
        assert_eq!(h.get(0).value.unwrap(), i.to_string().as_bytes());
        assert_eq!(h.get(1).key, "null");
        assert!(h.get(1).value.is_none());
    }
}

#[test]
fn an_uncompressed_producer_on_a_zstd_topic_is_stored_as_zstd_and_read_back_intact() {
    let shale = Shale::start();
    let admin = admin(&shale);
    let topic = NewTopic::new(TOPIC, 1, TopicReplication::Fixed(1)).set("compression.type", "zstd");
    for r in block_on(admin.create_topics(&[topic], &AdminOptions::new())).unwrap() {
        r.expect("topic created");
    }
    produce(&shale, 0..300);
    let batches = stored_batches(&shale);
    assert!(!batches.is_empty());
    assert!(
        batches.iter().all(|b| b.2 == CODEC_ZSTD),
        "every batch stored as zstd: {batches:?}"
    );
    assert_eq!(batches.iter().map(|b| b.1).sum::<i32>(), 300);
    let got = consume(&shale, 300);
    assert_eq!(got.len(), 300);
    check_records(&got);

    // `producer` keeps the producer's codec again for the batches that follow.
    let alter =
        AlterConfig::new(ResourceSpecifier::Topic(TOPIC)).set("compression.type", "producer");
    for r in block_on(admin.alter_configs(&[alter], &AdminOptions::new())).unwrap() {
        r.expect("config altered");
    }
    let deadline = Instant::now() + TIMEOUT;
    let mut end = 300;
    loop {
        produce(&shale, end..end + 10);
        end += 10;
        let last = *stored_batches(&shale).last().unwrap();
        if last.2 == CODEC_NONE {
            break;
        }
        assert!(Instant::now() < deadline, "still recompressed: {last:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let got = consume(&shale, end);
    assert_eq!(got.len(), end);
    check_records(&got);
}

#[test]
fn the_broker_compression_type_applies_to_topics_without_their_own() {
    let shale = Shale::start_with(&["compression.type=gzip", "compression.gzip.level=1"]);
    let admin = admin(&shale);
    let plain = NewTopic::new("broker-default", 1, TopicReplication::Fixed(1));
    let own = NewTopic::new("own-setting", 1, TopicReplication::Fixed(1))
        .set("compression.type", "producer");
    for r in block_on(admin.create_topics(&[plain, own], &AdminOptions::new())).unwrap() {
        r.expect("topic created");
    }
    produce_to(&shale, "broker-default", 0..20);
    produce_to(&shale, "own-setting", 0..20);
    let gzip: Vec<u8> = stored_batches_of(&shale, "broker-default")
        .iter()
        .map(|b| b.2)
        .collect();
    assert!(
        !gzip.is_empty() && gzip.iter().all(|c| *c == CODEC_GZIP),
        "{gzip:?}"
    );
    let kept: Vec<u8> = stored_batches_of(&shale, "own-setting")
        .iter()
        .map(|b| b.2)
        .collect();
    assert!(
        !kept.is_empty() && kept.iter().all(|c| *c == CODEC_NONE),
        "{kept:?}"
    );

    // A dynamic broker compression.type applies to the next batches, as in Kafka.
    let alter = AlterConfig::new(ResourceSpecifier::Broker(1)).set("compression.type", "lz4");
    for r in block_on(admin.alter_configs(&[alter], &AdminOptions::new())).unwrap() {
        r.expect("broker config altered");
    }
    let deadline = Instant::now() + TIMEOUT;
    let mut end = 20;
    loop {
        produce_to(&shale, "broker-default", end..end + 5);
        end += 5;
        let last = *stored_batches_of(&shale, "broker-default").last().unwrap();
        if last.2 == CODEC_LZ4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "broker default not applied: {last:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let kept = stored_batches_of(&shale, "own-setting");
    assert!(kept.iter().all(|b| b.2 == CODEC_NONE), "{kept:?}");
}
