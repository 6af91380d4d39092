//! The share coordinator's keys (`share.coordinator.*`, Kafka 4.4's ShareCoordinatorConfig):
//! the `__share_group_state` topic it creates and how it writes and snapshots share-partition
//! state.

use super::error::ConfigError;
use super::reader::{invalid, Reader};

/// `share.coordinator.*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareCoordinatorSettings {
    /// `share.coordinator.state.topic.num.partitions`: partitions of `__share_group_state`,
    /// fixed once the topic exists.
    pub state_topic_num_partitions: i32,
    pub state_topic_replication_factor: i16,
    /// `share.coordinator.state.topic.min.isr`: the topic's `min.insync.replicas`.
    pub state_topic_min_isr: i16,
    pub state_topic_segment_bytes: i32,
    /// `share.coordinator.snapshot.update.records.per.snapshot`: ShareUpdate records written
    /// for a share-partition between two of its ShareSnapshot records.
    pub snapshot_update_records_per_snapshot: i32,
    /// `share.coordinator.write.timeout.ms`: how long a write waits for the topic's replicas.
    pub write_timeout_ms: i32,
    /// `share.coordinator.load.buffer.size`: bytes read at a time when loading a partition.
    pub load_buffer_size_bytes: i32,
    /// `share.coordinator.append.linger.ms`: how long writes gather before one append; `None`
    /// is Kafka's -1, adaptive (append as soon as the previous append is done).
    pub append_linger_ms: Option<i32>,
    /// `share.coordinator.state.topic.prune.interval.ms` (internal): how often records no
    /// longer needed are deleted from the state topic.
    pub state_topic_prune_interval_ms: i32,
    /// `share.coordinator.cold.partition.snapshot.interval.ms` (internal): how often a
    /// share-partition without updates gets a fresh snapshot, so pruning can pass it.
    pub cold_partition_snapshot_interval_ms: i32,
}

pub(super) fn share_coordinator_settings(
    r: &Reader<'_>,
) -> Result<ShareCoordinatorSettings, ConfigError> {
    check_compression_codec(r.int("share.coordinator.state.topic.compression.codec")?)?;
    let linger_ms = check_append_linger(r.int("share.coordinator.append.linger.ms")?)?;
    Ok(ShareCoordinatorSettings {
        state_topic_num_partitions: r.int("share.coordinator.state.topic.num.partitions")?,
        state_topic_replication_factor: r
            .short("share.coordinator.state.topic.replication.factor")?,
        state_topic_min_isr: r.short("share.coordinator.state.topic.min.isr")?,
        state_topic_segment_bytes: r.int("share.coordinator.state.topic.segment.bytes")?,
        snapshot_update_records_per_snapshot: r
            .int("share.coordinator.snapshot.update.records.per.snapshot")?,
        write_timeout_ms: r.int("share.coordinator.write.timeout.ms")?,
        load_buffer_size_bytes: r.int("share.coordinator.load.buffer.size")?,
        append_linger_ms: (linger_ms != -1).then_some(linger_ms),
        state_topic_prune_interval_ms: r.int("share.coordinator.state.topic.prune.interval.ms")?,
        cold_partition_snapshot_interval_ms: r
            .int("share.coordinator.cold.partition.snapshot.interval.ms")?,
    })
}

/// Shale appends each share state write as soon as its shard takes it (no batching of writes
/// from several requests): Kafka's adaptive -1 and 0 describe that; a positive linger, which
/// would gather writes for that long, is refused rather than ignored.
fn check_append_linger(linger_ms: i32) -> Result<i32, ConfigError> {
    if linger_ms > 0 {
        return Err(invalid(
            "share.coordinator.append.linger.ms",
            &linger_ms.to_string(),
            "Shale appends each share state write at once; only -1 (adaptive) and 0 are served",
        ));
    }
    Ok(linger_ms)
}

/// Kafka's codec ids are 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; Shale's share coordinator
/// writes its batches uncompressed.
fn check_compression_codec(id: i32) -> Result<(), ConfigError> {
    let key = "share.coordinator.state.topic.compression.codec";
    match id {
        0 => Ok(()),
        1..=4 => Err(invalid(
            key,
            &id.to_string(),
            "Shale writes the share-group state topic uncompressed; only 0 (none) is served",
        )),
        _ => Err(invalid(
            key,
            &id.to_string(),
            &format!("Unknown compression type id: {id}"),
        )),
    }
}

#[cfg(test)]
#[path = "share_coordinator_tests.rs"]
mod tests;
