//! The consumer group protocol's broker keys (`group.consumer.*`, KIP-848), validated as Kafka's
//! GroupCoordinatorConfig validates them.

use super::bounds::{at_least, at_most, below};
use super::error::ConfigError;
use super::reader::{invalid, Reader};

/// `group.consumer.*`, checked against each other at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroupSettings {
    pub session_timeout_ms: i32,
    pub session_timeout_ms_min: i32,
    pub session_timeout_ms_max: i32,
    pub heartbeat_interval_ms: i32,
    pub heartbeat_interval_ms_min: i32,
    pub heartbeat_interval_ms_max: i32,
    pub group_size_max: i32,
    /// `group.consumer.assignment.interval.ms`: a target assignment is computed at most this
    /// often per group.
    pub assignment_interval_ms: i32,
    /// Short names (`uniform`, `range`), in the configured order; the first is the default.
    pub assignors: Vec<String>,
    pub migration_policy: shale_group::MigrationPolicy,
}

/// Kafka's built-in assignors, by short name and by class name.
const BUILT_IN_ASSIGNORS: &[(&str, &str)] = &[
    (
        "uniform",
        "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
    ),
    (
        "range",
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
    ),
];

pub(super) fn consumer_group_settings(
    r: &Reader<'_>,
) -> Result<ConsumerGroupSettings, ConfigError> {
    let settings = ConsumerGroupSettings {
        session_timeout_ms: r.int("group.consumer.session.timeout.ms")?,
        session_timeout_ms_min: r.int("group.consumer.min.session.timeout.ms")?,
        session_timeout_ms_max: r.int("group.consumer.max.session.timeout.ms")?,
        heartbeat_interval_ms: r.int("group.consumer.heartbeat.interval.ms")?,
        heartbeat_interval_ms_min: r.int("group.consumer.min.heartbeat.interval.ms")?,
        heartbeat_interval_ms_max: r.int("group.consumer.max.heartbeat.interval.ms")?,
        group_size_max: r.int("group.consumer.max.size")?,
        assignment_interval_ms: r.int("group.consumer.assignment.interval.ms")?,
        assignors: assignors(&r.list("group.consumer.assignors"))?,
        migration_policy: migration_policy(
            &r.raw("group.consumer.migration.policy").unwrap_or_default(),
        )?,
    };
    at_least(
        "group.consumer.session.timeout.ms",
        settings.session_timeout_ms,
        "group.consumer.min.session.timeout.ms",
        settings.session_timeout_ms_min,
    )?;
    at_most(
        "group.consumer.session.timeout.ms",
        settings.session_timeout_ms,
        "group.consumer.max.session.timeout.ms",
        settings.session_timeout_ms_max,
    )?;
    at_least(
        "group.consumer.heartbeat.interval.ms",
        settings.heartbeat_interval_ms,
        "group.consumer.min.heartbeat.interval.ms",
        settings.heartbeat_interval_ms_min,
    )?;
    at_most(
        "group.consumer.heartbeat.interval.ms",
        settings.heartbeat_interval_ms,
        "group.consumer.max.heartbeat.interval.ms",
        settings.heartbeat_interval_ms_max,
    )?;
    at_least(
        "group.consumer.assignment.interval.ms",
        settings.assignment_interval_ms,
        "group.consumer.min.assignment.interval.ms",
        r.int("group.consumer.min.assignment.interval.ms")?,
    )?;
    at_most(
        "group.consumer.assignment.interval.ms",
        settings.assignment_interval_ms,
        "group.consumer.max.assignment.interval.ms",
        r.int("group.consumer.max.assignment.interval.ms")?,
    )?;
    below(
        "group.consumer.heartbeat.interval.ms",
        settings.heartbeat_interval_ms,
        "group.consumer.session.timeout.ms",
        settings.session_timeout_ms,
    )?;
    Ok(settings)
}

/// Built-in assignors by either name; a custom class is refused because Shale cannot load it.
fn assignors(names: &[String]) -> Result<Vec<String>, ConfigError> {
    let key = "group.consumer.assignors";
    if names.is_empty() {
        return Err(invalid(key, "", "at least one assignor is required"));
    }
    let mut short_names: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let Some((short, _)) = BUILT_IN_ASSIGNORS
            .iter()
            .find(|(short, class)| name == short || name == class)
        else {
            return Err(invalid(
                key,
                &names.join(","),
                &format!(
                    "Shale serves the built-in assignors uniform and range and cannot load \
                     the class {name}"
                ),
            ));
        };
        if short_names.iter().any(|seen| seen == short) {
            return Err(invalid(
                key,
                &names.join(","),
                &format!("the assignor {short} is named twice"),
            ));
        }
        short_names.push((*short).to_string());
    }
    Ok(short_names)
}

fn migration_policy(value: &str) -> Result<shale_group::MigrationPolicy, ConfigError> {
    let key = "group.consumer.migration.policy";
    shale_group::MigrationPolicy::parse(value.trim()).ok_or_else(|| {
        invalid(
            key,
            value,
            "expected one of disabled, downgrade, upgrade, bidirectional",
        )
    })
}

#[cfg(test)]
#[path = "consumer_groups_tests.rs"]
mod tests;
