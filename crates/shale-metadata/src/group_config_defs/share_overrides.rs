//! A share group's effective configs as the share coordinator and the share-partitions read
//! them: Kafka 4.4's GroupConfig.evaluate, which clamps a stored number to the node's current
//! bounds (they may have changed since it was set, or another controller with other bounds
//! accepted it) rather than refuse it.

use std::collections::BTreeMap;

use super::{
    ShareAutoOffsetReset, ShareGroupConfigBounds, SHARE_AUTO_OFFSET_RESET,
    SHARE_DELIVERY_COUNT_LIMIT, SHARE_HEARTBEAT_INTERVAL_MS, SHARE_ISOLATION_LEVEL,
    SHARE_PARTITION_MAX_RECORD_LOCKS, SHARE_RECORD_LOCK_DURATION_MS,
    SHARE_RENEW_ACKNOWLEDGE_ENABLE, SHARE_SESSION_TIMEOUT_MS,
};

/// `share.isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShareIsolationLevel {
    ReadCommitted,
    #[default]
    ReadUncommitted,
}

/// One share group's values. A number is `None` when the group inherits the broker's
/// `group.share.*` value; the other keys have no broker synonym and resolve to Kafka's
/// defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareGroupOverrides {
    pub session_timeout_ms: Option<i32>,
    pub heartbeat_interval_ms: Option<i32>,
    pub record_lock_duration_ms: Option<i32>,
    pub delivery_count_limit: Option<i32>,
    pub partition_max_record_locks: Option<i32>,
    pub auto_offset_reset: ShareAutoOffsetReset,
    pub isolation_level: ShareIsolationLevel,
    pub renew_acknowledge_enabled: bool,
}

impl Default for ShareGroupOverrides {
    /// A group without configs of its own.
    fn default() -> Self {
        Self {
            session_timeout_ms: None,
            heartbeat_interval_ms: None,
            record_lock_duration_ms: None,
            delivery_count_limit: None,
            partition_max_record_locks: None,
            auto_offset_reset: ShareAutoOffsetReset::Latest,
            isolation_level: ShareIsolationLevel::ReadUncommitted,
            renew_acknowledge_enabled: true,
        }
    }
}

fn clamped(configs: &BTreeMap<String, String>, name: &str, min: i32, max: i32) -> Option<i32> {
    configs
        .get(name)
        .and_then(|v| v.trim().parse::<i32>().ok())
        .map(|v| v.max(min).min(max))
}

/// A group's stored configs (`MetadataImage::group_configs`), checked by the controller when
/// set, made effective against this node's bounds. A stored value that no longer parses counts
/// as unset.
pub fn share_group_overrides(
    configs: &BTreeMap<String, String>,
    bounds: &ShareGroupConfigBounds,
) -> ShareGroupOverrides {
    let defaults = ShareGroupOverrides::default();
    ShareGroupOverrides {
        session_timeout_ms: clamped(
            configs,
            SHARE_SESSION_TIMEOUT_MS,
            bounds.session_timeout_ms_min,
            bounds.session_timeout_ms_max,
        ),
        heartbeat_interval_ms: clamped(
            configs,
            SHARE_HEARTBEAT_INTERVAL_MS,
            bounds.heartbeat_interval_ms_min,
            bounds.heartbeat_interval_ms_max,
        ),
        record_lock_duration_ms: clamped(
            configs,
            SHARE_RECORD_LOCK_DURATION_MS,
            bounds.record_lock_duration_ms_min,
            bounds.record_lock_duration_ms_max,
        ),
        delivery_count_limit: clamped(
            configs,
            SHARE_DELIVERY_COUNT_LIMIT,
            bounds.delivery_count_limit_min,
            bounds.delivery_count_limit_max,
        ),
        partition_max_record_locks: clamped(
            configs,
            SHARE_PARTITION_MAX_RECORD_LOCKS,
            bounds.partition_max_record_locks_min,
            bounds.partition_max_record_locks_max,
        ),
        auto_offset_reset: configs
            .get(SHARE_AUTO_OFFSET_RESET)
            .and_then(|v| ShareAutoOffsetReset::parse(v.trim()))
            .unwrap_or(defaults.auto_offset_reset),
        isolation_level: match configs.get(SHARE_ISOLATION_LEVEL).map(|v| v.trim()) {
            Some("read_committed") => ShareIsolationLevel::ReadCommitted,
            _ => defaults.isolation_level,
        },
        renew_acknowledge_enabled: configs
            .get(SHARE_RENEW_ACKNOWLEDGE_ENABLE)
            .and_then(|v| match v.trim().to_ascii_lowercase().as_str() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            })
            .unwrap_or(defaults.renew_acknowledge_enabled),
    }
}
