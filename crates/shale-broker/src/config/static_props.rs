//! The explicitly set static properties (file, `KAFKA_*` environment, overrides), with
//! where each came from, before typing.

use std::collections::BTreeMap;

use super::error::ConfigError;
use super::properties::parse_properties;

/// Where a static value came from; DescribeConfigs reports it as `STATIC_BROKER_CONFIG`
/// whatever the layer, as Kafka does for server.properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueOrigin {
    File,
    Environment,
    Override,
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
}
