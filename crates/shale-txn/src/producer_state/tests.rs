//! Idempotence rules: duplicates, gaps, epochs, wrap-around, expiration.

use super::*;
use crate::error::ProducerStateError;

pub(super) const EXPIRATION_MS: i64 = 86_400_000;

/// A data batch of `count` records; offsets are assigned by [`TestLog::append`].
pub(super) fn batch(producer_id: i64, epoch: i16, base_sequence: i32, count: i32) -> ProducerBatch {
    let last = (i64::from(base_sequence) + i64::from(count) - 1).rem_euclid(1 << 31);
    ProducerBatch {
        producer_id,
        producer_epoch: epoch,
        base_sequence,
        last_sequence: i32::try_from(last).unwrap(),
        first_offset: -1,
        last_offset: -1,
        max_timestamp_ms: 1_000,
        is_transactional: false,
        is_control: false,
        record_count: count,
    }
}

pub(super) fn txn_batch(
    producer_id: i64,
    epoch: i16,
    base_sequence: i32,
    count: i32,
) -> ProducerBatch {
    ProducerBatch {
        is_transactional: true,
        ..batch(producer_id, epoch, base_sequence, count)
    }
}

/// A log that only assigns offsets, driving the manager the way the broker does.
pub(super) struct TestLog {
    pub(super) state: ProducerStateManager,
    pub(super) next_offset: i64,
    pub(super) now_ms: i64,
    pub(super) appended: Vec<ProducerBatch>,
    /// Everything appended, data and markers, in offset order.
    pub(super) entries: Vec<LogEntry>,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum LogEntry {
    Data(ProducerBatch),
    Marker(TxnMarker),
}

impl TestLog {
    pub(super) fn new() -> Self {
        Self {
            state: ProducerStateManager::new(EXPIRATION_MS),
            next_offset: 0,
            now_ms: 1_000,
            appended: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Checks, then appends and records on `Append`. Returns the check outcome with the offsets
    /// the producer is answered with.
    pub(super) fn append(
        &mut self,
        mut batch: ProducerBatch,
    ) -> Result<(SequenceCheck, i64), ProducerStateError> {
        match self.state.check(&batch, self.now_ms)? {
            SequenceCheck::Append => {
                batch.first_offset = self.next_offset;
                batch.last_offset = self.next_offset + i64::from(batch.record_count) - 1;
                batch.max_timestamp_ms = self.now_ms;
                self.next_offset = batch.last_offset + 1;
                self.state.record(&batch, self.now_ms, self.now_ms);
                self.appended.push(batch);
                self.entries.push(LogEntry::Data(batch));
                Ok((SequenceCheck::Append, batch.first_offset))
            }
            duplicate @ SequenceCheck::Duplicate { first_offset, .. } => {
                Ok((duplicate, first_offset))
            }
        }
    }

    pub(super) fn append_ok(&mut self, batch: ProducerBatch) -> i64 {
        let (outcome, offset) = self.append(batch).unwrap();
        assert_eq!(outcome, SequenceCheck::Append);
        offset
    }

    pub(super) fn marker(
        &mut self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<Option<CompletedTxn>, ProducerStateError> {
        let marker = TxnMarker {
            producer_id,
            producer_epoch: epoch,
            coordinator_epoch: 0,
            commit,
            offset: self.next_offset,
            timestamp_ms: self.now_ms,
            transaction_version: TransactionVersion::Legacy,
        };
        self.state.check_marker(&marker)?;
        let completed = self.state.complete_txn(&marker)?;
        self.entries.push(LogEntry::Marker(marker));
        self.next_offset += 1;
        Ok(completed)
    }
}

#[test]
fn first_batch_of_unknown_producer_may_start_at_any_sequence() {
    let mut log = TestLog::new();
    assert_eq!(log.append_ok(batch(7, 0, 42, 3)), 0);
    assert_eq!(log.state.producer(7).unwrap().last_sequence, 44);
    assert_eq!(log.append_ok(batch(7, 0, 45, 1)), 3);
}

#[test]
fn in_order_batches_append() {
    let mut log = TestLog::new();
    assert_eq!(log.append_ok(batch(1, 0, 0, 5)), 0);
    assert_eq!(log.append_ok(batch(1, 0, 5, 5)), 5);
    assert_eq!(log.append_ok(batch(1, 0, 10, 1)), 10);
    let producer = log.state.producer(1).unwrap();
    assert_eq!(producer.producer_epoch, 0);
    assert_eq!(producer.last_sequence, 10);
    assert_eq!(producer.current_txn_start_offset, None);
    assert_eq!(producer.coordinator_epoch, -1);
}

#[test]
fn retry_of_each_of_the_last_five_batches_returns_its_original_offsets() {
    let mut log = TestLog::new();
    let mut sent = Vec::new();
    for i in 0..7 {
        let b = batch(1, 0, i * 2, 2);
        log.append_ok(b);
        sent.push(*log.appended.last().unwrap());
    }
    let end_before = log.next_offset;
    for original in &sent[2..] {
        let retry = batch(1, 0, original.base_sequence, 2);
        let (outcome, _) = log.append(retry).unwrap();
        assert_eq!(
            outcome,
            SequenceCheck::Duplicate {
                first_offset: original.first_offset,
                last_offset: original.last_offset,
                log_append_time_ms: original.max_timestamp_ms,
            }
        );
    }
    assert_eq!(
        log.next_offset, end_before,
        "a duplicate must never be appended"
    );
    assert_eq!(log.state.cached_batches(1).count(), NUM_BATCHES_TO_RETAIN);
}

#[test]
fn retry_of_the_sixth_oldest_batch_is_a_duplicate_sequence_error() {
    let mut log = TestLog::new();
    for i in 0..6 {
        log.append_ok(batch(1, 0, i, 1));
    }
    // Sequence 0 fell out of the five-batch window: written, but its offset is forgotten.
    let error = log.append(batch(1, 0, 0, 1)).unwrap_err();
    assert!(
        matches!(
            error,
            ProducerStateError::DuplicateSequence {
                producer_id: 1,
                base_sequence: 0,
                last_sequence: 0
            }
        ),
        "{error:?}"
    );
    // Sequence 1 is still cached.
    let (outcome, offset) = log.append(batch(1, 0, 1, 1)).unwrap();
    assert!(matches!(outcome, SequenceCheck::Duplicate { .. }));
    assert_eq!(offset, 1);
}

#[test]
fn retry_with_a_different_range_inside_the_window_is_out_of_order() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 4));
    log.append_ok(batch(1, 0, 4, 4));
    let error = log.append(batch(1, 0, 2, 4)).unwrap_err();
    assert!(
        matches!(error, ProducerStateError::OutOfOrderSequence { .. }),
        "{error:?}"
    );
}

#[test]
fn gap_is_out_of_order() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 3));
    let error = log.append(batch(1, 0, 4, 1)).unwrap_err();
    match error {
        ProducerStateError::OutOfOrderSequence {
            producer_id,
            producer_epoch,
            incoming_sequence,
            last_sequence,
            current_epoch,
        } => {
            assert_eq!(
                (
                    producer_id,
                    producer_epoch,
                    incoming_sequence,
                    last_sequence,
                    current_epoch
                ),
                (1, 0, 4, 2, 0)
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(log.next_offset, 3);
    // The producer can still continue correctly.
    assert_eq!(log.append_ok(batch(1, 0, 3, 1)), 3);
}

#[test]
fn epoch_bump_resets_sequence_to_zero() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 10));
    let error = log.append(batch(1, 1, 10, 1)).unwrap_err();
    assert!(
        matches!(error, ProducerStateError::OutOfOrderSequence { .. }),
        "{error:?}"
    );
    assert_eq!(log.append_ok(batch(1, 1, 0, 2)), 10);
    let producer = log.state.producer(1).unwrap();
    assert_eq!((producer.producer_epoch, producer.last_sequence), (1, 1));
    // The cache of epoch 0 is gone: a retry of an epoch-0 batch is fenced, not a duplicate.
    let error = log.append(batch(1, 0, 0, 10)).unwrap_err();
    assert!(
        matches!(error, ProducerStateError::InvalidProducerEpoch { .. }),
        "{error:?}"
    );
}

