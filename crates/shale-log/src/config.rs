//! Per-topic log configuration with Apache Kafka 4.x defaults.

use crate::batch::Compression;

/// `cleanup.policy`: `delete`, `compact` or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    pub delete: bool,
    pub compact: bool,
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy {
            delete: true,
            compact: false,
        }
    }
}

/// `compression.type`: the codec client batches are stored with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopicCompression {
    /// `producer`: every batch keeps the codec its producer chose.
    #[default]
    Producer,
    /// `uncompressed`, `gzip`, `snappy`, `lz4` or `zstd`: a batch of another codec is
    /// recompressed with this one.
    Codec(Compression),
}

/// Compression levels of KIP-390 (`compression.<codec>.level`), with Kafka's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionLevels {
    /// `compression.gzip.level`: -1 (zlib's default, 6) or 1-9.
    pub gzip: i32,
    /// `compression.lz4.level`: 1-17; Kafka's default 9 uses LZ4's fast compressor.
    pub lz4: i32,
    /// `compression.zstd.level`: -131072..22.
    pub zstd: i32,
}

impl CompressionLevels {
    pub const GZIP_DEFAULT: i32 = -1;
    pub const LZ4_DEFAULT: i32 = 9;
    pub const ZSTD_DEFAULT: i32 = 3;
}

impl Default for CompressionLevels {
    fn default() -> Self {
        CompressionLevels {
            gzip: Self::GZIP_DEFAULT,
            lz4: Self::LZ4_DEFAULT,
            zstd: Self::ZSTD_DEFAULT,
        }
    }
}

/// `message.timestamp.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampType {
    #[default]
    CreateTime,
    LogAppendTime,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes` (default 1 GiB).
    pub segment_bytes: u64,
    /// `segment.ms` (default 7 days).
    pub segment_ms: i64,
    /// `segment.index.bytes` (default 10 MiB).
    pub segment_index_bytes: u64,
    /// `index.interval.bytes` (default 4096).
    pub index_interval_bytes: u64,
    /// `retention.ms` (default 7 days, -1 = infinite).
    pub retention_ms: i64,
    /// `retention.bytes` (default -1 = infinite).
    pub retention_bytes: i64,
    pub cleanup_policy: CleanupPolicy,
    /// `max.message.bytes` (default 1048588).
    pub max_message_bytes: u64,
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms` (default unbounded).
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms` (default 1 hour).
    pub message_timestamp_after_max_ms: i64,
    /// `flush.messages` (default: never forced).
    pub flush_messages: i64,
    /// `flush.ms` (default: never forced).
    pub flush_ms: i64,
    /// `file.delete.delay.ms` (default 60 s).
    pub file_delete_delay_ms: i64,
    /// `min.compaction.lag.ms` (default 0).
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms` (default unbounded).
    pub max_compaction_lag_ms: i64,
    /// `delete.retention.ms` (default 1 day).
    pub delete_retention_ms: i64,
    /// `min.cleanable.dirty.ratio` (default 0.5).
    pub min_cleanable_dirty_ratio: f64,
    /// `preallocate` (default false): accepted, the segment file itself is not preallocated.
    pub preallocate: bool,
    /// `compression.type` (default `producer`).
    pub compression_type: TopicCompression,
    /// `compression.gzip.level`, `compression.lz4.level`, `compression.zstd.level`.
    pub compression_levels: CompressionLevels,
    /// Bound on one decompressed batch, when validating appends and when cleaning.
    pub decompressed_batch_bytes_max: u64,
    /// `log.cleaner.dedupe.buffer.size`: memory for the cleaner's key map in one pass; a log
    /// with more distinct keys is cleaned over several passes.
    pub cleaner_dedupe_bytes_max: u64,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1024 * 1024 * 1024,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            retention_ms: 7 * 24 * 60 * 60 * 1000,
            retention_bytes: -1,
            cleanup_policy: CleanupPolicy::default(),
            max_message_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: 3_600_000,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            file_delete_delay_ms: 60_000,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 24 * 60 * 60 * 1000,
            min_cleanable_dirty_ratio: 0.5,
            preallocate: false,
            compression_type: TopicCompression::Producer,
            compression_levels: CompressionLevels::default(),
            decompressed_batch_bytes_max: 64 * 1024 * 1024,
            cleaner_dedupe_bytes_max: 128 * 1024 * 1024,
        }
    }
}

impl LogConfig {
    /// Index capacity in bytes, never below one entry of either index.
    pub(crate) fn index_bytes_max(&self) -> u64 {
        self.segment_index_bytes.max(64)
    }
}
