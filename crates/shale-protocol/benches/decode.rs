//! What the schema walk costs next to kafka-protocol's own decoding.

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafka_protocol::messages::{
    fetch_request::{FetchPartition, FetchTopic},
    metadata_request::MetadataRequestTopic,
    produce_request::{PartitionProduceData, TopicProduceData},
    FetchRequest, MetadataRequest, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use shale_protocol::{decode_request, validate_request_body, RequestHeader};

fn topic(index: usize) -> TopicName {
    TopicName(StrBytes::from_string(format!("topic-{index}")))
}

fn produce_body(version: i16) -> Bytes {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic(0))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(Bytes::from(vec![7u8; 16 * 1024])))])]);
    encode(&request, version)
}

fn fetch_body(version: i16) -> Bytes {
    let topics = (0..10)
        .map(|t| {
            FetchTopic::default().with_topic(topic(t)).with_partitions(
                (0..10)
                    .map(|p| {
                        FetchPartition::default()
                            .with_partition(p)
                            .with_fetch_offset(1_000)
                    })
                    .collect(),
            )
        })
        .collect();
    encode(
        &FetchRequest::default()
            .with_max_wait_ms(500)
            .with_topics(topics),
        version,
    )
}

fn metadata_body(version: i16) -> Bytes {
    let topics = (0..100)
        .map(|t| MetadataRequestTopic::default().with_name(Some(topic(t))))
        .collect();
    encode(
        &MetadataRequest::default().with_topics(Some(topics)),
        version,
    )
}

fn encode<T: Encodable>(request: &T, version: i16) -> Bytes {
    let mut body = BytesMut::new();
    if let Err(error) = request.encode(&mut body, version) {
        panic!("cannot encode the bench request: {error}");
    }
    body.freeze()
}

fn bench(c: &mut Criterion) {
    let cases = [
        ("produce_v9_16KiB", 0, 9, produce_body(9)),
        ("fetch_v12_10x10", 1, 12, fetch_body(12)),
        ("metadata_v12_100_topics", 3, 12, metadata_body(12)),
    ];
    let mut group = c.benchmark_group("request");
    for (name, api_key, api_version, body) in cases {
        let header = RequestHeader {
            api_key,
            api_version,
            correlation_id: 1,
            client_id: None,
            header_version: 2,
        };
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(format!("{name}/validate"), |b| {
            b.iter(|| validate_request_body(api_key, api_version, &body))
        });
        group.bench_function(format!("{name}/validate_and_decode"), |b| {
            b.iter(|| decode_request(&header, body.clone()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
