//! Kafka 4.4's group configs (the GROUP config resource of KIP-848 and KIP-932, Kafka's
//! GroupConfig): names, types, defaults, the broker keys a group inherits its values from, and
//! the checks Kafka's controller makes before a group's configs change (GroupConfig.validate,
//! against the broker's `group.consumer.*` and `group.share.*` bounds).
//!
//! Shale acts on the consumer group's session timeout and heartbeat interval and on the share
//! group keys of KIP-932 (`share.*` below, but for the assignment interval and the assignor
//! offload). Every other key Kafka defines is described with Kafka's default (so a describe
//! reads as Kafka's) but a value for it is refused with INVALID_CONFIG naming the key: storing
//! it would pretend to honour a streams-group or dead-letter-queue setting Shale does not serve.

use std::collections::BTreeMap;

use crate::config_defs::{validate_typed, ConfigType, Validator};
use crate::error::MetadataError;

mod share_offset_reset;
mod share_overrides;

pub use share_offset_reset::ShareAutoOffsetReset;
pub use share_overrides::{share_group_overrides, ShareGroupOverrides, ShareIsolationLevel};

pub const CONSUMER_SESSION_TIMEOUT_MS: &str = "consumer.session.timeout.ms";
pub const CONSUMER_HEARTBEAT_INTERVAL_MS: &str = "consumer.heartbeat.interval.ms";
pub const SHARE_SESSION_TIMEOUT_MS: &str = "share.session.timeout.ms";
pub const SHARE_HEARTBEAT_INTERVAL_MS: &str = "share.heartbeat.interval.ms";
pub const SHARE_RECORD_LOCK_DURATION_MS: &str = "share.record.lock.duration.ms";
pub const SHARE_DELIVERY_COUNT_LIMIT: &str = "share.delivery.count.limit";
pub const SHARE_PARTITION_MAX_RECORD_LOCKS: &str = "share.partition.max.record.locks";
/// `earliest`, `latest` or `by_duration:<ISO-8601 duration>` (`ShareAutoOffsetReset`).
pub const SHARE_AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";
/// `read_committed` or `read_uncommitted` (`ISOLATION_LEVELS`).
pub const SHARE_ISOLATION_LEVEL: &str = "share.isolation.level";
/// Whether members may acknowledge with RENEW (KIP-1222).
pub const SHARE_RENEW_ACKNOWLEDGE_ENABLE: &str = "share.renew.acknowledge.enable";

/// The values of `share.isolation.level`, as Kafka's validator lists them.
pub const ISOLATION_LEVELS: &[&str] = &["read_committed", "read_uncommitted"];

/// One key of Kafka's GroupConfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// Kafka's default (the broker key's default when the key inherits one).
    pub default: &'static str,
    /// The broker key whose value a group without its own inherits, which Kafka lists as the
    /// synonym; `None` when the group key is its own synonym.
    pub broker_synonym: Option<&'static str>,
    /// Kafka's `atLeast` bound of a numeric key.
    pub at_least: Option<i32>,
    /// Defined with Kafka's `defineInternal`: accepted by Kafka, never described.
    pub internal: bool,
    /// Shale acts on it; any other key is refused when set.
    pub served: bool,
}

const fn key(
    name: &'static str,
    config_type: ConfigType,
    default: &'static str,
    broker_synonym: Option<&'static str>,
) -> GroupConfigDef {
    GroupConfigDef {
        name,
        config_type,
        default,
        broker_synonym,
        at_least: None,
        internal: false,
        served: false,
    }
}

const fn at_least(mut def: GroupConfigDef, min: i32) -> GroupConfigDef {
    def.at_least = Some(min);
    def
}

const fn internal(mut def: GroupConfigDef) -> GroupConfigDef {
    def.internal = true;
    def
}

const fn served(mut def: GroupConfigDef) -> GroupConfigDef {
    def.served = true;
    def
}

use ConfigType::{Boolean, Int, List, Long, String as Str};

