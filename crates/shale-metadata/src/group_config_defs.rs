//! Kafka 4.4's group configs (the GROUP config resource of KIP-848, Kafka's GroupConfig): names,
//! types, defaults, the broker keys a group inherits its values from, and the checks Kafka's
//! controller makes before a group's configs change (GroupConfig.validate, against the broker's
//! `group.consumer.*` bounds).
//!
//! Shale acts on `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms` only. Every
//! other key Kafka defines is described with Kafka's default (so a describe reads as Kafka's)
//! but a value for it is refused with INVALID_CONFIG naming the key: storing it would pretend
//! to honour a share-group, streams-group or dead-letter-queue setting Shale does not serve.

use std::collections::BTreeMap;

use crate::config_defs::{validate_typed, ConfigType, Validator};
use crate::error::MetadataError;

pub const CONSUMER_SESSION_TIMEOUT_MS: &str = "consumer.session.timeout.ms";
pub const CONSUMER_HEARTBEAT_INTERVAL_MS: &str = "consumer.heartbeat.interval.ms";

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
        internal: false,
        served: false,
    }
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
    served(key(
        CONSUMER_SESSION_TIMEOUT_MS,
        Int,
        "45000",
        Some("group.consumer.session.timeout.ms"),
    )),
    served(key(
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        Int,
        "5000",
        Some("group.consumer.heartbeat.interval.ms"),
    )),
    key(
        "consumer.assignment.interval.ms",
        Int,
        "1000",
        Some("group.consumer.assignment.interval.ms"),
    ),
    internal(key(
        "consumer.assignor.offload.enable",
        Boolean,
        "false",
        Some("group.consumer.assignor.offload.enable"),
    )),
    key(
        "share.session.timeout.ms",
        Int,
        "45000",
        Some("group.share.session.timeout.ms"),
    ),
    key(
        "share.heartbeat.interval.ms",
        Int,
        "5000",
        Some("group.share.heartbeat.interval.ms"),
    ),
    key(
        "share.record.lock.duration.ms",
        Int,
        "30000",
        Some("group.share.record.lock.duration.ms"),
    ),
    key(
        "share.delivery.count.limit",
        Int,
        "5",
        Some("group.share.delivery.count.limit"),
    ),
    key(
        "share.partition.max.record.locks",
        Int,
        "2000",
        Some("group.share.partition.max.record.locks"),
    ),
    key("share.auto.offset.reset", Str, "latest", None),
    key("share.isolation.level", Str, "read_uncommitted", None),
    key("share.renew.acknowledge.enable", Boolean, "true", None),
    key(
        "share.assignment.interval.ms",
        Int,
        "1000",
        Some("group.share.assignment.interval.ms"),
    ),
    internal(key(
        "share.assignor.offload.enable",
        Boolean,
        "false",
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
        "false",
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

fn invalid(message: String) -> MetadataError {
    MetadataError::InvalidConfig(message)
}

/// Shale's refusal of a Kafka group key it does not act on.
fn unserved(name: &str) -> MetadataError {
    invalid(format!(
        "Shale does not serve the group config {name}; only {CONSUMER_SESSION_TIMEOUT_MS} and \
         {CONSUMER_HEARTBEAT_INTERVAL_MS} can be set on a group"
    ))
}

/// Kafka's refusal of APPEND or SUBTRACT (`op`, Kafka's operation name) on a key that is not a
/// list.
pub fn not_a_list(op: &str, name: &str) -> MetadataError {
    invalid(format!(
        "Can't {op} to key {name} because its type is not LIST."
    ))
}

/// An INT group key's value, checked as Kafka's ConfigDef parses it (`atLeast(1)`).
fn int_value(name: &str, value: &str) -> Result<i32, MetadataError> {
    validate_typed(
        name,
        ConfigType::Int,
        Validator::Range {
            min: Some(1.0),
            max: None,
        },
        value,
    )?;
    value
        .trim()
        .parse::<i32>()
        .map_err(|_| invalid(format!("Invalid value {value} for configuration {name}")))
}

fn in_range(name: &str, value: i32, min: i32, max: i32) -> Result<(), MetadataError> {
    if value < min || value > max {
        return Err(invalid(format!(
            "{name} must be in the range {min} to {max} inclusive."
        )));
    }
    Ok(())
}

/// Checks a group's explicit configs as they would be after a change, in Kafka's order: every
/// name is a group config, then (Shale) every name is one Shale serves, then each value parses,
/// then the heartbeat interval and the session timeout lie within the broker's bounds, then the
/// session timeout exceeds the heartbeat interval (a key the group does not set counts with the
/// broker's value, as on Kafka).
pub fn validate_group_configs(
    configs: &BTreeMap<String, String>,
    bounds: &GroupConfigBounds,
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
    let session = configs
        .get(CONSUMER_SESSION_TIMEOUT_MS)
        .map(|v| int_value(CONSUMER_SESSION_TIMEOUT_MS, v))
        .transpose()?
        .unwrap_or(bounds.session_timeout_ms);
    let heartbeat = configs
        .get(CONSUMER_HEARTBEAT_INTERVAL_MS)
        .map(|v| int_value(CONSUMER_HEARTBEAT_INTERVAL_MS, v))
        .transpose()?
        .unwrap_or(bounds.heartbeat_interval_ms);
    in_range(
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        heartbeat,
        bounds.heartbeat_interval_ms_min,
        bounds.heartbeat_interval_ms_max,
    )?;
    in_range(
        CONSUMER_SESSION_TIMEOUT_MS,
        session,
        bounds.session_timeout_ms_min,
        bounds.session_timeout_ms_max,
    )?;
    if session <= heartbeat {
        return Err(invalid(format!(
            "{CONSUMER_SESSION_TIMEOUT_MS} must be greater than {CONSUMER_HEARTBEAT_INTERVAL_MS}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The broker of the differential script: bounds lowered so every check can be reached.
    fn lowered() -> GroupConfigBounds {
        GroupConfigBounds {
            session_timeout_ms_min: 2_000,
            heartbeat_interval_ms: 3_000,
            heartbeat_interval_ms_min: 1_000,
            ..GroupConfigBounds::default()
        }
    }

    fn refusal(pairs: &[(&str, &str)], bounds: &GroupConfigBounds) -> String {
        match validate_group_configs(&configs(pairs), bounds) {
            Err(MetadataError::InvalidConfig(message)) => message,
            other => panic!("expected INVALID_CONFIG, got {other:?}"),
        }
    }

    #[test]
    fn kafka_lists_twenty_one_keys_and_knows_twenty_seven() {
        assert_eq!(GROUP_CONFIGS.len(), 27);
        assert_eq!(described_group_configs().count(), 21);
        assert!(described_group_configs().all(|d| d.name != "consumer.assignor.offload.enable"));
        let served: Vec<&str> = GROUP_CONFIGS
            .iter()
            .filter(|d| d.served)
            .map(|d| d.name)
            .collect();
        assert_eq!(
            served,
            [CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS]
        );
    }

    #[test]
    fn values_within_the_broker_bounds_are_accepted() {
        let bounds = lowered();
        validate_group_configs(&configs(&[(CONSUMER_SESSION_TIMEOUT_MS, "50000")]), &bounds)
            .unwrap();
        validate_group_configs(
            &configs(&[
                (CONSUMER_SESSION_TIMEOUT_MS, "20000"),
                (CONSUMER_HEARTBEAT_INTERVAL_MS, "2000"),
            ]),
            &bounds,
        )
        .unwrap();
        // Above the inherited heartbeat interval (3000), below Kafka's static default (5000).
        validate_group_configs(&configs(&[(CONSUMER_SESSION_TIMEOUT_MS, "4000")]), &bounds)
            .unwrap();
        validate_group_configs(&BTreeMap::new(), &GroupConfigBounds::default()).unwrap();
    }

    #[test]
    fn refusals_carry_kafkas_texts() {
        let bounds = lowered();
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("bogus", "1")], "Unknown group config name: bogus"),
            (
                &[(CONSUMER_SESSION_TIMEOUT_MS, "1000")],
                "consumer.session.timeout.ms must be in the range 2000 to 60000 inclusive.",
            ),
            (
                &[(CONSUMER_SESSION_TIMEOUT_MS, "70000")],
                "consumer.session.timeout.ms must be in the range 2000 to 60000 inclusive.",
            ),
            (
                &[(CONSUMER_HEARTBEAT_INTERVAL_MS, "500")],
                "consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive.",
            ),
            (
                &[(CONSUMER_SESSION_TIMEOUT_MS, "0")],
                "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be \
                 at least 1",
            ),
            (
                &[(CONSUMER_SESSION_TIMEOUT_MS, "abc")],
                "Invalid value abc for configuration consumer.session.timeout.ms: Not a number \
                 of type INT",
            ),
            (
                &[(CONSUMER_SESSION_TIMEOUT_MS, "2500")],
                "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
            ),
            (
                &[
                    (CONSUMER_SESSION_TIMEOUT_MS, "3000"),
                    (CONSUMER_HEARTBEAT_INTERVAL_MS, "3000"),
                ],
                "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
            ),
            // The name check comes first, as Kafka's validateNames.
            (
                &[(CONSUMER_SESSION_TIMEOUT_MS, "abc"), ("bogus", "1")],
                "Unknown group config name: bogus",
            ),
            // Both out of bounds: the heartbeat interval is checked first.
            (
                &[
                    (CONSUMER_SESSION_TIMEOUT_MS, "1"),
                    (CONSUMER_HEARTBEAT_INTERVAL_MS, "1"),
                ],
                "consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive.",
            ),
        ];
        for (pairs, expected) in cases {
            assert_eq!(refusal(pairs, &bounds), *expected, "{pairs:?}");
        }
    }

    #[test]
    fn keys_shale_does_not_serve_are_refused_by_name() {
        for def in GROUP_CONFIGS.iter().filter(|d| !d.served) {
            let message = refusal(&[(def.name, def.default)], &GroupConfigBounds::default());
            assert!(
                message.starts_with(&format!(
                    "Shale does not serve the group config {}",
                    def.name
                )),
                "{message}"
            );
        }
    }
}
