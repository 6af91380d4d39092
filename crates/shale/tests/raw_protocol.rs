//! Wire-level tests: hostile frames, version negotiation, pipelining and the idempotent
//! producer's duplicate and sequence handling, spoken directly in Kafka's protocol.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use common::Shale;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, CreateTopicsRequest, InitProducerIdRequest, MetadataRequest,
    ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::RequestHeader;

struct Conn {
    stream: TcpStream,
    next_correlation: i32,
}

impl Conn {
    fn open(shale: &Shale) -> Conn {
        let stream = TcpStream::connect(shale.bootstrap()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Conn {
            stream,
            next_correlation: 1,
        }
    }

    fn send(&mut self, key: ApiKey, version: i16, request: RequestKind) -> i32 {
        let correlation_id = self.next_correlation;
        self.next_correlation += 1;
        let header = RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id,
            client_id: Some("raw-test".into()),
            header_version: key.request_header_version(version),
        };
        let frame = shale_protocol::encode_request(&header, &request).unwrap();
        self.stream.write_all(&frame).unwrap();
        correlation_id
    }

    /// Reads one response frame (without its length prefix); None when the broker closed.
    fn read_frame(&mut self) -> Option<Bytes> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).ok()?;
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut buf).ok()?;
        Some(Bytes::from(buf))
    }

    fn call(&mut self, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
        let id = self.send(key, version, request);
        let frame = self.read_frame().expect("response");
        let (correlation, response) =
            shale_protocol::decode_response(key as i16, version, frame).unwrap();
        assert_eq!(correlation, id);
        response
    }

    fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.stream.read(&mut b), Ok(0) | Err(_))
    }
}

fn create_topic(conn: &mut Conn, name: &str) {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(name.into())))
            .with_num_partitions(1)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    match conn.call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(req)) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0),
        other => panic!("{other:?}"),
    }
}

/// A RecordBatch v2 holding `count` small records.
fn batch(producer_id: i64, epoch: i16, base_sequence: i32, count: i32) -> BytesMut {
    batch_at(producer_id, epoch, base_sequence, count, 1_700_000_000_000)
}

/// A RecordBatch v2 holding `count` small records, all with timestamp `timestamp_ms`.
fn batch_at(
    producer_id: i64,
    epoch: i16,
    base_sequence: i32,
    count: i32,
    timestamp_ms: i64,
) -> BytesMut {
    let mut records = BytesMut::new();
    for i in 0..count {
        let mut r = BytesMut::new();
        r.put_i8(0); // attributes
        put_varint(&mut r, 0); // timestamp delta
        put_varint(&mut r, i as i64); // offset delta
        put_varint(&mut r, -1); // null key
        let value = format!("v{i}");
        put_varint(&mut r, value.len() as i64);
        r.put_slice(value.as_bytes());
        put_varint(&mut r, 0); // headers
        put_varint(&mut records, r.len() as i64);
        records.put_slice(&r);
    }
    let mut body = BytesMut::new(); // from attributes to the end: the CRC's coverage
    body.put_i16(0);
    body.put_i32(count - 1);
    body.put_i64(timestamp_ms);
    body.put_i64(timestamp_ms);
    body.put_i64(producer_id);
    body.put_i16(epoch);
    body.put_i32(base_sequence);
    body.put_i32(count);
    body.put_slice(&records);
    let mut out = BytesMut::new();
    out.put_i64(0);
    out.put_i32((4 + 1 + 4 + body.len()) as i32);
    out.put_i32(-1);
    out.put_i8(2);
    out.put_u32(crc32c::crc32c(&body));
    out.put_slice(&body);
    out
}

fn put_varint(buf: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.put_u8((z as u8) | 0x80);
        z >>= 7;
    }
    buf.put_u8(z as u8);
}

