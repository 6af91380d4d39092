//! Client quotas on the real binary, over raw frames: a producer and a consumer over their
//! byte rates are held to them (measured over 10 s, with a tolerance) and told so in
//! `throttle_time_ms`; AlterClientQuotas then DescribeClientQuotas round trip; a quota change
//! applies to a connection already open; the controller-mutation quota refuses topics once
//! exhausted (CreateTopics v6+) and throttles older versions.
//!
//! The byte-rate tests run with `quota.window.num=3`. With Kafka's default of 11 windows a
//! client that always has more to send is held to its quota in cycles of about 11 s (its first
//! burst is admitted against the 10-window minimum span and, when that sample falls out, the
//! next burst goes through), so its share over one 10 s span swings between a tenth and 1.2
//! times the quota while the long-run average is the quota; the unit tests of
//! `shale-broker`'s `quotas/rate.rs` hold that math at the defaults. Three windows make the
//! cycle short enough for 10 s to average it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::Shale;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, ApiKey, BrokerId, CreateTopicsRequest, DescribeClientQuotasRequest,
    FetchRequest, ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::RequestHeader;

const QUOTA_BYTES_PER_S: f64 = 200_000.0;
const MEASURE: Duration = Duration::from_secs(10);

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// A connection that names its client id.
struct Client {
    stream: TcpStream,
    client_id: String,
    correlation: i32,
}

impl Client {
    fn connect(shale: &Shale, client_id: &str) -> Client {
        let stream = TcpStream::connect(shale.bootstrap()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        Client {
            stream,
            client_id: client_id.into(),
            correlation: 0,
        }
    }

    fn call(&mut self, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
        self.correlation += 1;
        let header = RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id: self.correlation,
            client_id: Some(self.client_id.clone()),
            header_version: key.request_header_version(version),
        };
        let frame = shale_protocol::encode_request(&header, &request).unwrap();
        self.stream.write_all(&frame).unwrap();
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).unwrap();
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut buf).unwrap();
        let (correlation, response) =
            shale_protocol::decode_response(key as i16, version, Bytes::from(buf)).unwrap();
        assert_eq!(correlation, self.correlation);
        response
    }

    fn create_topic(&mut self, name: &str, partitions: i32, version: i16) -> (i16, i32) {
        let request = CreateTopicsRequest::default()
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(text(name)))
                .with_num_partitions(partitions)
                .with_replication_factor(1)])
            .with_timeout_ms(10_000);
        match self.call(
            ApiKey::CreateTopics,
            version,
            RequestKind::CreateTopics(request),
        ) {
            ResponseKind::CreateTopics(r) => (r.topics[0].error_code, r.throttle_time_ms),
            other => panic!("{other:?}"),
        }
    }

    /// One batch of `value_bytes` appended: (error, throttle time).
    fn produce(&mut self, topic: &str, value_bytes: usize) -> (i16, i32) {
        let value = vec![b'q'; value_bytes];
        let batch = shale_testkit::record_batch(&[(None, Some(&value))], 1_700_000_000_000);
        let request = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(text(topic)))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(Bytes::from(batch)))])]);
        match self.call(ApiKey::Produce, 9, RequestKind::Produce(request)) {
            ResponseKind::Produce(r) => (
                r.responses[0].partition_responses[0].error_code,
                r.throttle_time_ms,
            ),
            other => panic!("{other:?}"),
        }
    }

    /// A consumer fetch of at most `max_bytes` from `offset`: (record bytes, throttle time).
    fn fetch(&mut self, topic: &str, offset: i64, max_bytes: i32) -> (Bytes, i32) {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(100)
            .with_min_bytes(1)
            .with_max_bytes(max_bytes)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(text(topic)))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(max_bytes)])]);
        match self.call(ApiKey::Fetch, 12, RequestKind::Fetch(request)) {
            ResponseKind::Fetch(r) => {
                let records = r
                    .responses
                    .first()
                    .and_then(|t| t.partitions.first())
                    .and_then(|p| p.records.clone())
                    .unwrap_or_default();
                (records, r.throttle_time_ms)
            }
            other => panic!("{other:?}"),
        }
    }

    /// Sets (`Some`) or removes one key of an entity; the entry's error code.
    fn alter_quota(
        &mut self,
        entity: &[(&str, Option<&str>)],
        key: &str,
        value: Option<f64>,
    ) -> i16 {
        let request = AlterClientQuotasRequest::default().with_entries(vec![EntryData::default()
            .with_entity(
                entity
                    .iter()
                    .map(|(t, n)| {
                        EntityData::default()
                            .with_entity_type(text(t))
                            .with_entity_name(n.map(text))
                    })
                    .collect(),
            )
            .with_ops(vec![OpData::default()
                .with_key(text(key))
                .with_value(value.unwrap_or(0.0))
                .with_remove(value.is_none())])]);
        match self.call(
            ApiKey::AlterClientQuotas,
            1,
            RequestKind::AlterClientQuotas(request),
        ) {
            ResponseKind::AlterClientQuotas(r) => r.entries[0].error_code,
            other => panic!("{other:?}"),
        }
    }

    /// DescribeClientQuotas of one component: (entity, values) sorted.
    #[allow(clippy::type_complexity)]
    fn describe_quotas(
        &mut self,
        entity_type: &str,
        match_type: i8,
        name: Option<&str>,
    ) -> Vec<(Vec<(String, Option<String>)>, Vec<(String, f64)>)> {
        let mut component = ComponentData::default()
            .with_entity_type(text(entity_type))
            .with_match_type(match_type);
        component._match = name.map(text);
        let request = DescribeClientQuotasRequest::default().with_components(vec![component]);
        match self.call(
            ApiKey::DescribeClientQuotas,
            1,
            RequestKind::DescribeClientQuotas(request),
        ) {
            ResponseKind::DescribeClientQuotas(r) => {
                assert_eq!(r.error_code, 0, "{:?}", r.error_message);
                let mut out: Vec<_> = r
                    .entries
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| {
                        let mut entity: Vec<_> = e
                            .entity
                            .iter()
                            .map(|d| {
                                (
                                    d.entity_type.to_string(),
                                    d.entity_name.as_ref().map(|n| n.to_string()),
                                )
                            })
                            .collect();
                        entity.sort();
                        let mut values: Vec<_> = e
                            .values
                            .iter()
                            .map(|v| (v.key.to_string(), v.value))
                            .collect();
                        values.sort_by(|a, b| a.0.cmp(&b.0));
                        (entity, values)
                    })
                    .collect();
                out.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
                out
            }
            other => panic!("{other:?}"),
        }
    }
}

