//! Consumer fetches over a real socket: the frame sent from segment files decodes with
//! `kafka-protocol`, re-encodes to the very same bytes, and holds the records produced, at
//! every Fetch version, for several partitions with and without data.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, FetchRequest, MetadataRequest, ProduceRequest, RequestKind,
    ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use shale_broker::config::{BrokerConfig, StaticProperties};
use shale_broker::Broker;
use shale_protocol::RequestHeader;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Conn {
    stream: TcpStream,
    next_correlation: i32,
}

impl Conn {
    /// Sends `request` and returns the raw frame (without its length prefix).
    async fn call_raw(&mut self, key: ApiKey, version: i16, request: RequestKind) -> Bytes {
        let correlation_id = self.next_correlation;
        self.next_correlation += 1;
        let header = RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id,
            client_id: Some("fetch-frames-test".into()),
            header_version: key.request_header_version(version),
        };
        let frame = shale_protocol::encode_request(&header, &request).unwrap();
        self.stream.write_all(&frame).await.unwrap();
        let len = self.stream.read_i32().await.unwrap() as usize;
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body).await.unwrap();
        let body = Bytes::from(body);
        assert_eq!(
            i32::from_be_bytes(body[..4].try_into().unwrap()),
            correlation_id
        );
        body
    }

    async fn call(&mut self, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
        let frame = self.call_raw(key, version, request).await;
        shale_protocol::decode_response(key as i16, version, frame)
            .unwrap()
            .1
    }
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn batch(first_value: u32, count: u32) -> Bytes {
    let records: Vec<Record> = (first_value..first_value + count)
        .map(|v| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i64::from(v - first_value),
            sequence: -1,
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(Bytes::from(format!("value-{v}-{}", "x".repeat(200)))),
            headers: IndexMap::new(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .unwrap();
    buf.freeze()
}

fn values(records: &Bytes) -> Vec<String> {
    let mut buf = records.clone();
    RecordBatchDecoder::decode_all(&mut buf)
        .unwrap()
        .into_iter()
        .flat_map(|set| set.records)
        .map(|r| {
            let v = r.value.unwrap();
            String::from_utf8(v.to_vec())
                .unwrap()
                .split('-')
                .take(2)
                .collect::<Vec<_>>()
                .join("-")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_fetch_frames_at_every_version() {
    let tmp = tempfile::tempdir().unwrap();
    let overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0".to_string(),
        format!("log.dirs={}", tmp.path().join("data").display()),
        "offsets.topic.replication.factor=1".to_string(),
    ];
    let props = StaticProperties::load(None, std::iter::empty(), &overrides).unwrap();
    let config = BrokerConfig::from_properties(props).unwrap();
    let handle = Broker::start(config).await.unwrap();
    let addr = handle.bound[0].1;
    let mut conn = Conn {
        stream: TcpStream::connect(addr).await.unwrap(),
        next_correlation: 1,
    };

    let create = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(name("frames"))
            .with_num_partitions(3)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    match conn
        .call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(create))
        .await
    {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    let topic_id = match conn
        .call(
            ApiKey::Metadata,
            12,
            RequestKind::Metadata(MetadataRequest::default().with_topics(None)),
        )
        .await
    {
        ResponseKind::Metadata(m) => {
            m.topics
                .iter()
                .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "frames"))
                .unwrap()
                .topic_id
        }
        other => panic!("{other:?}"),
    };

    // Partition 0: three batches; partition 1: one; partition 2: none.
    let produced: [&[(u32, u32)]; 3] = [&[(0, 5), (5, 7), (12, 3)], &[(100, 4)], &[]];
    for (partition, batches) in produced.iter().enumerate() {
        for &(first, count) in batches.iter() {
            let req = ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(10_000)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(name("frames"))
                    .with_partition_data(vec![PartitionProduceData::default()
                        .with_index(partition as i32)
                        .with_records(Some(batch(first, count)))])]);
            match conn
                .call(ApiKey::Produce, 9, RequestKind::Produce(req))
                .await
            {
                ResponseKind::Produce(r) => {
                    assert_eq!(r.responses[0].partition_responses[0].error_code, 0)
                }
                other => panic!("{other:?}"),
            }
        }
    }
    let expected: Vec<Vec<String>> = produced
        .iter()
        .map(|batches| {
            batches
                .iter()
                .flat_map(|&(first, count)| (first..first + count).map(|v| format!("value-{v}")))
                .collect()
        })
        .collect();

    for version in 4i16..=18 {
        let partitions: Vec<FetchPartition> = (0..3)
            .map(|p| {
                FetchPartition::default()
                    .with_partition(p)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20)
            })
            .collect();
        let mut topic = FetchTopic::default().with_partitions(partitions);
        if version >= 13 {
            topic = topic.with_topic_id(topic_id);
        } else {
            topic = topic.with_topic(name("frames"));
        }
        let request = FetchRequest::default()
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(50 << 20)
            .with_isolation_level(0)
            .with_topics(vec![topic]);
        let frame = conn
            .call_raw(ApiKey::Fetch, version, RequestKind::Fetch(request))
            .await;
        let (correlation_id, decoded) =
            shale_protocol::decode_response(ApiKey::Fetch as i16, version, frame.clone()).unwrap();
        // The frame is exactly what kafka-protocol encodes for the same response.
        let header = RequestHeader {
            api_key: ApiKey::Fetch as i16,
            api_version: version,
            correlation_id,
            client_id: None,
            header_version: ApiKey::Fetch.request_header_version(version),
        };
        let reencoded = shale_protocol::encode_response(&header, &decoded).unwrap();
        assert_eq!(&reencoded[4..], &frame[..], "v{version}");

        let ResponseKind::Fetch(response) = decoded else {
            panic!("not a Fetch response");
        };
        assert_eq!(response.error_code, 0, "v{version}");
        let partitions = &response.responses[0].partitions;
        assert_eq!(partitions.len(), 3, "v{version}");
        for (p, data) in partitions.iter().enumerate() {
            assert_eq!(data.error_code, 0, "v{version} p{p}");
            assert_eq!(data.high_watermark, expected[p].len() as i64, "v{version}");
            let records = data.records.clone().expect("records are never null");
            assert_eq!(values(&records), expected[p], "v{version} p{p}");
        }
    }

    // A fetch that must wait: nothing past the end arrives before max_wait_ms.
    let request = FetchRequest::default()
        .with_max_wait_ms(50)
        .with_min_bytes(1)
        .with_max_bytes(50 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name("frames"))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(2)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let response = conn
        .call(ApiKey::Fetch, 12, RequestKind::Fetch(request))
        .await;
    match response {
        ResponseKind::Fetch(r) => {
            assert_eq!(r.responses[0].partitions[0].records, Some(Bytes::new()))
        }
        other => panic!("{other:?}"),
    }
    handle.shutdown().await;
}
