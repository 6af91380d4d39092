//! The share group keys (KIP-932): `group.share.*` of Kafka 4.4's GroupCoordinatorConfig and
//! ShareGroupConfig, with Kafka's defaults (defs.rs) and its checks of the keys against each
//! other, in Kafka's order and words.

use shale_metadata::group_config_defs::ShareGroupConfigBounds;

use super::bounds::{at_least, at_most, below};
use super::error::ConfigError;
use super::reader::{invalid, Reader};

/// `group.share.*`, checked against each other at start-up. The `*_min`/`*_max` pairs bound
/// what a group's own configs may set (`share.session.timeout.ms`, ...): see
/// `group_config_bounds`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareGroupSettings {
    /// `group.share.session.timeout.ms`: a member that does not heartbeat for this long leaves.
    pub session_timeout_ms: i32,
    pub session_timeout_ms_min: i32,
    pub session_timeout_ms_max: i32,
    /// `group.share.heartbeat.interval.ms`: the interval given to members.
    pub heartbeat_interval_ms: i32,
    pub heartbeat_interval_ms_min: i32,
    pub heartbeat_interval_ms_max: i32,
    /// `group.share.max.size`: members of one share group.
    pub group_size_max: i32,
    /// `group.share.assignment.interval.ms`: a target assignment is computed at most this
    /// often per group.
    pub assignment_interval_ms: i32,
    pub assignment_interval_ms_min: i32,
    pub assignment_interval_ms_max: i32,
    /// `group.share.record.lock.duration.ms`: how long an acquired record stays locked.
    pub record_lock_duration_ms: i32,
    pub record_lock_duration_ms_min: i32,
    pub record_lock_duration_ms_max: i32,
    /// `group.share.delivery.count.limit`: deliveries of a record before it is archived.
    pub delivery_count_limit: i32,
    pub delivery_count_limit_min: i32,
    pub delivery_count_limit_max: i32,
    /// `group.share.partition.max.record.locks`: in-flight (acquired) records per
    /// share-partition.
    pub partition_max_record_locks: i32,
    pub partition_max_record_locks_min: i32,
    pub partition_max_record_locks_max: i32,
    /// `group.share.max.share.sessions`: share sessions (KIP-932's fetch sessions) per broker.
    pub share_sessions_max: i32,
    /// `group.share.initialize.retry.interval.ms` (internal): the wait before initialising a
    /// share group's state again after a failure; Kafka waits at least
    /// `offsets.commit.timeout.ms`.
    pub initialize_retry_interval_ms: i32,
}

impl ShareGroupSettings {
    /// What the controller checks a group's `share.*` configs against
    /// (`ControllerConfig::share_group_config_bounds`), as Kafka's controller checks them
    /// against its own `group.share.*`.
    pub fn group_config_bounds(&self) -> ShareGroupConfigBounds {
        ShareGroupConfigBounds {
            session_timeout_ms: self.session_timeout_ms,
            session_timeout_ms_min: self.session_timeout_ms_min,
            session_timeout_ms_max: self.session_timeout_ms_max,
            heartbeat_interval_ms: self.heartbeat_interval_ms,
            heartbeat_interval_ms_min: self.heartbeat_interval_ms_min,
            heartbeat_interval_ms_max: self.heartbeat_interval_ms_max,
            record_lock_duration_ms_min: self.record_lock_duration_ms_min,
            record_lock_duration_ms_max: self.record_lock_duration_ms_max,
            delivery_count_limit_min: self.delivery_count_limit_min,
            delivery_count_limit_max: self.delivery_count_limit_max,
            partition_max_record_locks_min: self.partition_max_record_locks_min,
            partition_max_record_locks_max: self.partition_max_record_locks_max,
        }
    }
}

/// The one share assignor Kafka 4.4 has, by short and by class name.
const SIMPLE_ASSIGNOR: (&str, &str) = (
    "simple",
    "org.apache.kafka.coordinator.group.assignor.SimpleAssignor",
);

pub(super) fn share_group_settings(r: &Reader<'_>) -> Result<ShareGroupSettings, ConfigError> {
    check_assignors(&r.raw("group.share.assignors").unwrap_or_default())?;
    let s = ShareGroupSettings {
        session_timeout_ms: r.int("group.share.session.timeout.ms")?,
        session_timeout_ms_min: r.int("group.share.min.session.timeout.ms")?,
        session_timeout_ms_max: r.int("group.share.max.session.timeout.ms")?,
        heartbeat_interval_ms: r.int("group.share.heartbeat.interval.ms")?,
        heartbeat_interval_ms_min: r.int("group.share.min.heartbeat.interval.ms")?,
        heartbeat_interval_ms_max: r.int("group.share.max.heartbeat.interval.ms")?,
        group_size_max: r.int("group.share.max.size")?,
        assignment_interval_ms: r.int("group.share.assignment.interval.ms")?,
        assignment_interval_ms_min: r.int("group.share.min.assignment.interval.ms")?,
        assignment_interval_ms_max: r.int("group.share.max.assignment.interval.ms")?,
        record_lock_duration_ms: r.int("group.share.record.lock.duration.ms")?,
        record_lock_duration_ms_min: r.int("group.share.min.record.lock.duration.ms")?,
        record_lock_duration_ms_max: r.int("group.share.max.record.lock.duration.ms")?,
        delivery_count_limit: r.int("group.share.delivery.count.limit")?,
        delivery_count_limit_min: r.int("group.share.min.delivery.count.limit")?,
        delivery_count_limit_max: r.int("group.share.max.delivery.count.limit")?,
        partition_max_record_locks: r.int("group.share.partition.max.record.locks")?,
        partition_max_record_locks_min: r.int("group.share.min.partition.max.record.locks")?,
        partition_max_record_locks_max: r.int("group.share.max.partition.max.record.locks")?,
        share_sessions_max: r.int("group.share.max.share.sessions")?,
        initialize_retry_interval_ms: r.int("group.share.initialize.retry.interval.ms")?,
    };
    check_coordinator_keys(&s)?;
    check_share_group_keys(&s)?;
    Ok(s)
}

