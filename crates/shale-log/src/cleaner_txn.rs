//! What compaction does with transactions, as Kafka's cleaner does: records of aborted
//! transactions go; an ABORT marker stays while the pass that reads it still removed records
//! of its transaction, a COMMIT marker while records of its transaction remain. A marker with
//! nothing left to mark gets a delete horizon (`delete.retention.ms`, KIP-534) and goes once
//! the horizon has passed, together with its aborted-transaction index entry. Transactions
//! without a marker in the log (still open) are left untouched.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::batch::{BatchHeader, Compression};
use crate::cleaner::TxnOutcome;
use crate::config::LogConfig;
use crate::error::LogError;
use crate::records::{self, BatchBuilder, OwnedRecord};
use crate::segment::Segment;

/// Control batches hold one small record; anything larger is not a marker we read.
const CONTROL_BATCH_BYTES_MAX: u64 = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkerType {
    Abort,
    Commit,
}

/// The type of the COMMIT/ABORT marker in a control batch (`batch` is the whole batch).
pub(crate) fn marker_type(batch: &[u8], h: &BatchHeader) -> Option<MarkerType> {
    crate::control::decode_control_batch(h, batch).map(|m| {
        if m.commit {
            MarkerType::Commit
        } else {
            MarkerType::Abort
        }
    })
}

/// How each transactional batch of the scanned segments ended, read from the markers that
/// follow it in the log.
#[derive(Debug, Default)]
pub(crate) struct TxnOutcomes {
    /// (producer id, batch base offset) -> committed.
    decided: HashMap<(i64, i64), bool>,
}

impl TxnOutcomes {
    /// Scans `segments` (in offset order) below `end_offset` for transactional batches and
    /// the markers that end them.
    pub(crate) fn scan(
        segments: &[Arc<Segment>],
        end_offset: i64,
    ) -> Result<TxnOutcomes, LogError> {
        let mut open: HashMap<i64, Vec<i64>> = HashMap::new();
        let mut decided = HashMap::new();
        'segments: for seg in segments {
            if seg.base_offset >= end_offset {
                break;
            }
            let mut scanner = seg.scanner(0)?;
            while let Some((pos, h)) = scanner.next()? {
                if h.last_offset() >= end_offset {
                    break 'segments;
                }
                if !h.is_transactional() || h.producer_id < 0 {
                    continue;
                }
                if !h.is_control() {
                    open.entry(h.producer_id).or_default().push(h.base_offset);
                    continue;
                }
                let mut bytes = vec![0u8; h.total_len()];
                seg.file()?.read_exact_at(&mut bytes, pos)?;
                let committed = match marker_type(&bytes, &h) {
                    Some(MarkerType::Commit) => true,
                    Some(MarkerType::Abort) => false,
                    None => continue,
                };
                for base in open.remove(&h.producer_id).unwrap_or_default() {
                    decided.insert((h.producer_id, base), committed);
                }
            }
        }
        Ok(TxnOutcomes { decided })
    }

    pub(crate) fn outcome(&self, producer_id: i64, batch_base_offset: i64) -> TxnOutcome {
        match self.decided.get(&(producer_id, batch_base_offset)) {
            Some(true) => TxnOutcome::Committed,
            Some(false) => TxnOutcome::Aborted,
            None => TxnOutcome::Unknown,
        }
    }
}

/// What one cleaning pass saw of each producer's current transaction, in offset order.
#[derive(Debug, Default)]
pub(crate) struct TxnCleaning {
    /// Producers whose aborted records this pass removed, marker not reached yet.
    aborted_removed: HashSet<i64>,
    /// Producers whose committed transaction still holds records, marker not reached yet.
    committed_live: HashSet<i64>,
}

impl TxnCleaning {
    pub(crate) fn on_aborted_batch_removed(&mut self, producer_id: i64) {
        self.aborted_removed.insert(producer_id);
    }

    pub(crate) fn on_committed_batch_kept(&mut self, producer_id: i64) {
        self.committed_live.insert(producer_id);
    }

    /// Whether the marker of `producer_id` marks nothing any more, so it may go once its
    /// delete horizon has passed. An ABORT marker whose records this pass removed stays one
    /// more pass (Kafka keeps it until a pass finds no records of its transaction).
    fn marker_is_empty(&mut self, producer_id: i64, marker: MarkerType) -> bool {
        match marker {
            MarkerType::Abort => !self.aborted_removed.remove(&producer_id),
            MarkerType::Commit => !self.committed_live.remove(&producer_id),
        }
    }

    /// Decides a control batch: `Ok(None)` drops it, otherwise the bytes to keep (with a
    /// delete horizon set the first time it is found empty).
    pub(crate) fn filter_marker(
        &mut self,
        bytes: &[u8],
        h: &BatchHeader,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<Option<Vec<u8>>, LogError> {
        let Some(marker) = marker_type(bytes, h) else {
            return Ok(Some(bytes.to_vec()));
        };
        if !self.marker_is_empty(h.producer_id, marker) {
            return Ok(Some(bytes.to_vec()));
        }
        if h.has_delete_horizon() {
            return Ok(if now_ms >= h.base_timestamp {
                None
            } else {
                Some(bytes.to_vec())
            });
        }
        with_delete_horizon(bytes, h, now_ms.saturating_add(config.delete_retention_ms)).map(Some)
    }
}

/// The control batch rebuilt with `horizon_ms` as its delete horizon (KIP-534: the base
/// timestamp holds the horizon and record timestamp deltas are relative to it).
fn with_delete_horizon(
    bytes: &[u8],
    h: &BatchHeader,
    horizon_ms: i64,
) -> Result<Vec<u8>, LogError> {
    let body = records::batch_body(bytes, CONTROL_BATCH_BYTES_MAX)?;
    let recs = records::decode_records(&body, h.record_count)?;
    let mut b = BatchBuilder::new(horizon_ms);
    b.base_offset = h.base_offset;
    b.partition_leader_epoch = h.partition_leader_epoch;
    b.compression = h.compression().unwrap_or(Compression::None);
    b.timestamp_type = h.timestamp_type();
    b.transactional = h.is_transactional();
    b.control = true;
    b.producer_id = h.producer_id;
    b.producer_epoch = h.producer_epoch;
    b.base_sequence = h.base_sequence;
    b.last_offset_delta = Some(h.last_offset_delta);
    b.max_timestamp = Some(h.max_timestamp);
    b.delete_horizon = true;
    for r in &recs {
        let timestamp_ms = h.base_timestamp.saturating_add(r.timestamp_delta);
        b.push_record(&OwnedRecord {
            offset_delta: r.offset_delta,
            timestamp_delta: timestamp_ms.saturating_sub(horizon_ms),
            key: r.key.map(<[u8]>::to_vec),
            value: r.value.map(<[u8]>::to_vec),
            headers: r
                .headers
                .iter()
                .map(|x| (x.key.to_vec(), x.value.map(<[u8]>::to_vec)))
                .collect(),
        });
    }
    b.build()
}
