//! A topic's configs as Apache Kafka 4.4 describes them, captured from a real broker
//! (`data/kafka-4.4-topic-configs.tsv`, a fresh topic with nothing set anywhere), held
//! against Shale's resolution: the same names, values, sources, flags, types and synonym
//! chains, apart from the differences listed here with their reasons.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};

use shale_metadata::config_defs::{resolve_topic_config, ConfigSource, ConfigType};
use shale_metadata::{ConfigResource, MetadataImage, MetadataRecord};

/// Where Shale's answer differs from Kafka's on purpose, with why.
const DIFFERENCES: &[(&str, &str)] = &[
    // Shale decompresses a batch into memory to validate it, so its default bound is 64 MiB
    // where Kafka's streaming decompression allows 2147483639 bytes.
    ("max.decompressed.message.bytes", "64 MiB default"),
];

fn source_name(source: ConfigSource) -> &'static str {
    match source {
        ConfigSource::DynamicTopicConfig => "TOPIC_CONFIG",
        ConfigSource::DynamicBrokerConfig => "DYNAMIC_BROKER_CONFIG",
        ConfigSource::DynamicDefaultBrokerConfig => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        ConfigSource::StaticBrokerConfig => "STATIC_BROKER_CONFIG",
        ConfigSource::DefaultConfig => "DEFAULT_CONFIG",
        ConfigSource::DynamicGroupConfig => "DYNAMIC_GROUP_CONFIG",
    }
}

fn type_name(t: ConfigType) -> &'static str {
    match t {
        ConfigType::Boolean => "BOOLEAN",
        ConfigType::String => "STRING",
        ConfigType::Int => "INT",
        ConfigType::Short => "SHORT",
        ConfigType::Long => "LONG",
        ConfigType::Double => "DOUBLE",
        ConfigType::List => "LIST",
        ConfigType::Class => "CLASS",
        ConfigType::Password => "PASSWORD",
    }
}

