#![allow(dead_code, clippy::unwrap_used)]

use shale_log::records::BatchBuilder;
use shale_log::{parse_batches, CleanupPolicy, Compression, LogConfig, LogManager};

pub const NOW: i64 = 1_700_000_000_000;

/// A batch of `n` records with values `"{tag}-{i}"`, timestamps NOW+i.
pub fn batch(n: usize, tag: &str) -> Vec<u8> {
    batch_at(n, tag, NOW)
}

pub fn batch_at(n: usize, tag: &str, ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(ts);
    for i in 0..n {
        let v = format!("{tag}-{i}");
        b.push(
            ts + i as i64,
            Some(format!("k{i}").as_bytes()),
            Some(v.as_bytes()),
        );
    }
    b.build().unwrap()
}

pub fn keyed(records: &[(Option<&str>, Option<&str>)], c: Compression, ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(ts).compression(c);
    for (k, v) in records {
        b.push(ts, k.map(str::as_bytes), v.map(str::as_bytes));
    }
    b.build().unwrap()
}

/// A batch whose encoded size is exactly about `size` bytes (one record).
pub fn sized_batch(size: usize) -> Vec<u8> {
    let payload = vec![b'x'; size.saturating_sub(61 + 12)];
    let mut b = BatchBuilder::new(NOW);
    b.push(NOW, None, Some(&payload));
    b.build().unwrap()
}

pub fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        index_interval_bytes: 128,
        segment_index_bytes: 4096,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

/// Base offsets of every batch in `bytes`.
pub fn offsets(bytes: &[u8]) -> Vec<i64> {
    parse_batches(bytes)
        .unwrap()
        .iter()
        .map(|h| h.base_offset)
        .collect()
}

/// Marks everything written to the logs of `m` as committed. The broker's partitions set the
/// high watermark as replication moves it; these tests have no broker, and retention and the
/// cleaner never go past the high watermark.
pub fn commit_all(m: &LogManager) {
    for (_, log) in m.all() {
        log.set_high_watermark(log.log_end_offset());
    }
}

/// A compacted log that is always dirty enough to clean, with small segments deleted at once.
pub fn compacted_config() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        min_cleanable_dirty_ratio: 0.0,
        segment_bytes: 1 << 20,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}
