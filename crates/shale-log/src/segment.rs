//! One segment: `<base>.log` plus its lazily opened `.index` and `.timeindex`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{MappedRwLockReadGuard, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::batch::{self, BatchHeader, HEADER_LEN, LOG_OVERHEAD};
use crate::error::LogError;
use crate::fault::FaultInjector;
use crate::index::{OffsetIndex, TimeIndex};

pub(crate) const LOG_SUFFIX: &str = ".log";
pub(crate) const INDEX_SUFFIX: &str = ".index";
pub(crate) const TIME_INDEX_SUFFIX: &str = ".timeindex";
pub(crate) const TXN_INDEX_SUFFIX: &str = ".txnindex";
pub(crate) const DELETED_SUFFIX: &str = ".deleted";
pub(crate) const CLEANED_SUFFIX: &str = ".cleaned";
pub(crate) const SWAP_SUFFIX: &str = ".swap";

pub(crate) fn file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}{suffix}")
}

/// Parses `<20 digits>.log` into its base offset.
pub(crate) fn parse_base_offset(name: &str, suffix: &str) -> Option<i64> {
    let stem = name.strip_suffix(suffix)?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse::<i64>().ok()
}

pub(crate) struct Indexes {
    pub(crate) offset: OffsetIndex,
    pub(crate) time: TimeIndex,
}

/// What a full validation of a segment found.
pub(crate) struct RecoveredSegment {
    /// Offset after the last valid batch, if the segment has any batch.
    pub(crate) next_offset: Option<i64>,
    /// Bytes cut from the tail.
    pub(crate) truncated_bytes: u64,
}

pub(crate) struct Segment {
    pub(crate) base_offset: i64,
    pub(crate) dir: PathBuf,
    /// Opened on first use: old segments of thousands of partitions stay closed.
    file: Mutex<Option<Arc<File>>>,
    size: AtomicU64,
    indexes: RwLock<Option<Indexes>>,
    index_max_bytes: AtomicU64,
    /// Largest batch max timestamp and the last offset of that batch; loaded lazily.
    max_timestamp: Mutex<Option<(i64, i64)>>,
    /// Max timestamp of the first batch, the clock `segment.ms` rolls by (as Kafka).
    rolling_timestamp: Mutex<Option<i64>>,
    pub(crate) created_ms: i64,
    bytes_since_index: AtomicU64,
    deleted: Mutex<bool>,
    /// The aborted-transaction index (`<base>.txnindex`), opened on first use
    /// (`segment_txn.rs`).
    pub(crate) txn_index: Mutex<Option<crate::txn_index::TxnIndex>>,
}

