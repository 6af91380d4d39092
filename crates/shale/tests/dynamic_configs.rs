//! Dynamic broker configs on a real broker, as Kafka 4.4 answers them (measured): a key Kafka
//! never updates at runtime is refused naming it, a bad value with Kafka's message, a custom
//! key is kept; DescribeConfigs says which keys are read-only; and every key accepted takes
//! effect at once on topics without their own value.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use bytes::Bytes;
use cluster_support::call;
use common::Shale;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
    ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shale_testkit::record_batch;

const BROKER: i8 = 4;
const TOPIC: i8 = 2;
const SET: i8 = 0;
const DELETE: i8 = 1;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// IncrementalAlterConfigs of one broker resource; its (error code, error message).
fn alter(addr: &str, broker: &str, ops: &[(&str, i8, Option<&str>)]) -> (i16, Option<String>) {
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(BROKER)
            .with_resource_name(s(broker))
            .with_configs(
                ops.iter()
                    .map(|(name, op, value)| {
                        AlterableConfig::default()
                            .with_name(s(name))
                            .with_config_operation(*op)
                            .with_value(value.map(s))
                    })
                    .collect(),
            ),
    ]);
    match call(
        addr,
        ApiKey::IncrementalAlterConfigs,
        1,
        RequestKind::IncrementalAlterConfigs(request),
    ) {
        ResponseKind::IncrementalAlterConfigs(r) => (
            r.responses[0].error_code,
            r.responses[0].error_message.as_ref().map(|m| m.to_string()),
        ),
        other => panic!("{other:?}"),
    }
}

/// DescribeConfigs (v4, with synonyms) of one resource: its error code and entries.
fn describe(addr: &str, kind: i8, name: &str) -> (i16, Vec<DescribeConfigsResourceResult>) {
    let request = DescribeConfigsRequest::default()
        .with_include_synonyms(true)
        .with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(s(name))
            .with_configuration_keys(None)]);
    match call(
        addr,
        ApiKey::DescribeConfigs,
        4,
        RequestKind::DescribeConfigs(request),
    ) {
        ResponseKind::DescribeConfigs(r) => {
            let result = r.results.into_iter().next().unwrap();
            (result.error_code, result.configs)
        }
        other => panic!("{other:?}"),
    }
}

fn entry<'a>(
    entries: &'a [DescribeConfigsResourceResult],
    name: &str,
) -> &'a DescribeConfigsResourceResult {
    entries
        .iter()
        .find(|e| e.name.as_str() == name)
        .unwrap_or_else(|| panic!("{name} is described"))
}

fn create(addr: &str, topic: &str) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(s(topic)))
            .with_num_partitions(1)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    match call(
        addr,
        ApiKey::CreateTopics,
        7,
        RequestKind::CreateTopics(request),
    ) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0),
        other => panic!("{other:?}"),
    }
}

