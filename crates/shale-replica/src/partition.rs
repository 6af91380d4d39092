//! One hosted partition: its log, its producer state and its replication state.
//!
//! Appends hold the partition's producer-state lock across the producer-state check, the log
//! append and the producer-state update, so a retried batch can never be appended twice.

use std::sync::atomic::{AtomicI32, Ordering};

use parking_lot::Mutex;
use shale_log::batch::BatchHeader;
use shale_log::control::{encode_control_batch, ControlMarker};
use shale_log::{
    AbortedTxn, AppendInfo, AppendOrigin, Log, LogError, TopicPartition, ValidatedBatches,
};
use shale_txn::{ProducerBatch, ProducerStateManager, SequenceCheck, TxnMarker};
use std::sync::Arc;
use tracing::warn;
use uuid::Uuid;

pub use crate::error::AppendError;
use crate::producer_replay::{index_if_aborted, load_producers};
use crate::state::PartitionReplication;

/// The outcome of a successful (or duplicate) append.
#[derive(Clone, Copy, Debug)]
pub struct Appended {
    pub base_offset: i64,
    pub last_offset: i64,
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
}

/// One hosted partition. Its high watermark lives in its log (as Kafka keeps it in
/// `UnifiedLog`), so retention and the cleaner see every move of it.
pub struct Partition {
    pub tp: TopicPartition,
    pub topic_id: Uuid,
    pub log: Arc<Log>,
    pub(crate) producers: Mutex<ProducerStateManager>,
    pub(crate) leader_epoch: AtomicI32,
    pub(crate) leader_id: AtomicI32,
    pub(crate) replication: PartitionReplication,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition").field("tp", &self.tp).finish()
    }
}

/// Records the appended batches of idempotent and transactional producers.
fn record_appended(producers: &mut ProducerStateManager, info: &AppendInfo, now_ms: i64) {
    for h in info.batches.iter().filter(|h| h.producer_id >= 0) {
        producers.record(&producer_batch(h), now_ms, info.log_append_time_ms);
    }
}

pub(crate) fn producer_batch(h: &BatchHeader) -> ProducerBatch {
    ProducerBatch {
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
        base_sequence: h.base_sequence,
        last_sequence: h.last_sequence(),
        first_offset: h.base_offset,
        last_offset: h.last_offset(),
        max_timestamp_ms: h.max_timestamp,
        is_transactional: h.is_transactional(),
        is_control: h.is_control(),
        record_count: h.record_count,
    }
}

impl Partition {
    pub fn high_watermark(&self) -> i64 {
        self.log.high_watermark()
    }

