//! Log compaction: keeps the latest record per key in the cleanable part of a log (segments
//! below the active one, wholly below the last stable offset and the high watermark, and
//! older than `min.compaction.lag.ms`, as Kafka's `cleanableOffsets`), removes tombstones after
//! `delete.retention.ms` (KIP-534 delete horizon in the batch header), keeps every record's
//! offset, rewrites changed batches with a new CRC and swaps the result in crash-safely:
//! `<base>.log.cleaned` -> `<base>.log.swap` -> old segments renamed `.deleted` -> `<base>.log`.
//! A `.swap` found at open is completed by `complete_swaps`. Transactions: `cleaner_txn.rs`.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::batch::{BatchHeader, Compression, HEADER_LEN};
use crate::checkpoint::fsync_dir;
use crate::cleaner_txn::{TxnCleaning, TxnOutcomes};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::log::{Log, NEVER_CLEANED};
use crate::records::{self, BatchBuilder, OwnedRecord};
use crate::segment::{self, HeaderScanner, Segment};

/// Outcome of a transaction as known to the transaction coordinator's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOutcome {
    Committed,
    Aborted,
    /// Still open or not known: the cleaner keeps its records untouched.
    Unknown,
}

/// Hook for the transaction layer: what happened to the transactional batch of
/// `producer_id` starting at `batch_base_offset` in `log`'s partition.
pub trait TxnResolver: Send + Sync {
    fn outcome(
        &self,
        topic_partition: &crate::TopicPartition,
        producer_id: i64,
        batch_base_offset: i64,
    ) -> TxnOutcome;
}

/// The resolver used until the transaction layer installs one: every outcome is unknown,
/// so transactional records are never removed.
#[derive(Debug, Default)]
pub struct KeepAllTransactions;

impl TxnResolver for KeepAllTransactions {
    fn outcome(&self, _: &crate::TopicPartition, _: i64, _: i64) -> TxnOutcome {
        TxnOutcome::Unknown
    }
}

/// How far each partition is stable, from the layer that hosts it (Kafka's
/// `UnifiedLog.lastStableOffset`): the first offset of its oldest open transaction, else its
/// high watermark. The cleaner touches no segment reaching that offset, so an open
/// transaction's records and everything after them stay as written until it ends.
pub trait StableOffsets: Send + Sync {
    /// `None` when the partition is not hosted: nothing of it is known to be stable, and the
    /// cleaner leaves the log alone.
    fn last_stable_offset(&self, topic_partition: &crate::TopicPartition) -> Option<i64>;
}

/// For logs without a transaction layer above them (tools, tests): only each log's own high
/// watermark bounds the cleaner.
#[derive(Debug, Default)]
pub struct HighWatermarkOnly;

impl StableOffsets for HighWatermarkOnly {
    fn last_stable_offset(&self, _: &crate::TopicPartition) -> Option<i64> {
        Some(i64::MAX)
    }
}

