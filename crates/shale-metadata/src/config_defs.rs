//! Kafka 4.x topic configs: names, types, defaults, validation and broker synonyms.
//!
//! Used to validate CreateTopics/AlterConfigs and by the broker's DescribeConfigs, which reports
//! each value with its source and synonyms in Kafka's order.

use std::collections::{BTreeMap, HashMap};

use crate::error::MetadataError;
use crate::image::MetadataImage;

/// Kafka's ConfigType as sent in DescribeConfigs (v3+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    String,
    Int,
    Short,
    Long,
    Double,
    List,
    Class,
    Password,
}

impl ConfigType {
    /// The wire id (DescribeConfigsResponse config_type).
    pub fn id(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Short => 4,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Class => 8,
            ConfigType::Password => 9,
        }
    }

    fn kafka_name(self) -> &'static str {
        match self {
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
}

/// Kafka's ConfigSource as sent in DescribeConfigs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    DynamicTopicConfig,
    DynamicBrokerConfig,
    DynamicDefaultBrokerConfig,
    StaticBrokerConfig,
    DefaultConfig,
    /// A value set on a group (Kafka's GROUP_CONFIG).
    DynamicGroupConfig,
}

impl ConfigSource {
    pub fn id(self) -> i8 {
        match self {
            ConfigSource::DynamicTopicConfig => 1,
            ConfigSource::DynamicBrokerConfig => 2,
            ConfigSource::DynamicDefaultBrokerConfig => 3,
            ConfigSource::StaticBrokerConfig => 4,
            ConfigSource::DefaultConfig => 5,
            ConfigSource::DynamicGroupConfig => 8,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Validator {
    None,
    /// Inclusive numeric bounds.
    Range {
        min: Option<f64>,
        max: Option<f64>,
    },
    /// One of the given strings.
    OneOf(&'static [&'static str]),
    /// A list whose elements are each one of the given strings.
    ListOf(&'static [&'static str]),
    /// `*` or a list of `partition:broker` pairs.
    ThrottledReplicas,
    /// -1 or a value within the range (compression.gzip.level).
    MinusOneOrRange {
        min: i64,
        max: i64,
    },
}

/// A broker config that supplies a topic config's default. `factor_ms` converts its unit to the
/// topic config's (log.retention.hours: 3_600_000).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BrokerSynonym {
    pub name: &'static str,
    pub factor: i64,
    /// The broker config's own default, in its unit; `None` when Kafka defines none (the next
    /// synonym then applies).
    pub default: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopicConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
    pub default: &'static str,
    pub validator: Validator,
    pub synonyms: &'static [BrokerSynonym],
    pub sensitive: bool,
}

const fn syn(name: &'static str, default: &'static str) -> BrokerSynonym {
    BrokerSynonym {
        name,
        factor: 1,
        default: Some(default),
    }
}

const fn range(min: i64) -> Validator {
    Validator::Range {
        min: Some(min as f64),
        max: None,
    }
}

const LONG_MAX: &str = "9223372036854775807";

/// The default of `max.decompressed.message.bytes`: 64 MiB (see its entry).
pub const SHALE_DECOMPRESSED_BYTES_MAX: &str = "67108864";

macro_rules! def {
    ($name:expr, $ty:ident, $default:expr, $validator:expr, [$($syn:expr),*]) => {
        TopicConfigDef {
            name: $name,
            config_type: ConfigType::$ty,
            default: $default,
            validator: $validator,
            synonyms: &[$($syn),*],
            sensitive: false,
        }
    };
}