fn corrupt_file(path: &Path, reason: impl Into<String>) -> LogError {
    LogError::CorruptFile {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

impl Segment {
    pub(crate) fn log_path(&self) -> PathBuf {
        self.dir.join(file_name(self.base_offset, LOG_SUFFIX))
    }
    fn index_path(&self) -> PathBuf {
        self.dir.join(file_name(self.base_offset, INDEX_SUFFIX))
    }
    fn time_index_path(&self) -> PathBuf {
        self.dir
            .join(file_name(self.base_offset, TIME_INDEX_SUFFIX))
    }

    /// Creates an empty segment (replacing leftovers of the same base offset).
    pub(crate) fn create(
        dir: &Path,
        base_offset: i64,
        index_max_bytes: u64,
        now_ms: i64,
    ) -> Result<Segment, LogError> {
        let path = dir.join(file_name(base_offset, LOG_SUFFIX));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX] {
            remove_if_exists(&dir.join(file_name(base_offset, suffix)))?;
        }
        let seg = Segment::from_file(dir, base_offset, Some(file), 0, index_max_bytes, now_ms);
        seg.ensure_indexes(0)?;
        seg.reopen_for_append(index_max_bytes)?;
        Ok(seg)
    }

    /// Opens an existing segment without touching its indexes.
    pub(crate) fn open(
        dir: &Path,
        base_offset: i64,
        index_max_bytes: u64,
        now_ms: i64,
    ) -> Result<Segment, LogError> {
        let path = dir.join(file_name(base_offset, LOG_SUFFIX));
        let size = std::fs::metadata(&path)?.len();
        if size > u64::from(u32::MAX) {
            return Err(corrupt_file(
                &path,
                format!("segment of {size} bytes exceeds 4 GiB"),
            ));
        }
        Ok(Segment::from_file(
            dir,
            base_offset,
            None,
            size,
            index_max_bytes,
            now_ms,
        ))
    }

    fn from_file(
        dir: &Path,
        base_offset: i64,
        file: Option<File>,
        size: u64,
        index_max_bytes: u64,
        now_ms: i64,
    ) -> Segment {
        Segment {
            base_offset,
            dir: dir.to_path_buf(),
            file: Mutex::new(file.map(Arc::new)),
            size: AtomicU64::new(size),
            indexes: RwLock::new(None),
            index_max_bytes: AtomicU64::new(index_max_bytes),
            max_timestamp: Mutex::new(None),
            rolling_timestamp: Mutex::new(None),
            created_ms: now_ms,
            bytes_since_index: AtomicU64::new(0),
            deleted: Mutex::new(false),
            txn_index: Mutex::new(None),
        }
    }

    /// The log file, opened on first use.
    pub(crate) fn file(&self) -> Result<Arc<File>, LogError> {
        let mut guard = self.file.lock();
        if let Some(f) = guard.as_ref() {
            return Ok(f.clone());
        }
        let path = if *self.deleted.lock() {
            with_suffix(&self.log_path(), DELETED_SUFFIX)
        } else {
            self.log_path()
        };
        let f = Arc::new(OpenOptions::new().read(true).write(true).open(path)?);
        *guard = Some(f.clone());
        Ok(f)
    }

    pub(crate) fn indexes_loaded(&self) -> bool {
        self.indexes.read().is_some()
    }

    pub(crate) fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    /// Opens the indexes if needed, rebuilding them when missing or not sane.
    pub(crate) fn ensure_indexes(&self, index_interval_bytes: u64) -> Result<(), LogError> {
        if self.indexes.read().is_some() {
            return Ok(());
        }
        let mut guard = self.indexes.write();
        if guard.is_some() {
            return Ok(());
        }
        let max = self.index_max_bytes.load(Ordering::Relaxed);
        // Missing (not created here), unreadable or insane indexes are rebuilt.
        let opened = match (
            OffsetIndex::open(&self.index_path(), self.base_offset, max, false),
            TimeIndex::open(&self.time_index_path(), self.base_offset, max, false),
        ) {
            (Ok(o), Ok(t)) if o.sanity_check(self.size()) && t.sanity_check() => {
                Some(Indexes { offset: o, time: t })
            }
            _ => None,
        };
        let idx = match opened {
            Some(i) => i,
            None => {
                if self.size() > 0 {
                    tracing::warn!(segment = %self.log_path().display(), "rebuilding index");
                }
                self.rebuild_indexes(max, index_interval_bytes)?
            }
        };
        *guard = Some(idx);
        drop(guard);
        self.load_largest_timestamp()?;
        Ok(())
    }

    fn fresh_indexes(&self, max: u64) -> Result<Indexes, LogError> {
        remove_if_exists(&self.index_path())?;
        remove_if_exists(&self.time_index_path())?;
        Ok(Indexes {
            offset: OffsetIndex::open(&self.index_path(), self.base_offset, max, true)?,
            time: TimeIndex::open(&self.time_index_path(), self.base_offset, max, true)?,
        })
    }

    /// Rebuilds both indexes by walking the batch headers (no CRC check: the segment was
    /// validated when written or recovered).
    fn rebuild_indexes(&self, max: u64, interval: u64) -> Result<Indexes, LogError> {
        let mut idx = self.fresh_indexes(max)?;
        let mut since = 0u64;
        let mut max_ts: Option<(i64, i64)> = None;
        let mut scanner = HeaderScanner::new(self.file()?, 0, self.size());
        while let Some((pos, h)) = scanner.next()? {
            if max_ts.is_none_or(|(t, _)| h.max_timestamp > t) {
                max_ts = Some((h.max_timestamp, h.last_offset()));
            }
            if since > interval {
                idx.offset.append(h.last_offset(), pos as u32)?;
                if let Some((t, o)) = max_ts {
                    idx.time.maybe_append(t, o)?;
                }
                since = 0;
            }
            since += h.total_len() as u64;
        }
        self.bytes_since_index.store(since, Ordering::Relaxed);
        // Rebuilt indexes hold exactly their entries; an active segment regrows them.
        idx.offset.file_mut().trim()?;
        idx.time.file_mut().trim()?;
        Ok(idx)
    }

    /// Reads the largest timestamp: the last time-index entry, then a scan of what follows it.
    fn load_largest_timestamp(&self) -> Result<(), LogError> {
        let start = {
            let g = self.indexes.read();
            let Some(idx) = g.as_ref() else {
                return Ok(());
            };
            match idx.time.last() {
                Some((t, o)) => {
                    let (_, pos) = idx.offset.lookup(o);
                    (Some((t, o)), u64::from(pos))
                }
                None => (None, 0),
            }
        };
        let (mut best, pos) = start;
        let mut first: Option<i64> = None;
        let mut scanner = HeaderScanner::new(self.file()?, pos, self.size());
        while let Some((p, h)) = scanner.next()? {
            if p == 0 {
                first = Some(h.max_timestamp);
            }
            if best.is_none_or(|(t, _)| h.max_timestamp > t) {
                best = Some((h.max_timestamp, h.last_offset()));
            }
        }
        *self.max_timestamp.lock() = best;
        if first.is_some() {
            *self.rolling_timestamp.lock() = first;
        }
        Ok(())
    }

    pub(crate) fn indexes(&self) -> Result<MappedRwLockReadGuard<'_, Indexes>, LogError> {
        self.ensure_indexes(0)?;
        RwLockReadGuard::try_map(self.indexes.read(), |o| o.as_ref())
            .map_err(|_| LogError::InvalidArgument("index unloaded concurrently".into()))
    }

    fn indexes_mut(&self) -> Result<parking_lot::MappedRwLockWriteGuard<'_, Indexes>, LogError> {
        self.ensure_indexes(0)?;
        RwLockWriteGuard::try_map(self.indexes.write(), |o| o.as_mut())
            .map_err(|_| LogError::InvalidArgument("index unloaded concurrently".into()))
    }

    /// `(max timestamp, last offset of its batch)`.
    pub(crate) fn max_timestamp(&self) -> Result<Option<(i64, i64)>, LogError> {
        self.ensure_indexes(0)?;
        Ok(*self.max_timestamp.lock())
    }

    pub(crate) fn rolling_timestamp(&self) -> Option<i64> {
        *self.rolling_timestamp.lock()
    }

    pub(crate) fn index_full(&self) -> Result<bool, LogError> {
        let idx = self.indexes()?;
        Ok(idx.offset.is_full() || idx.time.is_full())
    }

    /// Writes whole validated batches at the end of the segment and indexes them.
    /// The caller holds the log's writer lock.
    pub(crate) fn append(
        &self,
        bytes: &[u8],
        headers: &[BatchHeader],
        index_interval_bytes: u64,
        faults: &FaultInjector,
    ) -> Result<(), LogError> {
        let start = self.size();
        if start + bytes.len() as u64 > u64::from(u32::MAX) {
            return Err(LogError::InvalidArgument(
                "segment would exceed 4 GiB".into(),
            ));
        }
        let file = self.file()?;
        let write = faults
            .check_write(bytes.len())
            .and_then(|()| file.write_all_at(bytes, start));
        if let Err(e) = write {
            // Nothing of a refused append may stay: cut what may have been written.
            let _ = file.set_len(start);
            return Err(LogError::Storage(e));
        }
        let index_result = self.index_appended(start, headers, index_interval_bytes);
        if let Err(e) = index_result {
            let _ = file.set_len(start);
            return Err(e);
        }
        self.size
            .store(start + bytes.len() as u64, Ordering::Release);
        Ok(())
    }

    fn index_appended(
        &self,
        start: u64,
        headers: &[BatchHeader],
        interval: u64,
    ) -> Result<(), LogError> {
        let mut idx = self.indexes_mut()?;
        let mut max_ts_guard = self.max_timestamp.lock();
        let mut max_ts = *max_ts_guard;
        let (offset_entries, time_entries) = (idx.offset.entries(), idx.time.entries());
        let mut pos = start;
        let mut since = self.bytes_since_index.load(Ordering::Relaxed);
        let mut result = Ok(());
        for h in headers {
            if max_ts.is_none_or(|(t, _)| h.max_timestamp > t) {
                max_ts = Some((h.max_timestamp, h.last_offset()));
            }
            if since > interval {
                result = idx.offset.append(h.last_offset(), pos as u32);
                if let (Ok(()), Some((t, o))) = (&result, max_ts) {
                    result = idx.time.maybe_append(t, o);
                }
                if result.is_err() {
                    break;
                }
                since = 0;
            }
            since += h.total_len() as u64;
            pos += h.total_len() as u64;
        }
        if let Err(e) = result {
            // A failed index write (say ENOSPC growing the file) leaves no entry behind.
            idx.offset.file_mut().truncate_entries(offset_entries);
            idx.time.file_mut().truncate_entries(time_entries);
            return Err(e);
        }
        *max_ts_guard = max_ts;
        if start == 0 {
            if let Some(h) = headers.first() {
                *self.rolling_timestamp.lock() = Some(h.max_timestamp);
            }
        }
        self.bytes_since_index.store(since, Ordering::Relaxed);
        Ok(())
    }

    /// Position of the first batch whose last offset is >= `offset`, with its header.
    pub(crate) fn find_batch(&self, offset: i64) -> Result<Option<(u64, BatchHeader)>, LogError> {
        let start = {
            let idx = self.indexes()?;
            u64::from(idx.offset.lookup(offset).1)
        };
        let mut scanner = HeaderScanner::new(self.file()?, start, self.size());
        while let Some((pos, h)) = scanner.next()? {
            if h.last_offset() >= offset {
                return Ok(Some((pos, h)));
            }
        }
        Ok(None)
    }

    /// The farthest batch start after `start` and at most `position_max` that the offset
    /// index holds, such that every batch before it ends below `bound`: a read takes the bytes
    /// up to it without reading their headers. An entry maps a batch's last offset to its
    /// start, so an entry at or below `bound` means the batches before it end below `bound`.
    pub(crate) fn indexed_batch_start(
        &self,
        start: u64,
        position_max: u64,
        bound: i64,
    ) -> Result<Option<u64>, LogError> {
        let idx = self.indexes()?;
        Ok(idx
            .offset
            .floor_position(position_max, bound)
            .map(u64::from)
            .filter(|p| *p > start))
    }

    /// Scans headers from `position` to the current end.
    pub(crate) fn scanner(&self, position: u64) -> Result<HeaderScanner, LogError> {
        Ok(HeaderScanner::new(self.file()?, position, self.size()))
    }

    /// Position to start a timestamp search from: the time index, then the offset index.
    pub(crate) fn position_for_timestamp(&self, ts: i64) -> Result<u64, LogError> {
        let idx = self.indexes()?;
        match idx.time.lookup(ts) {
            Some((_, off)) => Ok(u64::from(idx.offset.lookup(off).1)),
            None => Ok(0),
        }
    }

    /// Removes every batch whose last offset is >= `offset`; returns bytes removed.
    pub(crate) fn truncate_to(&self, offset: i64) -> Result<u64, LogError> {
        let cut = match self.find_batch(offset)? {
            Some((pos, _)) => pos,
            None => return Ok(0),
        };
        self.truncate_txn_index(offset)?;
        self.truncate_to_position(cut)
    }

    pub(crate) fn truncate_to_position(&self, cut: u64) -> Result<u64, LogError> {
        let size = self.size();
        if cut >= size {
            return Ok(0);
        }
        {
            let mut idx = self.indexes_mut()?;
            idx.offset.truncate_to_position(cut);
            let last_kept = match idx.offset.last() {
                Some((o, _)) => o + 1,
                None => self.base_offset,
            };
            // Time index entries point at batch last offsets; drop those of removed batches.
            let mut first_removed = i64::MAX;
            let mut scanner = HeaderScanner::new(self.file()?, cut, size);
            if let Some((_, h)) = scanner.next()? {
                first_removed = h.base_offset;
            }
            idx.time.truncate_to(first_removed.max(last_kept));
        }
        self.file()?.set_len(cut)?;
        self.size.store(cut, Ordering::Release);
        self.bytes_since_index.store(0, Ordering::Relaxed);
        *self.max_timestamp.lock() = None;
        if cut == 0 {
            *self.rolling_timestamp.lock() = None;
        }
        self.load_largest_timestamp()?;
        Ok(size - cut)
    }

    /// Validates every batch from the start (framing, CRC, offsets >= `min_offset` and
    /// increasing), truncates a torn or corrupt tail and rebuilds both indexes.
    pub(crate) fn recover(
        &self,
        min_offset: i64,
        index_interval_bytes: u64,
        max_batch_bytes: u64,
    ) -> Result<RecoveredSegment, LogError> {
        let file = self.file()?;
        let size = file.metadata()?.len();
        self.size.store(size, Ordering::Release);
        let max = self.index_max_bytes.load(Ordering::Relaxed);
        let mut idx = self.fresh_indexes(max)?;
        let mut pos = 0u64;
        let mut next = min_offset.max(self.base_offset);
        let mut next_offset = None;
        let mut since = 0u64;
        let mut max_ts: Option<(i64, i64)> = None;
        let mut first_ts = None;
        let mut buf = Vec::new();
        let mut head = [0u8; LOG_OVERHEAD];
        while pos + HEADER_LEN as u64 <= size {
            if file.read_exact_at(&mut head, pos).is_err() {
                break;
            }
            let len = batch::get_i32(&head, batch::LENGTH_POS);
            if len < (HEADER_LEN - LOG_OVERHEAD) as i32 {
                break;
            }
            let total = len as u64 + LOG_OVERHEAD as u64;
            if pos + total > size || total > max_batch_bytes {
                break;
            }
            buf.resize(total as usize, 0);
            if file.read_exact_at(&mut buf, pos).is_err() {
                break;
            }
            let h = match batch::check_batch(&buf) {
                Ok(h) => h,
                Err(_) => break,
            };
            if h.base_offset < next || h.last_offset() - self.base_offset > i64::from(u32::MAX) {
                break;
            }
            if first_ts.is_none() {
                first_ts = Some(h.max_timestamp);
            }
            if max_ts.is_none_or(|(t, _)| h.max_timestamp > t) {
                max_ts = Some((h.max_timestamp, h.last_offset()));
            }
            if since > index_interval_bytes {
                idx.offset.append(h.last_offset(), pos as u32)?;
                if let Some((t, o)) = max_ts {
                    idx.time.maybe_append(t, o)?;
                }
                since = 0;
            }
            since += total;
            pos += total;
            next = h.last_offset() + 1;
            next_offset = Some(next);
        }
        let truncated = size - pos;
        if truncated > 0 {
            tracing::warn!(segment = %self.log_path().display(), position = pos, bytes = truncated,
                "truncating invalid tail");
            file.set_len(pos)?;
            self.size.store(pos, Ordering::Release);
        }
        self.bytes_since_index.store(since, Ordering::Relaxed);
        idx.offset.file_mut().trim()?;
        idx.time.file_mut().trim()?;
        *self.indexes.write() = Some(idx);
        *self.max_timestamp.lock() = max_ts;
        *self.rolling_timestamp.lock() = first_ts;
        Ok(RecoveredSegment {
            next_offset,
            truncated_bytes: truncated,
        })
    }

    /// Offset after the last batch, found from the last index entry and a short scan.
    pub(crate) fn read_next_offset(&self) -> Result<Option<i64>, LogError> {
        let start = {
            let idx = self.indexes()?;
            idx.offset.last().map_or(0, |(_, p)| u64::from(p))
        };
        let mut scanner = HeaderScanner::new(self.file()?, start, self.size());
        let mut last = None;
        while let Some((_, h)) = scanner.next()? {
            last = Some(h.last_offset() + 1);
        }
        if scanner.position() != self.size() {
            return Err(corrupt_file(
                &self.log_path(),
                format!("partial batch at position {}", scanner.position()),
            ));
        }
        Ok(last)
    }

    /// Called when the segment stops being the active one: final time entry, trim indexes.
    pub(crate) fn on_roll(&self) -> Result<(), LogError> {
        let max_ts = self.max_timestamp()?;
        let mut idx = self.indexes_mut()?;
        if let Some((t, o)) = max_ts {
            if !idx.time.is_full() {
                idx.time.maybe_append(t, o)?;
            }
        }
        idx.offset.file_mut().trim()?;
        idx.time.file_mut().trim()?;
        Ok(())
    }

    /// Lets a trimmed index grow again when this segment becomes active (after truncation).
    pub(crate) fn reopen_for_append(&self, index_max_bytes: u64) -> Result<(), LogError> {
        self.index_max_bytes
            .store(index_max_bytes, Ordering::Relaxed);
        let mut idx = self.indexes_mut()?;
        idx.offset.file_mut().set_max_bytes(index_max_bytes);
        idx.time.file_mut().set_max_bytes(index_max_bytes);
        Ok(())
    }

    /// Trims indexes on close (only if they were opened).
    pub(crate) fn close(&self) -> Result<(), LogError> {
        if let Some(idx) = self.indexes.write().as_mut() {
            idx.offset.file_mut().trim()?;
            idx.time.file_mut().trim()?;
        }
        Ok(())
    }

    pub(crate) fn flush(&self) -> Result<(), LogError> {
        if let Some(f) = self.file.lock().clone() {
            f.sync_data()?;
        }
        if let Some(idx) = self.indexes.read().as_ref() {
            idx.offset.file().flush()?;
            idx.time.file().flush()?;
        }
        self.flush_txn_index()
    }

    /// Renames the files to `*.deleted`; readers holding the file keep reading it.
    pub(crate) fn rename_to_deleted(&self) -> Result<Vec<PathBuf>, LogError> {
        // Lock order everywhere: indexes, then file, then deleted.
        let mut idx = self.indexes.write();
        let mut deleted = self.deleted.lock();
        if *deleted {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        // The transaction index goes with its segment; appends never reach a deleted one.
        *self.txn_index.lock() = None;
        for suffix in [
            LOG_SUFFIX,
            INDEX_SUFFIX,
            TIME_INDEX_SUFFIX,
            TXN_INDEX_SUFFIX,
        ] {
            let from = self.dir.join(file_name(self.base_offset, suffix));
            let to = self.dir.join(format!(
                "{}{}",
                file_name(self.base_offset, suffix),
                DELETED_SUFFIX
            ));
            match std::fs::rename(&from, &to) {
                Ok(()) => out.push(to),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(i) = idx.as_mut() {
            let p = i.offset.file().path().to_path_buf();
            i.offset
                .file_mut()
                .set_path(with_suffix(&p, DELETED_SUFFIX));
            let p = i.time.file().path().to_path_buf();
            i.time.file_mut().set_path(with_suffix(&p, DELETED_SUFFIX));
        }
        *deleted = true;
        Ok(out)
    }
}

fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

pub(crate) fn remove_if_exists(p: &Path) -> io::Result<()> {
    match std::fs::remove_file(p) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Walks batch headers of a file between two positions with buffered reads.
/// Stops at the first incomplete or malformed header.
pub(crate) struct HeaderScanner {
    file: Arc<File>,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    buf_start: u64,
    last_len: u64,
}

const SCAN_BUF_BYTES: usize = 16 * 1024;
/// Batches at least this large are skipped by reading only the next header.
const LARGE_BATCH_BYTES: u64 = 2048;

impl HeaderScanner {
    pub(crate) fn new(file: Arc<File>, pos: u64, end: u64) -> Self {
        HeaderScanner {
            file,
            pos,
            end,
            buf: Vec::new(),
            buf_start: 0,
            last_len: 0,
        }
    }

    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    pub(crate) fn next(&mut self) -> Result<Option<(u64, BatchHeader)>, LogError> {
        if self.pos + HEADER_LEN as u64 > self.end {
            return Ok(None);
        }
        let have = self.pos >= self.buf_start
            && self.pos + HEADER_LEN as u64 <= self.buf_start + self.buf.len() as u64;
        if !have {
            // Small batches: read many headers at once; large ones: just the next header.
            let want = if self.last_len >= LARGE_BATCH_BYTES {
                HEADER_LEN
            } else {
                SCAN_BUF_BYTES
            };
            let n = ((self.end - self.pos) as usize).min(want);
            self.buf.resize(n, 0);
            self.file.read_exact_at(&mut self.buf, self.pos)?;
            self.buf_start = self.pos;
        }
        let off = (self.pos - self.buf_start) as usize;
        let h = match batch::check_header_frame(&self.buf[off..]) {
            Ok(h) => h,
            Err(_) => return Ok(None),
        };
        let total = h.total_len() as u64;
        if self.pos + total > self.end {
            return Ok(None);
        }
        let at = self.pos;
        self.pos += total;
        self.last_len = total;
        Ok(Some((at, h)))
    }
}
