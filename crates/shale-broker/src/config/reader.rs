//! Reading typed values of the static properties, with Kafka's defaults from the key table.

use super::defs;
use super::error::ConfigError;
use super::static_props::StaticProperties;

pub(super) struct Reader<'a> {
    pub(super) props: &'a StaticProperties,
}

impl Reader<'_> {
    pub(super) fn raw(&self, key: &str) -> Option<String> {
        self.props
            .get(key)
            .map(str::to_string)
            .or_else(|| defs::find(key).and_then(|d| d.default.map(str::to_string)))
    }

    pub(super) fn long(&self, key: &str) -> Result<i64, ConfigError> {
        let value = self.raw(key).unwrap_or_default();
        value
            .trim()
            .parse::<i64>()
            .map_err(|_| invalid(key, &value, "expected a whole number"))
    }

    pub(super) fn int(&self, key: &str) -> Result<i32, ConfigError> {
        let v = self.long(key)?;
        i32::try_from(v).map_err(|_| invalid(key, &v.to_string(), "out of range for an int"))
    }

    pub(super) fn short(&self, key: &str) -> Result<i16, ConfigError> {
        let v = self.long(key)?;
        i16::try_from(v).map_err(|_| invalid(key, &v.to_string(), "out of range for a short"))
    }

    pub(super) fn boolean(&self, key: &str) -> Result<bool, ConfigError> {
        let value = self.raw(key).unwrap_or_default();
        parse_bool(&value).ok_or_else(|| invalid(key, &value, "expected true or false"))
    }

    pub(super) fn list(&self, key: &str) -> Vec<String> {
        split_list(&self.raw(key).unwrap_or_default())
    }
}

pub(crate) fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

pub(super) fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

pub(super) fn invalid(key: &str, value: &str, reason: &str) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}