/// Every topic config of Kafka 4.4, in name order: exactly the names its DescribeConfigs lists
/// for a topic (checked against a captured answer in `tests/kafka_topic_configs.rs`).
pub static TOPIC_CONFIGS: &[TopicConfigDef] = &[
    def!(
        "cleanup.policy",
        List,
        "delete",
        Validator::ListOf(&["compact", "delete"]),
        [syn("log.cleanup.policy", "delete")]
    ),
    def!(
        "compression.gzip.level",
        Int,
        "-1",
        Validator::MinusOneOrRange { min: 1, max: 9 },
        [syn("compression.gzip.level", "-1")]
    ),
    def!(
        "compression.lz4.level",
        Int,
        "9",
        Validator::Range {
            min: Some(1.0),
            max: Some(17.0)
        },
        [syn("compression.lz4.level", "9")]
    ),
    def!(
        "compression.type",
        String,
        "producer",
        Validator::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        [syn("compression.type", "producer")]
    ),
    def!(
        "compression.zstd.level",
        Int,
        "3",
        Validator::Range {
            min: Some(-131072.0),
            max: Some(22.0)
        },
        [syn("compression.zstd.level", "3")]
    ),
    def!(
        "delete.retention.ms",
        Long,
        "86400000",
        range(0),
        [syn("log.cleaner.delete.retention.ms", "86400000")]
    ),
    def!(
        "errors.deadletterqueue.group.enable",
        Boolean,
        "false",
        Validator::None,
        []
    ),
    def!(
        "file.delete.delay.ms",
        Long,
        "60000",
        range(0),
        [syn("log.segment.delete.delay.ms", "60000")]
    ),
    def!(
        "flush.messages",
        Long,
        LONG_MAX,
        range(1),
        [syn("log.flush.interval.messages", LONG_MAX)]
    ),
    def!(
        "flush.ms",
        Long,
        LONG_MAX,
        range(0),
        [BrokerSynonym {
            name: "log.flush.interval.ms",
            factor: 1,
            default: None
        }]
    ),
    def!(
        "follower.replication.throttled.replicas",
        List,
        "",
        Validator::ThrottledReplicas,
        []
    ),
    def!(
        "index.interval.bytes",
        Int,
        "4096",
        range(0),
        [syn("log.index.interval.bytes", "4096")]
    ),
    def!(
        "leader.replication.throttled.replicas",
        List,
        "",
        Validator::ThrottledReplicas,
        []
    ),
    def!(
        "local.retention.bytes",
        Long,
        "-2",
        range(-2),
        [syn("log.local.retention.bytes", "-2")]
    ),
    def!(
        "local.retention.ms",
        Long,
        "-2",
        range(-2),
        [syn("log.local.retention.ms", "-2")]
    ),
    def!(
        "max.compaction.lag.ms",
        Long,
        LONG_MAX,
        range(1),
        [syn("log.cleaner.max.compaction.lag.ms", LONG_MAX)]
    ),
    // Kafka's default is 2147483639: it decompresses as a stream, while Shale decompresses a
    // batch into memory to validate it, so its default bound is 64 MiB, reported as it is.
    def!(
        "max.decompressed.message.bytes",
        Int,
        SHALE_DECOMPRESSED_BYTES_MAX,
        Validator::Range {
            min: Some(1.0),
            max: Some(2147483639.0)
        },
        [syn(
            "max.decompressed.message.bytes",
            SHALE_DECOMPRESSED_BYTES_MAX
        )]
    ),
    def!(
        "max.message.bytes",
        Int,
        "1048588",
        range(0),
        [syn("message.max.bytes", "1048588")]
    ),
    def!(
        "message.timestamp.after.max.ms",
        Long,
        "3600000",
        range(0),
        [syn("log.message.timestamp.after.max.ms", "3600000")]
    ),
    def!(
        "message.timestamp.before.max.ms",
        Long,
        LONG_MAX,
        range(0),
        [syn("log.message.timestamp.before.max.ms", LONG_MAX)]
    ),
    def!(
        "message.timestamp.type",
        String,
        "CreateTime",
        Validator::OneOf(&["CreateTime", "LogAppendTime"]),
        [syn("log.message.timestamp.type", "CreateTime")]
    ),
    def!(
        "min.cleanable.dirty.ratio",
        Double,
        "0.5",
        Validator::Range {
            min: Some(0.0),
            max: Some(1.0)
        },
        [syn("log.cleaner.min.cleanable.ratio", "0.5")]
    ),
    def!(
        "min.compaction.lag.ms",
        Long,
        "0",
        range(0),
        [syn("log.cleaner.min.compaction.lag.ms", "0")]
    ),
    def!(
        "min.insync.replicas",
        Int,
        "1",
        range(1),
        [syn("min.insync.replicas", "1")]
    ),
    def!(
        "preallocate",
        Boolean,
        "false",
        Validator::None,
        [syn("log.preallocate", "false")]
    ),
    def!(
        "remote.copy.lag.bytes",
        Long,
        "-1",
        range(-1),
        [syn("log.remote.copy.lag.bytes", "-1")]
    ),
    def!(
        "remote.copy.lag.ms",
        Long,
        "0",
        range(-1),
        [syn("log.remote.copy.lag.ms", "0")]
    ),
    def!(
        "remote.log.copy.disable",
        Boolean,
        "false",
        Validator::None,
        []
    ),
    def!(
        "remote.log.delete.on.disable",
        Boolean,
        "false",
        Validator::None,
        []
    ),
    def!(
        "remote.storage.enable",
        Boolean,
        "false",
        Validator::None,
        []
    ),
    def!(
        "retention.bytes",
        Long,
        "-1",
        Validator::None,
        [syn("log.retention.bytes", "-1")]
    ),
    def!(
        "retention.ms",
        Long,
        "604800000",
        range(-1),
        [
            BrokerSynonym {
                name: "log.retention.ms",
                factor: 1,
                default: None
            },
            BrokerSynonym {
                name: "log.retention.minutes",
                factor: 60_000,
                default: None
            },
            BrokerSynonym {
                name: "log.retention.hours",
                factor: 3_600_000,
                default: Some("168")
            }
        ]
    ),
    def!(
        "segment.bytes",
        Int,
        "1073741824",
        range(1024 * 1024),
        [syn("log.segment.bytes", "1073741824")]
    ),
    def!(
        "segment.index.bytes",
        Int,
        "10485760",
        range(4),
        [syn("log.index.size.max.bytes", "10485760")]
    ),
    def!(
        "segment.jitter.ms",
        Long,
        "0",
        range(0),
        [
            BrokerSynonym {
                name: "log.roll.jitter.ms",
                factor: 1,
                default: None
            },
            BrokerSynonym {
                name: "log.roll.jitter.hours",
                factor: 3_600_000,
                default: Some("0")
            }
        ]
    ),
    def!(
        "segment.ms",
        Long,
        "604800000",
        range(1),
        [
            BrokerSynonym {
                name: "log.roll.ms",
                factor: 1,
                default: None
            },
            BrokerSynonym {
                name: "log.roll.hours",
                factor: 3_600_000,
                default: Some("168")
            }
        ]
    ),
    def!(
        "unclean.leader.election.enable",
        Boolean,
        "false",
        Validator::None,
        [syn("unclean.leader.election.enable", "false")]
    ),
];

