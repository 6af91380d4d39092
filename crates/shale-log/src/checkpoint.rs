//! Small text files written atomically (temp file, fsync, rename, fsync of the directory):
//! per-directory offset checkpoints and the per-partition leader-epoch checkpoint, both in
//! Kafka's format (`version`, `count`, then one entry per line).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::Path;

use crate::error::LogError;
use crate::TopicPartition;

/// Entries beyond this count mean the file is not ours or is corrupt.
const CHECKPOINT_ENTRIES_MAX: usize = 10_000_000;

pub(crate) fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

pub(crate) fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    Ok(shale_durable::replace_file(path, contents)?)
}

fn corrupt(path: &Path, reason: &str) -> LogError {
    LogError::CorruptFile {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// Reads `version\ncount\n<fields...>` and returns each entry's fields.
fn read_lines(path: &Path, fields: usize) -> Result<Option<Vec<Vec<String>>>, LogError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("0") {
        return Err(corrupt(path, "unknown version"));
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| corrupt(path, "bad entry count"))?;
    if count > CHECKPOINT_ENTRIES_MAX {
        return Err(corrupt(path, "entry count too large"));
    }
    let mut out = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let line = lines.next().ok_or_else(|| corrupt(path, "missing entry"))?;
        let parts: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        if parts.len() != fields {
            return Err(corrupt(path, "bad entry"));
        }
        out.push(parts);
    }
    Ok(Some(out))
}

pub(crate) fn read_offsets(path: &Path) -> Result<HashMap<TopicPartition, i64>, LogError> {
    let mut out = HashMap::new();
    for parts in read_lines(path, 3)?.unwrap_or_default() {
        let partition: i32 = parts[1]
            .parse()
            .map_err(|_| corrupt(path, "bad partition"))?;
        let offset: i64 = parts[2].parse().map_err(|_| corrupt(path, "bad offset"))?;
        if offset < 0 || partition < 0 {
            return Err(corrupt(path, "negative value"));
        }
        out.insert(TopicPartition::new(parts[0].clone(), partition), offset);
    }
    Ok(out)
}

pub(crate) fn write_offsets(path: &Path, entries: &[(TopicPartition, i64)]) -> io::Result<()> {
    let mut s = format!("0\n{}\n", entries.len());
    for (tp, o) in entries {
        s.push_str(&format!("{} {} {}\n", tp.topic, tp.partition, o));
    }
    write_atomic(path, s.as_bytes())
}

pub(crate) fn read_epochs(path: &Path) -> Result<Option<Vec<(i32, i64)>>, LogError> {
    let Some(lines) = read_lines(path, 2)? else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(lines.len());
    for parts in lines {
        let epoch: i32 = parts[0].parse().map_err(|_| corrupt(path, "bad epoch"))?;
        let offset: i64 = parts[1].parse().map_err(|_| corrupt(path, "bad offset"))?;
        if epoch < 0 || offset < 0 {
            return Err(corrupt(path, "negative value"));
        }
        if let Some(&(pe, po)) = out.last() {
            if epoch <= pe || offset < po {
                return Err(corrupt(path, "entries not increasing"));
            }
        }
        out.push((epoch, offset));
    }
    Ok(Some(out))
}

pub(crate) fn write_epochs(path: &Path, entries: &[(i32, i64)]) -> io::Result<()> {
    let mut s = format!("0\n{}\n", entries.len());
    for (e, o) in entries {
        s.push_str(&format!("{e} {o}\n"));
    }
    write_atomic(path, s.as_bytes())
}

/// One per-directory offset checkpoint file shared by its logs, so a log can persist its own
/// entry at once (the log start offset after DeleteRecords must survive a crash).
pub(crate) struct OffsetCheckpointFile {
    path: std::path::PathBuf,
    entries: parking_lot::Mutex<std::collections::BTreeMap<TopicPartition, i64>>,
}

impl OffsetCheckpointFile {
    pub(crate) fn new(path: std::path::PathBuf, initial: HashMap<TopicPartition, i64>) -> Self {
        OffsetCheckpointFile {
            path,
            entries: parking_lot::Mutex::new(initial.into_iter().collect()),
        }
    }

    fn write(&self, entries: &std::collections::BTreeMap<TopicPartition, i64>) -> io::Result<()> {
        let v: Vec<(TopicPartition, i64)> = entries.iter().map(|(k, v)| (k.clone(), *v)).collect();
        write_offsets(&self.path, &v)
    }

    /// Updates one entry and rewrites the file if it changed.
    pub(crate) fn set(&self, tp: &TopicPartition, offset: i64) -> io::Result<()> {
        let mut e = self.entries.lock();
        if e.get(tp) == Some(&offset) {
            return Ok(());
        }
        e.insert(tp.clone(), offset);
        self.write(&e)
    }

    /// Replaces every entry and rewrites the file.
    pub(crate) fn replace(&self, all: Vec<(TopicPartition, i64)>) -> io::Result<()> {
        let mut e = self.entries.lock();
        *e = all.into_iter().collect();
        self.write(&e)
    }
}