fn produce(conn: &mut Conn, topic: &str, records: Bytes) -> (i16, i64) {
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.into())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])]);
    match conn.call(ApiKey::Produce, 9, RequestKind::Produce(req)) {
        ResponseKind::Produce(r) => {
            let p = &r.responses[0].partition_responses[0];
            (p.error_code, p.base_offset)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn hostile_frames_close_only_their_connection() {
    let shale = Shale::start();
    let mut healthy = Conn::open(&shale);
    healthy.call(
        ApiKey::ApiVersions,
        3,
        RequestKind::ApiVersions(
            ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("raw"))
                .with_client_software_version(StrBytes::from_static_str("1")),
        ),
    );

    let hostile: Vec<Vec<u8>> = vec![
        // Metadata v1 whose topic array claims 2^31-1 entries.
        {
            let mut f = BytesMut::new();
            f.put_i16(3);
            f.put_i16(1);
            f.put_i32(7);
            f.put_i16(-1);
            f.put_slice(&[0x7f, 0xff, 0xff, 0xff]);
            let mut out = BytesMut::new();
            out.put_i32(f.len() as i32);
            out.put_slice(&f);
            out.to_vec()
        },
        // A frame shorter than a request header.
        vec![0, 0, 0, 2, 0, 3],
        // A negative length.
        vec![0xff, 0xff, 0xff, 0xf0],
        // A length far above socket.request.max.bytes.
        vec![0x7f, 0xff, 0xff, 0xff, 1, 2, 3],
        // An unknown API key.
        vec![0, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff],
    ];
    for bytes in hostile {
        let mut c = Conn::open(&shale);
        c.stream.write_all(&bytes).unwrap();
        assert!(
            c.is_closed(),
            "connection should be closed for {bytes:02x?}"
        );
    }
    // A frame that announces 100 MB but sends 10 bytes must not cost 100 MB: the broker keeps
    // serving, and this connection stays open waiting for the rest.
    let mut slow = Conn::open(&shale);
    let mut f = BytesMut::new();
    f.put_i32(100_000_000);
    f.put_slice(&[0u8; 10]);
    slow.stream.write_all(&f).unwrap();

    // Everyone else is still served.
    match healthy.call(
        ApiKey::Metadata,
        12,
        RequestKind::Metadata(MetadataRequest::default()),
    ) {
        ResponseKind::Metadata(m) => assert_eq!(m.brokers.len(), 1),
        other => panic!("{other:?}"),
    }
    let mut fresh = Conn::open(&shale);
    fresh.call(
        ApiKey::Metadata,
        1,
        RequestKind::Metadata(MetadataRequest::default()),
    );
}

#[test]
fn api_versions_newer_than_known_gets_a_v0_answer() {
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    // ApiVersions v127 with a v2 header: the broker cannot parse the body, answers v0.
    let mut f = BytesMut::new();
    f.put_i16(18);
    f.put_i16(127);
    f.put_i32(42);
    f.put_i16(3);
    f.put_slice(b"raw");
    f.put_u8(0);
    let mut out = BytesMut::new();
    out.put_i32(f.len() as i32);
    out.put_slice(&f);
    c.stream.write_all(&out).unwrap();
    let frame = c.read_frame().unwrap();
    let (correlation, response) = shale_protocol::decode_response(18, 0, frame).unwrap();
    assert_eq!(correlation, 42);
    match response {
        ResponseKind::ApiVersions(r) => {
            assert_eq!(r.error_code, 35);
            assert!(r
                .api_keys
                .iter()
                .any(|k| k.api_key == 0 && k.min_version == 0));
            assert!(r
                .api_keys
                .iter()
                .any(|k| k.api_key == 18 && k.max_version == 5));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn api_versions_v3_uses_a_v0_response_header() {
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    let req = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("raw"))
        .with_client_software_version(StrBytes::from_static_str("1.0"));
    let id = c.send(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(req));
    let frame = c.read_frame().unwrap();
    // Header v0 is the correlation id alone; the body starts with error_code 0 right after.
    assert_eq!(i32::from_be_bytes(frame[0..4].try_into().unwrap()), id);
    assert_eq!(i16::from_be_bytes(frame[4..6].try_into().unwrap()), 0);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    let mut ids = Vec::new();
    for i in 0..50 {
        let request = if i % 2 == 0 {
            RequestKind::Metadata(MetadataRequest::default())
        } else {
            RequestKind::ApiVersions(ApiVersionsRequest::default())
        };
        let key = if i % 2 == 0 {
            ApiKey::Metadata
        } else {
            ApiKey::ApiVersions
        };
        ids.push((c.send(key, if i % 2 == 0 { 9 } else { 2 }, request), key));
    }
    for (id, key) in ids {
        let frame = c.read_frame().unwrap();
        let version = if key == ApiKey::Metadata { 9 } else { 2 };
        let (correlation, _) = shale_protocol::decode_response(key as i16, version, frame).unwrap();
        assert_eq!(correlation, id);
    }
}

#[test]
fn idempotent_retries_get_their_original_offsets() {
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    create_topic(&mut c, "raw-idem");
    let (pid, epoch) = match c.call(
        ApiKey::InitProducerId,
        4,
        RequestKind::InitProducerId(
            InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(kafka_protocol::messages::ProducerId(-1))
                .with_producer_epoch(-1),
        ),
    ) {
        ResponseKind::InitProducerId(r) => {
            assert_eq!(r.error_code, 0);
            (r.producer_id.0, r.producer_epoch)
        }
        other => panic!("{other:?}"),
    };
    assert!(pid >= 0);
    let first = batch(pid, epoch, 0, 3).freeze();
    assert_eq!(produce(&mut c, "raw-idem", first.clone()), (0, 0));
    let second = batch(pid, epoch, 3, 2).freeze();
    assert_eq!(produce(&mut c, "raw-idem", second.clone()), (0, 3));
    // Retries of both batches: the original offsets, nothing appended.
    assert_eq!(produce(&mut c, "raw-idem", first), (0, 0));
    assert_eq!(produce(&mut c, "raw-idem", second), (0, 3));
    // A gap in the sequence.
    let (code, _) = produce(&mut c, "raw-idem", batch(pid, epoch, 9, 1).freeze());
    assert_eq!(code, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER");
    // The next batch in order lands at offset 5: nothing was written by the retries.
    assert_eq!(
        produce(&mut c, "raw-idem", batch(pid, epoch, 5, 1).freeze()),
        (0, 5)
    );
}

#[test]
fn corrupt_batches_are_refused_and_not_written() {
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    create_topic(&mut c, "raw-crc");
    let mut bad = batch(-1, -1, -1, 2);
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    let (code, _) = produce(&mut c, "raw-crc", bad.freeze());
    assert_eq!(code, 2, "CORRUPT_MESSAGE");
    // Truncated batch.
    let good = batch(-1, -1, -1, 2);
    let (code, _) = produce(
        &mut c,
        "raw-crc",
        good.clone().freeze().slice(..good.len() - 3),
    );
    assert_eq!(code, 2, "CORRUPT_MESSAGE");
    assert_eq!(produce(&mut c, "raw-crc", good.freeze()), (0, 0));
}

#[test]
fn list_offsets_answers_every_served_version() {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::ListOffsetsRequest;
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    create_topic(&mut c, "raw-lo");
    assert_eq!(
        produce(&mut c, "raw-lo", batch(-1, -1, -1, 3).freeze()),
        (0, 0)
    );
    for version in 1..=10 {
        for (timestamp, expected) in [(-1i64, 3i64), (-2, 0), (1_700_000_000_000, 0)] {
            let req = ListOffsetsRequest::default()
                .with_replica_id(kafka_protocol::messages::BrokerId(-1))
                .with_topics(vec![ListOffsetsTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("raw-lo")))
                    .with_partitions(vec![ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(timestamp)])]);
            match c.call(ApiKey::ListOffsets, version, RequestKind::ListOffsets(req)) {
                ResponseKind::ListOffsets(r) => {
                    let p = &r.topics[0].partitions[0];
                    assert_eq!(p.error_code, 0, "v{version} ts {timestamp}");
                    assert_eq!(p.offset, expected, "v{version} ts {timestamp}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}

/// One ListOffsets partition answer: (error code, offset, timestamp, leader epoch).
fn list_offset(c: &mut Conn, topic: &str, version: i16, timestamp: i64) -> (i16, i64, i64, i32) {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::ListOffsetsRequest;
    let req = ListOffsetsRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.into())))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(timestamp)])]);
    match c.call(ApiKey::ListOffsets, version, RequestKind::ListOffsets(req)) {
        ResponseKind::ListOffsets(r) => {
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.offset, p.timestamp, p.leader_epoch)
        }
        other => panic!("{other:?}"),
    }
}

