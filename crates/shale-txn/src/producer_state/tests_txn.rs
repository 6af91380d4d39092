//! Transactions: open/complete, first unstable offset and LSO, markers and fencing.

use super::tests::{batch, txn_batch, TestLog};
use super::*;
use crate::error::ProducerStateError;

fn marker(
    producer_id: i64,
    epoch: i16,
    coordinator_epoch: i32,
    commit: bool,
    offset: i64,
) -> TxnMarker {
    TxnMarker {
        producer_id,
        producer_epoch: epoch,
        coordinator_epoch,
        commit,
        offset,
        timestamp_ms: 5_000,
        transaction_version: TransactionVersion::Legacy,
    }
}

#[test]
fn no_transactions_means_lso_equals_high_watermark() {
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 3));
    assert_eq!(log.state.first_unstable_offset(), None);
    assert_eq!(log.state.last_stable_offset(3), 3);
}

#[test]
fn lso_with_interleaved_open_committed_and_aborted_transactions() {
    let mut log = TestLog::new();
    log.append_ok(txn_batch(1, 0, 0, 2)); // 0..=1, txn A (producer 1)
    log.append_ok(batch(9, 0, 0, 1)); // 2, plain idempotent
    log.append_ok(txn_batch(2, 0, 0, 1)); // 3, txn B (producer 2)
    log.append_ok(txn_batch(1, 0, 2, 1)); // 4, txn A continues
    log.append_ok(txn_batch(3, 0, 0, 1)); // 5, txn C (producer 3)
    assert_eq!(log.state.first_unstable_offset(), Some(0));
    assert_eq!(log.state.last_stable_offset(6), 0);
    assert_eq!(
        log.state.ongoing_txns().collect::<Vec<_>>(),
        vec![(0, 1), (3, 2), (5, 3)]
    );

    // B aborts first (marker at 6): A is still open, so the LSO stays at 0 and the aborted
    // entry records the first open transaction of another producer as its LSO.
    let b = log.marker(2, 0, false).unwrap().unwrap();
    assert_eq!(
        b,
        CompletedTxn {
            producer_id: 2,
            first_offset: 3,
            last_offset: 6,
            is_aborted: true,
            last_stable_offset: 0,
        }
    );
    assert_eq!(log.state.first_unstable_offset(), Some(0));

    // A commits (marker at 7): C (first offset 5) remains open; B's marker is not yet
    // replicated, so B still holds the LSO at 3.
    let a = log.marker(1, 0, true).unwrap().unwrap();
    assert_eq!(
        a,
        CompletedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 7,
            is_aborted: false,
            last_stable_offset: 5,
        }
    );
    assert_eq!(log.state.first_unstable_offset(), Some(0));
    log.state.on_high_watermark_updated(7);
    // B's marker (6) is replicated, A's (7) is not yet.
    assert_eq!(log.state.first_unstable_offset(), Some(0));
    log.state.on_high_watermark_updated(8);
    assert_eq!(log.state.first_unstable_offset(), Some(5));
    assert_eq!(log.state.last_stable_offset(8), 5);
    assert_eq!(
        log.state.last_stable_offset(4),
        4,
        "the LSO never passes the high watermark"
    );

    // C aborts with nobody else open: its LSO is the marker offset + 1.
    let c = log.marker(3, 0, false).unwrap().unwrap();
    assert_eq!(c.last_stable_offset, 9);
    assert_eq!(log.state.first_unstable_offset(), Some(5));
    log.state.on_high_watermark_updated(9);
    assert_eq!(log.state.first_unstable_offset(), None);
    assert_eq!(log.state.last_stable_offset(9), 9);
}

#[test]
fn marker_without_data_completes_nothing() {
    let mut log = TestLog::new();
    assert_eq!(log.marker(4, 0, true).unwrap(), None);
    let producer = log.state.producer(4).unwrap();
    assert_eq!(producer.coordinator_epoch, 0);
    assert_eq!(producer.last_sequence, NO_SEQUENCE);
    assert_eq!(log.state.first_unstable_offset(), None);
    // Having seen the producer at epoch 0, its first data batch must continue at sequence 0.
    assert!(matches!(
        log.append(batch(4, 0, 3, 1)).unwrap_err(),
        ProducerStateError::OutOfOrderSequence { .. }
    ));
    log.append_ok(batch(4, 0, 0, 1));
}

#[test]
fn non_transactional_write_inside_a_transaction_is_invalid_txn_state() {
    let mut log = TestLog::new();
    log.append_ok(txn_batch(1, 0, 0, 1));
    let error = log.append(batch(1, 0, 1, 1)).unwrap_err();
    assert!(
        matches!(
            error,
            ProducerStateError::InvalidTxnState {
                producer_id: 1,
                txn_first_offset: 0
            }
        ),
        "{error:?}"
    );
    log.append_ok(txn_batch(1, 0, 1, 1));
    log.marker(1, 0, true).unwrap();
    log.append_ok(batch(1, 0, 2, 1));
}

