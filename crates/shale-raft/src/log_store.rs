//! The Raft log in append-only segment files, plus the vote and the committed marker.
//!
//! Layout under `<data_dir>/log/`:
//! - `<first index, 20 digits>.log`: frames of `len u32 | crc32c u32 | bincode(Entry)`;
//! - `vote`: the current vote, written atomically and fsynced (a lost vote could let this node
//!   vote twice in one term);
//! - `purged`: the id of the last purged entry, written atomically and fsynced before any segment
//!   is deleted;
//! - `committed`: the last known committed id, written atomically but not fsynced: it only lets a
//!   restarted node re-apply entries before it hears from a leader, and an older value is safe.
//!
//! All non-purged entries are also held in memory: the metadata log is small and snapshots bound
//! its length. Appends are fsynced before openraft is told they are durable. A damaged tail of the
//! newest segment (a write torn by a crash) is truncated at start-up; damage anywhere else is
//! reported as corruption.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{OptionalSend, RaftLogId, RaftLogReader, StorageIOError};

use crate::codec::{self, FrameRead};
use crate::error::RaftError;
use crate::fsutil;
use crate::types::{Entry, LogId, StorageError, TypeConfig, Vote};

/// A new segment is started once the active one reaches this size.
pub const SEGMENT_BYTES_MAX: u64 = 8 * 1024 * 1024;

const SEGMENT_SUFFIX: &str = ".log";

#[derive(Debug)]
struct Segment {
    path: PathBuf,
    len_bytes: u64,
}

#[derive(Debug)]
struct StoredEntry {
    entry: Entry,
    /// First index of the segment holding the entry and the entry's byte offset in it.
    segment_first_index: u64,
    offset_bytes: u64,
}

#[derive(Debug)]
struct LogInner {
    dir: PathBuf,
    entries: BTreeMap<u64, StoredEntry>,
    segments: BTreeMap<u64, Segment>,
    /// Open handle of the newest segment, if appends may continue in it.
    active: Option<(u64, File)>,
    last_purged: Option<LogId>,
    vote: Option<Vote>,
    committed: Option<LogId>,
}

/// File-backed [`RaftLogStorage`]; cheap to clone, clones share the same log.
#[derive(Debug, Clone)]
pub struct LogStore {
    inner: Arc<Mutex<LogInner>>,
}

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

fn segment_path(dir: &Path, first_index: u64) -> PathBuf {
    dir.join(format!("{first_index:020}{SEGMENT_SUFFIX}"))
}

impl LogStore {
    /// Opens (creating if needed) the log under `dir`, repairing a torn tail.
    pub fn open(dir: &Path) -> Result<Self, RaftError> {
        fs::create_dir_all(dir)?;
        let last_purged: Option<LogId> = read_value(&dir.join("purged"))?;
        let vote: Option<Vote> = read_value(&dir.join("vote"))?;
        let committed: Option<LogId> = match read_value(&dir.join("committed")) {
            Ok(committed) => committed,
            // Only a hint: an unreadable marker is dropped rather than blocking start-up.
            Err(e) => {
                tracing::warn!(error = %e, "ignoring unreadable committed marker");
                None
            }
        };

        let mut firsts = Vec::new();
        for item in fs::read_dir(dir)? {
            let name = item?.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(stem) = name.strip_suffix(SEGMENT_SUFFIX) {
                if let Ok(first) = stem.parse::<u64>() {
                    firsts.push(first);
                }
            }
        }
        firsts.sort_unstable();

        let mut inner = LogInner {
            dir: dir.to_path_buf(),
            entries: BTreeMap::new(),
            segments: BTreeMap::new(),
            active: None,
            last_purged,
            vote,
            committed,
        };
        let purged_index = last_purged.map(|id| id.index);
        let segment_count = firsts.len();
        for (position, first) in firsts.into_iter().enumerate() {
            let is_newest = position + 1 == segment_count;
            inner.load_segment(first, is_newest, purged_index)?;
        }
        if let Some((&first, segment)) = inner.segments.iter().next_back() {
            let file = OpenOptions::new().append(true).open(&segment.path)?;
            inner.active = Some((first, file));
        }
        Ok(Self {
            inner: Arc::new(Mutex::new(inner)),
        })
    }