    /// The last stable offset: the high watermark unless a transaction is open below it.
    pub fn last_stable_offset(&self) -> i64 {
        let hw = self.high_watermark();
        match self.producers.lock().first_unstable_offset() {
            Some(first) => first.min(hw),
            None => hw,
        }
    }

    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(Ordering::Acquire)
    }

    pub fn leader_id(&self) -> i32 {
        self.leader_id.load(Ordering::Acquire)
    }

    /// Appends client batches (framing and CRCs checked once, by [`ValidatedBatches::parse`]):
    /// checks idempotent sequences, writes.
    pub fn append_client(
        &self,
        batches: ValidatedBatches<'_>,
        now_ms: i64,
    ) -> Result<Appended, AppendError> {
        let mut producers = self.producers.lock();
        for h in batches.headers().iter().filter(|h| h.producer_id >= 0) {
            if let SequenceCheck::Duplicate {
                first_offset,
                last_offset,
                log_append_time_ms,
            } = producers.check(&producer_batch(h), now_ms)?
            {
                return Ok(Appended {
                    base_offset: first_offset,
                    last_offset,
                    log_append_time_ms,
                    log_start_offset: self.log.log_start_offset(),
                });
            }
        }
        let info = self.log.append_validated(
            batches,
            self.leader_epoch(),
            now_ms,
            AppendOrigin::Client,
        )?;
        record_appended(&mut producers, &info, now_ms);
        drop(producers);
        // The ISR decides when the append is committed (at once when the leader is alone).
        self.maybe_advance_high_watermark();
        Ok(Appended {
            base_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time_ms: info.log_append_time_ms,
            log_start_offset: info.log_start_offset,
        })
    }

    /// Writes a COMMIT/ABORT marker for a producer (the transaction coordinator's
    /// WriteTxnMarkers), completing its transaction here; an abort is recorded in the
    /// aborted-transaction index for read_committed fetches. The marker's epoch is checked
    /// with the rule of the transaction version that wrote it.
    pub fn append_marker(
        &self,
        marker: &ControlMarker,
        transaction_version: shale_txn::TransactionVersion,
        now_ms: i64,
    ) -> Result<(), AppendError> {
        let mut producers = self.producers.lock();
        let mut txn_marker = TxnMarker {
            producer_id: marker.producer_id,
            producer_epoch: marker.producer_epoch,
            coordinator_epoch: marker.coordinator_epoch,
            commit: marker.commit,
            offset: -1,
            timestamp_ms: now_ms,
            transaction_version,
        };
        producers.check_marker(&txn_marker)?;
        let mut batch = encode_control_batch(marker, now_ms)?;
        let info = self.log.append(
            &mut batch,
            self.leader_epoch(),
            now_ms,
            AppendOrigin::Coordinator,
        )?;
        txn_marker.offset = info.first_offset;
        let completed = producers.complete_txn(&txn_marker)?;
        if let Some(txn) = completed {
            index_if_aborted(&self.log, &txn);
        }
        drop(producers);
        self.maybe_advance_high_watermark();
        Ok(())
    }

    /// Appends a batch the broker built for a producer (a TxnOffsetCommit's offsets in the
    /// producer's transaction): the producer epoch is checked and the transaction tracked, but
    /// the batch carries no sequence.
    pub fn append_for_producer(&self, batch: &mut [u8], now_ms: i64) -> Result<(), AppendError> {
        let batches = ValidatedBatches::parse(batch)?;
        let mut producers = self.producers.lock();
        for h in batches.headers() {
            producers.check(&producer_batch(h), now_ms)?;
        }
        let info = self.log.append_validated(
            batches,
            self.leader_epoch(),
            now_ms,
            AppendOrigin::Coordinator,
        )?;
        record_appended(&mut producers, &info, now_ms);
        drop(producers);
        self.maybe_advance_high_watermark();
        Ok(())
    }

    /// Aborted transactions overlapping `[fetch_offset, upper_bound_offset)`, from the
    /// indexes of the segments from the one holding `fetch_offset` on.
    pub fn aborted_txns(&self, fetch_offset: i64, upper_bound_offset: i64) -> Vec<AbortedTxn> {
        match self
            .log
            .collect_aborted_txns(fetch_offset, upper_bound_offset)
        {
            Ok(aborted) => aborted,
            Err(e) => {
                warn!(tp = %self.tp, "cannot read the aborted-transaction index: {e}");
                Vec::new()
            }
        }
    }

    /// Appends a batch the broker itself built (group coordinator records): offsets assigned
    /// here, no producer state involved, and the high watermark follows as for client writes.
    pub fn append_coordinator(
        &self,
        batch: &mut [u8],
        now_ms: i64,
    ) -> Result<Appended, AppendError> {
        let producers = self.producers.lock();
        let info = self.log.append(
            batch,
            self.leader_epoch(),
            now_ms,
            AppendOrigin::Coordinator,
        )?;
        drop(producers);
        self.maybe_advance_high_watermark();
        Ok(Appended {
            base_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time_ms: info.log_append_time_ms,
            log_start_offset: info.log_start_offset,
        })
    }

    /// Producer state rebuilt for the log as it now is (after a truncation).
    pub(crate) fn reload_producers(&self, expiration_ms: i64) -> ProducerStateManager {
        load_producers(&self.log, expiration_ms)
    }

    /// Snapshot of producer state for DescribeProducers.
    pub fn producer_entries(&self) -> Vec<shale_txn::ProducerSnapshotEntry> {
        self.producers.lock().producers().collect()
    }

    /// Writes a producer-state snapshot at the current log end offset.
    pub fn snapshot_producers(&self) {
        let producers = self.producers.lock();
        let offset = self.log.log_end_offset();
        if let Err(e) = producers.write_snapshot(self.log.dir(), offset) {
            warn!(tp = %self.tp, "cannot write producer snapshot: {e}");
        }
    }

    /// Moves the log start offset forward (DeleteRecords).
    pub fn delete_records_before(&self, offset: i64) -> Result<i64, LogError> {
        let target = if offset == -1 {
            self.high_watermark()
        } else {
            offset
        };
        self.log.delete_records_before(target)
    }
}
