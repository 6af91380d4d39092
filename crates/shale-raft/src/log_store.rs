//! The Raft log in append-only segment files, plus the vote and the committed marker.
//!
//! Layout under `<data_dir>/log/`:
//! - `<first index, 20 digits>.log`: the header [`SEGMENT_MAGIC`] + format version (u16 BE),
//!   then frames of `len u32 | crc32c u32 | entry` with the entry in the versioned encoding
//!   (`encoding`). A segment without the header was written by bincode (the first format): it
//!   is read as such, never appended to (appends start a new segment), and goes away with
//!   purging;
//! - `vote`, `purged`, `committed`: `[crc32c][`VALUE_MAGIC` + format version u8][value]`; a file
//!   without the magic holds the value as bincode wrote it, and `vote` and `purged` are
//!   rewritten in the new format when the log opens;
//! - `vote`: the current vote, written atomically and fsynced (a lost vote could let this node
//!   vote twice in one term);
//! - `purged`: the id of the last purged entry, written atomically and fsynced before any segment
//!   is deleted;
//! - `committed`: the last known committed id, overwritten in place with a checksum and not
//!   fsynced (a torn write is detected and ignored): it only lets a
//!   restarted node re-apply entries before it hears from a leader, and an older value is safe.
//!
//! All non-purged entries are also held in memory: the metadata log is small and snapshots bound
//! its length. Appends are fsynced before openraft is told they are durable, by a flusher thread
//! that covers all appends queued during one fsync with the next (group commit). A damaged tail of the
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
use crate::encoding::{self, Decode, DecodeError, Encode};
use crate::error::RaftError;
use crate::fsutil;
use crate::legacy::LegacyReader;
use crate::openraft_codec::legacy;
use crate::types::{Entry, LogId, StorageError, TypeConfig, Vote};

/// A new segment is started once the active one reaches this size.
pub const SEGMENT_BYTES_MAX: u64 = 8 * 1024 * 1024;

const SEGMENT_SUFFIX: &str = ".log";

/// First bytes of a segment in the versioned format. Read as a bincode-era frame length it
/// would exceed any frame's limit, so no segment of the first format starts with it.
pub const SEGMENT_MAGIC: &[u8; 6] = b"SHRLOG";
const SEGMENT_FORMAT_VERSION: u16 = 1;
const SEGMENT_HEADER_BYTES: usize = SEGMENT_MAGIC.len() + 2;

/// First bytes of the vote, purged and committed files in the versioned format, followed by
/// [`VALUE_FORMAT_VERSION`]. A bincode-era file starts with a term, which never reaches these
/// bytes' value (about 1.4 billion) in practice.
const VALUE_MAGIC: &[u8; 4] = b"SHRS";
const VALUE_FORMAT_VERSION: u8 = 1;

/// How a segment's entries are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SegmentFormat {
    /// Written by bincode before the versioned encoding: read only.
    Legacy,
    Versioned,
}

impl SegmentFormat {
    /// An empty file counts as versioned: its header is written with its first entry.
    fn of(data: &[u8]) -> Self {
        let probe = &SEGMENT_MAGIC[..4];
        if data.is_empty() || data.starts_with(probe) || probe.starts_with(data) {
            SegmentFormat::Versioned
        } else {
            SegmentFormat::Legacy
        }
    }
}

fn segment_header() -> Vec<u8> {
    let mut header = SEGMENT_MAGIC.to_vec();
    header.extend_from_slice(&SEGMENT_FORMAT_VERSION.to_be_bytes());
    header
}

#[derive(Debug)]
struct Segment {
    path: PathBuf,
    len_bytes: u64,
    format: SegmentFormat,
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
    active: Option<(u64, Arc<File>)>,
    last_purged: Option<LogId>,
    vote: Option<Vote>,
    committed: Option<LogId>,
    /// Open handle of the committed marker, overwritten in place on every commit.
    committed_file: Option<File>,
    segment_bytes_max: u64,
}

