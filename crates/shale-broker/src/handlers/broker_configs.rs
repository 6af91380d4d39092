//! Broker configs as Kafka answers for them: DescribeConfigs of one broker or of the cluster
//! defaults (values, sources, synonym chains, read-only flags), and the check every
//! AlterConfigs / IncrementalAlterConfigs of a broker resource passes before it reaches the
//! controller.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;
use shale_metadata::config_defs::{
    topic_config_for_broker_synonym, validate_broker_config, ConfigSource,
};
use shale_metadata::MetadataImage;

use crate::config::kafka_keys::{is_kafka_broker_key, is_kafka_dynamic_key};
use crate::config::{defs, BrokerConfigDef, ConfigKind, StaticProperties, BROKER_CONFIGS};

/// DescribeConfigs' `config_type` for a key Kafka has no definition of (a custom key).
const CONFIG_TYPE_UNKNOWN: i8 = 0;

/// One broker config as DescribeConfigs reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BrokerConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigSource,
    pub read_only: bool,
    pub sensitive: bool,
    pub config_type: i8,
    /// `(name, value, source)`, in Kafka's order.
    pub synonyms: Vec<(String, Option<String>, ConfigSource)>,
}

/// Where a broker's configs come from, most specific first.
pub(crate) struct BrokerConfigSources<'a> {
    /// This broker's dynamic configs (empty when describing the cluster defaults).
    pub per_broker: &'a BTreeMap<String, String>,
    pub cluster_default: &'a BTreeMap<String, String>,
    pub static_props: &'a StaticProperties,
}

impl BrokerConfigSources<'_> {
    fn value(&self, key: &str, source: ConfigSource) -> Option<Option<String>> {
        match source {
            ConfigSource::DynamicBrokerConfig => self.per_broker.get(key).cloned().map(Some),
            ConfigSource::DynamicDefaultBrokerConfig => {
                self.cluster_default.get(key).cloned().map(Some)
            }
            ConfigSource::StaticBrokerConfig => {
                self.static_props.get(key).map(|v| Some(v.to_string()))
            }
            // Kafka lists a default only when there is one.
            ConfigSource::DefaultConfig => defs::find(key)
                .and_then(|d| d.default)
                .map(|v| Some(v.to_string())),
            ConfigSource::DynamicTopicConfig | ConfigSource::DynamicGroupConfig => None,
        }
    }
}

const BROKER_SOURCES: [ConfigSource; 4] = [
    ConfigSource::DynamicBrokerConfig,
    ConfigSource::DynamicDefaultBrokerConfig,
    ConfigSource::StaticBrokerConfig,
    ConfigSource::DefaultConfig,
];

/// The broker keys that stand for the same setting as `key`, in precedence order
/// (`log.retention.ms`, `.minutes`, `.hours`), as Kafka lists them as synonyms.
fn synonym_names(key: &str) -> Vec<&str> {
    match topic_config_for_broker_synonym(key) {
        Some((topic_def, _)) => topic_def.synonyms.iter().map(|s| s.name).collect(),
        None => vec![key],
    }
}

fn is_sensitive(def: &BrokerConfigDef) -> bool {
    def.kind == ConfigKind::Password
}

/// A key of Shale's table: its own value in force, and the chain Kafka shows: every synonym's
/// values grouped by source (per broker, cluster default, static, default), less those before
/// the key's own first entry.
fn known_entry(def: &BrokerConfigDef, sources: &BrokerConfigSources<'_>) -> BrokerConfigEntry {
    let sensitive = is_sensitive(def);
    let names = synonym_names(def.name);
    let chain: Vec<(String, Option<String>, ConfigSource)> = BROKER_SOURCES
        .iter()
        .flat_map(|&source| {
            names.iter().filter_map(move |name| {
                sources
                    .value(name, source)
                    .map(|v| (name.to_string(), if sensitive { None } else { v }, source))
            })
        })
        .skip_while(|(name, _, _)| name != def.name)
        .collect();
    let (value, source) = chain
        .first()
        .map_or((None, ConfigSource::DefaultConfig), |(_, v, s)| {
            (v.clone(), *s)
        });
    BrokerConfigEntry {
        name: def.name.to_string(),
        value,
        source,
        read_only: !defs::is_dynamic(def.name),
        sensitive,
        config_type: def.kind.describe_code(),
        synonyms: chain,
    }
}

/// A key Kafka does not know, kept as Kafka keeps it: listed with no value, as sensitive and
/// read-only, of unknown type.
fn custom_entry(key: &str, sources: &BrokerConfigSources<'_>) -> BrokerConfigEntry {
    let synonyms: Vec<_> = [
        ConfigSource::DynamicBrokerConfig,
        ConfigSource::DynamicDefaultBrokerConfig,
    ]
    .into_iter()
    .filter(|&source| sources.value(key, source).is_some())
    .map(|source| (key.to_string(), None, source))
    .collect();
    let source = synonyms
        .first()
        .map_or(ConfigSource::DynamicDefaultBrokerConfig, |s| s.2);
    BrokerConfigEntry {
        name: key.to_string(),
        value: None,
        source,
        read_only: true,
        sensitive: true,
        config_type: CONFIG_TYPE_UNKNOWN,
        synonyms,
    }
}