/// Approximate memory of one key-map entry beside the key bytes.
const KEY_ENTRY_OVERHEAD_BYTES: u64 = 48;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanerReport {
    pub logs_cleaned: usize,
    pub segments_rewritten: usize,
    pub records_removed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

impl CleanerReport {
    pub(crate) fn add(&mut self, o: &CleanerReport) {
        self.logs_cleaned += o.logs_cleaned;
        self.segments_rewritten += o.segments_rewritten;
        self.records_removed += o.records_removed;
        self.bytes_before += o.bytes_before;
        self.bytes_after += o.bytes_after;
    }
}

/// Completes compactions interrupted by a crash: every `<B>.log.swap` replaces the segments
/// whose base offsets fall inside its offset range, and its `<B>.txnindex.swap` (the cleaned
/// transaction index, written before the log swap) replaces theirs. A transaction-index swap
/// without a log swap belongs to a compaction that never committed and is dropped.
pub(crate) fn complete_swaps(
    dir: &Path,
    swaps: &[PathBuf],
    bases: &mut Vec<i64>,
) -> Result<(), LogError> {
    let mut txn_swaps: HashMap<i64, PathBuf> = HashMap::new();
    let mut log_swaps = Vec::new();
    for swap in swaps {
        let name = swap
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let stem = name.strip_suffix(segment::SWAP_SUFFIX).unwrap_or_default();
        if let Some(base) = segment::parse_base_offset(stem, segment::LOG_SUFFIX) {
            log_swaps.push((base, swap));
        } else if let Some(base) = segment::parse_base_offset(stem, segment::TXN_INDEX_SUFFIX) {
            txn_swaps.insert(base, swap.clone());
        } else {
            segment::remove_if_exists(swap)?;
        }
    }
    for (base, swap) in log_swaps {
        let file = Arc::new(File::open(swap)?);
        let size = file.metadata()?.len();
        let mut end = base;
        let mut scanner = HeaderScanner::new(file, 0, size);
        while let Some((_, h)) = scanner.next()? {
            end = h.last_offset() + 1;
        }
        let txn_swap = txn_swaps.remove(&base);
        for b in bases
            .iter()
            .copied()
            .filter(|b| *b >= base && *b < end.max(base + 1))
        {
            for suffix in [
                segment::LOG_SUFFIX,
                segment::INDEX_SUFFIX,
                segment::TIME_INDEX_SUFFIX,
                segment::TXN_INDEX_SUFFIX,
            ] {
                // Without a swap left, `<B>.txnindex` is already the cleaned one.
                if b == base && suffix == segment::TXN_INDEX_SUFFIX && txn_swap.is_none() {
                    continue;
                }
                segment::remove_if_exists(&dir.join(segment::file_name(b, suffix)))?;
            }
        }
        bases.retain(|b| !(*b >= base && *b < end.max(base + 1)));
        if let Some(txn_swap) = txn_swap {
            install_txn_index_swap(
                &txn_swap,
                &dir.join(segment::file_name(base, segment::TXN_INDEX_SUFFIX)),
            )?;
        }
        std::fs::rename(
            swap,
            dir.join(segment::file_name(base, segment::LOG_SUFFIX)),
        )?;
        bases.push(base);
        tracing::info!(dir = %dir.display(), base, "completed interrupted compaction swap");
    }
    for (_, uncommitted) in txn_swaps {
        segment::remove_if_exists(&uncommitted)?;
    }
    if !swaps.is_empty() {
        fsync_dir(dir)?;
    }
    Ok(())
}

/// Moves a cleaned transaction index into place; an empty one leaves no file.
fn install_txn_index_swap(swap: &Path, target: &Path) -> Result<(), LogError> {
    if std::fs::metadata(swap)?.len() == 0 {
        segment::remove_if_exists(swap)?;
    } else {
        std::fs::rename(swap, target)?;
    }
    Ok(())
}

fn read_batch(file: &File, pos: u64, h: &BatchHeader) -> Result<Vec<u8>, LogError> {
    let mut buf = vec![0u8; h.total_len()];
    file.read_exact_at(&mut buf, pos)?;
    Ok(buf)
}

/// Whether the records of a batch take part in key deduplication: `Some(false)` for an
/// aborted transaction's records, `None` for control batches and undecided transactions.
/// The markers in the log decide first; the installed resolver answers for the rest.
fn participates(
    log: &Log,
    h: &BatchHeader,
    outcomes: &TxnOutcomes,
    resolver: &dyn TxnResolver,
) -> Option<bool> {
    if h.is_control() {
        return None;
    }
    if h.is_transactional() {
        let outcome = match outcomes.outcome(h.producer_id, h.base_offset) {
            TxnOutcome::Unknown => {
                resolver.outcome(log.topic_partition(), h.producer_id, h.base_offset)
            }
            decided => decided,
        };
        return match outcome {
            TxnOutcome::Committed => Some(true),
            TxnOutcome::Aborted => Some(false),
            TxnOutcome::Unknown => None,
        };
    }
    Some(true)
}

impl Log {
    /// One compaction pass over this log if its policy is `compact` and enough is dirty.
    /// Nothing at or above `last_stable_offset` (the partition's, see [`StableOffsets`]) or
    /// the log's high watermark is cleaned.
    pub fn clean(
        &self,
        now_ms: i64,
        resolver: &dyn TxnResolver,
        last_stable_offset: i64,
    ) -> Result<CleanerReport, LogError> {
        let config = self.config();
        if !config.cleanup_policy.compact || self.is_offline() {
            return Ok(CleanerReport::default());
        }
        let _c = self.cleaner_lock.lock();
        let truncations = self.truncations.load(Ordering::Acquire);
        let uncleanable_from = last_stable_offset.min(self.high_watermark());
        let segs = self.segments_snapshot();
        // A segment is cleanable when the next one starts at or below the uncleanable offset
        // (so the segment holding that offset is not), which also leaves out the active one.
        let cleanable: Vec<Arc<Segment>> = {
            let mut v = Vec::new();
            for pair in segs.windows(2) {
                if pair[1].base_offset > uncleanable_from {
                    break;
                }
                let s = &pair[0];
                let newest = s.max_timestamp()?.map_or(i64::MIN, |(t, _)| t);
                if now_ms.saturating_sub(newest) < config.min_compaction_lag_ms {
                    break;
                }
                v.push(s.clone());
            }
            v
        };
        if cleanable.is_empty() {
            return Ok(CleanerReport::default());
        }
        let cleaned_to = self.current_first_dirty_offset();
        // A segment is dirty when it holds any offset at or above the first dirty one; the
        // cleanable ones all have a next segment, whose base is their end.
        let dirty_from = (0..cleanable.len())
            .find(|&i| segs[i + 1].base_offset > cleaned_to)
            .unwrap_or(cleanable.len());
        let (mut dirty, mut total) = (0u64, 0u64);
        for (i, s) in cleanable.iter().enumerate() {
            total += s.size();
            if i >= dirty_from {
                dirty += s.size();
            }
        }
        let first_dirty = cleanable.get(dirty_from);
        let overdue = first_dirty.is_some_and(|s| {
            s.rolling_timestamp()
                .is_some_and(|t| now_ms.saturating_sub(t) > config.max_compaction_lag_ms)
        });
        let ratio = if total == 0 {
            0.0
        } else {
            dirty as f64 / total as f64
        };
        if dirty == 0 || (ratio < config.min_cleanable_dirty_ratio && !overdue) {
            return Ok(CleanerReport::default());
        }
        // Markers at or above the uncleanable offset may still be truncated away: they decide
        // nothing yet.
        let outcomes = TxnOutcomes::scan(&segs, uncleanable_from)?;
        let (mut report, covered) =
            self.compact_segments(&cleanable, dirty_from, &config, now_ms, &outcomes, resolver)?;
        // Segments are in offset order: the next one after what was cleaned marks the end
        // (cleanable segments never include the last one, so it exists).
        let next_base = segs
            .get(covered)
            .map_or(cleanable[covered - 1].base_offset, |s| s.base_offset);
        let _w = self.writer.lock();
        // A truncation meanwhile may have replaced data below `next_base`; its lower first
        // dirty offset stands.
        if self.truncations.load(Ordering::Acquire) == truncations {
            self.cleaned_up_to.store(next_base, Ordering::Release);
            self.persist_first_dirty_offset()?;
        }
        report.logs_cleaned = 1;
        Ok(report)
    }

    /// Where the dirty part starts now: the recorded first dirty offset, the log start when
    /// none is recorded or the start has moved past it (Kafka's `cleanableOffsets`).
    fn current_first_dirty_offset(&self) -> i64 {
        let start = self.log_start_offset();
        let recorded = self.cleaned_up_to.load(Ordering::Acquire);
        if recorded == NEVER_CLEANED || recorded < start {
            start
        } else {
            recorded.min(self.log_end_offset())
        }
    }

    fn compact_segments(
        &self,
        cleanable: &[Arc<Segment>],
        first_dirty: usize,
        config: &LogConfig,
        now_ms: i64,
        outcomes: &TxnOutcomes,
        resolver: &dyn TxnResolver,
    ) -> Result<(CleanerReport, usize), LogError> {
        let limit = config.decompressed_batch_bytes_max;
        // Pass 1: latest offset of every key in the dirty segments (those not cleaned yet),
        // over as many whole segments as the key map budget allows (at least one). The clean
        // part already holds one record per key; it is deduplicated against this map.
        let first_dirty = if first_dirty < cleanable.len() {
            first_dirty
        } else {
            0
        };
        let mut latest: HashMap<Vec<u8>, i64> = HashMap::new();
        let mut map_bytes = 0u64;
        let mut covered = first_dirty;
        for seg in &cleanable[first_dirty..] {
            if covered > first_dirty && map_bytes >= config.cleaner_dedupe_bytes_max {
                break;
            }
            covered += 1;
            let mut scanner = seg.scanner(0)?;
            while let Some((pos, h)) = scanner.next()? {
                if participates(self, &h, outcomes, resolver) != Some(true) {
                    continue;
                }
                let bytes = read_batch(seg.file()?.as_ref(), pos, &h)?;
                let Ok(body) = records::batch_body(&bytes, limit) else {
                    continue;
                };
                let Ok(recs) = records::decode_records(&body, h.record_count) else {
                    continue;
                };
                for r in recs {
                    if let Some(k) = r.key {
                        let offset = h.base_offset + i64::from(r.offset_delta);
                        if latest.insert(k.to_vec(), offset).is_none() {
                            map_bytes += k.len() as u64 + KEY_ENTRY_OVERHEAD_BYTES;
                        }
                    }
                }
            }
        }
        let cleanable = &cleanable[..covered];
        // Pass 2: rewrite groups of consecutive segments that fit one segment.
        let mut report = CleanerReport::default();
        let mut txns = TxnCleaning::default();
        let mut group: Vec<Arc<Segment>> = Vec::new();
        let mut group_bytes = 0u64;
        for seg in cleanable {
            let fits = group_bytes + seg.size() <= config.segment_bytes
                && group
                    .first()
                    .is_none_or(|f| seg.base_offset - f.base_offset < i64::from(i32::MAX));
            if !fits && !group.is_empty() {
                report.add(&self.rewrite_group(
                    &group,
                    &latest,
                    config,
                    now_ms,
                    (outcomes, &mut txns),
                    resolver,
                )?);
                group.clear();
                group_bytes = 0;
            }
            group_bytes += seg.size();
            group.push(seg.clone());
        }
        if !group.is_empty() {
            report.add(&self.rewrite_group(
                &group,
                &latest,
                config,
                now_ms,
                (outcomes, &mut txns),
                resolver,
            )?);
        }
        Ok((report, covered))
    }

    fn rewrite_group(
        &self,
        group: &[Arc<Segment>],
        latest: &HashMap<Vec<u8>, i64>,
        config: &LogConfig,
        now_ms: i64,
        (outcomes, txns): (&TxnOutcomes, &mut TxnCleaning),
        resolver: &dyn TxnResolver,
    ) -> Result<CleanerReport, LogError> {
        let base = group[0].base_offset;
        let dir = self.dir().to_path_buf();
        let cleaned_path = dir.join(format!(
            "{}{}",
            segment::file_name(base, segment::LOG_SUFFIX),
            segment::CLEANED_SUFFIX
        ));
        let mut out = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&cleaned_path)?;
        let mut report = CleanerReport {
            segments_rewritten: group.len(),
            ..CleanerReport::default()
        };
        let mut buf = Vec::new();
        let mut dropped_markers = std::collections::HashSet::new();
        for seg in group {
            report.bytes_before += seg.size();
            let mut scanner = seg.scanner(0)?;
            while let Some((pos, h)) = scanner.next()? {
                let bytes = read_batch(seg.file()?.as_ref(), pos, &h)?;
                let (kept, removed) = if h.is_control() {
                    let kept = txns.filter_marker(&bytes, &h, config, now_ms)?;
                    if kept.is_none() {
                        dropped_markers.insert(h.base_offset);
                    }
                    (kept, 0)
                } else {
                    let dedup = participates(self, &h, outcomes, resolver);
                    let filtered = filter_batch(self, &bytes, &h, latest, config, now_ms, dedup)?;
                    if h.is_transactional() {
                        match dedup {
                            Some(false) => txns.on_aborted_batch_removed(h.producer_id),
                            Some(true) if filtered.0.is_none() => {}
                            _ => txns.on_committed_batch_kept(h.producer_id),
                        }
                    }
                    filtered
                };
                report.records_removed += removed;
                if let Some(b) = kept {
                    buf.extend_from_slice(&b);
                }
                if buf.len() >= 1 << 20 {
                    out.write_all(&buf)?;
                    buf.clear();
                }
            }
        }
        out.write_all(&buf)?;
        out.sync_all()?;
        report.bytes_after = out.metadata()?.len();
        drop(out);
        // The aborted transactions whose markers survive move to the cleaned segment's index.
        let txn_index_name = segment::file_name(base, segment::TXN_INDEX_SUFFIX);
        let txn_cleaned_path = dir.join(format!("{txn_index_name}{}", segment::CLEANED_SUFFIX));
        let txn_swap_path = dir.join(format!("{txn_index_name}{}", segment::SWAP_SUFFIX));
        let mut txn_entries = Vec::new();
        for seg in group {
            for txn in seg.aborted_txn_entries()? {
                if !dropped_markers.contains(&txn.last_offset) {
                    txn_entries.extend_from_slice(&txn.to_bytes());
                }
            }
        }
        std::fs::write(&txn_cleaned_path, &txn_entries)?;
        File::open(&txn_cleaned_path)?.sync_all()?;

        let swap_path = dir.join(format!(
            "{}{}",
            segment::file_name(base, segment::LOG_SUFFIX),
            segment::SWAP_SUFFIX
        ));
        let _w = self.writer.lock();
        // Truncation or retention may have removed these segments meanwhile.
        let still_there = {
            let map = self.segments.read();
            group
                .iter()
                .all(|s| map.get(&s.base_offset).is_some_and(|m| Arc::ptr_eq(m, s)))
                && map.len() > group.len()
        };
        if !still_there {
            segment::remove_if_exists(&cleaned_path)?;
            segment::remove_if_exists(&txn_cleaned_path)?;
            return Ok(CleanerReport::default());
        }
        // The index swap comes first: the log swap is the commit point (`complete_swaps`).
        std::fs::rename(&txn_cleaned_path, &txn_swap_path)?;
        std::fs::rename(&cleaned_path, &swap_path)?;
        fsync_dir(&dir)?;
        for s in group {
            self.schedule_delete_pub(s, now_ms)?;
        }
        install_txn_index_swap(&txn_swap_path, &dir.join(&txn_index_name))?;
        std::fs::rename(
            &swap_path,
            dir.join(segment::file_name(base, segment::LOG_SUFFIX)),
        )?;
        fsync_dir(&dir)?;
        let new = Arc::new(Segment::open(&dir, base, config.index_bytes_max(), now_ms)?);
        new.ensure_indexes(config.index_interval_bytes)?;
        new.on_roll()?;
        {
            let mut map = self.segments.write();
            for s in group {
                map.remove(&s.base_offset);
            }
            map.insert(base, new);
        }
        Ok(report)
    }
}