/// Kafka 4.4's answers for the special timestamps, measured on a single node: each needs a
/// minimum version (UNSUPPORTED_VERSION below it), and without tiered storage LATEST_TIERED
/// and EARLIEST_PENDING_UPLOAD find no offset.
#[test]
fn list_offsets_special_timestamps_answer_as_kafka_does() {
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    create_topic(&mut c, "raw-special");
    let t0 = 1_700_000_000_000;
    assert_eq!(
        produce(&mut c, "raw-special", batch_at(-1, -1, -1, 2, t0).freeze()),
        (0, 0)
    );
    assert_eq!(
        produce(
            &mut c,
            "raw-special",
            batch_at(-1, -1, -1, 3, t0 + 5000).freeze()
        ),
        (0, 2)
    );
    const UNSUPPORTED: i16 = 35;
    for version in 1..=10i16 {
        let epoch = if version >= 4 { 0 } else { -1 };
        let at = |c: &mut Conn, ts| list_offset(c, "raw-special", version, ts);
        assert_eq!(at(&mut c, -1), (0, 5, -1, epoch), "latest v{version}");
        assert_eq!(at(&mut c, -2), (0, 0, -1, epoch), "earliest v{version}");
        let max = if version >= 7 {
            (0, 2, t0 + 5000, epoch)
        } else {
            (UNSUPPORTED, -1, -1, epoch.min(-1))
        };
        assert_eq!(at(&mut c, -3), max, "max timestamp v{version}");
        let earliest_local = if version >= 8 {
            (0, 0, -1, epoch)
        } else {
            (UNSUPPORTED, -1, -1, -1)
        };
        assert_eq!(at(&mut c, -4), earliest_local, "earliest local v{version}");
        let tiered = if version >= 9 {
            (0, -1, -1, -1)
        } else {
            (UNSUPPORTED, -1, -1, -1)
        };
        assert_eq!(at(&mut c, -5), tiered, "latest tiered v{version}");
        // EARLIEST_PENDING_UPLOAD needs v11, which this broker does not serve yet.
        assert_eq!(
            at(&mut c, -6),
            (UNSUPPORTED, -1, -1, -1),
            "pending upload v{version}"
        );
        assert_eq!(at(&mut c, -7).0, UNSUPPORTED, "-7 v{version}");
        assert_eq!(
            at(&mut c, t0 + 1),
            (0, 2, t0 + 5000, epoch),
            "by time v{version}"
        );
        assert_eq!(
            at(&mut c, t0 + 6000),
            (0, -1, -1, -1),
            "past the last v{version}"
        );
    }
}

