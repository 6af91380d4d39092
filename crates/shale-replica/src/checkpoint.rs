//! Kafka's `replication-offset-checkpoint`: the high watermark of every partition, one file
//! per log directory, written every `replica.high.watermark.checkpoint.interval.ms` and at
//! shutdown, read when a partition is opened so that a restarted broker does not start its
//! high watermarks from the log start.
//!
//! Layout (Kafka's): a version line `0`, a count line, then `topic partition offset` lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use parking_lot::Mutex;
use shale_log::TopicPartition;

pub const FILE_NAME: &str = "replication-offset-checkpoint";
const VERSION: &str = "0";

/// Parses a checkpoint; `None` when absent or malformed (then nothing is trusted).
pub fn parse(text: &str) -> Option<HashMap<TopicPartition, i64>> {
    let mut lines = text.lines();
    if lines.next()?.trim() != VERSION {
        return None;
    }
    let count: usize = lines.next()?.trim().parse().ok()?;
    let mut out = HashMap::with_capacity(count.min(1 << 16));
    for line in lines.by_ref().take(count) {
        let mut fields = line.split_whitespace();
        let topic = fields.next()?;
        let partition: i32 = fields.next()?.parse().ok()?;
        let offset: i64 = fields.next()?.parse().ok()?;
        out.insert(TopicPartition::new(topic, partition), offset);
    }
    (out.len() == count).then_some(out)
}

pub fn render(entries: &[(TopicPartition, i64)]) -> String {
    let mut text = format!("{VERSION}\n{}\n", entries.len());
    for (tp, offset) in entries {
        text.push_str(&format!("{} {} {offset}\n", tp.topic, tp.partition));
    }
    text
}

/// Replaces the checkpoint of `log_dir` durably (temporary file, fsync, rename, fsync of the
/// directory).
pub fn write(log_dir: &Path, entries: &[(TopicPartition, i64)]) -> std::io::Result<()> {
    shale_durable::replace_file(&log_dir.join(FILE_NAME), render(entries).as_bytes())?;
    // A broker restarted in the same process reads what was last written.
    loaded()
        .lock()
        .insert(log_dir.to_path_buf(), entries.iter().cloned().collect());
    Ok(())
}

/// Checkpoints read at start-up, by log directory (each file is read once).
fn loaded() -> &'static Mutex<HashMap<PathBuf, HashMap<TopicPartition, i64>>> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, HashMap<TopicPartition, i64>>>> =
        OnceLock::new();
    LOADED.get_or_init(Default::default)
}

/// The checkpointed high watermark of the partition whose log lives in `partition_dir`.
pub fn lookup(partition_dir: &Path, tp: &TopicPartition) -> Option<i64> {
    let log_dir = partition_dir.parent()?;
    let mut loaded = loaded().lock();
    let entries = loaded.entry(log_dir.to_path_buf()).or_insert_with(|| {
        std::fs::read_to_string(log_dir.join(FILE_NAME))
            .ok()
            .and_then(|text| parse(&text))
            .unwrap_or_default()
    });
    entries.get(tp).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_kafkas_layout() {
        let entries = vec![
            (TopicPartition::new("orders", 0), 42),
            (TopicPartition::new("__consumer_offsets", 7), 0),
        ];
        let text = render(&entries);
        assert_eq!(text, "0\n2\norders 0 42\n__consumer_offsets 7 0\n");
        let parsed = parse(&text).unwrap();
        assert_eq!(parsed[&TopicPartition::new("orders", 0)], 42);
        assert_eq!(parsed.len(), 2);
    }

    #[test]
    fn a_malformed_or_short_file_is_not_trusted() {
        assert!(parse("1\n0\n").is_none());
        assert!(parse("0\n2\norders 0 42\n").is_none());
        assert!(parse("0\n1\norders zero 42\n").is_none());
    }

    #[test]
    fn written_files_are_found_for_their_partitions() {
        let dir = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("t", 3);
        write(dir.path(), &[(tp.clone(), 9)]).unwrap();
        let partition_dir = dir.path().join(tp.dir_name());
        assert_eq!(lookup(&partition_dir, &tp), Some(9));
        assert_eq!(lookup(&partition_dir, &TopicPartition::new("t", 4)), None);
    }
}
