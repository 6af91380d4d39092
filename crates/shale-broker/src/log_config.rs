//! Turns a topic's effective configuration (topic-level names such as `retention.ms`) into the
//! log engine's `LogConfig`.

use shale_log::{CleanupPolicy, Compression, LogConfig, TimestampType, TopicCompression};

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
    if let Some(t) = resolve("compression.type").and_then(|v| topic_compression(&v)) {
        c.compression_type = t;
    }
    let level = |name: &str, min: i64, max: i64| {
        int(name)
            .filter(|v| (min..=max).contains(v))
            .map(|v| v as i32)
    };
    let levels = &mut c.compression_levels;
    if let Some(v) = level("compression.gzip.level", -1, 9).filter(|v| *v != 0) {
        levels.gzip = v;
    }
    if let Some(v) = level("compression.lz4.level", 1, 17) {
        levels.lz4 = v;
    }
    if let Some(v) = level("compression.zstd.level", -131_072, 22) {
        levels.zstd = v;
    }
    c
}

/// Kafka's `compression.type` names; `None` for anything else.
fn topic_compression(name: &str) -> Option<TopicCompression> {
    let codec = match name.trim().to_ascii_lowercase().as_str() {
        "producer" => return Some(TopicCompression::Producer),
        "uncompressed" => Compression::None,
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        _ => return None,
    };
    Some(TopicCompression::Codec(codec))
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
        assert_eq!(c.compression_type, TopicCompression::Producer);
    }

    #[test]
    fn compression_type_and_levels_reach_the_log_config() {
        let c = log_config_from(|name| match name {
            "compression.type" => Some("zstd".into()),
            "compression.gzip.level" => Some("1".into()),
            "compression.lz4.level" => Some("99".into()),
            "compression.zstd.level" => Some("-5".into()),
            _ => None,
        });
        assert_eq!(
            c.compression_type,
            TopicCompression::Codec(Compression::Zstd)
        );
        assert_eq!(c.compression_levels.gzip, 1);
        assert_eq!(
            c.compression_levels.lz4, 9,
            "out of range keeps the default"
        );
        assert_eq!(c.compression_levels.zstd, -5);
        for (name, codec) in [
            ("uncompressed", Compression::None),
            ("gzip", Compression::Gzip),
            ("snappy", Compression::Snappy),
            ("lz4", Compression::Lz4),
        ] {
            assert_eq!(
                topic_compression(name),
                Some(TopicCompression::Codec(codec))
            );
        }
        assert_eq!(
            topic_compression("producer"),
            Some(TopicCompression::Producer)
        );
        assert_eq!(topic_compression("brotli"), None);
    }
}