/// GroupCoordinatorConfig's checks of the share keys, in its order.
fn check_coordinator_keys(s: &ShareGroupSettings) -> Result<(), ConfigError> {
    at_least(
        "group.share.max.heartbeat.interval.ms",
        s.heartbeat_interval_ms_max,
        "group.share.min.heartbeat.interval.ms",
        s.heartbeat_interval_ms_min,
    )?;
    at_least(
        "group.share.heartbeat.interval.ms",
        s.heartbeat_interval_ms,
        "group.share.min.heartbeat.interval.ms",
        s.heartbeat_interval_ms_min,
    )?;
    at_most(
        "group.share.heartbeat.interval.ms",
        s.heartbeat_interval_ms,
        "group.share.max.heartbeat.interval.ms",
        s.heartbeat_interval_ms_max,
    )?;
    at_least(
        "group.share.max.session.timeout.ms",
        s.session_timeout_ms_max,
        "group.share.min.session.timeout.ms",
        s.session_timeout_ms_min,
    )?;
    at_least(
        "group.share.session.timeout.ms",
        s.session_timeout_ms,
        "group.share.min.session.timeout.ms",
        s.session_timeout_ms_min,
    )?;
    at_most(
        "group.share.session.timeout.ms",
        s.session_timeout_ms,
        "group.share.max.session.timeout.ms",
        s.session_timeout_ms_max,
    )?;
    below(
        "group.share.heartbeat.interval.ms",
        s.heartbeat_interval_ms,
        "group.share.session.timeout.ms",
        s.session_timeout_ms,
    )?;
    at_least(
        "group.share.max.assignment.interval.ms",
        s.assignment_interval_ms_max,
        "group.share.min.assignment.interval.ms",
        s.assignment_interval_ms_min,
    )?;
    at_least(
        "group.share.assignment.interval.ms",
        s.assignment_interval_ms,
        "group.share.min.assignment.interval.ms",
        s.assignment_interval_ms_min,
    )?;
    at_most(
        "group.share.assignment.interval.ms",
        s.assignment_interval_ms,
        "group.share.max.assignment.interval.ms",
        s.assignment_interval_ms_max,
    )
}

/// ShareGroupConfig's checks, in its order.
fn check_share_group_keys(s: &ShareGroupSettings) -> Result<(), ConfigError> {
    at_least(
        "group.share.max.delivery.count.limit",
        s.delivery_count_limit_max,
        "group.share.delivery.count.limit",
        s.delivery_count_limit,
    )?;
    at_least(
        "group.share.delivery.count.limit",
        s.delivery_count_limit,
        "group.share.min.delivery.count.limit",
        s.delivery_count_limit_min,
    )?;
    at_least(
        "group.share.max.partition.max.record.locks",
        s.partition_max_record_locks_max,
        "group.share.partition.max.record.locks",
        s.partition_max_record_locks,
    )?;
    at_least(
        "group.share.partition.max.record.locks",
        s.partition_max_record_locks,
        "group.share.min.partition.max.record.locks",
        s.partition_max_record_locks_min,
    )?;
    at_least(
        "group.share.record.lock.duration.ms",
        s.record_lock_duration_ms,
        "group.share.min.record.lock.duration.ms",
        s.record_lock_duration_ms_min,
    )?;
    at_least(
        "group.share.max.record.lock.duration.ms",
        s.record_lock_duration_ms_max,
        "group.share.record.lock.duration.ms",
        s.record_lock_duration_ms,
    )?;
    at_least(
        "group.share.max.share.sessions",
        s.share_sessions_max,
        "group.share.max.size",
        s.group_size_max,
    )
}

/// Kafka instantiates each named class (the short name `simple` included) and requires exactly
/// one distinct name; Shale has only the built-in simple assignor and cannot load another.
fn check_assignors(value: &str) -> Result<(), ConfigError> {
    let key = "group.share.assignors";
    let names = super::reader::split_list(value);
    if names.is_empty() {
        return Err(invalid(
            key,
            value,
            "Configuration 'group.share.assignors' must not be empty. Valid values include: \
             any non-empty value",
        ));
    }
    if let Some(other) = names
        .iter()
        .find(|n| n.as_str() != SIMPLE_ASSIGNOR.0 && n.as_str() != SIMPLE_ASSIGNOR.1)
    {
        return Err(invalid(
            key,
            value,
            &format!(
                "Shale serves the built-in share assignor simple ({}) and cannot load the \
                 class {other}",
                SIMPLE_ASSIGNOR.1
            ),
        ));
    }
    let mut distinct: Vec<&String> = names.iter().collect();
    distinct.sort();
    distinct.dedup();
    if distinct.len() != 1 {
        return Err(invalid(
            key,
            value,
            &format!(
                "group.share.assignors must contain exactly one assignor, but found {}",
                distinct.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "share_groups_tests.rs"]
mod tests;