pub fn topic_config_def(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// The topic config a broker config name is a synonym of, with the synonym's unit factor.
pub fn topic_config_for_broker_synonym(
    broker_config: &str,
) -> Option<(&'static TopicConfigDef, &'static BrokerSynonym)> {
    TOPIC_CONFIGS.iter().find_map(|d| {
        d.synonyms
            .iter()
            .find(|s| s.name == broker_config)
            .map(|s| (d, s))
    })
}

fn invalid(value: &str, name: &str, why: impl std::fmt::Display) -> MetadataError {
    MetadataError::InvalidConfig(format!(
        "Invalid value {value} for configuration {name}: {why}"
    ))
}

fn parse_number(def_type: ConfigType, name: &str, value: &str) -> Result<f64, MetadataError> {
    let trimmed = value.trim();
    let parsed = match def_type {
        ConfigType::Int => trimmed.parse::<i32>().map(f64::from).ok(),
        ConfigType::Short => trimmed.parse::<i16>().map(f64::from).ok(),
        // Exact i64 comparisons are not needed for the bounds used here.
        ConfigType::Long => trimmed.parse::<i64>().map(|v| v as f64).ok(),
        ConfigType::Double => trimmed.parse::<f64>().ok().filter(|v| v.is_finite()),
        _ => None,
    };
    parsed.ok_or_else(|| {
        invalid(
            value,
            name,
            format!("Not a number of type {}", def_type.kafka_name()),
        )
    })
}

/// Splits a Kafka LIST value: comma-separated, trimmed, an empty string is the empty list.
pub fn parse_list(value: &str) -> Vec<String> {
    if value.trim().is_empty() {
        return Vec::new();
    }
    value.split(',').map(|s| s.trim().to_string()).collect()
}

/// Checks `value` against the definition (type, then range or allowed values).
pub fn validate_value(def: &TopicConfigDef, value: &str) -> Result<(), MetadataError> {
    validate_typed(def.name, def.config_type, def.validator, value)
}

pub(crate) fn validate_typed(
    name: &str,
    config_type: ConfigType,
    validator: Validator,
    value: &str,
) -> Result<(), MetadataError> {
    match config_type {
        ConfigType::Boolean => {
            let v = value.trim().to_ascii_lowercase();
            if v != "true" && v != "false" {
                return Err(invalid(
                    value,
                    name,
                    "Expected value to be either true or false",
                ));
            }
        }
        ConfigType::Int | ConfigType::Short | ConfigType::Long | ConfigType::Double => {
            let number = parse_number(config_type, name, value)?;
            match validator {
                Validator::Range { min, max } => {
                    if let Some(min) = min.filter(|m| number < *m) {
                        return Err(invalid(
                            value,
                            name,
                            format!("Value must be at least {}", fmt_bound(min)),
                        ));
                    }
                    if let Some(max) = max.filter(|m| number > *m) {
                        return Err(invalid(
                            value,
                            name,
                            format!("Value must be no more than {}", fmt_bound(max)),
                        ));
                    }
                }
                Validator::MinusOneOrRange { min, max }
                    if number != -1.0 && (number < min as f64 || number > max as f64) =>
                {
                    return Err(invalid(
                        value,
                        name,
                        format!("Value must be -1 or in the range [{min}, {max}]"),
                    ));
                }
                _ => {}
            }
        }
        ConfigType::String | ConfigType::Class | ConfigType::Password => {
            if let Validator::OneOf(allowed) = validator {
                if !allowed.contains(&value.trim()) {
                    return Err(invalid(
                        value,
                        name,
                        format!("String must be one of: {}", allowed.join(", ")),
                    ));
                }
            }
        }
        ConfigType::List => match validator {
            Validator::ListOf(allowed) => {
                for item in parse_list(value) {
                    if !allowed.contains(&item.as_str()) {
                        return Err(invalid(
                            value,
                            name,
                            format!("String must be one of: {}", allowed.join(", ")),
                        ));
                    }
                }
            }
            Validator::ThrottledReplicas => {
                let items = parse_list(value);
                let ok = (items.len() == 1 && items[0] == "*")
                    || items.iter().all(|item| {
                        item.split_once(':').is_some_and(|(p, b)| {
                            p.trim().parse::<i32>().is_ok() && b.trim().parse::<i32>().is_ok()
                        })
                    });
                if !ok {
                    return Err(invalid(
                        value,
                        name,
                        "must be the literal '*' or a list of replicas in the following format: \
                         [partitionId]:[brokerId],[partitionId]:[brokerId],...",
                    ));
                }
            }
            _ => {}
        },
    }
    Ok(())
}

fn fmt_bound(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Validates a topic config given by name; unknown names are refused as Kafka does.
pub fn validate_topic_config(name: &str, value: &str) -> Result<(), MetadataError> {
    let def = topic_config_def(name).ok_or_else(|| {
        MetadataError::InvalidConfig(format!("Unknown topic config name: {name}"))
    })?;
    validate_value(def, value)
}

/// Validates a dynamic broker config. Broker configs that stand for a topic config are checked
/// against its type (and range when in the same unit); others are accepted as given.
pub fn validate_broker_config(name: &str, value: &str) -> Result<(), MetadataError> {
    if let Some((def, synonym)) = topic_config_for_broker_synonym(name) {
        let validator = if synonym.factor == 1 {
            def.validator
        } else {
            Validator::None
        };
        validate_typed(name, def.config_type, validator, value)?;
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSynonym {
    pub name: String,
    pub value: String,
    pub source: ConfigSource,
}

/// A topic config as DescribeConfigs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedConfig {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigSource,
    pub read_only: bool,
    pub sensitive: bool,
    pub is_default: bool,
    /// Kafka's order: the topic override, then for each broker synonym its dynamic per-broker,
    /// dynamic cluster-default and static values and its default, then the topic default.
    pub synonyms: Vec<ConfigSynonym>,
    pub config_type: ConfigType,
}

/// Converts a broker synonym value into the topic config's unit.
fn convert(synonym: &BrokerSynonym, value: &str) -> String {
    if synonym.factor == 1 {
        return value.trim().to_string();
    }
    match value.trim().parse::<i64>() {
        Ok(v) => v.saturating_mul(synonym.factor).to_string(),
        Err(_) => value.trim().to_string(),
    }
}

/// Every topic config of `topic` with its effective value and source. Dynamic per-broker
/// configs are not consulted; see [`resolve_topic_config_for_broker`].
pub fn resolve_topic_config(
    image: &MetadataImage,
    topic: &str,
    static_broker_props: &HashMap<String, String>,
) -> Vec<ResolvedConfig> {
    resolve_topic_config_for_broker(image, topic, None, static_broker_props)
}

/// As [`resolve_topic_config`], also consulting the dynamic configs of broker `broker_id`.
pub fn resolve_topic_config_for_broker(
    image: &MetadataImage,
    topic: &str,
    broker_id: Option<i32>,
    static_broker_props: &HashMap<String, String>,
) -> Vec<ResolvedConfig> {
    let topic_overrides = image.topic_configs(topic);
    let empty = BTreeMap::new();
    let broker_dynamic = broker_id.map_or(&empty, |id| image.broker_configs(id));
    let cluster_default = image.cluster_default_broker_configs();
    TOPIC_CONFIGS
        .iter()
        .map(|def| {
            resolve_one(
                def,
                topic_overrides,
                broker_dynamic,
                cluster_default,
                static_broker_props,
            )
        })
        .collect()
}

fn resolve_one(
    def: &TopicConfigDef,
    topic_overrides: &BTreeMap<String, String>,
    broker_dynamic: &BTreeMap<String, String>,
    cluster_default: &BTreeMap<String, String>,
    static_broker_props: &HashMap<String, String>,
) -> ResolvedConfig {
    let lookup = |synonym: &BrokerSynonym, source: ConfigSource| -> Option<String> {
        match source {
            ConfigSource::DynamicBrokerConfig => broker_dynamic.get(synonym.name).cloned(),
            ConfigSource::DynamicDefaultBrokerConfig => cluster_default.get(synonym.name).cloned(),
            ConfigSource::StaticBrokerConfig => static_broker_props.get(synonym.name).cloned(),
            ConfigSource::DefaultConfig => synonym.default.map(str::to_string),
            ConfigSource::DynamicTopicConfig | ConfigSource::DynamicGroupConfig => None,
        }
    };
    const BROKER_SOURCES: [ConfigSource; 4] = [
        ConfigSource::DynamicBrokerConfig,
        ConfigSource::DynamicDefaultBrokerConfig,
        ConfigSource::StaticBrokerConfig,
        ConfigSource::DefaultConfig,
    ];
    // The value in force: the topic's own, else the first broker synonym (in Kafka's order of
    // precedence, log.retention.ms before .minutes before .hours) that has a value in any
    // source, the most dynamic source first.
    let effective = topic_overrides
        .get(def.name)
        .map(|v| (v.clone(), ConfigSource::DynamicTopicConfig))
        .or_else(|| {
            def.synonyms.iter().find_map(|synonym| {
                BROKER_SOURCES.iter().find_map(|&source| {
                    lookup(synonym, source).map(|v| (convert(synonym, &v), source))
                })
            })
        });
    // What Kafka lists: the topic's own value, then the broker synonyms grouped by source
    // (every synonym's per-broker value, then the cluster defaults, the static values, the
    // defaults), less those before the first entry of the topic config's main broker key. So
    // a config whose main key has no value anywhere (log.retention.ms has no default) lists
    // no broker synonym at all, and is then reported as DEFAULT_CONFIG.
    let mut synonyms = Vec::new();
    if let Some(v) = topic_overrides.get(def.name) {
        synonyms.push(ConfigSynonym {
            name: def.name.to_string(),
            value: v.clone(),
            source: ConfigSource::DynamicTopicConfig,
        });
    }
    let chain: Vec<ConfigSynonym> = BROKER_SOURCES
        .iter()
        .flat_map(|&source| {
            def.synonyms.iter().filter_map(move |synonym| {
                lookup(synonym, source).map(|value| ConfigSynonym {
                    name: synonym.name.to_string(),
                    value,
                    source,
                })
            })
        })
        .collect();
    if let Some(main) = def.synonyms.first() {
        synonyms.extend(chain.into_iter().skip_while(|s| s.name != main.name));
    }
    let source = synonyms
        .first()
        .map_or(ConfigSource::DefaultConfig, |s| s.source);
    let value = effective.map_or_else(|| def.default.to_string(), |(v, _)| v);
    ResolvedConfig {
        name: def.name.to_string(),
        value: Some(value),
        source,
        read_only: false,
        sensitive: def.sensitive,
        is_default: source == ConfigSource::DefaultConfig,
        synonyms,
        config_type: def.config_type,
    }
}

/// The effective value of one topic config on broker `broker_id` (topic override, then the
/// broker synonyms: that broker's dynamic values, the cluster defaults, the static values,
/// the defaults), for code that needs a single value such as `min.insync.replicas`.
pub fn effective_topic_config(
    image: &MetadataImage,
    topic: &str,
    name: &str,
    broker_id: Option<i32>,
    static_broker_props: &HashMap<String, String>,
) -> Option<String> {
    let def = topic_config_def(name)?;
    let empty = BTreeMap::new();
    resolve_one(
        def,
        image.topic_configs(topic),
        broker_id.map_or(&empty, |id| image.broker_configs(id)),
        image.cluster_default_broker_configs(),
        static_broker_props,
    )
    .value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{ConfigResource, MetadataRecord};

    #[test]
    fn names_are_sorted_and_unique() {
        for pair in TOPIC_CONFIGS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} !< {}",
                pair[0].name,
                pair[1].name
            );
        }
    }

    #[test]
    fn defaults_validate() {
        for def in TOPIC_CONFIGS {
            validate_value(def, def.default).unwrap();
        }
    }

    #[test]
    fn kafka4_limits() {
        let err = validate_topic_config("segment.bytes", "1000").unwrap_err();
        assert_eq!(
            err,
            MetadataError::InvalidConfig(
                "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"
                    .into()
            )
        );
        validate_topic_config("segment.bytes", "1048576").unwrap();
        assert!(validate_topic_config("retention.ms", "abc").is_err());
        assert!(validate_topic_config("retention.ms", "-2").is_err());
        validate_topic_config("retention.ms", "-1").unwrap();
        assert!(validate_topic_config("cleanup.policy", "compact,bogus").is_err());
        validate_topic_config("cleanup.policy", "compact, delete").unwrap();
        assert!(validate_topic_config("compression.type", "brotli").is_err());
        assert!(validate_topic_config("min.cleanable.dirty.ratio", "1.5").is_err());
        assert!(validate_topic_config("preallocate", "yes").is_err());
        validate_topic_config("compression.gzip.level", "-1").unwrap();
        assert!(validate_topic_config("compression.gzip.level", "0").is_err());
        validate_topic_config("leader.replication.throttled.replicas", "0:1,1:2").unwrap();
        validate_topic_config("leader.replication.throttled.replicas", "*").unwrap();
        assert!(validate_topic_config("leader.replication.throttled.replicas", "x").is_err());
        assert!(matches!(
            validate_topic_config("no.such.config", "1"),
            Err(MetadataError::InvalidConfig(_))
        ));
    }

    fn find<'a>(all: &'a [ResolvedConfig], name: &str) -> &'a ResolvedConfig {
        all.iter().find(|c| c.name == name).unwrap()
    }

    #[test]
    fn resolution_sources_and_synonyms() {
        let image = MetadataImage::empty("c").apply_entry(
            &[
                MetadataRecord::Config {
                    resource: ConfigResource::Topic("t".into()),
                    name: "max.message.bytes".into(),
                    value: Some("2000".into()),
                },
                MetadataRecord::Config {
                    resource: ConfigResource::ClusterDefaultBroker,
                    name: "log.segment.bytes".into(),
                    value: Some("2097152".into()),
                },
            ],
            0,
        );
        let mut props = HashMap::new();
        props.insert("log.retention.hours".to_string(), "24".to_string());
        let all = resolve_topic_config(&image, "t", &props);
        assert_eq!(all.len(), TOPIC_CONFIGS.len());

        let mmb = find(&all, "max.message.bytes");
        assert_eq!(mmb.value.as_deref(), Some("2000"));
        assert_eq!(mmb.source, ConfigSource::DynamicTopicConfig);
        assert_eq!(mmb.synonyms[0].source, ConfigSource::DynamicTopicConfig);
        assert_eq!(mmb.synonyms[1].name, "message.max.bytes");

        let seg = find(&all, "segment.bytes");
        assert_eq!(seg.value.as_deref(), Some("2097152"));
        assert_eq!(seg.source, ConfigSource::DynamicDefaultBrokerConfig);

        // As Kafka 4.4 answers with log.retention.hours=24 in server.properties: the value is
        // in force, but log.retention.ms has no value anywhere, so no synonym is listed and
        // the source is DEFAULT_CONFIG.
        let retention = find(&all, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("86400000"));
        assert_eq!(retention.source, ConfigSource::DefaultConfig);
        assert!(retention.synonyms.is_empty(), "{:?}", retention.synonyms);

        let other = resolve_topic_config(&image, "other", &HashMap::new());
        let retention = find(&other, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("604800000"));
        assert_eq!(retention.source, ConfigSource::DefaultConfig);
        assert_eq!(
            find(&other, "max.message.bytes").value.as_deref(),
            Some("1048588")
        );
        assert_eq!(
            find(&other, "message.timestamp.after.max.ms")
                .value
                .as_deref(),
            Some("3600000")
        );
        assert_eq!(
            effective_topic_config(&image, "t", "max.message.bytes", None, &HashMap::new())
                .as_deref(),
            Some("2000")
        );
    }

    #[test]
    fn per_broker_dynamic_config_wins_over_cluster_default() {
        // Kafka 4.4's answer for this state, measured: log.retention.ms set for the cluster
        // and for broker 3, log.retention.hours=24 in server.properties.
        let image = MetadataImage::empty("c").apply_entry(
            &[
                MetadataRecord::Config {
                    resource: ConfigResource::ClusterDefaultBroker,
                    name: "log.retention.ms".into(),
                    value: Some("600000".into()),
                },
                MetadataRecord::Config {
                    resource: ConfigResource::Broker(3),
                    name: "log.retention.ms".into(),
                    value: Some("7200000".into()),
                },
            ],
            0,
        );
        let mut props = HashMap::new();
        props.insert("log.retention.hours".to_string(), "24".to_string());
        let on_3 = resolve_topic_config_for_broker(&image, "t", Some(3), &props);
        let retention = find(&on_3, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("7200000"));
        assert_eq!(retention.source, ConfigSource::DynamicBrokerConfig);
        assert_eq!(
            retention
                .synonyms
                .iter()
                .map(|s| (s.name.as_str(), s.value.as_str(), s.source))
                .collect::<Vec<_>>(),
            vec![
                (
                    "log.retention.ms",
                    "7200000",
                    ConfigSource::DynamicBrokerConfig
                ),
                (
                    "log.retention.ms",
                    "600000",
                    ConfigSource::DynamicDefaultBrokerConfig
                ),
                (
                    "log.retention.hours",
                    "24",
                    ConfigSource::StaticBrokerConfig
                ),
                ("log.retention.hours", "168", ConfigSource::DefaultConfig),
            ]
        );
        // Another broker sees the cluster default.
        let on_1 = resolve_topic_config_for_broker(&image, "t", Some(1), &props);
        assert_eq!(find(&on_1, "retention.ms").value.as_deref(), Some("600000"));
    }
}