#[test]
fn older_epoch_is_fenced() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 3, 0, 1));
    let error = log.append(batch(1, 2, 1, 1)).unwrap_err();
    match &error {
        ProducerStateError::InvalidProducerEpoch {
            producer_id,
            producer_epoch,
            current_epoch,
        } => assert_eq!((*producer_id, *producer_epoch, *current_epoch), (1, 2, 3)),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn duplicate_needs_the_same_epoch() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 1));
    log.append_ok(batch(1, 1, 0, 1));
    // Same sequence range as a batch of epoch 1 but sent with epoch 2: a new batch.
    assert_eq!(log.append_ok(batch(1, 2, 0, 1)), 2);
}

#[test]
fn sequence_wraps_at_i32_max() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, i32::MAX - 2, 3));
    assert_eq!(log.state.producer(1).unwrap().last_sequence, i32::MAX);
    assert_eq!(log.append_ok(batch(1, 0, 0, 2)), 3);
    // A batch that itself wraps.
    log.append_ok(batch(1, 0, 2, 5));
    let mut log = TestLog::new();
    log.append_ok(batch(2, 0, i32::MAX - 1, 4));
    assert_eq!(log.state.producer(2).unwrap().last_sequence, 1);
    let (outcome, offset) = log.append(batch(2, 0, i32::MAX - 1, 4)).unwrap();
    assert!(matches!(outcome, SequenceCheck::Duplicate { .. }));
    assert_eq!(offset, 0);
    assert_eq!(log.append_ok(batch(2, 0, 2, 1)), 4);
    // Not continuing after the wrap is a gap.
    let error = log.append(batch(2, 0, 5, 1)).unwrap_err();
    assert!(
        matches!(error, ProducerStateError::OutOfOrderSequence { .. }),
        "{error:?}"
    );
}