/// The next offset after the record batches in `records` (each batch: base offset, length,
/// ..., last offset delta at byte 23).
fn next_offset(records: &[u8]) -> Option<i64> {
    let mut at = 0;
    let mut next = None;
    while records.len() >= at + 27 {
        let base = i64::from_be_bytes(records[at..at + 8].try_into().unwrap());
        let len = i32::from_be_bytes(records[at + 8..at + 12].try_into().unwrap()) as usize;
        let delta = i32::from_be_bytes(records[at + 23..at + 27].try_into().unwrap());
        if records.len() < at + 12 + len {
            break;
        }
        next = Some(base + i64::from(delta) + 1);
        at += 12 + len;
    }
    next
}

fn shale_with_quota_windows() -> Shale {
    Shale::start_with(&["quota.window.num=3", "num.partitions=1"])
}

fn assert_held(what: &str, bytes: usize, elapsed: Duration, throttled: usize) {
    let rate = bytes as f64 / elapsed.as_secs_f64();
    let ratio = rate / QUOTA_BYTES_PER_S;
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{what}: {rate:.0} B/s against a quota of {QUOTA_BYTES_PER_S} ({ratio:.3})"
    );
    assert!(throttled > 0, "{what}: no answer reported a throttle time");
}

#[test]
fn a_producer_over_its_byte_rate_is_held_to_it() {
    let shale = shale_with_quota_windows();
    let mut admin = Client::connect(&shale, "admin");
    admin.create_topic("produced", 1, 7);
    let entity = [("client-id", Some("greedy-producer"))];
    assert_eq!(
        admin.alter_quota(&entity, "producer_byte_rate", Some(QUOTA_BYTES_PER_S)),
        0
    );
    let mut producer = Client::connect(&shale, "greedy-producer");
    let batch_bytes = 10_000;
    let started = Instant::now();
    let (mut appended, mut throttled) = (0usize, 0usize);
    while started.elapsed() < MEASURE {
        let (error, throttle_ms) = producer.produce("produced", batch_bytes);
        assert_eq!(error, 0);
        appended += batch_bytes;
        throttled += usize::from(throttle_ms > 0);
    }
    assert_held("producer", appended, started.elapsed(), throttled);
    // Another client id is not held.
    let mut other = Client::connect(&shale, "other-producer");
    assert_eq!(other.produce("produced", batch_bytes), (0, 0));
}

#[test]
fn a_consumer_over_its_byte_rate_is_held_to_it() {
    let shale = shale_with_quota_windows();
    let mut admin = Client::connect(&shale, "admin");
    admin.create_topic("consumed", 1, 7);
    // 3 MB to read, more than the quota lets through in the measured 10 s.
    for _ in 0..300 {
        assert_eq!(admin.produce("consumed", 10_000).0, 0);
    }
    let entity = [("user", None)];
    assert_eq!(
        admin.alter_quota(&entity, "consumer_byte_rate", Some(QUOTA_BYTES_PER_S)),
        0
    );
    let mut consumer = Client::connect(&shale, "greedy-consumer");
    // Fetches of two batches: a throttled answer is dropped whole (Kafka's throttled fetch),
    // so answers much larger than a window's quota would waste the throttle time on bytes
    // the consumer never gets.
    let fetch_bytes_max = 25_000;
    let started = Instant::now();
    let (mut read, mut throttled, mut offset) = (0usize, 0usize, 0i64);
    while started.elapsed() < MEASURE {
        let (records, throttle_ms) = consumer.fetch("consumed", offset, fetch_bytes_max);
        if throttle_ms > 0 {
            // Kafka's throttled fetch: nothing handed out.
            assert!(records.is_empty());
            throttled += 1;
            continue;
        }
        read += records.len();
        offset = next_offset(&records).unwrap_or(offset);
    }
    assert_held("consumer", read, started.elapsed(), throttled);
}

