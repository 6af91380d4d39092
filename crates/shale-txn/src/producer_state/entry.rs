//! The state kept for one producer id.

use std::collections::VecDeque;

use super::types::{
    BatchMetadata, ProducerSnapshotEntry, NO_PRODUCER_EPOCH, NO_SEQUENCE, NUM_BATCHES_TO_RETAIN,
};

/// Sequence numbers live in `0..=i32::MAX` and wrap to 0.
const SEQUENCE_SPACE: i64 = 1 << 31;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProducerStateEntry {
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) coordinator_epoch: i32,
    /// Largest record timestamp of the last write (reported by DescribeProducers).
    pub(crate) last_timestamp_ms: i64,
    /// When the producer last wrote, by the broker's clock where known; drives expiration.
    pub(crate) last_update_ms: i64,
    pub(crate) current_txn_first_offset: Option<i64>,
    /// Oldest first; at most [`NUM_BATCHES_TO_RETAIN`].
    pub(crate) batches: VecDeque<BatchMetadata>,
    /// How many sequence numbers were written at the current epoch since this state began
    /// (capped at 2^31). Only these sequences, counted back from the last one, are known to
    /// be in the log: a producer seen first mid-stream (KIP-360) may have earlier sequences
    /// that never arrived.
    pub(crate) sequences_written: i64,
}

impl ProducerStateEntry {
    pub(crate) fn empty(producer_id: i64) -> Self {
        Self {
            producer_id,
            producer_epoch: NO_PRODUCER_EPOCH,
            coordinator_epoch: -1,
            last_timestamp_ms: -1,
            last_update_ms: -1,
            current_txn_first_offset: None,
            batches: VecDeque::with_capacity(NUM_BATCHES_TO_RETAIN),
            sequences_written: 0,
        }
    }

    pub(crate) fn last_sequence(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_sequence)
    }

    /// A new epoch starts with an empty batch cache (Kafka's `maybeUpdateProducerEpoch`).
    pub(crate) fn set_epoch(&mut self, producer_epoch: i16) {
        if self.producer_epoch != producer_epoch {
            self.batches.clear();
            self.sequences_written = 0;
            self.producer_epoch = producer_epoch;
        }
    }

    pub(crate) fn add_batch(&mut self, batch: BatchMetadata) {
        if batch.first_sequence >= 0 && batch.last_sequence >= 0 {
            let count = sequence_distance(batch.first_sequence, batch.last_sequence) + 1;
            self.sequences_written = (self.sequences_written + count).min(SEQUENCE_SPACE);
        }
        self.push_cached(batch);
    }

    /// Caches a batch without counting its sequences (for loading a snapshot).
    pub(crate) fn push_cached(&mut self, batch: BatchMetadata) {
        if self.batches.len() == NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(batch);
    }

    pub(crate) fn find_duplicate(
        &self,
        producer_epoch: i16,
        base_sequence: i32,
        last_sequence: i32,
    ) -> Option<&BatchMetadata> {
        if producer_epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_sequence == base_sequence && b.last_sequence == last_sequence)
    }

    /// Whether the batch `base_sequence..=last_sequence` lies entirely before the oldest cached
    /// batch and inside the run of sequences known to be written at this epoch: it is in the
    /// log, but its offsets are forgotten. Distances are measured back from the last written
    /// sequence in the wrapping sequence space, over at most half of it.
    pub(crate) fn is_written_before_cache(&self, base_sequence: i32, last_sequence: i32) -> bool {
        let Some(oldest) = self.batches.front() else {
            return false;
        };
        let current_last = self.last_sequence();
        let back_to_base = sequence_distance(base_sequence, current_last);
        let back_to_last = sequence_distance(last_sequence, current_last);
        let known = self.sequences_written.min(SEQUENCE_SPACE / 2);
        let before_cache = sequence_distance(last_sequence, oldest.first_sequence);
        back_to_base < known
            && back_to_last <= back_to_base
            && before_cache > 0
            && before_cache <= SEQUENCE_SPACE / 2
    }

    pub(crate) fn snapshot_entry(&self) -> ProducerSnapshotEntry {
        ProducerSnapshotEntry {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            last_sequence: self.last_sequence(),
            last_timestamp_ms: self.last_timestamp_ms,
            coordinator_epoch: self.coordinator_epoch,
            current_txn_start_offset: self.current_txn_first_offset,
        }
    }
}

/// Whether `next` directly follows `last`, wrapping from `i32::MAX` to 0.
pub(crate) fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

/// Steps forward from `from` to `to` in the wrapping sequence space.
fn sequence_distance(from: i32, to: i32) -> i64 {
    (i64::from(to) - i64::from(from)).rem_euclid(SEQUENCE_SPACE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_wraps_from_max_to_zero() {
        assert!(in_sequence(-1, 0));
        assert!(in_sequence(4, 5));
        assert!(in_sequence(i32::MAX, 0));
        assert!(!in_sequence(i32::MAX, i32::MIN));
        assert!(!in_sequence(4, 4));
        assert!(!in_sequence(4, 6));
        assert!(!in_sequence(i32::MAX - 1, 0));
    }

    #[test]
    fn distance_is_modular() {
        assert_eq!(sequence_distance(i32::MAX, 0), 1);
        assert_eq!(sequence_distance(0, i32::MAX), SEQUENCE_SPACE - 1);
        assert_eq!(sequence_distance(3, 10), 7);
    }
}
