//! One partition's log: segments, offsets, append, read, roll, truncation, retention.
//!
//! Concurrency: every mutation takes `writer` (one writer at a time). Readers never take it:
//! they read the published log end offset (Release/Acquire after the bytes are written),
//! clone the segment `Arc`s they need under a brief read lock and read the files directly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::batch::{self, BatchHeader, Compression};
use crate::checkpoint::{fsync_dir, OffsetCheckpointFile};
use crate::config::{LogConfig, TimestampType};
use crate::epoch::LeaderEpochCache;
use crate::error::{LogError, RecordError, RecordErrors, RecordFault};
use crate::fault::FaultInjector;
use crate::recompress;
use crate::records;
use crate::segment::{self, Segment};
use crate::types::{AppendInfo, AppendOrigin, FileSlice, FoundRecord, ReadInfo, TopicPartition};
use crate::validated::ValidatedBatches;

/// What one retention pass over a log removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionResult {
    pub segments_deleted: usize,
    pub bytes_deleted: u64,
}

/// Options a log is opened with (from the manager's checkpoints).
#[derive(Clone, Default)]
pub(crate) struct OpenOptions {
    pub(crate) start_checkpoint: Option<Arc<OffsetCheckpointFile>>,
    pub(crate) recovery_point: Option<i64>,
    pub(crate) log_start_offset: Option<i64>,
    pub(crate) clean_shutdown: bool,
    pub(crate) cleaner_checkpoint: Option<Arc<OffsetCheckpointFile>>,
    /// The log's entry in `cleaner-offset-checkpoint`.
    pub(crate) first_dirty_offset: Option<i64>,
}

/// `cleaned_up_to` of a log the cleaner never finished a pass on.
pub(crate) const NEVER_CLEANED: i64 = i64::MIN;

pub struct Log {
    tp: TopicPartition,
    dir: PathBuf,
    config: RwLock<LogConfig>,
    pub(crate) segments: RwLock<BTreeMap<i64, Arc<Segment>>>,
    pub(crate) writer: Mutex<()>,
    log_end_offset: AtomicI64,
    log_start_offset: AtomicI64,
    /// The partition's high watermark, which it sets whenever it moves (Kafka keeps it in
    /// `UnifiedLog` too). Retention deletes only segments wholly below it and the cleaner
    /// stops before it, so neither touches what is not committed. A log opens with it at its
    /// log start: until the partition is hosted nothing above that is known to be committed.
    high_watermark: AtomicI64,
    recovery_point: AtomicI64,
    epochs: RwLock<LeaderEpochCache>,
    offline: AtomicBool,
    faults: Arc<FaultInjector>,
    /// Files renamed to `.deleted`, removed after `file.delete.delay.ms`.
    pending_deletes: Mutex<Vec<(i64, Vec<PathBuf>)>>,
    last_flush_ms: AtomicI64,
    unflushed_records: AtomicI64,
    start_checkpoint: Option<Arc<OffsetCheckpointFile>>,
    cleaner_checkpoint: Option<Arc<OffsetCheckpointFile>>,
    /// One compaction at a time.
    pub(crate) cleaner_lock: Mutex<()>,
    /// Offset below which the log is compacted (Kafka's first dirty offset, the dirty-ratio
    /// baseline), kept in `cleaner-offset-checkpoint` so a restart does not clean it again;
    /// [`NEVER_CLEANED`] until a pass finishes.
    pub(crate) cleaned_up_to: AtomicI64,
    /// Counts truncations, so a cleaning pass that raced one does not record progress over
    /// data the truncation replaced.
    pub(crate) truncations: AtomicU64,
    /// After an unclean shutdown, the base of the first segment recovery validated: pages
    /// from there on may have been lost, transaction index entries included (`log_txn.rs`).
    pub(crate) unflushed_from: Option<i64>,
}

