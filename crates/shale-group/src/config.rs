//! Coordinator settings, named and defaulted as Kafka's broker configs.

/// Group coordinator settings (Kafka 4 defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.min.session.timeout.ms`
    pub session_timeout_ms_min: i32,
    /// `group.max.session.timeout.ms`
    pub session_timeout_ms_max: i32,
    /// `group.initial.rebalance.delay.ms`
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size`
    pub group_size_max: usize,
    /// `offset.metadata.max.bytes`
    pub offset_metadata_bytes_max: usize,
    /// `offsets.retention.minutes`, in milliseconds.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`
    pub offsets_retention_check_interval_ms: i64,
    /// How long a JoinGroup from a new member may stay parked (Kafka's fixed 5 minutes).
    pub new_member_join_timeout_ms: i64,
    /// `group.consumer.session.timeout.ms`
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.min.session.timeout.ms`
    pub consumer_session_timeout_ms_min: i32,
    /// `group.consumer.max.session.timeout.ms`
    pub consumer_session_timeout_ms_max: i32,
    /// `group.consumer.heartbeat.interval.ms`
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms`
    pub consumer_heartbeat_interval_ms_min: i32,
    /// `group.consumer.max.heartbeat.interval.ms`
    pub consumer_heartbeat_interval_ms_max: i32,
    /// `group.consumer.max.size`
    pub consumer_group_size_max: usize,
    /// `group.consumer.assignment.interval.ms` (KIP-1263): a group's target assignment is
    /// computed again at most this often; a heartbeat in between gets the current target.
    pub consumer_assignment_interval_ms: i32,
    /// `group.consumer.assignors`, by Kafka's short names; the first is the default.
    pub consumer_assignors: Vec<String>,
    /// `group.consumer.migration.policy`
    pub consumer_migration_policy: MigrationPolicy,
    /// `group.coordinator.rebalance.protocols` contains `consumer`.
    pub consumer_protocol_enabled: bool,
    /// `group.share.session.timeout.ms`
    pub share_session_timeout_ms: i32,
    /// `group.share.heartbeat.interval.ms`
    pub share_heartbeat_interval_ms: i32,
    /// `group.share.max.size`
    pub share_group_size_max: usize,
    /// `group.share.assignment.interval.ms` (KIP-1263), as the consumer protocol's.
    pub share_assignment_interval_ms: i32,
    /// `group.share.initialize.retry.interval.ms`: a share-partition whose state initialization
    /// has not been reported after this long is initialized again.
    pub share_initialize_retry_interval_ms: i64,
}

/// `group.consumer.migration.policy`: which online conversions between the classic and the
/// consumer protocol a group may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationPolicy {
    Disabled,
    Upgrade,
    Downgrade,
    Bidirectional,
}

impl MigrationPolicy {
    /// Kafka's names, case-insensitive as Kafka parses them.
    pub fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_lowercase().as_str() {
            "disabled" => Some(Self::Disabled),
            "upgrade" => Some(Self::Upgrade),
            "downgrade" => Some(Self::Downgrade),
            "bidirectional" => Some(Self::Bidirectional),
            _ => None,
        }
    }

    pub fn upgrade_enabled(self) -> bool {
        matches!(self, Self::Upgrade | Self::Bidirectional)
    }

    pub fn downgrade_enabled(self) -> bool {
        matches!(self, Self::Downgrade | Self::Bidirectional)
    }
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            session_timeout_ms_min: 6_000,
            session_timeout_ms_max: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            group_size_max: i32::MAX as usize,
            offset_metadata_bytes_max: 4_096,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1_000,
            offsets_retention_check_interval_ms: 600_000,
            new_member_join_timeout_ms: 300_000,
            consumer_session_timeout_ms: 45_000,
            consumer_session_timeout_ms_min: 45_000,
            consumer_session_timeout_ms_max: 60_000,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_heartbeat_interval_ms_min: 5_000,
            consumer_heartbeat_interval_ms_max: 15_000,
            consumer_group_size_max: i32::MAX as usize,
            consumer_assignment_interval_ms: 1_000,
            consumer_assignors: vec!["uniform".to_string(), "range".to_string()],
            consumer_migration_policy: MigrationPolicy::Bidirectional,
            // Off until the broker's config turns it on.
            consumer_protocol_enabled: false,
            share_session_timeout_ms: 45_000,
            share_heartbeat_interval_ms: 5_000,
            share_group_size_max: 200,
            share_assignment_interval_ms: 1_000,
            share_initialize_retry_interval_ms: 30_000,
        }
    }
}

/// Per-group settings set on the GROUP config resource (KIP-848's dynamic group configs);
/// `None` falls back to the broker's value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupOverrides {
    /// `consumer.session.timeout.ms`
    pub consumer_session_timeout_ms: Option<i32>,
    /// `consumer.heartbeat.interval.ms`
    pub consumer_heartbeat_interval_ms: Option<i32>,
    /// `consumer.assignment.interval.ms`
    pub consumer_assignment_interval_ms: Option<i32>,
}

/// A share group's settings set on the GROUP config resource; `None` falls back to the
/// broker's `group.share.*` value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShareGroupOverrides {
    /// `share.session.timeout.ms`
    pub share_session_timeout_ms: Option<i32>,
    /// `share.heartbeat.interval.ms`
    pub share_heartbeat_interval_ms: Option<i32>,
    /// `share.assignment.interval.ms`
    pub share_assignment_interval_ms: Option<i32>,
}

/// Where the coordinator reads a group's overrides, at each heartbeat (a change applies from
/// the member's next heartbeat, as on Kafka).
pub trait GroupConfigSource: Send + Sync {
    fn overrides(&self, group_id: &str) -> GroupOverrides;

    /// A share group's overrides; none unless the source reads them.
    fn share_overrides(&self, group_id: &str) -> ShareGroupOverrides {
        let _ = group_id;
        ShareGroupOverrides::default()
    }
}

/// No group has overrides.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoGroupOverrides;

impl GroupConfigSource for NoGroupOverrides {
    fn overrides(&self, _group_id: &str) -> GroupOverrides {
        GroupOverrides::default()
    }
}