/// Every config of one broker: Shale's keys, then the custom keys set for it or the cluster.
pub(crate) fn describe_broker(sources: &BrokerConfigSources<'_>) -> Vec<BrokerConfigEntry> {
    let mut out: Vec<BrokerConfigEntry> = BROKER_CONFIGS
        .iter()
        .map(|def| known_entry(def, sources))
        .collect();
    let mut custom: Vec<&String> = sources
        .per_broker
        .keys()
        .chain(sources.cluster_default.keys())
        .filter(|k| defs::find(k).is_none())
        .collect();
    custom.sort();
    custom.dedup();
    out.extend(custom.into_iter().map(|k| custom_entry(k, sources)));
    out
}

/// The cluster-wide defaults (broker resource ""): only the keys set there, each with itself
/// as its one synonym.
pub(crate) fn describe_cluster_default(image: &MetadataImage) -> Vec<BrokerConfigEntry> {
    let empty = BTreeMap::new();
    let static_props = StaticProperties::default();
    let sources = BrokerConfigSources {
        per_broker: &empty,
        cluster_default: image.cluster_default_broker_configs(),
        static_props: &static_props,
    };
    image
        .cluster_default_broker_configs()
        .iter()
        .map(|(key, value)| match defs::find(key) {
            Some(def) => {
                let sensitive = is_sensitive(def);
                let value = (!sensitive).then(|| value.clone());
                BrokerConfigEntry {
                    name: key.clone(),
                    value: value.clone(),
                    source: ConfigSource::DynamicDefaultBrokerConfig,
                    read_only: !defs::is_dynamic(key),
                    sensitive,
                    config_type: def.kind.describe_code(),
                    synonyms: vec![(key.clone(), value, ConfigSource::DynamicDefaultBrokerConfig)],
                }
            }
            None => custom_entry(key, &sources),
        })
        .collect()
}

/// A broker config change Kafka would refuse, or Shale could not apply: INVALID_REQUEST with
/// Kafka's message where Kafka refuses it too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AlterRefusal {
    pub code: i16,
    pub message: String,
}

fn refusal(message: String) -> AlterRefusal {
    AlterRefusal {
        code: ResponseError::InvalidRequest.code(),
        message,
    }
}

/// Checks a change of broker configs: `changes` are `(key, new value)`, `None` for a removal.
/// Kafka keys it never updates at runtime are refused with its message; keys Kafka updates
/// but Shale would not act on are refused naming them; values are checked against the key's
/// type and range with Kafka's messages. Custom keys (unknown to Kafka) pass, as in Kafka.
pub(crate) fn check_alter(changes: &[(String, Option<String>)]) -> Result<(), AlterRefusal> {
    let static_only: Vec<&str> = changes
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| is_kafka_broker_key(k) && !is_kafka_dynamic_key(k))
        .collect();
    if !static_only.is_empty() {
        return Err(refusal(format!(
            "Cannot update these configs dynamically: [{}]",
            static_only.join(", ")
        )));
    }
    let unapplied: Vec<&str> = changes
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| is_kafka_dynamic_key(k) && !defs::is_dynamic(k))
        .collect();
    if !unapplied.is_empty() {
        return Err(refusal(format!(
            "Shale does not apply these configs at runtime, so it does not update them \
             dynamically: [{}]",
            unapplied.join(", ")
        )));
    }
    for (key, value) in changes {
        let (Some(def), Some(value)) = (defs::find(key), value) else {
            continue;
        };
        check_value(def, value).map_err(refusal)?;
        validate_broker_config(key, value).map_err(|e| refusal(e.to_string()))?;
    }
    Ok(())
}