#[test]
fn sixth_oldest_retry_across_the_wrap_is_a_duplicate_sequence() {
    let mut log = TestLog::new();
    let start = i32::MAX - 2;
    log.append_ok(batch(1, 0, start, 1));
    for seq in [i32::MAX - 1, i32::MAX, 0, 1, 2] {
        log.append_ok(batch(1, 0, seq, 1));
    }
    let error = log.append(batch(1, 0, start, 1)).unwrap_err();
    assert!(
        matches!(error, ProducerStateError::DuplicateSequence { .. }),
        "{error:?}"
    );
}

#[test]
fn non_idempotent_batches_are_not_checked() {
    let mut log = TestLog::new();
    let plain = ProducerBatch {
        producer_id: NO_PRODUCER_ID,
        producer_epoch: NO_PRODUCER_EPOCH,
        base_sequence: NO_SEQUENCE,
        last_sequence: NO_SEQUENCE,
        ..batch(0, 0, 0, 3)
    };
    assert_eq!(log.append_ok(plain), 0);
    assert_eq!(log.append_ok(plain), 3);
    assert!(log.state.is_empty());
    assert_eq!(log.state.map_end_offset(), 6);
}

#[test]
fn batches_without_sequence_check_only_the_epoch() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 2, 0, 1));
    let coordinator_write = ProducerBatch {
        base_sequence: NO_SEQUENCE,
        last_sequence: NO_SEQUENCE,
        ..batch(1, 2, 0, 1)
    };
    log.append_ok(coordinator_write);
    log.append_ok(coordinator_write);
    let stale = ProducerBatch {
        producer_epoch: 1,
        ..coordinator_write
    };
    assert!(matches!(
        log.append(stale).unwrap_err(),
        ProducerStateError::InvalidProducerEpoch { .. }
    ));
}