/// Decides what of one batch survives. Returns the bytes to write (`None` = drop the batch)
/// and how many records were removed.
fn filter_batch(
    log: &Log,
    bytes: &[u8],
    h: &BatchHeader,
    latest: &HashMap<Vec<u8>, i64>,
    config: &LogConfig,
    now_ms: i64,
    dedup: Option<bool>,
) -> Result<(Option<Vec<u8>>, u64), LogError> {
    let Some(dedup) = dedup else {
        return Ok((Some(bytes.to_vec()), 0));
    };
    if !dedup {
        // Aborted transaction data goes entirely.
        return Ok((None, h.record_count.max(0) as u64));
    }
    let body = match records::batch_body(bytes, config.decompressed_batch_bytes_max) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(log = %log.topic_partition(), offset = h.base_offset, error = %e,
                "cannot decompress batch, keeping it unchanged");
            return Ok((Some(bytes.to_vec()), 0));
        }
    };
    let Ok(recs) = records::decode_records(&body, h.record_count) else {
        return Ok((Some(bytes.to_vec()), 0));
    };
    let horizon = if h.has_delete_horizon() {
        Some(h.base_timestamp)
    } else {
        None
    };
    let mut keep = Vec::with_capacity(recs.len());
    let mut has_tombstone = false;
    for r in &recs {
        let offset = h.base_offset + i64::from(r.offset_delta);
        let retained = match r.key {
            None => true,
            Some(k) => latest.get(k).is_none_or(|o| *o <= offset),
        };
        if !retained {
            continue;
        }
        if r.value.is_none() && r.key.is_some() {
            if horizon.is_some_and(|t| now_ms >= t) {
                continue;
            }
            has_tombstone = true;
        }
        keep.push(r);
    }
    let removed = (recs.len() - keep.len()) as u64;
    let set_horizon = has_tombstone && horizon.is_none();
    if removed == 0 && !set_horizon {
        return Ok((Some(bytes.to_vec()), 0));
    }
    if keep.is_empty() {
        return Ok((None, removed));
    }
    let timestamp = |r: &records::Record<'_>| h.base_timestamp.saturating_add(r.timestamp_delta);
    // With a delete horizon the base timestamp field holds the horizon and record deltas are
    // relative to it (KIP-534); otherwise deltas stay as they were.
    let (base_ts, new_horizon) = if has_tombstone {
        match horizon {
            Some(t) => (t, true),
            None => (now_ms.saturating_add(config.delete_retention_ms), true),
        }
    } else {
        (h.base_timestamp, false)
    };
    let original_base = h.base_timestamp;
    let mut b = BatchBuilder::new(base_ts);
    b.base_offset = h.base_offset;
    b.partition_leader_epoch = h.partition_leader_epoch;
    b.compression = h.compression().unwrap_or(Compression::None);
    b.timestamp_type = h.timestamp_type();
    b.transactional = h.is_transactional();
    b.control = h.is_control();
    b.producer_id = h.producer_id;
    b.producer_epoch = h.producer_epoch;
    b.base_sequence = h.base_sequence;
    b.last_offset_delta = Some(h.last_offset_delta);
    b.max_timestamp = Some(h.max_timestamp);
    b.delete_horizon = new_horizon;
    for r in keep {
        if base_ts == original_base {
            b.push_raw(r.raw, r.offset_delta, r.timestamp_delta);
        } else {
            b.push_record(&OwnedRecord {
                offset_delta: r.offset_delta,
                timestamp_delta: timestamp(r).saturating_sub(base_ts),
                key: r.key.map(<[u8]>::to_vec),
                value: r.value.map(<[u8]>::to_vec),
                headers: r
                    .headers
                    .iter()
                    .map(|x| (x.key.to_vec(), x.value.map(<[u8]>::to_vec)))
                    .collect(),
            });
        }
    }
    let out = b.build()?;
    debug_assert!(out.len() >= HEADER_LEN);
    Ok((Some(out), removed))
}
