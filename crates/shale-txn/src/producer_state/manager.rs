//! The producer state of one partition.

use std::collections::BTreeMap;

use super::entry::{in_sequence, ProducerStateEntry};
use super::types::{
    BatchMetadata, CompletedTxn, ProducerBatch, ProducerSnapshotEntry, SequenceCheck,
    TransactionVersion, TxnMarker, NO_PRODUCER_EPOCH,
};
use crate::error::ProducerStateError;

/// A transaction whose marker is written but not yet below the high watermark. It still holds
/// the last stable offset back: a read_committed consumer must not see its data before the
/// marker is replicated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnreplicatedTxn {
    pub(crate) producer_id: i64,
    pub(crate) last_offset: i64,
}

/// Producer state of one partition. Not internally synchronised: the broker holds it under the
/// partition's append lock, calls [`Self::check`] before an append and [`Self::record`] (or
/// [`Self::complete_txn`] for a marker) after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerStateManager {
    pub(crate) producer_id_expiration_ms: i64,
    pub(crate) producers: BTreeMap<i64, ProducerStateEntry>,
    /// First offset of each open transaction -> its producer id.
    pub(crate) ongoing_txns: BTreeMap<i64, i64>,
    /// First offset -> completed transaction whose marker is not yet replicated.
    pub(crate) unreplicated_txns: BTreeMap<i64, UnreplicatedTxn>,
    /// The offset after the last batch applied: the state reflects the log below it.
    pub(crate) map_end_offset: i64,
}

impl ProducerStateManager {
    /// An empty state. `producer_id_expiration_ms` is Kafka's `producer.id.expiration.ms`
    /// (default 86400000).
    pub fn new(producer_id_expiration_ms: i64) -> Self {
        Self {
            producer_id_expiration_ms,
            producers: BTreeMap::new(),
            ongoing_txns: BTreeMap::new(),
            unreplicated_txns: BTreeMap::new(),
            map_end_offset: 0,
        }
    }

    pub fn producer_id_expiration_ms(&self) -> i64 {
        self.producer_id_expiration_ms
    }