#[test]
fn control_batches_are_refused_by_check() {
    let log = TestLog::new();
    let control = ProducerBatch {
        is_control: true,
        ..batch(1, 0, NO_SEQUENCE, 1)
    };
    let error = log.state.check(&control, 0).unwrap_err();
    assert!(matches!(error, ProducerStateError::InvalidBatch { .. }));
}

#[test]
fn producers_are_independent() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 1));
    log.append_ok(batch(2, 5, 100, 1));
    log.append_ok(batch(1, 0, 1, 1));
    log.append_ok(batch(2, 5, 101, 1));
    let producers: Vec<_> = log.state.producers().collect();
    assert_eq!(producers.len(), 2);
    assert_eq!(
        (producers[0].producer_id, producers[0].last_sequence),
        (1, 1)
    );
    assert_eq!(
        (producers[1].producer_id, producers[1].last_sequence),
        (2, 101)
    );
    assert_eq!(producers[1].producer_epoch, 5);
    assert_eq!(producers[1].last_timestamp_ms, log.now_ms);
}

#[test]
fn idle_producers_expire_and_may_then_restart_anywhere() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 5));
    log.now_ms += 1_000;
    log.append_ok(batch(2, 0, 0, 5));
    log.now_ms += EXPIRATION_MS - 1_000;
    // Producer 1 is idle for exactly the expiration time: expired (Kafka uses >=).
    // Even before the reaper runs, check treats it as unknown.
    assert_eq!(log.append_ok(batch(1, 0, 77, 1)), 10);
    assert_eq!(log.state.producer(1).unwrap().last_sequence, 77);
    assert_eq!(log.state.cached_batches(1).count(), 1);

    log.now_ms += EXPIRATION_MS - 1;
    assert_eq!(log.state.remove_expired(log.now_ms), 1);
    assert!(log.state.producer(2).is_none());
    assert!(log.state.producer(1).is_some());
    assert_eq!(log.state.remove_expired(log.now_ms + 1), 1);
    assert!(log.state.is_empty());
}

#[test]
fn an_open_transaction_keeps_its_producer_alive() {
    let mut log = TestLog::new();
    log.append_ok(txn_batch(1, 0, 0, 1));
    log.now_ms += 10 * EXPIRATION_MS;
    assert_eq!(log.state.remove_expired(log.now_ms), 0);
    // Still known: a gap is refused rather than accepted as a fresh start.
    assert!(log.append(txn_batch(1, 0, 5, 1)).is_err());
    log.marker(1, 0, true).unwrap();
    assert_eq!(log.state.remove_expired(log.now_ms + EXPIRATION_MS), 1);
}

#[test]
fn truncate_fully_forgets_everything() {
    let mut log = TestLog::new();
    log.append_ok(txn_batch(1, 0, 0, 1));
    log.state.truncate_fully_and_start_at(500);
    assert!(log.state.is_empty());
    assert_eq!(log.state.first_unstable_offset(), None);
    assert_eq!(log.state.map_end_offset(), 500);
}

#[test]
fn sequences_before_a_mid_stream_start_are_not_claimed_as_written() {
    let mut log = TestLog::new();
    // Batch 0 is lost on its first attempt; batch 1 arrives first and (no state) is accepted.
    log.append_ok(batch(1, 0, 1, 1));
    for seq in 2..8 {
        log.append_ok(batch(1, 0, seq, 1));
    }
    // The retry of batch 0 was never written: out of order, not a duplicate.
    let error = log.append(batch(1, 0, 0, 1)).unwrap_err();
    assert!(
        matches!(error, ProducerStateError::OutOfOrderSequence { .. }),
        "{error:?}"
    );
    // Batch 1 was written and fell out of the cache: a duplicate without offsets.
    let error = log.append(batch(1, 0, 1, 1)).unwrap_err();
    assert!(
        matches!(error, ProducerStateError::DuplicateSequence { .. }),
        "{error:?}"
    );
}
