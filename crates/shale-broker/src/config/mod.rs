//! Broker configuration: Kafka's property names, read from a properties file, the environment
//! (Apache Kafka container style, `KAFKA_LOG_DIRS` -> `log.dirs`) and `--override key=value`,
//! in that order of precedence (later wins).

pub mod defs;
pub mod kafka_keys;
mod properties;
mod security;
mod storage;
mod typed;

use std::collections::BTreeMap;

pub use defs::{BrokerConfigDef, ConfigKind, BROKER_CONFIGS};
pub use properties::parse_properties;
pub use storage::{format_storage, random_cluster_id, storage_dirs};
pub use typed::{BrokerConfig, Listener, ProcessRole, QuorumRole, QuorumVoter};

/// Where a static value came from; DescribeConfigs reports it as `STATIC_BROKER_CONFIG`
/// whatever the layer, as Kafka does for server.properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueOrigin {
    File,
    Environment,
    Override,
}

/// A configuration problem that stops start-up; the message names the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid value {value:?} for configuration {key}: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    #[error("cannot read configuration file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("malformed override {0:?}: expected key=value")]
    MalformedOverride(String),
    #[error(
        "listener {listener} in {key} uses security protocol {protocol} \
         (listener.security.protocol.map), which Shale does not implement yet; it serves only \
         PLAINTEXT listeners and will not serve this one weaker than configured"
    )]
    UnservedSecurityProtocol {
        key: String,
        listener: String,
        protocol: String,
    },
    #[error(
        "listener {listener} in {key} maps to unknown security protocol {protocol} \
         (listener.security.protocol.map); Kafka's are PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
    )]
    UnknownSecurityProtocol {
        key: String,
        listener: String,
        protocol: String,
    },
    #[error("configuration {key} is not honoured: {reason}")]
    UnservedSecurityKey { key: String, reason: String },
}

/// The explicitly set static properties, with their origin, before typing.
#[derive(Clone, Debug, Default)]
pub struct StaticProperties {
    values: BTreeMap<String, (String, ValueOrigin)>,
}

/// Environment variables of the Apache Kafka image that are not broker properties.
const NON_PROPERTY_ENV: &[&str] = &[
    "KAFKA_HEAP_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS",
    "KAFKA_GC_LOG_OPTS",
    "KAFKA_LOG4J_OPTS",
    "KAFKA_JMX_OPTS",
    "KAFKA_OPTS",
    "KAFKA_DEBUG",
    "KAFKA_LOG4J_ROOT_LOGLEVEL",
    "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL",
    "KAFKA_HOME",
    "KAFKA_VERSION",
];

/// Maps an image-style variable name to a property name: `_` -> `.`, `__` -> `_`, `___` -> `-`.
pub fn env_var_to_property(var: &str) -> Option<String> {
    let rest = var.strip_prefix("KAFKA_")?;
    if rest.is_empty() || NON_PROPERTY_ENV.contains(&var) {
        return None;
    }
    let mut out = String::with_capacity(rest.len());
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '_' {
            let mut run = 0;
            while i + run < chars.len() && chars[i + run] == '_' {
                run += 1;
            }
            match run {
                1 => out.push('.'),
                2 => out.push('_'),
                3 => out.push('-'),
                _ => {
                    for _ in 0..run {
                        out.push('.');
                    }
                }
            }
            i += run;
        } else {
            out.extend(chars[i].to_lowercase());
            i += 1;
        }
    }
    Some(out)
}

impl StaticProperties {
    pub fn set(&mut self, key: &str, value: &str, origin: ValueOrigin) {
        self.values
            .insert(key.trim().to_string(), (value.trim().to_string(), origin));
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(|(v, _)| v.as_str())
    }

    pub fn origin(&self, key: &str) -> Option<ValueOrigin> {
        self.values.get(key).map(|(_, o)| *o)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values
            .iter()
            .map(|(k, (v, _))| (k.as_str(), v.as_str()))
    }

    /// Layers a properties file, then `KAFKA_*` variables, then overrides.
    pub fn load(
        file: Option<&std::path::Path>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: &[String],
    ) -> Result<StaticProperties, ConfigError> {
        let mut props = StaticProperties::default();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.display().to_string(),
                source,
            })?;
            for (k, v) in parse_properties(&text) {
                props.set(&k, &v, ValueOrigin::File);
            }
        }
        for (var, value) in env {
            if let Some(key) = env_var_to_property(&var) {
                props.set(&key, &value, ValueOrigin::Environment);
            }
        }
        for item in overrides {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| ConfigError::MalformedOverride(item.clone()))?;
            props.set(k, v, ValueOrigin::Override);
        }
        Ok(props)
    }

    /// Keys Kafka would not recognise; the binary warns about each.
    pub fn unknown_keys(&self) -> Vec<String> {
        self.values
            .keys()
            .filter(|k| defs::find(k).is_none() && !security::is_checked_key(k))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_follow_the_kafka_image() {
        assert_eq!(
            env_var_to_property("KAFKA_LOG_DIRS").as_deref(),
            Some("log.dirs")
        );
        assert_eq!(
            env_var_to_property("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP").as_deref(),
            Some("listener.security.protocol.map")
        );
        assert_eq!(
            env_var_to_property("KAFKA_FOO__BAR___BAZ").as_deref(),
            Some("foo_bar-baz")
        );
        assert_eq!(env_var_to_property("KAFKA_HEAP_OPTS"), None);
        assert_eq!(env_var_to_property("PATH"), None);
    }

    #[test]
    fn overrides_beat_environment_beat_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.properties");
        std::fs::write(&path, "num.partitions=2\nlog.dirs=/a\nnode.id=5\n").unwrap();
        let env = vec![
            ("KAFKA_LOG_DIRS".to_string(), "/b".to_string()),
            ("KAFKA_NUM_PARTITIONS".to_string(), "3".to_string()),
        ];
        let props =
            StaticProperties::load(Some(&path), env, &["num.partitions=4".to_string()]).unwrap();
        assert_eq!(props.get("num.partitions"), Some("4"));
        assert_eq!(props.get("log.dirs"), Some("/b"));
        assert_eq!(props.get("node.id"), Some("5"));
        assert_eq!(props.origin("node.id"), Some(ValueOrigin::File));
    }

    #[test]
    fn malformed_override_is_refused() {
        let err = StaticProperties::load(None, Vec::new(), &["novalue".to_string()]).unwrap_err();
        assert!(err.to_string().contains("novalue"));
    }

    #[test]
    fn unknown_keys_are_reported() {
        let mut props = StaticProperties::default();
        props.set("num.partitions", "1", ValueOrigin::File);
        props.set("no.such.key", "1", ValueOrigin::File);
        assert_eq!(props.unknown_keys(), vec!["no.such.key".to_string()]);
    }
}