/// File-backed [`RaftLogStorage`]; cheap to clone, clones share the same log.
#[derive(Debug, Clone)]
pub struct LogStore {
    inner: Arc<Mutex<LogInner>>,
    flusher: std::sync::mpsc::Sender<FlushRequest>,
}

/// Appended entries waiting for their segment to be synced.
struct FlushRequest {
    file: Arc<File>,
    callback: LogFlushed<TypeConfig>,
}

/// Group commit: every append queued while one fsync runs is covered by the next single fsync,
/// so concurrent proposals share the disk's sync latency. Runs on its own thread because fsync
/// blocks; ends when the last [`LogStore`] clone is dropped.
fn run_flusher(requests: std::sync::mpsc::Receiver<FlushRequest>) {
    while let Ok(first) = requests.recv() {
        let mut batch = vec![first];
        while let Ok(more) = requests.try_recv() {
            batch.push(more);
        }
        let mut synced: Vec<&Arc<File>> = Vec::new();
        let mut failure: Option<io::Error> = None;
        for request in &batch {
            if synced.iter().any(|file| Arc::ptr_eq(file, &request.file)) {
                continue;
            }
            if let Err(e) = request.file.sync_data() {
                failure = Some(e);
                break;
            }
            synced.push(&request.file);
        }
        for request in batch {
            let result = match &failure {
                None => Ok(()),
                Some(e) => Err(io::Error::new(e.kind(), e.to_string())),
            };
            request.callback.log_io_completed(result);
        }
    }
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
        Self::open_with_segment_bytes(dir, SEGMENT_BYTES_MAX)
    }

    fn open_with_segment_bytes(dir: &Path, segment_bytes_max: u64) -> Result<Self, RaftError> {
        fs::create_dir_all(dir)?;
        let last_purged = read_value(&dir.join("purged"), legacy::log_id)?;
        let vote = read_value(&dir.join("vote"), legacy::vote)?;
        // Carry the first format's files over, so only the segments still need the old reader.
        if let Some(Stored {
            value,
            legacy: true,
        }) = &last_purged
        {
            write_value(&dir.join("purged"), value, true)?;
        }
        if let Some(Stored {
            value,
            legacy: true,
        }) = &vote
        {
            write_value(&dir.join("vote"), value, true)?;
        }
        let last_purged = last_purged.map(|stored| stored.value);
        let vote = vote.map(|stored| stored.value);
        let committed = match read_value(&dir.join("committed"), legacy::log_id) {
            Ok(committed) => committed.map(|stored| stored.value),
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
            committed_file: None,
            segment_bytes_max,
        };
        let purged_index = last_purged.map(|id| id.index);
        let segment_count = firsts.len();
        for (position, first) in firsts.into_iter().enumerate() {
            let is_newest = position + 1 == segment_count;
            inner.load_segment(first, is_newest, purged_index)?;
        }
        if let Some((&first, segment)) = inner.segments.iter().next_back() {
            if segment.format == SegmentFormat::Versioned {
                let file = OpenOptions::new().append(true).open(&segment.path)?;
                inner.active = Some((first, Arc::new(file)));
            }
        }
        let (flusher, requests) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("raft-log-flush".into())
            .spawn(move || run_flusher(requests))?;
        Ok(Self {
            inner: Arc::new(Mutex::new(inner)),
            flusher,
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

/// A value read from one of the log's small files, and whether it was in the first format.
pub(crate) struct Stored<T> {
    pub value: T,
    pub legacy: bool,
}

/// The payload of a small file: [`VALUE_MAGIC`], the format version, the value.
pub(crate) fn encode_value<T: Encode>(value: &T) -> Vec<u8> {
    let mut out = VALUE_MAGIC.to_vec();
    out.push(VALUE_FORMAT_VERSION);
    value.encode(&mut out);
    out
}

pub(crate) fn decode_value<T: Decode>(
    bytes: &[u8],
    legacy: fn(&mut LegacyReader<'_>) -> Result<T, DecodeError>,
) -> Result<Stored<T>, String> {
    let Some(rest) = bytes.strip_prefix(VALUE_MAGIC) else {
        let mut reader = LegacyReader::new(bytes);
        let value = legacy(&mut reader).map_err(|e| format!("bincode-era value: {e}"))?;
        return Ok(Stored {
            value,
            legacy: true,
        });
    };
    match rest.split_first() {
        Some((&VALUE_FORMAT_VERSION, encoded)) => encoding::from_slice(encoded)
            .map(|value| Stored {
                value,
                legacy: false,
            })
            .map_err(|e| e.to_string()),
        Some((version, _)) => Err(format!(
            "format version {version} is newer than this build reads ({VALUE_FORMAT_VERSION})"
        )),
        None => Err("no format version".into()),
    }
}

fn read_value<T: Decode>(
    path: &Path,
    legacy: fn(&mut LegacyReader<'_>) -> Result<T, DecodeError>,
) -> Result<Option<Stored<T>>, RaftError> {
    let corrupt = |reason: String| RaftError::Corrupt {
        path: path.display().to_string(),
        reason,
    };
    match fsutil::read_checked(path) {
        Ok(None) => Ok(None),
        Ok(Some(bytes)) => decode_value(&bytes, legacy).map(Some).map_err(corrupt),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(corrupt(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

fn write_value<T: Encode>(path: &Path, value: &T, durable: bool) -> io::Result<()> {
    fsutil::write_atomic(path, &encode_value(value), durable)
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
        let format = SegmentFormat::of(&data);
        let mut offset = 0usize;
        let mut expected_index = first;
        let damage = loop {
            if format == SegmentFormat::Versioned && offset == 0 && !data.is_empty() {
                let Some(header) = data.get(..SEGMENT_HEADER_BYTES) else {
                    break Some("truncated segment header".to_string());
                };
                if header != segment_header() {
                    return Err(RaftError::Corrupt {
                        path: path.display().to_string(),
                        reason: "unknown segment format version (newer than this build?)".into(),
                    });
                }
                offset = SEGMENT_HEADER_BYTES;
            }
            let (payload, next) = match codec::read_frame(&data, offset) {
                FrameRead::End => break None,
                FrameRead::Damaged(reason) => break Some(reason.to_string()),
                FrameRead::Frame { payload, next } => (payload, next),
            };
            let decoded = match format {
                SegmentFormat::Versioned => encoding::from_slice::<Entry>(payload),
                SegmentFormat::Legacy => legacy::entry(&mut LegacyReader::new(payload)),
            };
            let entry = match decoded {
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
                format,
            },
        );
        Ok(())
    }

    /// Overwrites the committed marker in place: cheaper than a rename on every commit. The
    /// encoding has a fixed size, so a new value always covers the old one completely.
    fn write_committed_marker(&mut self, committed: &LogId) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let payload = encode_value(committed);
        let mut record = crc32c::crc32c(&payload).to_le_bytes().to_vec();
        record.extend_from_slice(&payload);
        if self.committed_file.is_none() {
            let file = OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(self.dir.join("committed"))?;
            file.set_len(record.len() as u64)?;
            self.committed_file = Some(file);
        }
        match &self.committed_file {
            Some(file) => file.write_all_at(&record, 0),
            None => Err(io_err("committed marker not open")),
        }
    }

    fn last_log_id(&self) -> Option<LogId> {
        self.entries
            .values()
            .next_back()
            .map(|stored| *stored.entry.get_log_id())
            .or(self.last_purged)
    }

    /// Writes `entries` to the active segment without syncing; returns the file that must be
    /// synced before they count as durable.
    fn append(&mut self, entries: Vec<Entry>) -> io::Result<Option<Arc<File>>> {
        let Some(first_new) = entries.first().map(|e| e.get_log_id().index) else {
            return Ok(None);
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
                .is_none_or(|segment| segment.len_bytes >= self.segment_bytes_max),
        };
        if needs_new_segment {
            let path = segment_path(&self.dir, first_new);
            let file = OpenOptions::new().create(true).append(true).open(&path)?;
            file.set_len(0)?;
            fsutil::fsync_dir(&self.dir)?;
            self.segments.insert(
                first_new,
                Segment {
                    path,
                    len_bytes: 0,
                    format: SegmentFormat::Versioned,
                },
            );
            self.active = Some((first_new, Arc::new(file)));
        }
        let Some((segment_first, file)) = self.active.as_ref() else {
            return Err(io_err("no active segment"));
        };
        let (segment_first, file) = (*segment_first, file.clone());
        let start = self.segments.get(&segment_first).map_or(0, |s| s.len_bytes);

        let mut buf = Vec::new();
        if start == 0 {
            buf = segment_header();
        }
        let mut offsets = Vec::with_capacity(entries.len());
        for entry in &entries {
            offsets.push(start + buf.len() as u64);
            codec::put_frame(&mut buf, &encoding::to_vec(entry));
        }
        (&*file).write_all(&buf)?;

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
        Ok(Some(file))
    }

    #[cfg(test)]
    fn append_synced(&mut self, entries: Vec<Entry>) -> io::Result<()> {
        if let Some(file) = self.append(entries)? {
            file.sync_data()?;
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
            // A bincode-era segment is never appended to: the next append starts a new one.
            if segment.format == SegmentFormat::Versioned {
                let append = OpenOptions::new().append(true).open(&segment.path)?;
                self.active = Some((cut_segment, Arc::new(append)));
            }
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
            inner
                .write_committed_marker(&committed)
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
            Ok(None) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Ok(Some(file)) => {
                if let Err(std::sync::mpsc::SendError(request)) =
                    self.flusher.send(FlushRequest { file, callback })
                {
                    // The flusher thread is gone (it only exits with the store); sync here.
                    let result = request.file.sync_data();
                    request.callback.log_io_completed(result);
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Batch;
    use openraft::{CommittedLeaderId, EntryPayload};

    fn entry(term: u64, index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
            payload: EntryPayload::Normal(Batch(vec![bytes::Bytes::from(vec![index as u8; 100])])),
        }
    }

    fn indexes(store: &LogStore) -> Vec<(u64, u64)> {
        store
            .lock()
            .entries
            .values()
            .map(|s| (s.entry.log_id.leader_id.term, s.entry.log_id.index))
            .collect()
    }

    fn segment_files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(SEGMENT_SUFFIX))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn rolls_truncates_and_purges_segments_and_reloads_the_same_log() {
        let dir = tempfile::tempdir().unwrap();
        // Small segments: a handful of entries each.
        let store = LogStore::open_with_segment_bytes(dir.path(), 500).unwrap();
        for index in 0..20 {
            store.lock().append_synced(vec![entry(1, index)]).unwrap();
        }
        assert!(segment_files(dir.path()).len() >= 4);

        // Replace entries from 9 on with a later term's, crossing segment boundaries.
        store.lock().truncate(9).unwrap();
        store
            .lock()
            .append((9..12).map(|i| entry(2, i)).collect())
            .unwrap();
        let expected: Vec<(u64, u64)> = (0..9)
            .map(|i| (1, i))
            .chain((9..12).map(|i| (2, i)))
            .collect();
        assert_eq!(indexes(&store), expected);

        store
            .lock()
            .purge(LogId::new(CommittedLeaderId::new(1, 1), 6))
            .unwrap();
        let files_after_purge = segment_files(dir.path());
        assert!(!files_after_purge.contains(&format!("{:020}{SEGMENT_SUFFIX}", 0)));
        drop(store);

        let reopened = LogStore::open_with_segment_bytes(dir.path(), 500).unwrap();
        assert_eq!(indexes(&reopened), expected[7..].to_vec());
        assert_eq!(reopened.lock().last_purged.map(|id| id.index), Some(6));
        assert_eq!(reopened.read_range(3, 20, 100).unwrap_err(), 7);
        assert_eq!(reopened.read_range(7, 8, 100).unwrap().len(), 2);
        reopened.lock().append_synced(vec![entry(2, 12)]).unwrap();
        assert!(
            reopened.lock().append_synced(vec![entry(2, 14)]).is_err(),
            "gaps are refused"
        );
    }

    #[test]
    fn the_committed_marker_survives_reopening_and_a_torn_one_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open_with_segment_bytes(dir.path(), 500).unwrap();
        for index in 0..3 {
            store.lock().append_synced(vec![entry(1, index)]).unwrap();
        }
        let committed = LogId::new(CommittedLeaderId::new(1, 1), 2);
        store
            .lock()
            .write_committed_marker(&LogId::new(CommittedLeaderId::new(1, 1), 1))
            .unwrap();
        store.lock().write_committed_marker(&committed).unwrap();
        drop(store);
        let reopened = LogStore::open_with_segment_bytes(dir.path(), 500).unwrap();
        assert_eq!(reopened.lock().committed, Some(committed));
        drop(reopened);

        let path = dir.path().join("committed");
        let mut raw = fs::read(&path).unwrap();
        raw[10] ^= 0xff;
        fs::write(&path, raw).unwrap();
        let reopened = LogStore::open_with_segment_bytes(dir.path(), 500).unwrap();
        assert_eq!(reopened.lock().committed, None);
    }

    #[test]
    fn purging_past_the_end_empties_the_log_and_appends_continue_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open_with_segment_bytes(dir.path(), 500).unwrap();
        for index in 0..3 {
            store.lock().append_synced(vec![entry(1, index)]).unwrap();
        }
        // As after installing a snapshot that is ahead of the whole local log.
        store
            .lock()
            .purge(LogId::new(CommittedLeaderId::new(3, 1), 50))
            .unwrap();
        assert!(segment_files(dir.path()).is_empty());
        assert_eq!(store.lock().last_log_id().map(|id| id.index), Some(50));
        store.lock().append_synced(vec![entry(3, 51)]).unwrap();
        drop(store);
        let reopened = LogStore::open_with_segment_bytes(dir.path(), 500).unwrap();
        assert_eq!(indexes(&reopened), vec![(3, 51)]);
    }

    #[test]
    fn damage_before_the_newest_segment_is_reported_as_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open_with_segment_bytes(dir.path(), 500).unwrap();
        for index in 0..20 {
            store.lock().append_synced(vec![entry(1, index)]).unwrap();
        }
        drop(store);
        let first = dir.path().join(&segment_files(dir.path())[0]);
        let mut raw = fs::read(&first).unwrap();
        raw[20] ^= 0xff;
        fs::write(&first, raw).unwrap();
        assert!(matches!(
            LogStore::open_with_segment_bytes(dir.path(), 500),
            Err(RaftError::Corrupt { .. })
        ));
    }

    /// An entry with one record as bincode 1.3 wrote it.
    fn legacy_entry(term: u64, index: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for value in [term, 1, index] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        out.extend_from_slice(&1u32.to_le_bytes()); // EntryPayload::Normal
        out.extend_from_slice(&1u64.to_le_bytes());
        out.extend_from_slice(&100u64.to_le_bytes());
        out.extend_from_slice(&[index as u8; 100]);
        out
    }

    #[test]
    fn a_bincode_era_log_opens_is_appended_to_in_the_new_format_and_opens_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut segment = Vec::new();
        for index in 0..3 {
            codec::put_frame(&mut segment, &legacy_entry(1, index));
        }
        let legacy_path = segment_path(dir.path(), 0);
        fs::write(&legacy_path, &segment).unwrap();
        let mut vote = Vec::new();
        for value in [2u64, 1] {
            vote.extend_from_slice(&value.to_le_bytes());
        }
        vote.push(1);
        fsutil::write_atomic(&dir.path().join("vote"), &vote, true).unwrap();
        let mut committed = crc32c::crc32c(&legacy_entry(1, 2)[..24])
            .to_le_bytes()
            .to_vec();
        committed.extend_from_slice(&legacy_entry(1, 2)[..24]);
        fs::write(dir.path().join("committed"), committed).unwrap();

        let store = LogStore::open_with_segment_bytes(dir.path(), 1 << 20).unwrap();
        assert_eq!(indexes(&store), vec![(1, 0), (1, 1), (1, 2)]);
        assert_eq!(store.lock().vote, Some(Vote::new_committed(2, 1)));
        assert_eq!(store.lock().committed.map(|id| id.index), Some(2));
        let raw_vote = fsutil::read_checked(&dir.path().join("vote"))
            .unwrap()
            .unwrap();
        assert!(raw_vote.starts_with(VALUE_MAGIC), "the vote was rewritten");
        store
            .lock()
            .append_synced(vec![entry(2, 3), entry(2, 4)])
            .unwrap();
        assert_eq!(
            fs::read(&legacy_path).unwrap(),
            segment,
            "old segments stay as written"
        );
        let new_segment = fs::read(segment_path(dir.path(), 3)).unwrap();
        assert!(new_segment.starts_with(SEGMENT_MAGIC));
        drop(store);

        let reopened = LogStore::open_with_segment_bytes(dir.path(), 1 << 20).unwrap();
        let all: Vec<(u64, u64)> = vec![(1, 0), (1, 1), (1, 2), (2, 3), (2, 4)];
        assert_eq!(indexes(&reopened), all);
        assert_eq!(reopened.lock().vote, Some(Vote::new_committed(2, 1)));
        // Truncating into the old segment: the next append starts a new one.
        reopened.lock().truncate(2).unwrap();
        reopened.lock().append_synced(vec![entry(3, 2)]).unwrap();
        assert!(fs::read(segment_path(dir.path(), 2))
            .unwrap()
            .starts_with(SEGMENT_MAGIC));
        drop(reopened);
        let again = LogStore::open_with_segment_bytes(dir.path(), 1 << 20).unwrap();
        assert_eq!(indexes(&again), vec![(1, 0), (1, 1), (3, 2)]);
        again
            .lock()
            .purge(LogId::new(CommittedLeaderId::new(1, 1), 1))
            .unwrap();
        assert!(!legacy_path.exists(), "purging removes the old segment");
        drop(again);
        let purged = LogStore::open_with_segment_bytes(dir.path(), 1 << 20).unwrap();
        assert_eq!(indexes(&purged), vec![(3, 2)]);
    }

    #[test]
    fn a_segment_or_vote_of_a_newer_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open_with_segment_bytes(dir.path(), 1 << 20).unwrap();
        store.lock().append_synced(vec![entry(1, 0)]).unwrap();
        drop(store);
        let path = segment_path(dir.path(), 0);
        let mut raw = fs::read(&path).unwrap();
        raw[SEGMENT_MAGIC.len() + 1] = 9;
        fs::write(&path, raw).unwrap();
        assert!(matches!(
            LogStore::open_with_segment_bytes(dir.path(), 1 << 20),
            Err(RaftError::Corrupt { .. })
        ));
        fs::remove_file(&path).unwrap();
        let mut vote = encode_value(&Vote::new(1, 1));
        vote[VALUE_MAGIC.len()] = 9;
        fsutil::write_atomic(&dir.path().join("vote"), &vote, false).unwrap();
        assert!(matches!(
            LogStore::open_with_segment_bytes(dir.path(), 1 << 20),
            Err(RaftError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_torn_newest_segment_is_cut_back_to_its_last_whole_frame() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open_with_segment_bytes(dir.path(), 1 << 20).unwrap();
        for index in 0..5 {
            store.lock().append_synced(vec![entry(1, index)]).unwrap();
        }
        drop(store);
        let path = dir.path().join(&segment_files(dir.path())[0]);
        let full = fs::metadata(&path).unwrap().len();
        // Cut the last frame in half.
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(full - 50)
            .unwrap();
        let reopened = LogStore::open_with_segment_bytes(dir.path(), 1 << 20).unwrap();
        assert_eq!(
            indexes(&reopened),
            (0..4).map(|i| (1, i)).collect::<Vec<_>>()
        );
        assert!(fs::metadata(&path).unwrap().len() < full - 50);
        reopened.lock().append_synced(vec![entry(2, 4)]).unwrap();
        drop(reopened);
        let again = LogStore::open_with_segment_bytes(dir.path(), 1 << 20).unwrap();
        assert_eq!(indexes(&again).last(), Some(&(2, 4)));
    }
}
