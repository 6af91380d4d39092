//! Consumer Fetch round trips against an in-process broker over loopback: 1 and 8
//! partitions of 1 MiB each, the shape of Kafka's ConsumerPerformance with default
//! `max.partition.fetch.bytes`. The client reads the raw frame into a reused buffer, so
//! the figure is the broker's read path plus the socket, not decoding.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, FetchRequest, ProduceRequest, RequestKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use shale_broker::config::{BrokerConfig, StaticProperties};
use shale_broker::{Broker, BrokerHandle};
use shale_protocol::RequestHeader;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

const TOPIC: &str = "fetch-bench";
const PARTITIONS: i32 = 8;
const RECORD_BYTES: usize = 1024;
const RECORDS_PER_BATCH: usize = 16;
/// A little more than one fetch's worth per partition.
const BATCHES_PER_PARTITION: usize = 80;
const PARTITION_MAX_BYTES: i32 = 1 << 20;

struct Client {
    stream: TcpStream,
    next_correlation: i32,
    buf: Vec<u8>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            stream,
            next_correlation: 1,
            buf: Vec::new(),
        }
    }

    /// Sends one request and reads its whole response frame; returns its length.
    async fn round_trip(&mut self, key: ApiKey, version: i16, request: &RequestKind) -> usize {
        let header = RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id: self.next_correlation,
            client_id: Some("fetch-bench".into()),
            header_version: key.request_header_version(version),
        };
        self.next_correlation += 1;
        let frame = shale_protocol::encode_request(&header, request).unwrap();
        self.stream.write_all(&frame).await.unwrap();
        let len = self.stream.read_i32().await.unwrap() as usize;
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        self.stream.read_exact(&mut self.buf[..len]).await.unwrap();
        len
    }
}

fn topic_name() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}

fn batch() -> Bytes {
    let value = Bytes::from(vec![b'v'; RECORD_BYTES]);
    let records: Vec<Record> = (0..RECORDS_PER_BATCH)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: -1,
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(value.clone()),
            headers: IndexMap::new(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, &records, &options).unwrap();
    buf.freeze()
}

async fn start_with_data(dir: &std::path::Path) -> BrokerHandle {
    let overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0".to_string(),
        format!("log.dirs={}", dir.display()),
        "offsets.topic.replication.factor=1".to_string(),
    ];
    let props = StaticProperties::load(None, std::iter::empty(), &overrides).unwrap();
    let handle = Broker::start(BrokerConfig::from_properties(props).unwrap())
        .await
        .unwrap();
    let mut client = Client::connect(handle.bound[0].1).await;
    let create = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(topic_name())
            .with_num_partitions(PARTITIONS)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    client
        .round_trip(ApiKey::CreateTopics, 7, &RequestKind::CreateTopics(create))
        .await;
    let records = batch();
    for _ in 0..BATCHES_PER_PARTITION {
        let produce = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(topic_name())
                .with_partition_data(
                    (0..PARTITIONS)
                        .map(|p| {
                            PartitionProduceData::default()
                                .with_index(p)
                                .with_records(Some(records.clone()))
                        })
                        .collect(),
                )]);
        client
            .round_trip(ApiKey::Produce, 9, &RequestKind::Produce(produce))
            .await;
    }
    handle
}

fn fetch_request(partitions: i32) -> RequestKind {
    RequestKind::Fetch(
        FetchRequest::default()
            .with_replica_id(kafka_protocol::messages::BrokerId(-1))
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(50 << 20)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name())
                .with_partitions(
                    (0..partitions)
                        .map(|p| {
                            FetchPartition::default()
                                .with_partition(p)
                                .with_fetch_offset(0)
                                .with_partition_max_bytes(PARTITION_MAX_BYTES)
                        })
                        .collect(),
                )]),
    )
}

fn fetch(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let handle = runtime.block_on(start_with_data(dir.path()));
    let addr = handle.bound[0].1;
    let mut group = c.benchmark_group("fetch");
    for partitions in [1, PARTITIONS] {
        let request = fetch_request(partitions);
        let mut client = runtime.block_on(Client::connect(addr));
        let frame_len = runtime.block_on(client.round_trip(ApiKey::Fetch, 12, &request));
        group.throughput(Throughput::Bytes(frame_len as u64));
        group.bench_function(format!("{partitions}x1MiB_round_trip"), |b| {
            b.iter(|| run(&runtime, &mut client, &request))
        });
    }
    group.finish();
    runtime.block_on(handle.shutdown());
}

fn run(runtime: &Runtime, client: &mut Client, request: &RequestKind) -> usize {
    runtime.block_on(client.round_trip(ApiKey::Fetch, 12, request))
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = fetch
}
criterion_main!(benches);