/// Kafka's type and lower-bound check, with its messages.
fn check_value(def: &BrokerConfigDef, value: &str) -> Result<(), String> {
    let invalid = |why: String| {
        format!(
            "Invalid value {value} for configuration {}: {why}",
            def.name
        )
    };
    let trimmed = value.trim();
    let number: Option<i64> = match def.kind {
        ConfigKind::Boolean => {
            if !trimmed.eq_ignore_ascii_case("true") && !trimmed.eq_ignore_ascii_case("false") {
                return Err(invalid(
                    "Expected value to be either true or false".to_string(),
                ));
            }
            None
        }
        ConfigKind::Int => Some(
            trimmed
                .parse::<i32>()
                .map(i64::from)
                .map_err(|_| invalid("Not a number of type INT".to_string()))?,
        ),
        ConfigKind::Short => Some(
            trimmed
                .parse::<i16>()
                .map(i64::from)
                .map_err(|_| invalid("Not a number of type SHORT".to_string()))?,
        ),
        ConfigKind::Long => Some(
            trimmed
                .parse::<i64>()
                .map_err(|_| invalid("Not a number of type LONG".to_string()))?,
        ),
        ConfigKind::Double => {
            trimmed
                .parse::<f64>()
                .map_err(|_| invalid("Not a number of type DOUBLE".to_string()))?;
            None
        }
        ConfigKind::String | ConfigKind::List | ConfigKind::Password | ConfigKind::Class => None,
    };
    if let (Some(n), Some(min)) = (number, def.min) {
        if n < min {
            return Err(invalid(format!("Value must be at least {min}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ValueOrigin;

    fn set(key: &str, value: &str) -> Vec<(String, Option<String>)> {
        vec![(key.to_string(), Some(value.to_string()))]
    }

    fn refused(changes: Vec<(String, Option<String>)>) -> AlterRefusal {
        check_alter(&changes).unwrap_err()
    }

    #[test]
    fn static_keys_are_refused_with_kafkas_message() {
        for key in ["log.dirs", "node.id", "log.retention.hours"] {
            let r = refused(set(key, "1"));
            assert_eq!(r.code, 42);
            assert_eq!(
                r.message,
                format!("Cannot update these configs dynamically: [{key}]")
            );
        }
        // A removal is a change too.
        assert_eq!(refused(vec![("log.dirs".into(), None)]).code, 42);
    }

    #[test]
    fn values_are_checked_with_kafkas_messages() {
        assert_eq!(
            refused(set("log.retention.ms", "abc")).message,
            "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"
        );
        assert_eq!(
            refused(set("log.segment.bytes", "100")).message,
            "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576"
        );
        assert_eq!(
            refused(set("message.max.bytes", "-5")).message,
            "Invalid value -5 for configuration message.max.bytes: Value must be at least 0"
        );
        assert_eq!(refused(set("log.cleanup.policy", "bogus")).code, 42);
        check_alter(&set("log.retention.ms", "123456789")).unwrap();
        check_alter(&set("log.cleanup.policy", "compact,delete")).unwrap();
    }

    #[test]
    fn kafka_dynamic_keys_shale_does_not_apply_are_refused_by_name() {
        for key in [
            "num.io.threads",
            "ssl.cipher.suites",
            "max.connections",
            "listeners",
        ] {
            let r = refused(set(key, "1"));
            assert_eq!(r.code, 42);
            assert!(r.message.contains(key), "{}", r.message);
        }
    }

    #[test]
    fn custom_keys_pass_as_in_kafka() {
        check_alter(&set("my.custom.key", "1")).unwrap();
    }

    #[test]
    fn synonym_chains_follow_kafka() {
        let mut per_broker = BTreeMap::new();
        per_broker.insert("log.retention.ms".to_string(), "987654321".to_string());
        per_broker.insert("my.custom.key".to_string(), "1".to_string());
        let mut cluster_default = BTreeMap::new();
        cluster_default.insert("log.retention.ms".to_string(), "123456789".to_string());
        let mut static_props = StaticProperties::default();
        static_props.set("log.dirs", "/data", ValueOrigin::File);
        let sources = BrokerConfigSources {
            per_broker: &per_broker,
            cluster_default: &cluster_default,
            static_props: &static_props,
        };
        let all = describe_broker(&sources);
        let find = |name: &str| all.iter().find(|e| e.name == name).unwrap();
        let retention = find("log.retention.ms");
        assert_eq!(retention.value.as_deref(), Some("987654321"));
        assert_eq!(retention.source, ConfigSource::DynamicBrokerConfig);
        assert!(!retention.read_only);
        let chain: Vec<_> = retention
            .synonyms
            .iter()
            .map(|(n, v, s)| (n.as_str(), v.as_deref(), *s))
            .collect();
        assert_eq!(
            chain,
            vec![
                (
                    "log.retention.ms",
                    Some("987654321"),
                    ConfigSource::DynamicBrokerConfig
                ),
                (
                    "log.retention.ms",
                    Some("123456789"),
                    ConfigSource::DynamicDefaultBrokerConfig
                ),
                (
                    "log.retention.hours",
                    Some("168"),
                    ConfigSource::DefaultConfig
                ),
            ]
        );
        // No value anywhere: null, DEFAULT_CONFIG, no synonyms.
        let minutes = find("log.retention.minutes");
        assert_eq!(minutes.value, None);
        assert_eq!(minutes.source, ConfigSource::DefaultConfig);
        assert!(minutes.synonyms.is_empty());
        assert!(minutes.read_only);
        // A static key without a default lists only its static value.
        let dirs = find("log.dirs");
        assert_eq!(dirs.value.as_deref(), Some("/data"));
        assert_eq!(dirs.source, ConfigSource::StaticBrokerConfig);
        assert_eq!(dirs.synonyms.len(), 1);
        assert!(dirs.read_only);
        // A custom key: no value, sensitive, read-only, of unknown type.
        let custom = find("my.custom.key");
        assert_eq!(custom.value, None);
        assert!(custom.sensitive && custom.read_only);
        assert_eq!(custom.config_type, CONFIG_TYPE_UNKNOWN);
        assert_eq!(custom.source, ConfigSource::DynamicBrokerConfig);
    }
}