    fn lock(&self) -> MutexGuard<'_, LogInner> {
        // A panic while holding the lock leaves the in-memory view possibly ahead of the files;
        // continuing is still safe because every file change is completed before memory changes.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Committed entries in `[from_index, up_to_index]`, at most `max_entries`, for observers.
    /// `Err(first)` when `from_index` was purged and the reader needs a snapshot first.
    pub fn read_range(
        &self,
        from_index: u64,
        up_to_index: u64,
        max_entries: usize,
    ) -> Result<Vec<Entry>, u64> {
        let inner = self.lock();
        let purged_next = inner.last_purged.map_or(0, |id| id.index + 1);
        if from_index < purged_next {
            return Err(purged_next);
        }
        Ok(inner
            .entries
            .range(from_index..=up_to_index)
            .take(max_entries)
            .map(|(_, stored)| stored.entry.clone())
            .collect())
    }
}

fn read_value<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, RaftError> {
    let corrupt = |reason: String| RaftError::Corrupt {
        path: path.display().to_string(),
        reason,
    };
    match fsutil::read_checked(path) {
        Ok(None) => Ok(None),
        Ok(Some(bytes)) => codec::decode::<T>(&bytes)
            .map(Some)
            .map_err(|e| corrupt(e.to_string())),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(corrupt(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

fn write_value<T: serde::Serialize>(path: &Path, value: &T, durable: bool) -> io::Result<()> {
    let bytes = codec::encode(value).map_err(io_err)?;
    fsutil::write_atomic(path, &bytes, durable)
}

impl LogInner {
    fn load_segment(
        &mut self,
        first: u64,
        is_newest: bool,
        purged_index: Option<u64>,
    ) -> Result<(), RaftError> {
        let path = segment_path(&self.dir, first);
        let data = fs::read(&path)?;
        let mut offset = 0usize;
        let mut expected_index = first;
        let damage = loop {
            let (payload, next) = match codec::read_frame(&data, offset) {
                FrameRead::End => break None,
                FrameRead::Damaged(reason) => break Some(reason.to_string()),
                FrameRead::Frame { payload, next } => (payload, next),
            };
            let entry: Entry = match codec::decode(payload) {
                Ok(entry) => entry,
                Err(e) => break Some(format!("undecodable entry: {e}")),
            };
            let index = entry.get_log_id().index;
            if index != expected_index {
                break Some(format!("entry index {index}, expected {expected_index}"));
            }
            let keep = purged_index.is_none_or(|purged| index > purged);
            if keep {
                if let Some((&last, _)) = self.entries.iter().next_back() {
                    if last + 1 != index {
                        return Err(RaftError::Corrupt {
                            path: path.display().to_string(),
                            reason: format!("gap in log: entry {index} follows {last}"),
                        });
                    }
                }
                self.entries.insert(
                    index,
                    StoredEntry {
                        entry,
                        segment_first_index: first,
                        offset_bytes: offset as u64,
                    },
                );
            }
            expected_index += 1;
            offset = next;
        };
        if let Some(reason) = damage {
            if !is_newest {
                return Err(RaftError::Corrupt {
                    path: path.display().to_string(),
                    reason,
                });
            }
            tracing::warn!(
                path = %path.display(),
                offset,
                reason,
                "truncating torn tail of the raft log"
            );
            let file = OpenOptions::new().write(true).open(&path)?;
            file.set_len(offset as u64)?;
            file.sync_all()?;
        }
        self.segments.insert(
            first,
            Segment {
                path,
                len_bytes: offset as u64,
            },
        );
        Ok(())
    }

    fn last_log_id(&self) -> Option<LogId> {
        self.entries
            .values()
            .next_back()
            .map(|stored| *stored.entry.get_log_id())
            .or(self.last_purged)
    }

    fn append(&mut self, entries: Vec<Entry>) -> io::Result<()> {
        let Some(first_new) = entries.first().map(|e| e.get_log_id().index) else {
            return Ok(());
        };
        let expected = self.last_log_id().map_or(0, |id| id.index + 1);
        if first_new != expected && !(self.entries.is_empty() && self.last_purged.is_none()) {
            return Err(io_err(format!(
                "append at index {first_new}, log expects {expected}"
            )));
        }
        let needs_new_segment = match &self.active {
            None => true,
            Some((first, _)) => self
                .segments
                .get(first)
                .is_none_or(|segment| segment.len_bytes >= SEGMENT_BYTES_MAX),
        };
        if needs_new_segment {
            let path = segment_path(&self.dir, first_new);
            let file = OpenOptions::new().create(true).append(true).open(&path)?;
            file.set_len(0)?;
            fsutil::fsync_dir(&self.dir)?;
            self.segments
                .insert(first_new, Segment { path, len_bytes: 0 });
            self.active = Some((first_new, file));
        }
        let Some((segment_first, file)) = self.active.as_mut() else {
            return Err(io_err("no active segment"));
        };
        let segment_first = *segment_first;
        let start = self.segments.get(&segment_first).map_or(0, |s| s.len_bytes);

        let mut buf = Vec::new();
        let mut offsets = Vec::with_capacity(entries.len());
        for entry in &entries {
            offsets.push(start + buf.len() as u64);
            let payload = codec::encode(entry).map_err(io_err)?;
            codec::put_frame(&mut buf, &payload);
        }
        file.write_all(&buf)?;
        file.sync_data()?;

        if let Some(segment) = self.segments.get_mut(&segment_first) {
            segment.len_bytes = start + buf.len() as u64;
        }
        for (entry, offset_bytes) in entries.into_iter().zip(offsets) {
            self.entries.insert(
                entry.get_log_id().index,
                StoredEntry {
                    entry,
                    segment_first_index: segment_first,
                    offset_bytes,
                },
            );
        }
        Ok(())
    }

    /// Removes entries at `index` and after, on disk first.
    fn truncate(&mut self, index: u64) -> io::Result<()> {
        let Some(stored) = self.entries.get(&index) else {
            return Ok(());
        };
        let (cut_segment, cut_offset) = (stored.segment_first_index, stored.offset_bytes);
        self.active = None;
        let later: Vec<u64> = self
            .segments
            .range(cut_segment + 1..)
            .map(|(first, _)| *first)
            .collect();
        for first in later.into_iter().rev() {
            if let Some(segment) = self.segments.remove(&first) {
                fs::remove_file(&segment.path)?;
            }
        }
        if let Some(segment) = self.segments.get_mut(&cut_segment) {
            let file = OpenOptions::new().write(true).open(&segment.path)?;
            file.set_len(cut_offset)?;
            file.sync_all()?;
            segment.len_bytes = cut_offset;
            let append = OpenOptions::new().append(true).open(&segment.path)?;
            self.active = Some((cut_segment, append));
        }
        fsutil::fsync_dir(&self.dir)?;
        self.entries.split_off(&index);
        Ok(())
    }

    /// Drops entries up to and including `log_id`; deletes segments holding nothing newer.
    fn purge(&mut self, log_id: LogId) -> io::Result<()> {
        if self
            .last_purged
            .is_some_and(|purged| purged.index >= log_id.index)
        {
            return Ok(());
        }
        write_value(&self.dir.join("purged"), &log_id, true)?;
        self.last_purged = Some(log_id);
        let keep = self.entries.split_off(&(log_id.index + 1));
        self.entries = keep;

        let firsts: Vec<u64> = self.segments.keys().copied().collect();
        for (position, first) in firsts.iter().enumerate() {
            // A segment is obsolete when every entry in it is purged: the next segment starts at
            // or before the first surviving index, or (for the newest) the whole log is purged.
            let obsolete = match firsts.get(position + 1) {
                Some(next_first) => *next_first <= log_id.index + 1,
                None => self.entries.is_empty(),
            };
            if !obsolete {
                continue;
            }
            if let Some(segment) = self.segments.remove(first) {
                if self
                    .active
                    .as_ref()
                    .is_some_and(|(active, _)| active == first)
                {
                    self.active = None;
                }
                fs::remove_file(&segment.path)?;
            }
        }
        fsutil::fsync_dir(&self.dir)?;
        Ok(())
    }
}

/// Read handle given to openraft's replication tasks.
#[derive(Debug, Clone)]
pub struct LogReader {
    store: LogStore,
}

impl RaftLogReader<TypeConfig> for LogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        self.store.try_get_log_entries(range).await
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let inner = self.lock();
        Ok(inner
            .entries
            .range(range)
            .map(|(_, stored)| stored.entry.clone())
            .collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let inner = self.lock();
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: inner.last_log_id(),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        LogReader {
            store: self.clone(),
        }
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let mut inner = self.lock();
        write_value(&inner.dir.join("vote"), vote, true)
            .map_err(|e| StorageIOError::write_vote(&e))?;
        inner.vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.lock().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let mut inner = self.lock();
        if let Some(committed) = committed {
            write_value(&inner.dir.join("committed"), &committed, false)
                .map_err(|e| StorageIOError::write(&e))?;
        }
        inner.committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        let inner = self.lock();
        // Never report a committed id beyond what this log (or the purge point) covers.
        Ok(inner
            .committed
            .filter(|committed| inner.last_log_id().is_some_and(|last| last >= *committed)))
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let result = self.lock().append(entries);
        match result {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let storage_error = StorageIOError::write_logs(&e);
                callback.log_io_completed(Err(e));
                Err(storage_error.into())
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.lock()
            .truncate(log_id.index)
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.lock()
            .purge(log_id)
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}