/// ListOffsets answers the leader epoch of the batch it found, not the partition's current
/// one: records written before a leader change keep the epoch they were written in.
#[test]
fn list_offsets_returns_the_epoch_of_the_batch_found() {
    let mut shale = Shale::start();
    // Recent timestamps: retention would delete a rolled segment of 2023's records.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let t0 = now_ms - 60_000;
    let before = {
        let mut c = Conn::open(&shale);
        create_topic(&mut c, "raw-epochs");
        assert_eq!(
            produce(&mut c, "raw-epochs", batch_at(-1, -1, -1, 2, t0).freeze()),
            (0, 0)
        );
        list_offset(&mut c, "raw-epochs", 10, -1).3
    };
    // A restart elects the partition's leader again, in a new epoch.
    shale.restart();
    let mut c = Conn::open(&shale);
    let after = shale_testkit::wait_for(
        "the partition to lead again",
        Duration::from_secs(30),
        || {
            let (code, _, _, epoch) = list_offset(&mut c, "raw-epochs", 10, -1);
            (code == 0).then_some(epoch)
        },
    );
    assert!(
        after > before,
        "the restart started a new epoch ({before} -> {after})"
    );
    assert_eq!(
        produce(
            &mut c,
            "raw-epochs",
            batch_at(-1, -1, -1, 2, t0 + 5000).freeze()
        ),
        (0, 2)
    );
    assert_eq!(
        list_offset(&mut c, "raw-epochs", 10, -2),
        (0, 0, -1, before)
    );
    assert_eq!(
        list_offset(&mut c, "raw-epochs", 10, t0),
        (0, 0, t0, before)
    );
    assert_eq!(
        list_offset(&mut c, "raw-epochs", 10, t0 + 1),
        (0, 2, t0 + 5000, after)
    );
    assert_eq!(
        list_offset(&mut c, "raw-epochs", 10, -3),
        (0, 2, t0 + 5000, after)
    );
    assert_eq!(list_offset(&mut c, "raw-epochs", 10, -1), (0, 4, -1, after));
}

