//! Kafka 4.4's ShareCoordinatorConfig: the `share.coordinator.*` broker settings with their
//! defaults, and the configs `__share_group_state` is created with.

/// One field per `share.coordinator.*` key; `Default` is Kafka 4.4's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareCoordinatorSettings {
    /// `share.coordinator.snapshot.update.records.per.snapshot` (0..=500): update records
    /// written for a share-partition before the next write becomes a full snapshot.
    pub snapshot_update_records_per_snapshot: usize,
    /// `share.coordinator.state.topic.num.partitions`.
    pub state_topic_num_partitions: i32,
    /// `share.coordinator.state.topic.replication.factor`.
    pub state_topic_replication_factor: i16,
    /// `share.coordinator.state.topic.min.isr`.
    pub state_topic_min_isr: i16,
    /// `share.coordinator.state.topic.segment.bytes`.
    pub state_topic_segment_bytes: i64,
    /// `share.coordinator.load.buffer.size`.
    pub load_buffer_size: usize,
    /// `share.coordinator.write.timeout.ms`.
    pub write_timeout_ms: u64,
    /// `share.coordinator.cold.partition.snapshot.interval.ms` (internal).
    pub cold_partition_snapshot_interval_ms: u64,
    /// `share.coordinator.state.topic.prune.interval.ms` (internal).
    pub state_topic_prune_interval_ms: u64,
    /// `share.coordinator.append.linger.ms`. Kafka 4.4's default is -1, an adaptive linger
    /// (flush as soon as the previous write is done), which is `None` here.
    pub append_linger_ms: Option<u64>,
    /// `share.coordinator.threads`.
    pub threads: usize,
    /// `share.coordinator.state.topic.compression.codec`: the compression id the coordinator
    /// writes its record batches with (Kafka's CompressionType ids; 0, none, by default).
    pub state_topic_compression_codec: i32,
    /// `share.coordinator.cached.buffer.max.bytes`: 1 MiB plus the 12-byte log overhead.
    pub cached_buffer_max_bytes: usize,
}

impl Default for ShareCoordinatorSettings {
    fn default() -> Self {
        ShareCoordinatorSettings {
            snapshot_update_records_per_snapshot: 500,
            state_topic_num_partitions: 50,
            state_topic_replication_factor: 3,
            state_topic_min_isr: 2,
            state_topic_segment_bytes: 100 * 1024 * 1024,
            load_buffer_size: 5 * 1024 * 1024,
            write_timeout_ms: 5000,
            cold_partition_snapshot_interval_ms: 5 * 60 * 1000,
            state_topic_prune_interval_ms: 5 * 60 * 1000,
            append_linger_ms: None,
            threads: 1,
            state_topic_compression_codec: 0,
            cached_buffer_max_bytes: 1024 * 1024 + 12,
        }
    }
}

impl ShareCoordinatorSettings {
    /// The topic configs of `__share_group_state`, as ShareCoordinatorService's
    /// shareGroupStateTopicConfigs (KIP-932): records are pruned by the coordinator
    /// (DeleteRecords up to the last redundant offset), never by time or compaction.
    pub fn state_topic_configs(&self) -> Vec<(String, String)> {
        vec![
            ("cleanup.policy".to_string(), "delete".to_string()),
            ("compression.type".to_string(), "producer".to_string()),
            (
                "segment.bytes".to_string(),
                self.state_topic_segment_bytes.to_string(),
            ),
            (
                "min.insync.replicas".to_string(),
                self.state_topic_min_isr.to_string(),
            ),
            ("retention.ms".to_string(), "-1".to_string()),
        ]
    }
}