/// Kafka 4.4's GroupConfig keys, in its definition order, with the values a DescribeConfigs of
/// a group shows on a broker with Kafka's defaults.
pub static GROUP_CONFIGS: &[GroupConfigDef] = &[
    served(at_least(
        key(
            CONSUMER_SESSION_TIMEOUT_MS,
            Int,
            "45000",
            Some("group.consumer.session.timeout.ms"),
        ),
        1,
    )),
    served(at_least(
        key(
            CONSUMER_HEARTBEAT_INTERVAL_MS,
            Int,
            "5000",
            Some("group.consumer.heartbeat.interval.ms"),
        ),
        1,
    )),
    at_least(
        key(
            "consumer.assignment.interval.ms",
            Int,
            "1000",
            Some("group.consumer.assignment.interval.ms"),
        ),
        0,
    ),
    internal(key(
        "consumer.assignor.offload.enable",
        Boolean,
        "true",
        Some("group.consumer.assignor.offload.enable"),
    )),
    served(at_least(
        key(
            SHARE_SESSION_TIMEOUT_MS,
            Int,
            "45000",
            Some("group.share.session.timeout.ms"),
        ),
        1,
    )),
    served(at_least(
        key(
            SHARE_HEARTBEAT_INTERVAL_MS,
            Int,
            "5000",
            Some("group.share.heartbeat.interval.ms"),
        ),
        1,
    )),
    served(at_least(
        key(
            SHARE_RECORD_LOCK_DURATION_MS,
            Int,
            "30000",
            Some("group.share.record.lock.duration.ms"),
        ),
        1000,
    )),
    served(at_least(
        key(
            SHARE_DELIVERY_COUNT_LIMIT,
            Int,
            "5",
            Some("group.share.delivery.count.limit"),
        ),
        2,
    )),
    served(at_least(
        key(
            SHARE_PARTITION_MAX_RECORD_LOCKS,
            Int,
            "2000",
            Some("group.share.partition.max.record.locks"),
        ),
        100,
    )),
    served(key(SHARE_AUTO_OFFSET_RESET, Str, "latest", None)),
    served(key(SHARE_ISOLATION_LEVEL, Str, "read_uncommitted", None)),
    served(key(SHARE_RENEW_ACKNOWLEDGE_ENABLE, Boolean, "true", None)),
    at_least(
        key(
            "share.assignment.interval.ms",
            Int,
            "1000",
            Some("group.share.assignment.interval.ms"),
        ),
        0,
    ),
    internal(key(
        "share.assignor.offload.enable",
        Boolean,
        "true",
        Some("group.share.assignor.offload.enable"),
    )),
    key(
        "streams.session.timeout.ms",
        Int,
        "45000",
        Some("group.streams.session.timeout.ms"),
    ),
    key(
        "streams.heartbeat.interval.ms",
        Int,
        "5000",
        Some("group.streams.heartbeat.interval.ms"),
    ),
    key(
        "streams.num.standby.replicas",
        Int,
        "0",
        Some("group.streams.num.standby.replicas"),
    ),
    key(
        "streams.initial.rebalance.delay.ms",
        Int,
        "3000",
        Some("group.streams.initial.rebalance.delay.ms"),
    ),
    key(
        "streams.assignment.interval.ms",
        Int,
        "1000",
        Some("group.streams.assignment.interval.ms"),
    ),
    internal(key(
        "streams.assignor.offload.enable",
        Boolean,
        "true",
        Some("group.streams.assignor.offload.enable"),
    )),
    internal(key(
        "streams.task.offset.interval.ms",
        Int,
        "60000",
        Some("group.streams.task.offset.interval.ms"),
    )),
    internal(key(
        "streams.num.warmup.replicas",
        Int,
        "2",
        Some("group.streams.num.warmup.replicas"),
    )),
    key(
        "streams.rack.aware.assignment.tags",
        List,
        "",
        Some("group.streams.rack.aware.assignment.tags"),
    ),
    internal(key("streams.acceptable.recovery.lag", Long, "10000", None)),
    key(
        "streams.assignor.name",
        Str,
        "sticky",
        Some("group.streams.assignors"),
    ),
    key("errors.deadletterqueue.topic.name", Str, "", None),
    key(
        "errors.deadletterqueue.copy.record.enable",
        Boolean,
        "false",
        None,
    ),
];

pub fn group_config_def(name: &str) -> Option<&'static GroupConfigDef> {
    GROUP_CONFIGS.iter().find(|d| d.name == name)
}

/// The keys a DescribeConfigs of a group lists (Kafka leaves its internal keys out).
pub fn described_group_configs() -> impl Iterator<Item = &'static GroupConfigDef> {
    GROUP_CONFIGS.iter().filter(|d| !d.internal)
}