    /// The offset after the last batch or marker applied to this state.
    pub fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }

    /// Whether the entry has outlived `producer.id.expiration.ms`; an open transaction keeps a
    /// producer alive (the coordinator times the transaction out instead).
    fn is_expired(&self, entry: &ProducerStateEntry, now_ms: i64) -> bool {
        entry.current_txn_first_offset.is_none()
            && now_ms.saturating_sub(entry.last_update_ms) >= self.producer_id_expiration_ms
    }

    /// The producer's entry unless it has expired by `now_ms`. Treating an expired but not yet
    /// removed entry as absent makes the answer independent of when [`Self::remove_expired`]
    /// last ran.
    fn live_entry(&self, producer_id: i64, now_ms: i64) -> Option<&ProducerStateEntry> {
        self.producers
            .get(&producer_id)
            .filter(|entry| !self.is_expired(entry, now_ms))
    }

    /// Validates a data batch from a client before it is appended (its offsets are not yet
    /// assigned and are ignored).
    ///
    /// Order of the rules, as in Kafka: a retry of one of the last five batches (same epoch,
    /// same sequence range) is a duplicate; an older epoch is fenced; a newer epoch must start
    /// at sequence 0; at the same epoch the batch must directly follow the last sequence
    /// (wrapping at `i32::MAX`); a producer without state may start anywhere (KIP-360: its
    /// state may have expired or been removed with the log's head); a non-transactional write
    /// inside an open transaction is refused.
    pub fn check(
        &self,
        batch: &ProducerBatch,
        now_ms: i64,
    ) -> Result<SequenceCheck, ProducerStateError> {
        if batch.is_control {
            return Err(ProducerStateError::InvalidBatch {
                reason: "control batches are checked with check_marker".to_owned(),
            });
        }
        if !batch.has_producer_id() {
            return Ok(SequenceCheck::Append);
        }
        let producer_id = batch.producer_id;
        let Some(entry) = self.live_entry(producer_id, now_ms) else {
            return Ok(SequenceCheck::Append);
        };

        if batch.has_sequence() {
            if let Some(duplicate) = entry.find_duplicate(
                batch.producer_epoch,
                batch.base_sequence,
                batch.last_sequence,
            ) {
                return Ok(SequenceCheck::Duplicate {
                    first_offset: duplicate.first_offset,
                    last_offset: duplicate.last_offset,
                    log_append_time_ms: duplicate.log_append_time_ms,
                });
            }
        }

        if batch.producer_epoch < entry.producer_epoch {
            return Err(ProducerStateError::InvalidProducerEpoch {
                producer_id,
                producer_epoch: batch.producer_epoch,
                current_epoch: entry.producer_epoch,
            });
        }

        if batch.has_sequence() {
            self.check_sequence(entry, batch)?;
        }

        if let Some(txn_first_offset) = entry.current_txn_first_offset {
            if !batch.is_transactional {
                return Err(ProducerStateError::InvalidTxnState {
                    producer_id,
                    txn_first_offset,
                });
            }
        }
        Ok(SequenceCheck::Append)
    }

    fn check_sequence(
        &self,
        entry: &ProducerStateEntry,
        batch: &ProducerBatch,
    ) -> Result<(), ProducerStateError> {
        let out_of_order = || ProducerStateError::OutOfOrderSequence {
            producer_id: batch.producer_id,
            producer_epoch: batch.producer_epoch,
            incoming_sequence: batch.base_sequence,
            last_sequence: entry.last_sequence(),
            current_epoch: entry.producer_epoch,
        };
        if entry.producer_epoch == NO_PRODUCER_EPOCH {
            // Only markers were seen for this producer (or nothing): no sequence to continue.
            return Ok(());
        }
        if batch.producer_epoch != entry.producer_epoch {
            return if batch.base_sequence == 0 {
                Ok(())
            } else {
                Err(out_of_order())
            };
        }
        if in_sequence(entry.last_sequence(), batch.base_sequence) {
            return Ok(());
        }
        if entry.is_written_before_cache(batch.base_sequence, batch.last_sequence) {
            return Err(ProducerStateError::DuplicateSequence {
                producer_id: batch.producer_id,
                base_sequence: batch.base_sequence,
                last_sequence: batch.last_sequence,
            });
        }
        Err(out_of_order())
    }

    /// Applies a batch the log has just appended (offsets assigned), without checks.
    /// `log_append_time_ms` is what a retry of this batch is answered with (`-1` for CreateTime
    /// topics). A control batch given here ends the producer's open transaction; prefer
    /// [`Self::complete_txn`], which also records the coordinator epoch.
    pub fn record(&mut self, batch: &ProducerBatch, now_ms: i64, log_append_time_ms: i64) {
        if batch.has_producer_id() {
            let expired = self
                .producers
                .get(&batch.producer_id)
                .is_some_and(|entry| self.is_expired(entry, now_ms));
            if expired {
                self.producers.remove(&batch.producer_id);
            }
        }
        self.apply_batch(batch, now_ms, log_append_time_ms);
    }

    /// Rebuilds state from a batch read back from the log (after loading a snapshot, or on a
    /// follower): no checks, and the batch's own max timestamp stands in for the broker clock.
    /// For a CreateTime topic; see [`Self::replay_with_log_append_time`].
    pub fn replay(&mut self, batch: &ProducerBatch) {
        self.replay_with_log_append_time(batch, -1);
    }

    /// [`Self::replay`] for a LogAppendTime topic, where the batch's max timestamp is its log
    /// append time: pass `batch.max_timestamp_ms`, so that retries are answered as they were
    /// before the restart.
    pub fn replay_with_log_append_time(&mut self, batch: &ProducerBatch, log_append_time_ms: i64) {
        let update_ms = self
            .producers
            .get(&batch.producer_id)
            .map_or(batch.max_timestamp_ms, |entry| {
                entry.last_update_ms.max(batch.max_timestamp_ms)
            });
        self.apply_batch(batch, update_ms, log_append_time_ms);
    }

    fn apply_batch(&mut self, batch: &ProducerBatch, update_ms: i64, log_append_time_ms: i64) {
        self.map_end_offset = self.map_end_offset.max(batch.last_offset.saturating_add(1));
        if !batch.has_producer_id() {
            return;
        }
        if batch.is_control {
            self.end_txn(
                batch.producer_id,
                batch.producer_epoch,
                None,
                batch.last_offset,
                batch.max_timestamp_ms,
                false,
            );
            return;
        }
        let entry = self
            .producers
            .entry(batch.producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(batch.producer_id));
        entry.set_epoch(batch.producer_epoch);
        entry.add_batch(BatchMetadata {
            first_sequence: batch.base_sequence,
            last_sequence: batch.last_sequence,
            first_offset: batch.first_offset,
            last_offset: batch.last_offset,
            max_timestamp_ms: batch.max_timestamp_ms,
            log_append_time_ms,
        });
        entry.last_timestamp_ms = batch.max_timestamp_ms;
        entry.last_update_ms = update_ms;
        if batch.is_transactional && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(batch.first_offset);
            self.ongoing_txns
                .insert(batch.first_offset, batch.producer_id);
        }
    }

    /// Validates a COMMIT/ABORT marker before it is appended: the producer epoch must not be
    /// older (under transaction version 2: must be newer, unless it is a retried marker of an
    /// already-finished transaction) and the coordinator epoch must not be older.
    pub fn check_marker(&self, marker: &TxnMarker) -> Result<(), ProducerStateError> {
        let Some(entry) = self.producers.get(&marker.producer_id) else {
            return Ok(());
        };
        let current_epoch = entry.producer_epoch;
        match marker.transaction_version {
            TransactionVersion::Legacy => {
                if marker.producer_epoch < current_epoch {
                    return Err(ProducerStateError::InvalidProducerEpoch {
                        producer_id: marker.producer_id,
                        producer_epoch: marker.producer_epoch,
                        current_epoch,
                    });
                }
            }
            TransactionVersion::V2 => {
                let retried_marker = marker.producer_epoch == current_epoch
                    && entry.current_txn_first_offset.is_none();
                if marker.producer_epoch <= current_epoch && !retried_marker {
                    return Err(ProducerStateError::StaleMarkerEpoch {
                        producer_id: marker.producer_id,
                        producer_epoch: marker.producer_epoch,
                        current_epoch,
                    });
                }
            }
        }
        if entry.coordinator_epoch > marker.coordinator_epoch {
            return Err(ProducerStateError::TransactionCoordinatorFenced {
                producer_id: marker.producer_id,
                coordinator_epoch: marker.coordinator_epoch,
                current_coordinator_epoch: entry.coordinator_epoch,
            });
        }
        Ok(())
    }

    /// Applies a marker the log has just appended at `marker.offset`, after checking it again
    /// with [`Self::check_marker`]. Returns the transaction it closed, or `None` when the
    /// producer wrote no data to this partition in the transaction. For an aborted
    /// transaction the caller appends `AbortedTxn { producer_id, first_offset, last_offset,
    /// last_stable_offset }` to the segment's transaction index.
    pub fn complete_txn(
        &mut self,
        marker: &TxnMarker,
    ) -> Result<Option<CompletedTxn>, ProducerStateError> {
        self.check_marker(marker)?;
        Ok(self.replay_marker(marker))
    }

    /// Applies a marker read back from the log, without checks.
    pub fn replay_marker(&mut self, marker: &TxnMarker) -> Option<CompletedTxn> {
        self.map_end_offset = self.map_end_offset.max(marker.offset.saturating_add(1));
        self.end_txn(
            marker.producer_id,
            marker.producer_epoch,
            Some(marker.coordinator_epoch),
            marker.offset,
            marker.timestamp_ms,
            !marker.commit,
        )
    }

    fn end_txn(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: Option<i32>,
        marker_offset: i64,
        timestamp_ms: i64,
        is_aborted: bool,
    ) -> Option<CompletedTxn> {
        let txn_first_offset = self
            .producers
            .get(&producer_id)
            .and_then(|entry| entry.current_txn_first_offset);
        let completed = txn_first_offset.map(|first_offset| {
            let last_stable_offset = self
                .ongoing_txns
                .iter()
                .find(|(_, &other)| other != producer_id)
                .map_or(marker_offset.saturating_add(1), |(&offset, _)| offset);
            CompletedTxn {
                producer_id,
                first_offset,
                last_offset: marker_offset,
                is_aborted,
                last_stable_offset,
            }
        });
        if let Some(txn) = completed {
            self.ongoing_txns.remove(&txn.first_offset);
            self.unreplicated_txns.insert(
                txn.first_offset,
                UnreplicatedTxn {
                    producer_id,
                    last_offset: marker_offset,
                },
            );
        }
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(producer_id));
        entry.set_epoch(producer_epoch);
        if let Some(coordinator_epoch) = coordinator_epoch {
            entry.coordinator_epoch = coordinator_epoch;
        }
        entry.current_txn_first_offset = None;
        entry.last_timestamp_ms = timestamp_ms;
        entry.last_update_ms = entry.last_update_ms.max(timestamp_ms);
        completed
    }

    /// The smallest first offset of a transaction that is open, or whose marker is not yet
    /// below the high watermark. The last stable offset is `min(this, high watermark)`.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        let ongoing = self.ongoing_txns.keys().next().copied();
        let unreplicated = self.unreplicated_txns.keys().next().copied();
        match (ongoing, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The last stable offset for the given high watermark: read_committed fetches stop here.
    pub fn last_stable_offset(&self, high_watermark: i64) -> i64 {
        self.first_unstable_offset()
            .map_or(high_watermark, |offset| offset.min(high_watermark))
    }

    /// Forgets completed transactions whose marker is now below the high watermark.
    pub fn on_high_watermark_updated(&mut self, high_watermark: i64) {
        self.unreplicated_txns
            .retain(|_, txn| txn.last_offset >= high_watermark);
    }

    /// The log's start offset moved forward (retention or DeleteRecords): completed
    /// transactions entirely below it no longer matter. Producers are kept so that their
    /// sequences still continue (KIP-360).
    pub fn on_log_start_offset_incremented(&mut self, log_start_offset: i64) {
        self.unreplicated_txns
            .retain(|_, txn| txn.last_offset >= log_start_offset);
        self.map_end_offset = self.map_end_offset.max(log_start_offset);
    }

    /// Open transactions as `(first_offset, producer_id)`, oldest first.
    pub fn ongoing_txns(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.ongoing_txns
            .iter()
            .map(|(&offset, &pid)| (offset, pid))
    }

    /// All producers, in producer id order, as DescribeProducers reports them.
    pub fn producers(&self) -> impl Iterator<Item = ProducerSnapshotEntry> + '_ {
        self.producers.values().map(|entry| entry.snapshot_entry())
    }

    pub fn producer(&self, producer_id: i64) -> Option<ProducerSnapshotEntry> {
        self.producers
            .get(&producer_id)
            .map(|entry| entry.snapshot_entry())
    }

    /// The producer's cached recent batches, oldest first.
    pub fn cached_batches(&self, producer_id: i64) -> impl Iterator<Item = &BatchMetadata> + '_ {
        self.producers
            .get(&producer_id)
            .into_iter()
            .flat_map(|entry| entry.batches.iter())
    }

    /// Drops producers idle for `producer.id.expiration.ms` that have no open transaction.
    /// Returns how many were removed.
    pub fn remove_expired(&mut self, now_ms: i64) -> usize {
        let before = self.producers.len();
        let expiration_ms = self.producer_id_expiration_ms;
        self.producers.retain(|_, entry| {
            entry.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(entry.last_update_ms) < expiration_ms
        });
        before - self.producers.len()
    }

    /// Forgets everything; the log now starts (and ends) at `offset`. Used when a follower
    /// truncates its whole log or the log is deleted and recreated.
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) {
        self.producers.clear();
        self.ongoing_txns.clear();
        self.unreplicated_txns.clear();
        self.map_end_offset = offset;
    }
}
