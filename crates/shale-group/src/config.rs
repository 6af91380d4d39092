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
        }
    }
}
