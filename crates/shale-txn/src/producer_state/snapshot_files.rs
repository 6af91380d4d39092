//! Snapshot files beside the log: `<20-digit offset>.snapshot`, written atomically.
//!
//! A snapshot named after offset N holds the state of the log below N (every batch with an
//! offset < N applied).

use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::manager::ProducerStateManager;
use super::snapshot;
use crate::error::ProducerStateError;

pub const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// What [`shale_durable::replace_file`] names a snapshot while it is written.
const TEMP_SUFFIX: &str = ".snapshot.tmp";

pub fn snapshot_file_name(offset: i64) -> String {
    format!("{offset:020}{SNAPSHOT_SUFFIX}")
}

pub fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(snapshot_file_name(offset))
}

fn parse_snapshot_offset(file_name: &str) -> Option<i64> {
    let digits = file_name.strip_suffix(SNAPSHOT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Offsets of the snapshot files in `dir`, ascending. A missing directory has none.
pub fn list_snapshot_offsets(dir: &Path) -> Result<Vec<i64>, ProducerStateError> {
    let read_dir = match fs::read_dir(dir) {
        Ok(read_dir) => read_dir,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(ProducerStateError::io(dir, error)),
    };
    let mut offsets = Vec::new();
    for item in read_dir {
        let item = item.map_err(|e| ProducerStateError::io(dir, e))?;
        if let Some(offset) = item.file_name().to_str().and_then(parse_snapshot_offset) {
            offsets.push(offset);
        }
    }
    offsets.sort_unstable();
    Ok(offsets)
}

fn sync_dir(dir: &Path) -> Result<(), ProducerStateError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| ProducerStateError::io(dir, e))
}

fn remove_snapshots(dir: &Path, doomed: impl Fn(i64) -> bool) -> Result<usize, ProducerStateError> {
    let mut removed = 0;
    for offset in list_snapshot_offsets(dir)? {
        if doomed(offset) {
            let path = snapshot_path(dir, offset);
            match fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(error) if error.kind() == ErrorKind::NotFound => {}
                Err(error) => return Err(ProducerStateError::io(path, error)),
            }
        }
    }
    if removed > 0 {
        sync_dir(dir)?;
    }
    Ok(removed)
}

/// Deletes snapshots taken after `offset` (for truncation of the log to `offset`).
pub fn delete_snapshots_after(dir: &Path, offset: i64) -> Result<usize, ProducerStateError> {
    remove_snapshots(dir, |snapshot| snapshot > offset)
}

/// Deletes snapshots older than `offset` (for the log start moving forward).
pub fn delete_snapshots_before(dir: &Path, offset: i64) -> Result<usize, ProducerStateError> {
    remove_snapshots(dir, |snapshot| snapshot < offset)
}

/// Keeps only the newest `count` snapshots.
pub fn retain_newest_snapshots(dir: &Path, count: usize) -> Result<usize, ProducerStateError> {
    let offsets = list_snapshot_offsets(dir)?;
    if count == 0 {
        return remove_snapshots(dir, |_| true);
    }
    let Some(&oldest_kept) = offsets
        .len()
        .checked_sub(count)
        .and_then(|i| offsets.get(i))
    else {
        return Ok(0);
    };
    remove_snapshots(dir, |snapshot| snapshot < oldest_kept)
}

/// Removes temporary files left by a crash during [`ProducerStateManager::write_snapshot`].
pub fn remove_temp_snapshot_files(dir: &Path) -> Result<usize, ProducerStateError> {
    let read_dir = match fs::read_dir(dir) {
        Ok(read_dir) => read_dir,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(ProducerStateError::io(dir, error)),
    };
    let mut removed = 0;
    for item in read_dir {
        let item = item.map_err(|e| ProducerStateError::io(dir, e))?;
        let is_temp = item
            .file_name()
            .to_str()
            .is_some_and(|name| name.ends_with(TEMP_SUFFIX));
        if is_temp {
            let path = item.path();
            fs::remove_file(&path).map_err(|e| ProducerStateError::io(path, e))?;
            removed += 1;
        }
    }
    Ok(removed)
}

impl ProducerStateManager {
    /// Writes the state as the snapshot for `offset` (normally [`Self::map_end_offset`]):
    /// temp file, fsync, rename, fsync of the directory.
    pub fn write_snapshot(&self, dir: &Path, offset: i64) -> Result<PathBuf, ProducerStateError> {
        let bytes = snapshot::encode(self, offset);
        let path = snapshot_path(dir, offset);
        shale_durable::replace_file(&path, &bytes)
            .map_err(|e| ProducerStateError::io(e.path.clone(), e.source))?;
        Ok(path)
    }

    /// Reads one snapshot file.
    pub fn read_snapshot(
        path: &Path,
        producer_id_expiration_ms: i64,
    ) -> Result<(Self, i64), ProducerStateError> {
        let bytes = fs::read(path).map_err(|e| ProducerStateError::io(path, e))?;
        snapshot::decode(&bytes, path, producer_id_expiration_ms)
    }

    /// Loads the newest readable snapshot at or below `max_offset`. A corrupt snapshot is
    /// deleted and the next older one tried; with none left the state is empty at offset 0.
    /// Returns the state and the snapshot's offset: the caller replays the log from
    /// `max(snapshot offset, log start offset)` up to its end with [`Self::replay`] /
    /// [`Self::replay_marker`]. Producers already expired at `now_ms` are dropped.
    pub fn load_latest_snapshot(
        dir: &Path,
        max_offset: i64,
        producer_id_expiration_ms: i64,
        now_ms: i64,
    ) -> Result<(Self, i64), ProducerStateError> {
        let offsets = list_snapshot_offsets(dir)?;
        for &offset in offsets.iter().rev().filter(|&&offset| offset <= max_offset) {
            let path = snapshot_path(dir, offset);
            match Self::read_snapshot(&path, producer_id_expiration_ms) {
                Ok((mut state, snapshot_offset)) if snapshot_offset == offset => {
                    state.remove_expired(now_ms);
                    return Ok((state, offset));
                }
                Ok((_, snapshot_offset)) => {
                    tracing::warn!(
                        ?path,
                        snapshot_offset,
                        "producer snapshot names a different offset than its file; deleting it"
                    );
                }
                Err(error @ ProducerStateError::CorruptSnapshot { .. }) => {
                    tracing::warn!(%error, "deleting corrupt producer snapshot");
                }
                Err(error) => return Err(error),
            }
            fs::remove_file(&path).map_err(|e| ProducerStateError::io(&path, e))?;
            sync_dir(dir)?;
        }
        Ok((Self::new(producer_id_expiration_ms), 0))
    }

    /// Rebuild after the log was truncated to end at `log_end_offset` (follower truncation) or
    /// reopened: deletes snapshots above the log end and below the log start, then loads the
    /// newest remaining one into `self`. Returns the offset from which the caller must replay
    /// the log up to `log_end_offset`.
    pub fn truncate_and_reload(
        &mut self,
        dir: &Path,
        log_start_offset: i64,
        log_end_offset: i64,
        now_ms: i64,
    ) -> Result<i64, ProducerStateError> {
        delete_snapshots_after(dir, log_end_offset)?;
        delete_snapshots_before(dir, log_start_offset)?;
        let (state, snapshot_offset) = Self::load_latest_snapshot(
            dir,
            log_end_offset,
            self.producer_id_expiration_ms,
            now_ms,
        )?;
        *self = state;
        let replay_from = snapshot_offset.max(log_start_offset);
        self.map_end_offset = self.map_end_offset.max(replay_from);
        Ok(replay_from)
    }
}