/// The broker's consumer-group settings a group's configs are checked against and inherit
/// (`group.consumer.*`); the controller gets them from its node's configuration, as Kafka's
/// controller validates with its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupConfigBounds {
    /// `group.consumer.session.timeout.ms`
    pub session_timeout_ms: i32,
    /// `group.consumer.min.session.timeout.ms`
    pub session_timeout_ms_min: i32,
    /// `group.consumer.max.session.timeout.ms`
    pub session_timeout_ms_max: i32,
    /// `group.consumer.heartbeat.interval.ms`
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms`
    pub heartbeat_interval_ms_min: i32,
    /// `group.consumer.max.heartbeat.interval.ms`
    pub heartbeat_interval_ms_max: i32,
}

impl Default for GroupConfigBounds {
    /// Kafka 4.4's defaults.
    fn default() -> Self {
        Self {
            session_timeout_ms: 45_000,
            session_timeout_ms_min: 45_000,
            session_timeout_ms_max: 60_000,
            heartbeat_interval_ms: 5_000,
            heartbeat_interval_ms_min: 5_000,
            heartbeat_interval_ms_max: 15_000,
        }
    }
}

/// The broker's share-group settings a group's `share.*` configs are checked against and
/// inherit (`group.share.*`), carried to the controller as `GroupConfigBounds` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareGroupConfigBounds {
    /// `group.share.session.timeout.ms`
    pub session_timeout_ms: i32,
    /// `group.share.min.session.timeout.ms`
    pub session_timeout_ms_min: i32,
    /// `group.share.max.session.timeout.ms`
    pub session_timeout_ms_max: i32,
    /// `group.share.heartbeat.interval.ms`
    pub heartbeat_interval_ms: i32,
    /// `group.share.min.heartbeat.interval.ms`
    pub heartbeat_interval_ms_min: i32,
    /// `group.share.max.heartbeat.interval.ms`
    pub heartbeat_interval_ms_max: i32,
    /// `group.share.min.record.lock.duration.ms`
    pub record_lock_duration_ms_min: i32,
    /// `group.share.max.record.lock.duration.ms`
    pub record_lock_duration_ms_max: i32,
    /// `group.share.min.delivery.count.limit`
    pub delivery_count_limit_min: i32,
    /// `group.share.max.delivery.count.limit`
    pub delivery_count_limit_max: i32,
    /// `group.share.min.partition.max.record.locks`
    pub partition_max_record_locks_min: i32,
    /// `group.share.max.partition.max.record.locks`
    pub partition_max_record_locks_max: i32,
}

impl Default for ShareGroupConfigBounds {
    /// Kafka 4.4's defaults.
    fn default() -> Self {
        Self {
            session_timeout_ms: 45_000,
            session_timeout_ms_min: 45_000,
            session_timeout_ms_max: 60_000,
            heartbeat_interval_ms: 5_000,
            heartbeat_interval_ms_min: 5_000,
            heartbeat_interval_ms_max: 15_000,
            record_lock_duration_ms_min: 15_000,
            record_lock_duration_ms_max: 60_000,
            delivery_count_limit_min: 2,
            delivery_count_limit_max: 10,
            partition_max_record_locks_min: 100,
            partition_max_record_locks_max: 4_000,
        }
    }
}

fn invalid(message: String) -> MetadataError {
    MetadataError::InvalidConfig(message)
}

/// Shale's refusal of a Kafka group key it does not act on.
fn unserved(name: &str) -> MetadataError {
    let served: Vec<&str> = GROUP_CONFIGS
        .iter()
        .filter(|d| d.served)
        .map(|d| d.name)
        .collect();
    invalid(format!(
        "Shale does not serve the group config {name}; only {} can be set on a group",
        served.join(", ")
    ))
}

/// Kafka's refusal of APPEND or SUBTRACT (`op`, Kafka's operation name) on a key that is not a
/// list.
pub fn not_a_list(op: &str, name: &str) -> MetadataError {
    invalid(format!(
        "Can't {op} to key {name} because its type is not LIST."
    ))
}

/// One value checked as Kafka's ConfigDef parses it: type, then the key's validator.
fn check_value(def: &GroupConfigDef, value: &str) -> Result<(), MetadataError> {
    if def.name == SHARE_AUTO_OFFSET_RESET {
        let trimmed = value.trim();
        return match ShareAutoOffsetReset::parse(trimmed) {
            Some(_) => Ok(()),
            None => Err(invalid(format!(
                "Invalid value {trimmed} for configuration {SHARE_AUTO_OFFSET_RESET}: Invalid \
                 value `{trimmed}` for configuration {SHARE_AUTO_OFFSET_RESET}. The value must \
                 be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
            ))),
        };
    }
    let validator = if def.name == SHARE_ISOLATION_LEVEL {
        Validator::OneOf(ISOLATION_LEVELS)
    } else {
        Validator::Range {
            min: def.at_least.map(f64::from),
            max: None,
        }
    };
    validate_typed(def.name, def.config_type, validator, value)
}

/// An INT key's value among `configs`, once `check_value` has passed it.
fn int_value(configs: &BTreeMap<String, String>, name: &str) -> Result<Option<i32>, MetadataError> {
    configs
        .get(name)
        .map(|value| {
            value
                .trim()
                .parse::<i32>()
                .map_err(|_| invalid(format!("Invalid value {value} for configuration {name}")))
        })
        .transpose()
}

/// Kafka's validateIntRange: only a key the group sets is checked.
fn in_range(
    configs: &BTreeMap<String, String>,
    name: &str,
    min: i32,
    max: i32,
) -> Result<(), MetadataError> {
    match int_value(configs, name)? {
        Some(value) if value < min || value > max => Err(invalid(format!(
            "{name} must be in the range {min} to {max} inclusive."
        ))),
        _ => Ok(()),
    }
}

/// Kafka's validateSessionExceedsHeartbeat: a key the group does not set counts with the
/// broker's value.
fn session_exceeds_heartbeat(
    configs: &BTreeMap<String, String>,
    (session_name, session_default): (&str, i32),
    (heartbeat_name, heartbeat_default): (&str, i32),
) -> Result<(), MetadataError> {
    let session = int_value(configs, session_name)?.unwrap_or(session_default);
    let heartbeat = int_value(configs, heartbeat_name)?.unwrap_or(heartbeat_default);
    if session <= heartbeat {
        return Err(invalid(format!(
            "{session_name} must be greater than {heartbeat_name}"
        )));
    }
    Ok(())
}

/// Checks a group's explicit configs as they would be after a change, in Kafka's order: every
/// name is a group config, then (Shale) every name is one Shale serves, then each value parses
/// (in definition order), then each value lies within the broker's bounds, then each session
/// timeout exceeds its heartbeat interval.
pub fn validate_group_configs(
    configs: &BTreeMap<String, String>,
    bounds: &GroupConfigBounds,
    share: &ShareGroupConfigBounds,
) -> Result<(), MetadataError> {
    let mut defs = Vec::with_capacity(configs.len());
    for name in configs.keys() {
        let def = group_config_def(name)
            .ok_or_else(|| invalid(format!("Unknown group config name: {name}")))?;
        defs.push(def);
    }
    if let Some(def) = defs.iter().find(|d| !d.served) {
        return Err(unserved(def.name));
    }
    for def in GROUP_CONFIGS {
        if let Some(value) = configs.get(def.name) {
            check_value(def, value)?;
        }
    }
    for (name, min, max) in [
        (
            CONSUMER_HEARTBEAT_INTERVAL_MS,
            bounds.heartbeat_interval_ms_min,
            bounds.heartbeat_interval_ms_max,
        ),
        (
            CONSUMER_SESSION_TIMEOUT_MS,
            bounds.session_timeout_ms_min,
            bounds.session_timeout_ms_max,
        ),
        (
            SHARE_HEARTBEAT_INTERVAL_MS,
            share.heartbeat_interval_ms_min,
            share.heartbeat_interval_ms_max,
        ),
        (
            SHARE_SESSION_TIMEOUT_MS,
            share.session_timeout_ms_min,
            share.session_timeout_ms_max,
        ),
        (
            SHARE_RECORD_LOCK_DURATION_MS,
            share.record_lock_duration_ms_min,
            share.record_lock_duration_ms_max,
        ),
        (
            SHARE_DELIVERY_COUNT_LIMIT,
            share.delivery_count_limit_min,
            share.delivery_count_limit_max,
        ),
        (
            SHARE_PARTITION_MAX_RECORD_LOCKS,
            share.partition_max_record_locks_min,
            share.partition_max_record_locks_max,
        ),
    ] {
        in_range(configs, name, min, max)?;
    }
    session_exceeds_heartbeat(
        configs,
        (CONSUMER_SESSION_TIMEOUT_MS, bounds.session_timeout_ms),
        (CONSUMER_HEARTBEAT_INTERVAL_MS, bounds.heartbeat_interval_ms),
    )?;
    session_exceeds_heartbeat(
        configs,
        (SHARE_SESSION_TIMEOUT_MS, share.session_timeout_ms),
        (SHARE_HEARTBEAT_INTERVAL_MS, share.heartbeat_interval_ms),
    )
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod share_tests;