/// One row as the capture writes it: value ('' for the empty string), source, read-only,
/// sensitive, type, synonyms (`name=value SOURCE | ...`, `-` for none).
fn row(name: &str, resolved: &shale_metadata::ResolvedConfig) -> String {
    let value = match resolved.value.as_deref() {
        None => "null".to_string(),
        Some("") => "''".to_string(),
        Some(v) => v.to_string(),
    };
    let synonyms = if resolved.synonyms.is_empty() {
        "-".to_string()
    } else {
        resolved
            .synonyms
            .iter()
            .map(|s| format!("{}={} {}", s.name, s.value, source_name(s.source)))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    format!(
        "{name}\t{value}\t{}\t{}\t{}\t{}\t{synonyms}",
        source_name(resolved.source),
        resolved.read_only,
        resolved.sensitive,
        type_name(resolved.config_type)
    )
}

fn kafka_rows() -> BTreeMap<String, String> {
    let text = include_str!("data/kafka-4.4-topic-configs.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("name\t") && !l.trim().is_empty())
        .map(|l| (l.split('\t').next().unwrap().to_string(), l.to_string()))
        .collect()
}

#[test]
fn a_fresh_topic_is_described_as_kafka_describes_it() {
    // A fresh cluster with ELR on carries the cluster-level min.insync.replicas its controller
    // writes with the first broker registration (as Kafka's does).
    let image = MetadataImage::empty("c").apply_entry(
        &[MetadataRecord::Config {
            resource: ConfigResource::ClusterDefaultBroker,
            name: "min.insync.replicas".into(),
            value: Some("1".into()),
        }],
        0,
    );
    let shale: BTreeMap<String, String> = resolve_topic_config(&image, "t1", &HashMap::new())
        .iter()
        .map(|c| (c.name.clone(), row(&c.name, c)))
        .collect();
    let kafka = kafka_rows();
    assert_eq!(
        shale.keys().collect::<Vec<_>>(),
        kafka.keys().collect::<Vec<_>>(),
        "the topic config names"
    );
    for (name, expected) in &kafka {
        let differs = DIFFERENCES.iter().any(|(n, _)| n == name);
        if differs {
            assert_ne!(
                &shale[name], expected,
                "{name} now matches: drop it from DIFFERENCES"
            );
        } else {
            assert_eq!(&shale[name], expected, "{name}");
        }
    }
}

/// Kafka 4.4's answers after dynamic broker defaults, measured: cluster-wide
/// log.retention.ms=123456789, log.segment.bytes=2097152, log.cleanup.policy=compact, then
/// broker 1's own log.retention.ms=987654321, then the topic's retention.ms=55555.
#[test]
fn dynamic_broker_defaults_show_kafkas_synonym_chains() {
    let config = |resource: ConfigResource, name: &str, value: &str| MetadataRecord::Config {
        resource,
        name: name.into(),
        value: Some(value.into()),
    };
    let cluster = ConfigResource::ClusterDefaultBroker;
    let mut image = MetadataImage::empty("c").apply_entry(
        &[
            config(cluster.clone(), "log.retention.ms", "123456789"),
            config(cluster.clone(), "log.segment.bytes", "2097152"),
            config(cluster, "log.cleanup.policy", "compact"),
        ],
        0,
    );
    let describe = |image: &MetadataImage, name: &str| {
        let all = shale_metadata::config_defs::resolve_topic_config_for_broker(
            image,
            "t1",
            Some(1),
            &HashMap::new(),
        );
        let c = all.iter().find(|c| c.name == name).unwrap().clone();
        row(name, &c)
    };
    assert_eq!(
        describe(&image, "cleanup.policy"),
        "cleanup.policy\tcompact\tDYNAMIC_DEFAULT_BROKER_CONFIG\tfalse\tfalse\tLIST\t\
         log.cleanup.policy=compact DYNAMIC_DEFAULT_BROKER_CONFIG | log.cleanup.policy=delete DEFAULT_CONFIG"
    );
    assert_eq!(
        describe(&image, "retention.ms"),
        "retention.ms\t123456789\tDYNAMIC_DEFAULT_BROKER_CONFIG\tfalse\tfalse\tLONG\t\
         log.retention.ms=123456789 DYNAMIC_DEFAULT_BROKER_CONFIG | log.retention.hours=168 DEFAULT_CONFIG"
    );
    assert_eq!(
        describe(&image, "segment.bytes"),
        "segment.bytes\t2097152\tDYNAMIC_DEFAULT_BROKER_CONFIG\tfalse\tfalse\tINT\t\
         log.segment.bytes=2097152 DYNAMIC_DEFAULT_BROKER_CONFIG | log.segment.bytes=1073741824 DEFAULT_CONFIG"
    );
    image = image.apply_entry(
        &[config(
            ConfigResource::Broker(1),
            "log.retention.ms",
            "987654321",
        )],
        1,
    );
    assert_eq!(
        describe(&image, "retention.ms"),
        "retention.ms\t987654321\tDYNAMIC_BROKER_CONFIG\tfalse\tfalse\tLONG\t\
         log.retention.ms=987654321 DYNAMIC_BROKER_CONFIG | log.retention.ms=123456789 DYNAMIC_DEFAULT_BROKER_CONFIG | log.retention.hours=168 DEFAULT_CONFIG"
    );
    image = image.apply_entry(
        &[config(
            ConfigResource::Topic("t1".into()),
            "retention.ms",
            "55555",
        )],
        2,
    );
    assert_eq!(
        describe(&image, "retention.ms"),
        "retention.ms\t55555\tTOPIC_CONFIG\tfalse\tfalse\tLONG\t\
         retention.ms=55555 TOPIC_CONFIG | log.retention.ms=987654321 DYNAMIC_BROKER_CONFIG | log.retention.ms=123456789 DYNAMIC_DEFAULT_BROKER_CONFIG | log.retention.hours=168 DEFAULT_CONFIG"
    );
}