fn now_wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Log {
    /// Opens or creates a log in `dir` as after a clean shutdown (a standalone helper;
    /// the manager passes its checkpoints).
    pub fn open(dir: &Path, tp: TopicPartition, config: LogConfig) -> Result<Log, LogError> {
        Log::open_with(
            dir,
            tp,
            config,
            OpenOptions {
                clean_shutdown: true,
                ..OpenOptions::default()
            },
            Arc::new(FaultInjector::default()),
        )
    }

    pub(crate) fn open_with(
        dir: &Path,
        tp: TopicPartition,
        config: LogConfig,
        opts: OpenOptions,
        faults: Arc<FaultInjector>,
    ) -> Result<Log, LogError> {
        let now = now_wall_ms();
        if !dir.exists() {
            std::fs::create_dir_all(dir)?;
            if let Some(parent) = dir.parent() {
                fsync_dir(parent)?;
            }
        }
        let index_max = config.index_bytes_max();
        let mut bases = Vec::new();
        let mut swaps = Vec::new();
        let mut index_files = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.ends_with(segment::DELETED_SUFFIX)
                || name.ends_with(segment::CLEANED_SUFFIX)
                || name.ends_with(".tmp")
            {
                segment::remove_if_exists(&entry.path())?;
            } else if name.ends_with(segment::SWAP_SUFFIX) {
                swaps.push(entry.path());
            } else if let Some(base) = segment::parse_base_offset(name, segment::LOG_SUFFIX) {
                bases.push(base);
            } else if let Some(base) = segment::parse_base_offset(name, segment::INDEX_SUFFIX)
                .or_else(|| segment::parse_base_offset(name, segment::TIME_INDEX_SUFFIX))
                .or_else(|| segment::parse_base_offset(name, segment::TXN_INDEX_SUFFIX))
            {
                index_files.push((base, entry.path()));
            }
        }
        crate::cleaner::complete_swaps(dir, &swaps, &mut bases)?;
        bases.sort_unstable();
        bases.dedup();
        // Index files without a log file are leftovers.
        for (base, path) in index_files {
            if bases.binary_search(&base).is_err() {
                segment::remove_if_exists(&path)?;
            }
        }
        let mut segments = BTreeMap::new();
        for base in bases {
            segments.insert(base, Arc::new(Segment::open(dir, base, index_max, now)?));
        }
        let start_hint = opts.log_start_offset.unwrap_or(0);
        if segments.is_empty() {
            segments.insert(
                start_hint,
                Arc::new(Segment::create(dir, start_hint, index_max, now)?),
            );
            fsync_dir(dir)?;
        }

        let mut log = Log {
            tp,
            dir: dir.to_path_buf(),
            config: RwLock::new(config),
            segments: RwLock::new(segments),
            writer: Mutex::new(()),
            log_end_offset: AtomicI64::new(0),
            log_start_offset: AtomicI64::new(0),
            high_watermark: AtomicI64::new(0),
            recovery_point: AtomicI64::new(0),
            epochs: RwLock::new(LeaderEpochCache::load(dir)),
            offline: AtomicBool::new(false),
            faults,
            pending_deletes: Mutex::new(Vec::new()),
            last_flush_ms: AtomicI64::new(now),
            unflushed_records: AtomicI64::new(0),
            start_checkpoint: opts.start_checkpoint.clone(),
            cleaner_checkpoint: opts.cleaner_checkpoint.clone(),
            cleaner_lock: Mutex::new(()),
            cleaned_up_to: AtomicI64::new(NEVER_CLEANED),
            truncations: AtomicU64::new(0),
            unflushed_from: None,
        };
        log.unflushed_from = log.load(&opts, now)?;
        if let Some(offset) = opts.first_dirty_offset {
            log.cleaned_up_to
                .store(log.checked_first_dirty_offset(offset), Ordering::Release);
        }
        Ok(log)
    }

    /// A first dirty offset read from the checkpoint, brought inside the log: below the log
    /// start it is the log start (retention or DeleteRecords moved the start past it, as
    /// Kafka's `cleanableOffsets` treats it); above the log end (recovery cut a tail the
    /// cleaner had passed) it is the log end, since what is left below stays compacted.
    fn checked_first_dirty_offset(&self, offset: i64) -> i64 {
        let (start, end) = (self.log_start_offset(), self.log_end_offset());
        if offset < start {
            tracing::debug!(log = %self.tp, offset, start,
                "cleaner checkpoint below the log start");
            start
        } else if offset > end {
            tracing::warn!(log = %self.tp, offset, end,
                "cleaner checkpoint beyond the log end, cleaning resumes at the log end");
            end
        } else {
            offset
        }
    }

    /// Computes the log end offset, recovering unflushed segments after an unclean shutdown;
    /// returns the base of the first recovered segment then.
    fn load(&self, opts: &OpenOptions, now: i64) -> Result<Option<i64>, LogError> {
        let config = self.config();
        let first_base = self.first_segment()?.base_offset;
        let mut need_recovery = !opts.clean_shutdown;
        let mut leo = None;
        if !need_recovery {
            let active = self.active_segment()?;
            match active.read_next_offset() {
                Ok(next) => leo = Some(next.unwrap_or(active.base_offset)),
                Err(e) => {
                    tracing::warn!(log = %self.tp, error = %e, "active segment damaged, recovering");
                    need_recovery = true;
                }
            }
        }
        let mut unflushed_from = None;
        if need_recovery {
            let rp = opts.recovery_point.unwrap_or(0);
            unflushed_from = self
                .segments
                .read()
                .range(..=rp)
                .next_back()
                .map_or(Some(first_base), |(base, _)| Some(*base));
            leo = Some(self.recover_from(rp, &config)?);
        }
        let leo = leo.unwrap_or(first_base);
        self.log_end_offset.store(leo, Ordering::Release);
        let mut start = first_base.max(opts.log_start_offset.unwrap_or(first_base));
        if start > leo {
            // Everything was deleted up to an offset beyond the data that survived.
            self.truncate_fully_locked(start, now)?;
            start = self.log_end_offset();
        }
        self.log_start_offset.store(start, Ordering::Release);
        self.high_watermark.store(start, Ordering::Release);
        let rp = if need_recovery {
            self.flush_segments_from(i64::MIN)?;
            leo
        } else {
            opts.recovery_point.unwrap_or(leo).min(leo)
        };
        self.recovery_point.store(rp, Ordering::Release);
        {
            let mut epochs = self.epochs.write();
            let a = epochs.truncate_from_end(self.log_end_offset());
            let b = epochs.truncate_from_start(start);
            if a || b {
                epochs.flush()?;
            }
        }
        self.active_segment()?
            .reopen_for_append(config.index_bytes_max())?;
        Ok(unflushed_from)
    }

    /// Validates segments from the one holding `recovery_point` on; cuts at the first bad
    /// batch and deletes every later segment. Returns the log end offset.
    fn recover_from(&self, recovery_point: i64, config: &LogConfig) -> Result<i64, LogError> {
        let segs: Vec<Arc<Segment>> = self.segments.read().values().cloned().collect();
        let start_idx = segs
            .iter()
            .rposition(|s| s.base_offset <= recovery_point)
            .unwrap_or(0);
        let mut next = segs[start_idx].base_offset;
        if start_idx > 0 {
            // Offsets of the flushed segment before must stay below the recovered ones.
            if let Some(n) = segs[start_idx - 1].read_next_offset()? {
                next = next.max(n);
            }
        }
        let max_batch = config
            .segment_bytes
            .max(config.max_message_bytes)
            .max(1 << 20)
            * 2;
        let mut cut_after: Option<usize> = None;
        for (i, seg) in segs.iter().enumerate().skip(start_idx) {
            let r = seg.recover(
                next.min(seg.base_offset),
                config.index_interval_bytes,
                max_batch,
            )?;
            if let Some(n) = r.next_offset {
                next = n;
            } else {
                next = next.max(seg.base_offset);
            }
            if r.truncated_bytes > 0 {
                cut_after = Some(i);
                break;
            }
        }
        if let Some(i) = cut_after {
            let mut map = self.segments.write();
            for seg in &segs[i + 1..] {
                tracing::warn!(log = %self.tp, base = seg.base_offset, "deleting segment after corruption");
                map.remove(&seg.base_offset);
                for p in seg.rename_to_deleted()? {
                    segment::remove_if_exists(&p)?;
                }
            }
            fsync_dir(&self.dir)?;
        }
        Ok(next)
    }

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> LogConfig {
        self.config.read().clone()
    }

    pub fn update_config(&self, c: LogConfig) {
        *self.config.write() = c;
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset.load(Ordering::Acquire)
    }

    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset.load(Ordering::Acquire)
    }

    /// The high watermark as the partition last set it (the log start until it does).
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::Acquire)
    }

    /// Sets the high watermark, inside `[log start, log end]` as Kafka's
    /// `updateHighWatermark` keeps it (a new partition, a follower restarting its log);
    /// returns the value set.
    pub fn set_high_watermark(&self, offset: i64) -> i64 {
        // Under the writer lock, so no truncation moves the bounds between reading them and
        // the store.
        let _w = self.writer.lock();
        let hw = offset
            .min(self.log_end_offset())
            .max(self.log_start_offset());
        self.high_watermark.store(hw, Ordering::Release);
        hw
    }

    /// Moves the high watermark forward to `offset`, capped at the log end and never back
    /// (Kafka's `maybeIncrementHighWatermark`); returns the new value when it moved. Lock-free:
    /// a leader calls it after every append.
    pub fn raise_high_watermark(&self, offset: i64) -> Option<i64> {
        let target = offset.min(self.log_end_offset());
        let previous = self.high_watermark.fetch_max(target, Ordering::AcqRel);
        // A truncation that ran meanwhile lowered the end before lowering the high
        // watermark; lowering it again here keeps it within the end whatever the order.
        let end = self.log_end_offset();
        if target > end {
            self.high_watermark.fetch_min(end, Ordering::AcqRel);
        }
        (target > previous).then_some(target)
    }

    /// The first offset the cleaner has not compacted, from the cleaner checkpoint or the
    /// last pass; `None` while no pass has finished.
    pub fn first_dirty_offset(&self) -> Option<i64> {
        let offset = self.cleaned_up_to.load(Ordering::Acquire);
        (offset != NEVER_CLEANED).then_some(offset)
    }

    /// Offset up to which the log is known to be on disk.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point.load(Ordering::Acquire)
    }

    pub fn is_offline(&self) -> bool {
        self.offline.load(Ordering::Acquire)
    }

    pub fn size_bytes(&self) -> u64 {
        self.segments.read().values().map(|s| s.size()).sum()
    }

    pub fn segment_count(&self) -> usize {
        self.segments.read().len()
    }

    /// Base offsets of the segments, oldest first.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.read().keys().copied().collect()
    }

    /// How many segments have their indexes open (old segments open them lazily).
    pub fn loaded_index_count(&self) -> usize {
        self.segments
            .read()
            .values()
            .filter(|s| s.indexes_loaded())
            .count()
    }

    pub fn fault_injector(&self) -> &Arc<FaultInjector> {
        &self.faults
    }

    /// The segment appends go to. The map is only empty after a storage failure while the
    /// log was being replaced wholesale (the log is then offline).
    pub(crate) fn active_segment(&self) -> Result<Arc<Segment>, LogError> {
        let map = self.segments.read();
        map.values()
            .next_back()
            .cloned()
            .ok_or_else(|| LogError::LogOffline(self.tp.to_string()))
    }

    fn first_segment(&self) -> Result<Arc<Segment>, LogError> {
        let map = self.segments.read();
        map.values()
            .next()
            .cloned()
            .ok_or_else(|| LogError::LogOffline(self.tp.to_string()))
    }

    pub(crate) fn segments_snapshot(&self) -> Vec<Arc<Segment>> {
        self.segments.read().values().cloned().collect()
    }

    /// Persists the log start offset at once where a checkpoint file is attached.
    fn persist_log_start(&self) -> Result<(), LogError> {
        if let Some(cp) = &self.start_checkpoint {
            cp.set(&self.tp, self.log_start_offset())
                .map_err(|e| self.mark_offline_on_storage(e.into()))?;
        }
        Ok(())
    }

    /// Persists the cleaner's progress at once where a checkpoint file is attached. Callers
    /// hold the writer lock, so a truncation's lower value and a pass's higher one are
    /// written in the order they were made.
    pub(crate) fn persist_first_dirty_offset(&self) -> Result<(), LogError> {
        if let (Some(cp), Some(offset)) = (&self.cleaner_checkpoint, self.first_dirty_offset()) {
            cp.set(&self.tp, offset)
                .map_err(|e| self.mark_offline_on_storage(e.into()))?;
        }
        Ok(())
    }

    /// A truncation replaced everything from `offset` on: the cleaner's progress comes back
    /// to it (Kafka's `maybeTruncateCheckpoint`). Caller holds the writer lock.
    fn truncate_first_dirty_offset(&self, offset: i64) -> Result<(), LogError> {
        self.truncations.fetch_add(1, Ordering::AcqRel);
        let previous = self.cleaned_up_to.load(Ordering::Acquire);
        if previous != NEVER_CLEANED && previous > offset {
            self.cleaned_up_to.store(offset, Ordering::Release);
            self.persist_first_dirty_offset()?;
        }
        Ok(())
    }

    fn check_online(&self) -> Result<(), LogError> {
        if self.is_offline() {
            return Err(LogError::LogOffline(self.tp.to_string()));
        }
        Ok(())
    }

    fn mark_offline_on_storage(&self, e: LogError) -> LogError {
        if e.is_storage() {
            tracing::error!(log = %self.tp, error = %e, "storage failure, log refuses writes");
            self.offline.store(true, Ordering::Release);
        }
        e
    }

    /// Appends whole batches. Client and coordinator appends are validated and get offsets
    /// and `leader_epoch` assigned; replication appends keep theirs and must continue the log.
    pub fn append(
        &self,
        batches: &mut [u8],
        leader_epoch: i32,
        now_ms: i64,
        origin: AppendOrigin,
    ) -> Result<AppendInfo, LogError> {
        self.append_validated(
            ValidatedBatches::parse(batches)?,
            leader_epoch,
            now_ms,
            origin,
        )
    }

    /// Appends batches whose framing and CRCs were already checked (one pass per batch on
    /// the produce path): validation of their contents against the topic's config, offset
    /// assignment and the write.
    pub fn append_validated(
        &self,
        batches: ValidatedBatches<'_>,
        leader_epoch: i32,
        now_ms: i64,
        origin: AppendOrigin,
    ) -> Result<AppendInfo, LogError> {
        self.check_online()?;
        let config = self.config();
        let (batches, mut headers) = batches.into_parts();
        for h in &headers {
            validate_batch(h, &config, origin)?;
        }
        let mut rebuilt = None;
        if origin != AppendOrigin::Replication {
            rebuilt = validate_records(&self.tp, batches, &headers, &config, now_ms)?;
        }
        // A batch recompressed to the topic's codec is appended from its new bytes; the
        // caller's buffer is then left as it was.
        let batches: &mut [u8] = match rebuilt.as_mut() {
            Some(r) => {
                for h in &r.headers {
                    check_size(h, &config)?;
                }
                headers = std::mem::take(&mut r.headers);
                &mut r.bytes
            }
            None => batches,
        };
        let _w = self.writer.lock();
        self.check_online()?;
        let leo = self.log_end_offset();
        let log_append_time = origin != AppendOrigin::Replication
            && config.message_timestamp_type == TimestampType::LogAppendTime;
        if origin == AppendOrigin::Replication {
            let mut expect = leo;
            for h in &headers {
                if h.base_offset < expect {
                    return Err(LogError::UnexpectedAppendOffset {
                        first_offset: h.base_offset,
                        log_end: expect,
                    });
                }
                expect = h.last_offset() + 1;
            }
        } else {
            let mut next = leo;
            let mut pos = 0usize;
            for h in headers.iter_mut() {
                let len = h.total_len();
                let b = &mut batches[pos..pos + len];
                batch::set_offset_and_epoch(b, next, leader_epoch);
                h.base_offset = next;
                h.partition_leader_epoch = leader_epoch;
                if log_append_time {
                    batch::set_log_append_time(b, now_ms);
                    *h = BatchHeader::decode(b)?;
                }
                next = h.last_offset() + 1;
                pos += len;
            }
        }
        let first_offset = headers[0].base_offset;
        let last_offset = headers[headers.len() - 1].last_offset();
        let max_ts = headers.iter().map(|h| h.max_timestamp).max().unwrap_or(-1);

        // Epoch bookkeeping is made durable first: a disk that fails here refuses the append
        // before any byte of it is written.
        let mut epochs_before = None;
        {
            let mut epochs = self.epochs.write();
            // The common case (same epoch as before) neither copies nor writes anything.
            if headers
                .iter()
                .any(|h| epochs.would_change(h.partition_leader_epoch, h.base_offset))
            {
                let before = epochs.entries().to_vec();
                for h in &headers {
                    epochs.assign(h.partition_leader_epoch, h.base_offset);
                }
                if let Err(e) = epochs.flush() {
                    epochs.restore(before);
                    return Err(self.mark_offline_on_storage(e));
                }
                epochs_before = Some(before);
            }
        }
        let written = self
            .maybe_roll(
                batches.len() as u64,
                first_offset,
                last_offset,
                now_ms,
                &config,
            )
            .and_then(|active| {
                active.append(batches, &headers, config.index_interval_bytes, &self.faults)
            });
        if let Err(e) = written {
            // The epochs recorded above point past the data; put the old ones back (the file
            // follows at the next successful flush, or is truncated to the data at reopen).
            if let Some(before) = epochs_before {
                self.epochs.write().restore(before);
            }
            return Err(self.mark_offline_on_storage(e));
        }
        self.log_end_offset
            .store(last_offset + 1, Ordering::Release);

        let records: i64 = headers.iter().map(|h| i64::from(h.record_count)).sum();
        let unflushed = self.unflushed_records.fetch_add(records, Ordering::AcqRel) + records;
        if unflushed >= config.flush_messages {
            self.flush_locked(now_ms)?;
        }
        Ok(AppendInfo {
            first_offset,
            last_offset,
            log_append_time_ms: if log_append_time { now_ms } else { -1 },
            log_start_offset: self.log_start_offset(),
            max_timestamp_ms: max_ts,
            batches: headers,
        })
    }

    /// Rolls to a new segment when the append would not fit. Caller holds the writer lock.
    fn maybe_roll(
        &self,
        append_bytes: u64,
        first_offset: i64,
        last_offset: i64,
        now_ms: i64,
        config: &LogConfig,
    ) -> Result<Arc<Segment>, LogError> {
        let active = self.active_segment()?;
        let size = active.size();
        let by_size = size > 0 && size + append_bytes > config.segment_bytes;
        let by_time = size > 0
            && now_ms - active.rolling_timestamp().unwrap_or(active.created_ms) > config.segment_ms;
        let by_offset = last_offset - active.base_offset > i64::from(u32::MAX)
            || first_offset < active.base_offset;
        let by_index = active.index_full()?;
        let too_big = size + append_bytes > u64::from(u32::MAX);
        if !(by_size || by_time || by_offset || by_index || too_big) {
            return Ok(active);
        }
        if size == 0 && !by_offset {
            return Ok(active);
        }
        self.roll_locked(first_offset, now_ms, config)
    }

    fn roll_locked(
        &self,
        new_base: i64,
        now_ms: i64,
        config: &LogConfig,
    ) -> Result<Arc<Segment>, LogError> {
        let active = self.active_segment()?;
        if active.size() == 0 {
            // An empty active segment is replaced rather than left behind.
            self.segments.write().remove(&active.base_offset);
            for p in active.rename_to_deleted()? {
                segment::remove_if_exists(&p)?;
            }
        } else {
            active.on_roll()?;
        }
        let seg = Arc::new(Segment::create(
            &self.dir,
            new_base,
            config.index_bytes_max(),
            now_ms,
        )?);
        fsync_dir(&self.dir)?;
        self.segments.write().insert(new_base, seg.clone());
        tracing::debug!(log = %self.tp, base = new_base, "rolled segment");
        Ok(seg)
    }

    /// Forces a roll (tests and the cleaner use it to make the active data cleanable).
    pub fn roll(&self, now_ms: i64) -> Result<(), LogError> {
        self.check_online()?;
        let _w = self.writer.lock();
        let config = self.config();
        if self.active_segment()?.size() > 0 {
            self.roll_locked(self.log_end_offset(), now_ms, &config)
                .map_err(|e| self.mark_offline_on_storage(e))?;
        }
        Ok(())
    }

    /// Reads whole batches from the one containing `start_offset`, below
    /// `upper_bound_offset` (high watermark or last stable offset), within `max_bytes`
    /// unless `min_one_batch` lets the first batch exceed it.
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: usize,
        upper_bound_offset: i64,
        min_one_batch: bool,
    ) -> Result<ReadInfo, LogError> {
        let leo = self.log_end_offset();
        let lso = self.log_start_offset();
        if start_offset < lso || start_offset > leo {
            return Err(LogError::OffsetOutOfRange {
                requested: start_offset,
                log_start: lso,
                log_end: leo,
            });
        }
        let mut info = ReadInfo {
            slices: Vec::new(),
            log_start_offset: lso,
            log_end_offset: leo,
        };
        let bound = upper_bound_offset.min(leo);
        if start_offset >= bound {
            return Ok(info);
        }
        // One snapshot of the segments that can hold the answer: retention or cleaning may
        // remove segments meanwhile, and the held `Arc`s keep their files readable.
        let segs: Vec<Arc<Segment>> = {
            let map = self.segments.read();
            let floor = map
                .range(..=start_offset)
                .next_back()
                .map_or(i64::MIN, |(b, _)| *b);
            let mut v = Vec::new();
            let mut later_bytes = 0u64;
            for (_, s) in map.range(floor..) {
                if !v.is_empty() {
                    later_bytes += s.size();
                }
                v.push(s.clone());
                if later_bytes >= (max_bytes as u64).max(1) {
                    break;
                }
            }
            v
        };
        let mut total = 0usize;
        for (i, seg) in segs.iter().enumerate() {
            let start_pos = if i == 0 {
                match seg.find_batch(start_offset)? {
                    Some((p, _)) => p,
                    None => continue,
                }
            } else {
                0
            };
            let mut done = false;
            let mut slice_len = 0u64;
            // Whole batches the index vouches for need no header reads: a 1 MiB fetch of
            // 16 KiB batches reads a few headers instead of one per batch.
            let budget = max_bytes.saturating_sub(total) as u64;
            let mut scan_from = start_pos;
            if let Some(p) =
                seg.indexed_batch_start(start_pos, start_pos.saturating_add(budget), bound)?
            {
                slice_len = p - start_pos;
                total += slice_len as usize;
                scan_from = p;
            }
            let mut scanner = seg.scanner(scan_from)?;
            while let Some((_, h)) = scanner.next()? {
                if h.last_offset() >= bound {
                    done = true;
                    break;
                }
                let len = h.total_len();
                if total + len > max_bytes {
                    if total == 0 && min_one_batch {
                        slice_len += len as u64;
                        total += len;
                    }
                    done = true;
                    break;
                }
                slice_len += len as u64;
                total += len;
            }
            if slice_len > 0 {
                info.slices.push(FileSlice {
                    file: seg.file()?,
                    position: start_pos,
                    len: slice_len as u32,
                });
            }
            if done {
                break;
            }
        }
        Ok(info)
    }

    /// Reads one whole batch's bytes at `position` of `seg`.
    fn read_batch(seg: &Segment, position: u64, h: &BatchHeader) -> Result<Vec<u8>, LogError> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; h.total_len()];
        seg.file()?.read_exact_at(&mut buf, position)?;
        Ok(buf)
    }

    /// First record offset whose timestamp is >= `timestamp_ms`, with that timestamp.
    pub fn offset_for_timestamp(&self, timestamp_ms: i64) -> Result<Option<(i64, i64)>, LogError> {
        Ok(self
            .record_for_timestamp(timestamp_ms)?
            .map(|r| (r.offset, r.timestamp_ms)))
    }

    /// The first record whose timestamp is >= `timestamp_ms`, with its batch's leader epoch
    /// (ListOffsets by timestamp).
    pub fn record_for_timestamp(&self, timestamp_ms: i64) -> Result<Option<FoundRecord>, LogError> {
        let lso = self.log_start_offset();
        let limit = self.config().decompressed_batch_bytes_max;
        for seg in self.segments_snapshot() {
            match seg.max_timestamp()? {
                Some((t, _)) if t >= timestamp_ms => {}
                _ => continue,
            }
            let pos = seg.position_for_timestamp(timestamp_ms)?;
            let mut scanner = seg.scanner(pos)?;
            while let Some((p, h)) = scanner.next()? {
                if h.max_timestamp < timestamp_ms || h.last_offset() < lso {
                    continue;
                }
                let bytes = Self::read_batch(&seg, p, &h)?;
                if let Some(found) = find_record(&bytes, &h, limit, |off, ts| {
                    ts >= timestamp_ms && off >= lso
                })? {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }

    /// Offset and timestamp of the record with the largest timestamp (ListOffsets -3).
    pub fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, LogError> {
        Ok(self
            .max_timestamp_record()?
            .map(|r| (r.offset, r.timestamp_ms)))
    }

    /// The record with the largest timestamp, with its batch's leader epoch (ListOffsets -3).
    pub fn max_timestamp_record(&self) -> Result<Option<FoundRecord>, LogError> {
        let mut best: Option<(i64, i64, Arc<Segment>)> = None;
        for seg in self.segments_snapshot() {
            if let Some((t, o)) = seg.max_timestamp()? {
                if best.as_ref().is_none_or(|(bt, _, _)| t > *bt) {
                    best = Some((t, o, seg.clone()));
                }
            }
        }
        let Some((ts, batch_last, seg)) = best else {
            return Ok(None);
        };
        let limit = self.config().decompressed_batch_bytes_max;
        if let Some((pos, h)) = seg.find_batch(batch_last)? {
            let bytes = Self::read_batch(&seg, pos, &h)?;
            if let Some(found) = find_record(&bytes, &h, limit, |_, t| t == ts)? {
                return Ok(Some(found));
            }
            return Ok(Some(FoundRecord {
                offset: h.last_offset(),
                timestamp_ms: ts,
                leader_epoch: h.partition_leader_epoch,
            }));
        }
        Ok(None)
    }

    /// The leader epoch that `offset` was written in, from the leader-epoch cache (Kafka's
    /// `epochForOffset`): the epoch of the latest entry starting at or before it.
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        self.epochs
            .read()
            .entries()
            .iter()
            .take_while(|(_, start)| *start <= offset)
            .last()
            .map(|(epoch, _)| *epoch)
    }

    /// Removes everything at and above `offset` (a follower diverged from its leader).
    pub fn truncate_to(&self, offset: i64) -> Result<(), LogError> {
        if offset < 0 {
            return Err(LogError::InvalidArgument(format!("truncate to {offset}")));
        }
        self.check_online()?;
        let _w = self.writer.lock();
        if offset >= self.log_end_offset() {
            return Ok(());
        }
        let now = now_wall_ms();
        let result =
            if offset < self.first_segment()?.base_offset || offset <= self.log_start_offset() {
                self.truncate_fully_locked(offset, now)
            } else {
                self.truncate_locked(offset)
            };
        result.map_err(|e| self.mark_offline_on_storage(e))
    }

    /// Deletes everything and restarts the log empty at `offset`, which may lie beyond the
    /// current end (Kafka's `truncateFullyAndStartAt`: a follower whose log ends below its
    /// leader's log start).
    pub fn truncate_fully_and_start_at(&self, offset: i64) -> Result<(), LogError> {
        if offset < 0 {
            return Err(LogError::InvalidArgument(format!(
                "restart the log at {offset}"
            )));
        }
        self.check_online()?;
        let _w = self.writer.lock();
        self.truncate_fully_locked(offset, now_wall_ms())
            .map_err(|e| self.mark_offline_on_storage(e))
    }

    fn truncate_locked(&self, offset: i64) -> Result<(), LogError> {
        let later: Vec<Arc<Segment>> = self
            .segments
            .read()
            .range(offset + 1..)
            .map(|(_, s)| s.clone())
            .collect();
        {
            let mut map = self.segments.write();
            for s in &later {
                map.remove(&s.base_offset);
            }
        }
        let now = now_wall_ms();
        for s in &later {
            self.schedule_delete(s, now)?;
        }
        let active = self.active_segment()?;
        active.truncate_to(offset)?;
        active.reopen_for_append(self.config().index_bytes_max())?;
        fsync_dir(&self.dir)?;
        // The end is where the remaining data ends (a batch containing `offset` goes whole),
        // so a reopen finds the same end.
        let offset = active
            .read_next_offset()?
            .unwrap_or(active.base_offset)
            .min(offset);
        self.log_end_offset.store(offset, Ordering::Release);
        self.high_watermark.fetch_min(offset, Ordering::AcqRel);
        self.recovery_point.fetch_min(offset, Ordering::AcqRel);
        {
            let mut epochs = self.epochs.write();
            if epochs.truncate_from_end(offset) {
                epochs.flush()?;
            }
        }
        // The truncated segment takes appends again: all of it is dirty once it rolls.
        self.truncate_first_dirty_offset(active.base_offset)
    }

    /// Deletes every segment and starts an empty log at `offset`.
    fn truncate_fully_locked(&self, offset: i64, now_ms: i64) -> Result<(), LogError> {
        let config = self.config();
        let old: Vec<Arc<Segment>> = {
            let mut map = self.segments.write();
            std::mem::take(&mut *map).into_values().collect()
        };
        for s in &old {
            self.schedule_delete(s, now_ms)?;
        }
        let seg = Arc::new(Segment::create(
            &self.dir,
            offset,
            config.index_bytes_max(),
            now_ms,
        )?);
        fsync_dir(&self.dir)?;
        self.segments.write().insert(offset, seg);
        self.log_end_offset.store(offset, Ordering::Release);
        self.log_start_offset.store(offset, Ordering::Release);
        self.high_watermark.store(offset, Ordering::Release);
        self.recovery_point.store(offset, Ordering::Release);
        let mut epochs = self.epochs.write();
        epochs.clear();
        epochs.flush()?;
        drop(epochs);
        self.persist_log_start()?;
        self.truncate_first_dirty_offset(offset)
    }

    /// Moves the log start offset forward (DeleteRecords); returns the new log start.
    pub fn delete_records_before(&self, offset: i64) -> Result<i64, LogError> {
        let _w = self.writer.lock();
        let leo = self.log_end_offset();
        let lso = self.log_start_offset();
        if offset < 0 || offset > leo {
            return Err(LogError::OffsetOutOfRange {
                requested: offset,
                log_start: lso,
                log_end: leo,
            });
        }
        if offset > lso {
            self.log_start_offset.store(offset, Ordering::Release);
            // Kafka's `updateLogStartOffset`: the high watermark is never below the start.
            self.high_watermark.fetch_max(offset, Ordering::AcqRel);
            let mut epochs = self.epochs.write();
            if epochs.truncate_from_start(offset) {
                epochs
                    .flush()
                    .map_err(|e| self.mark_offline_on_storage(e))?;
            }
            drop(epochs);
            self.persist_log_start()?;
        }
        Ok(self.log_start_offset())
    }

    /// Kafka's leader-epoch bookkeeping when a replica becomes leader.
    pub fn assign_epoch_start_offset(
        &self,
        leader_epoch: i32,
        start_offset: i64,
    ) -> Result<(), LogError> {
        let mut epochs = self.epochs.write();
        if epochs.assign(leader_epoch, start_offset) {
            epochs
                .flush()
                .map_err(|e| self.mark_offline_on_storage(e))?;
        }
        Ok(())
    }

    /// OffsetForLeaderEpoch: `(epoch, end offset)`; `None` when undefined.
    pub fn end_offset_for_epoch(&self, leader_epoch: i32) -> Option<(i32, i64)> {
        self.epochs
            .read()
            .end_offset_for(leader_epoch, self.log_end_offset())
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.read().latest_epoch()
    }

    /// `(epoch, start offset)` entries, oldest first.
    pub fn epoch_entries(&self) -> Vec<(i32, i64)> {
        self.epochs.read().entries().to_vec()
    }

    /// Forces everything written so far to disk and advances the recovery point.
    pub fn flush(&self) -> Result<(), LogError> {
        let _w = self.writer.lock();
        self.flush_locked(now_wall_ms())
    }

    fn flush_locked(&self, now_ms: i64) -> Result<(), LogError> {
        let leo = self.log_end_offset();
        let rp = self.recovery_point();
        if leo > rp || self.unflushed_records.load(Ordering::Acquire) > 0 {
            self.flush_segments_from(rp)
                .map_err(|e| self.mark_offline_on_storage(e))?;
            self.recovery_point.store(leo, Ordering::Release);
        }
        self.unflushed_records.store(0, Ordering::Release);
        self.last_flush_ms.store(now_ms, Ordering::Release);
        Ok(())
    }

    fn flush_segments_from(&self, offset: i64) -> Result<(), LogError> {
        let segs: Vec<Arc<Segment>> = {
            let map = self.segments.read();
            let floor = map
                .range(..=offset)
                .next_back()
                .map_or(i64::MIN, |(b, _)| *b);
            map.range(floor..).map(|(_, s)| s.clone()).collect()
        };
        for s in segs {
            s.flush()?;
        }
        Ok(())
    }

    /// Flushes when `flush.ms` has passed since the last flush.
    pub fn flush_if_due(&self, now_ms: i64) -> Result<bool, LogError> {
        let flush_ms = self.config.read().flush_ms;
        if flush_ms == i64::MAX {
            return Ok(false);
        }
        if now_ms - self.last_flush_ms.load(Ordering::Acquire) < flush_ms {
            return Ok(false);
        }
        let _w = self.writer.lock();
        self.flush_locked(now_ms)?;
        Ok(true)
    }

    /// Flushes and trims the indexes (clean close).
    pub fn close(&self) -> Result<(), LogError> {
        let _w = self.writer.lock();
        if !self.is_offline() {
            self.flush_locked(now_wall_ms())?;
        }
        for s in self.segments_snapshot() {
            s.close()?;
        }
        Ok(())
    }

    pub(crate) fn schedule_delete_pub(&self, seg: &Segment, now_ms: i64) -> Result<(), LogError> {
        self.schedule_delete(seg, now_ms)
    }

    fn schedule_delete(&self, seg: &Segment, now_ms: i64) -> Result<(), LogError> {
        let files = seg.rename_to_deleted()?;
        let delay = self.config.read().file_delete_delay_ms.max(0);
        self.pending_deletes
            .lock()
            .push((now_ms.saturating_add(delay), files));
        Ok(())
    }

    /// Removes `.deleted` files whose delay has passed; returns how many files went.
    pub fn delete_due_files(&self, now_ms: i64) -> Result<usize, LogError> {
        let due: Vec<Vec<PathBuf>> = {
            let mut pending = self.pending_deletes.lock();
            let (due, keep): (Vec<_>, Vec<_>) = pending.drain(..).partition(|(t, _)| *t <= now_ms);
            *pending = keep;
            due.into_iter().map(|(_, f)| f).collect()
        };
        let mut n = 0;
        for files in due {
            for f in files {
                segment::remove_if_exists(&f)?;
                n += 1;
            }
        }
        if n > 0 {
            fsync_dir(&self.dir)?;
        }
        Ok(n)
    }

    /// Deletes whole old segments by `retention.ms`, `retention.bytes` and the log start
    /// offset; never the active segment, and only segments wholly below the high watermark
    /// (Kafka's `deletableSegments`: the next segment's base is at most the high watermark),
    /// so the log start never passes it.
    pub fn apply_retention(&self, now_ms: i64) -> Result<RetentionResult, LogError> {
        let _w = self.writer.lock();
        let config = self.config();
        let segs = self.segments_snapshot();
        let mut result = RetentionResult::default();
        if segs.len() <= 1 {
            return Ok(result);
        }
        let lso = self.log_start_offset();
        let hw = self.high_watermark();
        let mut total: i64 = segs.iter().map(|s| s.size() as i64).sum();
        let mut doomed = Vec::new();
        for (i, seg) in segs.iter().enumerate().take(segs.len() - 1) {
            let next_base = segs[i + 1].base_offset;
            if next_base > hw {
                break;
            }
            let below_start = next_base <= lso;
            let by_time = config.cleanup_policy.delete
                && config.retention_ms >= 0
                && match seg.max_timestamp()? {
                    Some((t, _)) => now_ms - t > config.retention_ms,
                    None => false,
                };
            let by_size = config.cleanup_policy.delete
                && config.retention_bytes >= 0
                && total - seg.size() as i64 >= config.retention_bytes;
            if !(below_start || by_time || by_size) {
                break;
            }
            total -= seg.size() as i64;
            doomed.push(seg.clone());
        }
        if doomed.is_empty() {
            return Ok(result);
        }
        {
            let mut map = self.segments.write();
            for s in &doomed {
                map.remove(&s.base_offset);
            }
        }
        for s in &doomed {
            result.segments_deleted += 1;
            result.bytes_deleted += s.size();
            self.schedule_delete(s, now_ms)
                .map_err(|e| self.mark_offline_on_storage(e))?;
        }
        fsync_dir(&self.dir).map_err(|e| self.mark_offline_on_storage(e.into()))?;
        let new_start = self.first_segment()?.base_offset.max(lso);
        self.log_start_offset.store(new_start, Ordering::Release);
        if new_start != lso {
            self.persist_log_start()?;
        }
        let mut epochs = self.epochs.write();
        if epochs.truncate_from_start(new_start) {
            epochs
                .flush()
                .map_err(|e| self.mark_offline_on_storage(e))?;
        }
        Ok(result)
    }

    /// Removes all files (the manager then removes the directory).
    pub(crate) fn release(&self) {
        self.offline.store(true, Ordering::Release);
    }
}

/// A batch must fit `max.message.bytes` and a segment.
fn check_size(h: &BatchHeader, config: &LogConfig) -> Result<(), LogError> {
    let size = h.total_len() as u64;
    if size > config.max_message_bytes || size > config.segment_bytes.max(batch::HEADER_LEN as u64)
    {
        return Err(LogError::MessageTooLarge {
            size_bytes: size,
            limit_bytes: config.max_message_bytes.min(config.segment_bytes),
        });
    }
    Ok(())
}

/// Checks done per batch before anything is written.
fn validate_batch(
    h: &BatchHeader,
    config: &LogConfig,
    origin: AppendOrigin,
) -> Result<(), LogError> {
    check_size(h, config)?;
    if origin == AppendOrigin::Replication {
        return Ok(());
    }
    if i64::from(h.record_count) != i64::from(h.last_offset_delta) + 1 {
        return Err(LogError::InvalidRecord(format!(
            "record count {} does not match last offset delta {}",
            h.record_count, h.last_offset_delta
        )));
    }
    if origin == AppendOrigin::Client && h.is_control() {
        return Err(LogError::InvalidRecord(
            "clients may not write control batches".into(),
        ));
    }
    if h.is_transactional() && !h.has_producer_id() {
        return Err(LogError::InvalidRecord(
            "transactional batch without producer id".into(),
        ));
    }
    Ok(())
}

/// Kafka's message for a timestamp outside the window; the bounds wrap as Java's longs do
/// (`now - Long.MAX_VALUE` is printed as a large negative number).
fn timestamp_error(ts: i64, index: usize, now_ms: i64, config: &LogConfig) -> Option<String> {
    let out_of_range = now_ms.saturating_sub(ts) > config.message_timestamp_before_max_ms
        || ts.saturating_sub(now_ms) > config.message_timestamp_after_max_ms;
    out_of_range.then(|| {
        format!(
            "Timestamp {ts} of message with offset {index} is out of range. The timestamp \
             should be within [{}, {}]",
            now_ms.wrapping_sub(config.message_timestamp_before_max_ms),
            now_ms.wrapping_add(config.message_timestamp_after_max_ms)
        )
    })
}

/// Batches rewritten to the topic's codec, with the others of the append around them.
struct Rebuilt {
    bytes: Vec<u8>,
    headers: Vec<BatchHeader>,
}

/// Record-level checks as Kafka's validator does them: offset deltas in order, then per record
/// a key on compacted topics and a timestamp within bounds. A record breaking one of those is
/// collected with its index (KIP-467) and the batch is refused naming every such record.
/// Compressed batches are decompressed for this, bounded by `decompressed_batch_bytes_max`.
/// A batch whose codec is not the topic's `compression.type` is rewritten from the records
/// decoded here (`recompress.rs`); when every batch keeps its codec (`producer`, or the
/// codecs match) nothing is copied and `None` says the bytes are stored as received.
fn validate_records(
    tp: &TopicPartition,
    bytes: &[u8],
    headers: &[BatchHeader],
    config: &LogConfig,
    now_ms: i64,
) -> Result<Option<Rebuilt>, LogError> {
    let mut rejected = Vec::new();
    let mut rebuilt: Option<Rebuilt> = None;
    let check_ts = config.message_timestamp_type == TimestampType::CreateTime;
    let mut pos = 0usize;
    let mut scratch;
    for (n, h) in headers.iter().enumerate() {
        let start = pos;
        let b = &bytes[pos..pos + h.total_len()];
        pos += h.total_len();
        let body: &[u8] = if h.compression() == Some(Compression::None) {
            &b[batch::HEADER_LEN..]
        } else {
            scratch = records::batch_body(b, config.decompressed_batch_bytes_max).map_err(|e| {
                LogError::CorruptMessage(format!("batch at {}: {e}", h.base_offset))
            })?;
            &scratch
        };
        let recs = records::decode_records(body, h.record_count)?;
        let mut max_timestamp_ms = i64::MIN;
        for (i, r) in recs.iter().enumerate() {
            if i64::from(r.offset_delta) != i as i64 {
                return Err(LogError::InvalidRecord(format!(
                    "record {i} has offset delta {}",
                    r.offset_delta
                )));
            }
            if h.is_control() {
                continue;
            }
            let ts = h.base_timestamp.saturating_add(r.timestamp_delta);
            max_timestamp_ms = max_timestamp_ms.max(ts);
            // Kafka checks the key first and reports one fault per record.
            let fault = if config.cleanup_policy.compact && r.key.is_none() {
                Some((
                    RecordFault::MissingKey,
                    format!(
                        "Compacted topic cannot accept message without key in topic partition {tp}"
                    ),
                ))
            } else if check_ts {
                timestamp_error(ts, i, now_ms, config).map(|m| (RecordFault::Timestamp, m))
            } else {
                None
            };
            if let Some((fault, message)) = fault {
                rejected.push(RecordError {
                    batch_index: i as i32,
                    fault,
                    message,
                });
            }
        }
        // Nothing is built for an append that is refused anyway.
        if !rejected.is_empty() {
            continue;
        }
        match recompress::target_codec(config, h) {
            Some(codec) => {
                let r = rebuilt.get_or_insert_with(|| Rebuilt {
                    bytes: bytes[..start].to_vec(),
                    headers: headers[..n].to_vec(),
                });
                let nh = recompress::append_rebuilt(
                    &mut r.bytes,
                    h,
                    body,
                    max_timestamp_ms,
                    codec,
                    config,
                )?;
                r.headers.push(nh);
            }
            None => {
                if let Some(r) = rebuilt.as_mut() {
                    r.bytes.extend_from_slice(b);
                    r.headers.push(*h);
                }
            }
        }
        // Many small batches that each expand within the limits must not add up to an
        // unbounded copy of the request: the rewritten append stays within the request's own
        // size or the decompression bound, whichever is larger.
        if let Some(r) = &rebuilt {
            let limit_bytes = config.decompressed_batch_bytes_max.max(bytes.len() as u64);
            if r.bytes.len() as u64 > limit_bytes {
                return Err(LogError::MessageTooLarge {
                    size_bytes: r.bytes.len() as u64,
                    limit_bytes,
                });
            }
        }
    }
    if rejected.is_empty() {
        Ok(rebuilt)
    } else {
        Err(LogError::RecordsRejected(RecordErrors(rejected)))
    }
}

/// Finds the first record of a batch matching `pred(offset, timestamp)`.
fn find_record(
    bytes: &[u8],
    h: &BatchHeader,
    decompressed_bytes_max: u64,
    pred: impl Fn(i64, i64) -> bool,
) -> Result<Option<FoundRecord>, LogError> {
    let body = records::batch_body(bytes, decompressed_bytes_max)?;
    let recs = records::decode_records(&body, h.record_count)?;
    for r in recs {
        let off = h.base_offset + i64::from(r.offset_delta);
        let ts = if h.timestamp_type() == TimestampType::LogAppendTime {
            h.max_timestamp
        } else {
            h.base_timestamp.saturating_add(r.timestamp_delta)
        };
        if pred(off, ts) {
            return Ok(Some(FoundRecord {
                offset: off,
                timestamp_ms: ts,
                leader_epoch: h.partition_leader_epoch,
            }));
        }
    }
    Ok(None)
}