#[test]
fn pipelined_produces_are_appended_in_the_order_sent() {
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    create_topic(&mut c, "raw-order");
    let pid = match c.call(
        ApiKey::InitProducerId,
        4,
        RequestKind::InitProducerId(
            InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(kafka_protocol::messages::ProducerId(-1))
                .with_producer_epoch(-1),
        ),
    ) {
        ResponseKind::InitProducerId(r) => r.producer_id.0,
        other => panic!("{other:?}"),
    };
    // Five idempotent batches in flight at once, as the Java producer sends them, many times.
    let mut sent = Vec::new();
    for i in 0..200 {
        let records = batch(pid, 0, i * 2, 2).freeze();
        let req = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("raw-order")))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(records))])]);
        sent.push(c.send(ApiKey::Produce, 9, RequestKind::Produce(req)));
        if sent.len() % 5 == 0 {
            for _ in 0..5 {
                let frame = c.read_frame().unwrap();
                let (correlation, response) =
                    shale_protocol::decode_response(ApiKey::Produce as i16, 9, frame).unwrap();
                let index = sent.iter().position(|id| *id == correlation).unwrap();
                match response {
                    ResponseKind::Produce(r) => {
                        let p = &r.responses[0].partition_responses[0];
                        assert_eq!(p.error_code, 0, "request {index}");
                        assert_eq!(p.base_offset, index as i64 * 2, "request {index}");
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}

#[test]
fn metadata_for_unknown_and_invalid_topic_names() {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    let topic = |name: &str| {
        MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
    };
    let req = MetadataRequest::default()
        .with_topics(Some(vec![topic("no-such-topic"), topic("bad name!")]))
        .with_allow_auto_topic_creation(false);
    match c.call(ApiKey::Metadata, 12, RequestKind::Metadata(req)) {
        ResponseKind::Metadata(m) => {
            assert_eq!(m.topics[0].error_code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
            assert_eq!(m.topics[1].error_code, 17, "INVALID_TOPIC_EXCEPTION");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn fetch_out_of_range_and_at_the_end() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::FetchRequest;
    let shale = Shale::start();
    let mut c = Conn::open(&shale);
    create_topic(&mut c, "raw-fetch");
    assert_eq!(
        produce(&mut c, "raw-fetch", batch(-1, -1, -1, 3).freeze()),
        (0, 0)
    );
    let fetch = |c: &mut Conn, offset: i64| {
        let req = FetchRequest::default()
            .with_replica_id(kafka_protocol::messages::BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("raw-fetch")))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(1 << 20)])]);
        match c.call(ApiKey::Fetch, 12, RequestKind::Fetch(req)) {
            ResponseKind::Fetch(r) => r.responses[0].partitions[0].clone(),
            other => panic!("{other:?}"),
        }
    };
    let p = fetch(&mut c, 0);
    assert_eq!((p.error_code, p.high_watermark), (0, 3));
    assert!(!p.records.unwrap().is_empty());
    // At the log end: no error and an empty record set, never null (librdkafka refuses -1).
    let p = fetch(&mut c, 3);
    assert_eq!(p.error_code, 0);
    assert_eq!(p.records.map(|r| r.len()), Some(0));
    // Beyond it: OFFSET_OUT_OF_RANGE, and the broker keeps serving the connection.
    let p = fetch(&mut c, 1000);
    assert_eq!(p.error_code, 1, "OFFSET_OUT_OF_RANGE");
    assert_eq!(fetch(&mut c, 2).error_code, 0);
}
