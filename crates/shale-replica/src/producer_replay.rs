//! Producer state and the aborted-transaction indexes rebuilt from a partition's log: at
//! open (from the newest snapshot, or from the log start when an index must be rebuilt) and
//! as a follower replays the leader's markers.

use shale_log::batch::{parse_batches, BatchHeader};
use shale_log::control::{decode_control_batch, ControlMarker};
use shale_log::{AbortedTxn, Log};
use shale_txn::{ProducerStateManager, TxnMarker};
use tracing::{info, warn};

use crate::partition::producer_batch;

/// Where earlier versions kept one aborted-transaction index for the whole partition; the
/// log now keeps one `.txnindex` per segment, rebuilt from the log when this file is found.
const LEGACY_TXN_INDEX_FILE: &str = "partition.txnindex";

/// Opens the segments' aborted-transaction indexes. `true` when their entries must be
/// rebuilt from the log start: an index was torn or corrupt, or the partition still has the
/// single index file of earlier versions.
fn txn_indexes_need_rebuild(log: &Log) -> bool {
    let legacy = log.dir().join(LEGACY_TXN_INDEX_FILE);
    let legacy_found = match std::fs::remove_file(&legacy) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => {
            warn!(path = %legacy.display(), "cannot remove the old aborted-transaction index: {e}");
            true
        }
    };
    match log.load_txn_indexes() {
        Ok(rebuilt) => rebuilt || legacy_found,
        Err(e) => {
            warn!(dir = %log.dir().display(), "cannot open the aborted-transaction indexes: {e}");
            true
        }
    }
}

/// Rebuilds producer state from the newest snapshot plus the batches written after it, and
/// the aborted-transaction index entries of the markers in that replay. When an index needs
/// a full rebuild the replay starts at the log start with empty producer state, so every
/// transaction's first offset is seen again.
pub(crate) fn load_producers(log: &Log, expiration_ms: i64) -> ProducerStateManager {
    let end = log.log_end_offset();
    let snapshot = if txn_indexes_need_rebuild(log) {
        info!(dir = %log.dir().display(), "rebuilding aborted-transaction indexes from the log");
        None
    } else {
        // After a crash, index entries of markers above the flushed part may be lost: the
        // replay starts at or below it so it indexes them again.
        let replay_bound = log
            .txn_index_unflushed_from()
            .map_or(end, |from| from.min(end));
        match ProducerStateManager::load_latest_snapshot(
            log.dir(),
            replay_bound,
            expiration_ms,
            shale_log::now_ms(),
        ) {
            Ok(loaded) => Some(loaded),
            Err(e) => {
                warn!(dir = %log.dir().display(), "producer snapshot unusable, rebuilding: {e}");
                None
            }
        }
    };
    let (mut producers, mut offset) = snapshot.unwrap_or_else(|| {
        (
            ProducerStateManager::new(expiration_ms),
            log.log_start_offset(),
        )
    });
    offset = offset.max(log.log_start_offset());
    // Markers at or after the replay start are indexed again below.
    if let Err(e) = log.truncate_aborted_txns_from(offset) {
        warn!(dir = %log.dir().display(), "cannot truncate the aborted-transaction index: {e}");
    }
    while offset < end {
        let read = match log.read(offset, 1 << 20, end, true) {
            Ok(r) => r,
            Err(e) => {
                warn!(dir = %log.dir().display(), "cannot replay producer state: {e}");
                break;
            }
        };
        let bytes = match read.to_bytes() {
            Ok(b) => b,
            Err(e) => {
                warn!(dir = %log.dir().display(), "cannot replay producer state: {e}");
                break;
            }
        };
        let headers = match parse_batches(&bytes) {
            Ok(h) => h,
            Err(e) => {
                warn!(dir = %log.dir().display(), "cannot replay producer state: {e}");
                break;
            }
        };
        let Some(last) = headers.last() else { break };
        let next = last.last_offset() + 1;
        let mut position = 0usize;
        for h in &headers {
            let batch = bytes
                .get(position..position + h.total_len())
                .unwrap_or_default();
            position += h.total_len();
            if h.producer_id < 0 || h.last_offset() < offset {
                continue;
            }
            match decode_control_batch(h, batch) {
                Some(marker) if h.base_offset >= offset => {
                    replay_marker(&mut producers, log, h, &marker);
                }
                _ => producers.replay(&producer_batch(h)),
            }
        }
        producers.on_high_watermark_updated(end);
        if next <= offset {
            break;
        }
        offset = next;
    }
    producers
}

/// Replays a control batch already in the log into producer state, and indexes the
/// transaction it aborts (recovery and followers both learn markers this way).
pub(crate) fn replay_marker(
    producers: &mut ProducerStateManager,
    log: &Log,
    header: &BatchHeader,
    marker: &ControlMarker,
) {
    let completed = producers.replay_marker(&TxnMarker {
        producer_id: marker.producer_id,
        producer_epoch: marker.producer_epoch,
        coordinator_epoch: marker.coordinator_epoch,
        commit: marker.commit,
        offset: header.base_offset,
        timestamp_ms: header.max_timestamp,
        transaction_version: shale_txn::TransactionVersion::Legacy,
    });
    if let Some(txn) = completed {
        index_if_aborted(log, &txn);
    }
}

/// Adds an aborted transaction to the index of the segment holding its marker, so
/// read_committed fetches can list it. A failure is logged: the marker itself is in the log,
/// and recovery rebuilds a torn index from it.
pub(crate) fn index_if_aborted(log: &Log, txn: &shale_txn::CompletedTxn) {
    if !txn.is_aborted {
        return;
    }
    let entry = AbortedTxn {
        producer_id: txn.producer_id,
        first_offset: txn.first_offset,
        last_offset: txn.last_offset,
        last_stable_offset: txn.last_stable_offset,
    };
    if let Err(e) = log.append_aborted_txn(entry) {
        warn!(dir = %log.dir().display(), "cannot index an aborted transaction: {e}");
    }
}