#[test]
fn transaction_after_a_transaction_starts_at_its_own_first_offset() {
    let mut log = TestLog::new();
    log.append_ok(txn_batch(1, 0, 0, 1));
    log.marker(1, 0, true).unwrap();
    log.append_ok(txn_batch(1, 0, 1, 1));
    assert_eq!(
        log.state.producer(1).unwrap().current_txn_start_offset,
        Some(2)
    );
    assert_eq!(log.state.ongoing_txns().collect::<Vec<_>>(), vec![(2, 1)]);
}

#[test]
fn marker_with_an_older_producer_epoch_is_fenced() {
    let mut log = TestLog::new();
    log.append_ok(txn_batch(1, 2, 0, 1));
    let error = log.marker(1, 1, false).unwrap_err();
    assert!(
        matches!(error, ProducerStateError::InvalidProducerEpoch { .. }),
        "{error:?}"
    );
    // A bumped epoch (abort after a producer was fenced) is accepted and resets the cache.
    let done = log.marker(1, 3, false).unwrap().unwrap();
    assert!(done.is_aborted);
    assert_eq!(log.state.producer(1).unwrap().producer_epoch, 3);
    assert_eq!(log.state.cached_batches(1).count(), 0);
}

#[test]
fn marker_from_an_older_coordinator_is_fenced() {
    let mut state = ProducerStateManager::new(1_000);
    let mut data = txn_batch(1, 0, 0, 1);
    data.first_offset = 0;
    data.last_offset = 0;
    state.record(&data, 0, -1);
    state.complete_txn(&marker(1, 0, 5, true, 1)).unwrap();
    let mut next = txn_batch(1, 0, 1, 1);
    next.first_offset = 2;
    next.last_offset = 2;
    state.record(&next, 0, -1);
    let error = state.complete_txn(&marker(1, 0, 4, true, 3)).unwrap_err();
    assert!(
        matches!(
            error,
            ProducerStateError::TransactionCoordinatorFenced {
                producer_id: 1,
                coordinator_epoch: 4,
                current_coordinator_epoch: 5
            }
        ),
        "{error:?}"
    );
    // The failed marker changed nothing.
    assert_eq!(state.first_unstable_offset(), Some(0));
    assert_eq!(state.producer(1).unwrap().current_txn_start_offset, Some(2));
    state
        .complete_txn(&marker(1, 0, 6, false, 3))
        .unwrap()
        .unwrap();
    assert_eq!(state.producer(1).unwrap().coordinator_epoch, 6);
}

#[test]
fn transaction_version_2_markers_must_bump_the_epoch() {
    let mut state = ProducerStateManager::new(1_000);
    let mut data = txn_batch(1, 4, 0, 1);
    data.first_offset = 0;
    data.last_offset = 0;
    state.record(&data, 0, -1);
    let v2 = |epoch, offset| TxnMarker {
        transaction_version: TransactionVersion::V2,
        ..marker(1, epoch, 0, true, offset)
    };
    let error = state.check_marker(&v2(4, 1)).unwrap_err();
    assert!(
        matches!(error, ProducerStateError::StaleMarkerEpoch { .. }),
        "{error:?}"
    );
    let done = state.complete_txn(&v2(5, 1)).unwrap().unwrap();
    assert_eq!((done.first_offset, done.last_offset), (0, 1));
    // A retried marker at the same epoch after the transaction ended is accepted (KAFKA-19999)
    // and completes nothing.
    assert_eq!(state.complete_txn(&v2(5, 2)).unwrap(), None);
    assert!(state.check_marker(&v2(4, 3)).is_err());
}

#[test]
fn unknown_producer_markers_are_accepted() {
    let state = ProducerStateManager::new(1_000);
    state.check_marker(&marker(77, 0, 0, false, 0)).unwrap();
}

#[test]
fn log_start_advance_drops_old_completed_transactions() {
    let mut log = TestLog::new();
    log.append_ok(txn_batch(1, 0, 0, 1)); // 0
    log.marker(1, 0, false).unwrap(); // 1
    assert_eq!(log.state.first_unstable_offset(), Some(0));
    log.state.on_log_start_offset_incremented(1);
    assert_eq!(log.state.first_unstable_offset(), Some(0));
    log.state.on_log_start_offset_incremented(2);
    assert_eq!(log.state.first_unstable_offset(), None);
    assert!(
        log.state.producer(1).is_some(),
        "producers outlive the log head"
    );
}

#[test]
fn replayed_control_batch_without_marker_details_ends_the_transaction() {
    let mut state = ProducerStateManager::new(1_000);
    let mut data = txn_batch(1, 0, 0, 1);
    data.first_offset = 0;
    data.last_offset = 0;
    state.replay(&data);
    let control = ProducerBatch {
        is_control: true,
        base_sequence: NO_SEQUENCE,
        last_sequence: NO_SEQUENCE,
        first_offset: 1,
        last_offset: 1,
        ..data
    };
    state.replay(&control);
    assert_eq!(state.producer(1).unwrap().current_txn_start_offset, None);
    assert_eq!(state.map_end_offset(), 2);
    state.on_high_watermark_updated(2);
    assert_eq!(state.first_unstable_offset(), None);
}
