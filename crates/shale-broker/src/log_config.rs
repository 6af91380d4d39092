//! Turns a topic's effective configuration (topic-level names such as `retention.ms`) into the
//! log engine's `LogConfig`.

use shale_log::{CleanupPolicy, LogConfig, TimestampType};

/// Builds a `LogConfig` from a resolver of topic-level config names. Values the resolver does
/// not know, or cannot parse, keep the log engine's Kafka defaults.
pub fn log_config_from(resolve: impl Fn(&str) -> Option<String>) -> LogConfig {
    let mut c = LogConfig::default();
    let int = |name: &str| resolve(name).and_then(|v| v.trim().parse::<i64>().ok());
    if let Some(v) = int("segment.bytes") {
        c.segment_bytes = v.max(0) as u64;
    }
    if let Some(v) = int("segment.ms") {
        c.segment_ms = v;
    }
    if let Some(v) = int("segment.index.bytes") {
        c.segment_index_bytes = v.max(0) as u64;
    }
    if let Some(v) = int("index.interval.bytes") {
        c.index_interval_bytes = v.max(0) as u64;
    }
    if let Some(v) = int("retention.ms") {
        c.retention_ms = v;
    }
    if let Some(v) = int("retention.bytes") {
        c.retention_bytes = v;
    }
    if let Some(v) = resolve("cleanup.policy") {
        let parts: Vec<String> = v
            .split(',')
            .map(|p| p.trim().to_ascii_lowercase())
            .collect();
        c.cleanup_policy = CleanupPolicy {
            delete: parts.iter().any(|p| p == "delete"),
            compact: parts.iter().any(|p| p == "compact"),
        };
    }
    if let Some(v) = int("max.message.bytes") {
        c.max_message_bytes = v.max(0) as u64;
    }
    if let Some(v) = resolve("message.timestamp.type") {
        c.message_timestamp_type = if v.trim().eq_ignore_ascii_case("LogAppendTime") {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        };
    }
    if let Some(v) = int("message.timestamp.before.max.ms") {
        c.message_timestamp_before_max_ms = v;
    }
    if let Some(v) = int("message.timestamp.after.max.ms") {
        c.message_timestamp_after_max_ms = v;
    }
    if let Some(v) = int("flush.messages") {
        c.flush_messages = v;
    }
    if let Some(v) = int("flush.ms") {
        c.flush_ms = v;
    }
    if let Some(v) = int("file.delete.delay.ms") {
        c.file_delete_delay_ms = v;
    }
    if let Some(v) = int("min.compaction.lag.ms") {
        c.min_compaction_lag_ms = v;
    }
    if let Some(v) = int("max.compaction.lag.ms") {
        c.max_compaction_lag_ms = v;
    }
    if let Some(v) = int("delete.retention.ms") {
        c.delete_retention_ms = v;
    }
    if let Some(v) = resolve("min.cleanable.dirty.ratio").and_then(|v| v.trim().parse().ok()) {
        c.min_cleanable_dirty_ratio = v;
    }
    if let Some(v) = int("max.decompressed.message.bytes") {
        c.decompressed_batch_bytes_max = v.max(1) as u64;
    }
    if let Some(v) = resolve("preallocate") {
        c.preallocate = v.trim().eq_ignore_ascii_case("true");
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_values_reach_the_log_config() {
        let c = log_config_from(|name| match name {
            "retention.ms" => Some("1000".into()),
            "cleanup.policy" => Some("compact,delete".into()),
            "message.timestamp.type" => Some("LogAppendTime".into()),
            "max.message.bytes" => Some("garbage".into()),
            _ => None,
        });
        assert_eq!(c.retention_ms, 1000);
        assert!(c.cleanup_policy.compact && c.cleanup_policy.delete);
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(c.max_message_bytes, LogConfig::default().max_message_bytes);
    }
}