/// Produce v9 of one batch; the partition's error code.
fn produce(addr: &str, topic: &str, batch: Vec<u8>) -> i16 {
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(Bytes::from(batch)))])]);
    match call(addr, ApiKey::Produce, 9, RequestKind::Produce(request)) {
        ResponseKind::Produce(r) => r.responses[0].partition_responses[0].error_code,
        other => panic!("{other:?}"),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn refusals_and_descriptions_follow_kafka() {
    let shale = Shale::start();
    let addr = shale.bootstrap();
    for broker in ["1", ""] {
        assert_eq!(
            alter(&addr, broker, &[("log.dirs", SET, Some("/x"))]),
            (
                42,
                Some("Cannot update these configs dynamically: [log.dirs]".into())
            )
        );
        assert_eq!(
            alter(&addr, broker, &[("log.retention.ms", SET, Some("abc"))]),
            (
                42,
                Some(
                    "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"
                        .into()
                )
            )
        );
        assert_eq!(
            alter(&addr, broker, &[("log.segment.bytes", SET, Some("100"))]),
            (
                42,
                Some(
                    "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576"
                        .into()
                )
            )
        );
        // Kafka updates thread pools at runtime; Shale would not act on it, so it says so.
        let (code, message) = alter(&addr, broker, &[("num.io.threads", SET, Some("4"))]);
        assert_eq!(code, 42);
        assert!(message.unwrap().contains("num.io.threads"));
    }
    // One refused key refuses the whole resource: nothing of it is applied.
    let (code, _) = alter(
        &addr,
        "",
        &[
            ("message.max.bytes", SET, Some("50000")),
            ("node.id", SET, Some("5")),
        ],
    );
    assert_eq!(code, 42);
    let (_, cluster) = describe(&addr, BROKER, "");
    assert!(cluster
        .iter()
        .all(|e| e.name.as_str() != "message.max.bytes"));

    // A custom key is kept, described without its value as a sensitive, read-only key.
    assert_eq!(
        alter(&addr, "1", &[("my.custom.key", SET, Some("1"))]),
        (0, None)
    );
    let (code, configs) = describe(&addr, BROKER, "1");
    assert_eq!(code, 0);
    let custom = entry(&configs, "my.custom.key");
    assert_eq!(custom.value, None);
    assert!(custom.is_sensitive && custom.read_only);
    assert_eq!(custom.config_source, 2, "DYNAMIC_BROKER_CONFIG");
    assert_eq!(custom.config_type, 0, "UNKNOWN");

    // Read-only as Kafka reports it for the keys Shale updates, true for the static ones.
    assert!(!entry(&configs, "log.retention.ms").read_only);
    assert!(!entry(&configs, "message.max.bytes").read_only);
    assert!(entry(&configs, "log.dirs").read_only);
    assert!(entry(&configs, "node.id").read_only);
    assert!(entry(&configs, "log.retention.hours").read_only);
    // What this broker serves, not Kafka's default (which adds streams).
    assert_eq!(
        entry(&configs, "group.coordinator.rebalance.protocols")
            .value
            .as_ref()
            .map(|v| v.to_string())
            .as_deref(),
        Some("classic,consumer")
    );
    // No value anywhere: null, no synonyms.
    let retention = entry(&configs, "log.retention.ms");
    assert_eq!(retention.value, None);
    assert!(retention.synonyms.is_empty());

    // Another broker's configs are described by that broker, as in Kafka.
    let (code, _) = describe(&addr, BROKER, "2");
    assert_eq!(code, 42);
}

#[test]
fn accepted_broker_defaults_take_effect_at_once() {
    let shale = Shale::start();
    let addr = shale.bootstrap();
    create(&addr, "dyn");
    let big = vec![b'x'; 60_000];
    let small = vec![b'y'; 40_000];
    let ts = now_ms();
    assert_eq!(
        produce(&addr, "dyn", record_batch(&[(None, Some(&big))], ts)),
        0
    );

    // The cluster-wide message.max.bytes applies to a topic without its own max.message.bytes.
    assert_eq!(
        alter(&addr, "", &[("message.max.bytes", SET, Some("50000"))]),
        (0, None)
    );
    assert_eq!(
        produce(&addr, "dyn", record_batch(&[(None, Some(&big))], ts)),
        10,
        "MESSAGE_TOO_LARGE"
    );
    assert_eq!(
        produce(&addr, "dyn", record_batch(&[(None, Some(&small))], ts)),
        0
    );
    let (_, topic) = describe(&addr, TOPIC, "dyn");
    let max = entry(&topic, "max.message.bytes");
    assert_eq!(
        max.value.as_ref().map(|v| v.to_string()).as_deref(),
        Some("50000")
    );
    assert_eq!(max.config_source, 3, "DYNAMIC_DEFAULT_BROKER_CONFIG");
    // This broker's own value wins over the cluster's.
    assert_eq!(
        alter(&addr, "1", &[("message.max.bytes", SET, Some("70000"))]),
        (0, None)
    );
    assert_eq!(
        produce(&addr, "dyn", record_batch(&[(None, Some(&big))], ts)),
        0
    );
    assert_eq!(
        alter(&addr, "1", &[("message.max.bytes", DELETE, None)]),
        (0, None)
    );
    assert_eq!(
        alter(&addr, "", &[("message.max.bytes", DELETE, None)]),
        (0, None)
    );
    assert_eq!(
        produce(&addr, "dyn", record_batch(&[(None, Some(&big))], ts)),
        0
    );

    // A per-broker cleanup policy makes the topic compacted: keyless records are refused.
    assert_eq!(
        alter(&addr, "1", &[("log.cleanup.policy", SET, Some("compact"))]),
        (0, None)
    );
    assert_eq!(
        produce(&addr, "dyn", record_batch(&[(None, Some(b"v"))], ts)),
        87,
        "INVALID_RECORD"
    );
    assert_eq!(
        produce(&addr, "dyn", record_batch(&[(Some(b"k"), Some(b"v"))], ts)),
        0
    );
    assert_eq!(
        alter(&addr, "1", &[("log.cleanup.policy", DELETE, None)]),
        (0, None)
    );
    assert_eq!(
        produce(&addr, "dyn", record_batch(&[(None, Some(b"v"))], ts)),
        0
    );
}