#[test]
fn alter_then_describe_round_trip() {
    let shale = Shale::start();
    let mut admin = Client::connect(&shale, "admin");
    assert_eq!(
        admin.alter_quota(
            &[("user", Some("alice"))],
            "producer_byte_rate",
            Some(1024.0)
        ),
        0
    );
    assert_eq!(
        admin.alter_quota(&[("user", Some("alice"))], "request_percentage", Some(25.5)),
        0
    );
    assert_eq!(
        admin.alter_quota(
            &[("user", Some("alice")), ("client-id", None)],
            "consumer_byte_rate",
            Some(4096.0)
        ),
        0
    );
    // Refused as Kafka refuses it: INVALID_REQUEST.
    assert_eq!(
        admin.alter_quota(&[("user", Some("alice"))], "producer_byte_rate", Some(-1.0)),
        42
    );
    let user = |n: Option<&str>| ("user".to_string(), n.map(str::to_string));
    let described = admin.describe_quotas("user", 0, Some("alice"));
    assert_eq!(
        described,
        vec![
            (
                vec![("client-id".to_string(), None), user(Some("alice"))],
                vec![("consumer_byte_rate".to_string(), 4096.0)]
            ),
            (
                vec![user(Some("alice"))],
                vec![
                    ("producer_byte_rate".to_string(), 1024.0),
                    ("request_percentage".to_string(), 25.5)
                ]
            ),
        ]
    );
    assert_eq!(
        admin.alter_quota(&[("user", Some("alice"))], "producer_byte_rate", None),
        0
    );
    assert_eq!(
        admin.describe_quotas("client-id", 1, None),
        vec![(
            vec![("client-id".to_string(), None), user(Some("alice"))],
            vec![("consumer_byte_rate".to_string(), 4096.0)]
        )]
    );
    assert_eq!(
        admin.describe_quotas("user", 0, Some("alice"))[1].1,
        vec![("request_percentage".to_string(), 25.5)]
    );
}

#[test]
fn a_quota_change_applies_to_an_open_connection() {
    let shale = Shale::start();
    let mut admin = Client::connect(&shale, "admin");
    admin.create_topic("changing", 1, 7);
    let mut producer = Client::connect(&shale, "changing-producer");
    assert_eq!(producer.produce("changing", 100_000), (0, 0));
    // 20 kB/s: 300 kB is 30 kB/s over the 10 s minimum span, 5 s too much. (Usage is
    // measured from the first quota of its kind on, as in Kafka.)
    let entity = [("client-id", Some("changing-producer"))];
    assert_eq!(
        admin.alter_quota(&entity, "producer_byte_rate", Some(20_000.0)),
        0
    );
    let (error, throttle_ms) = producer.produce("changing", 300_000);
    assert_eq!(error, 0);
    assert!(throttle_ms > 4_000, "throttle {throttle_ms} ms");
    // The connection is muted for that long: nothing on it is answered meanwhile.
    let asked = Instant::now();
    let _ = producer.produce("changing", 10);
    assert!(
        asked.elapsed() >= Duration::from_millis(throttle_ms as u64 - 100),
        "answered after {:?} of a {throttle_ms} ms throttle",
        asked.elapsed()
    );
    // Removing the quota frees the client at once.
    assert_eq!(admin.alter_quota(&entity, "producer_byte_rate", None), 0);
    assert_eq!(producer.produce("changing", 100_000), (0, 0));
}

#[test]
fn controller_mutations_over_their_rate_are_refused_or_throttled() {
    let shale = Shale::start();
    let mut admin = Client::connect(&shale, "admin");
    // One partition per second: a burst of 11.
    assert_eq!(
        admin.alter_quota(
            &[("client-id", Some("creator"))],
            "controller_mutation_rate",
            Some(1.0)
        ),
        0
    );
    let mut creator = Client::connect(&shale, "creator");
    // Within the burst; this one takes the credits to -9 and is not throttled itself.
    assert_eq!(creator.create_topic("burst", 20, 7), (0, 0));
    // Exhausted: strict versions refuse with THROTTLING_QUOTA_EXCEEDED.
    let (error, throttle_ms) = creator.create_topic("refused", 1, 7);
    assert_eq!(error, 89);
    assert!(throttle_ms > 0);
    // Older versions create and are throttled instead (their clients know no such error).
    let (error, throttle_ms) = creator.create_topic("permissive", 1, 5);
    assert_eq!(error, 0);
    assert!(throttle_ms > 0);
}
