//! The log start offset moving past the share-partition start offset (Kafka's
//! updateCacheAndOffsets), and batches compacted away.

use super::support::*;
use crate::partition::{AcquireMode, RecordState};

#[test]
fn an_empty_partition_jumps_to_the_log_start_offset() {
    let mut p = partition();
    p.update_log_start_offset(50);
    assert_eq!(
        (p.start_offset(), p.end_offset(), p.next_fetch_offset()),
        (50, 50, 50)
    );
    p.update_log_start_offset(40);
    assert_eq!(p.start_offset(), 50);
}

#[test]
fn available_records_below_the_log_start_are_archived_acquired_ones_at_their_lock() {
    let mut p = partition();
    let log = read(0, vec![batch(0, 4), batch(5, 9), batch(10, 14)]);
    p.acquire("a", AcquireMode::BatchOptimized, 5, 100, &log, 0);
    let write = p
        .acknowledge("a", &[ack(5, 9, RELEASE)], 1)
        .expect("ok")
        .expect("write");
    p.complete_write(write.write_id, true, 1);

    p.update_log_start_offset(12);
    assert_eq!(p.start_offset(), 12);
    assert_eq!(state(&p, 5), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 0), Some((RecordState::Acquired, 1)));
    assert_eq!(p.next_fetch_offset(), 15);

    // The lock of 0-4 ends below the start offset: archived. The batches behind the start
    // offset stay cached until the record at the start offset is done.
    let write = p.expire_locks(LOCK_MS).expect("expiry");
    assert_eq!(state(&p, 0), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 10), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 12), Some((RecordState::Available, 1)));
    p.complete_write(write.write_id, true, LOCK_MS);
    assert_eq!(p.start_offset(), 12);
    assert_eq!(p.in_flight_batch_count(), 3);
    assert_eq!(p.next_fetch_offset(), 12);
    let got = p.acquire(
        "b",
        AcquireMode::BatchOptimized,
        5,
        100,
        &read(12, vec![batch(10, 14)]),
        LOCK_MS,
    );
    assert_eq!(got.count, 3);
    let write = p
        .acknowledge("b", &[ack(12, 14, ACCEPT)], LOCK_MS)
        .expect("ok")
        .expect("write");
    p.complete_write(write.write_id, true, LOCK_MS);
    assert_eq!((p.start_offset(), p.in_flight_batch_count()), (15, 0));
}

#[test]
fn a_read_with_a_later_log_start_moves_the_start_offset_first() {
    let mut p = partition();
    let mut later = read(20, vec![batch(20, 24)]);
    later.log_start_offset = 20;
    let got = p.acquire("a", AcquireMode::BatchOptimized, 100, 100, &later, 0);
    assert_eq!(got.acquired.len(), 1);
    assert_eq!(got.acquired[0].first_offset, 20);
    assert_eq!(p.start_offset(), 20);
}

#[test]
fn cached_batches_compacted_away_are_archived() {
    let mut p = partition();
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        5,
        100,
        &read(0, vec![batch(0, 4), batch(5, 9)]),
        0,
    );
    let write = p
        .acknowledge("a", &[ack(0, 9, RELEASE)], 1)
        .expect("ok")
        .expect("write");
    p.complete_write(write.write_id, true, 1);
    // Read from 0, but the log now starts its batches at 5: 0-4 is gone.
    let got = p.acquire(
        "b",
        AcquireMode::BatchOptimized,
        5,
        100,
        &read(0, vec![batch(5, 9)]),
        2,
    );
    assert_eq!(got.acquired[0].first_offset, 5);
    assert_eq!(state(&p, 0), Some((RecordState::Archived, 1)));
}

/// Two batches acquired, then the log start moves into the second: Kafka's
/// testReleaseAcquiredRecordsBatchesPostStartOffsetMovementToMiddleOfBatch and its lock-timeout
/// twin.
fn acquired_then_log_start_inside_second_batch() -> crate::partition::SharePartition {
    let mut p = partition();
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(5, vec![batch(5, 9)]),
        0,
    );
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(10, vec![batch(10, 14)]),
        0,
    );
    p.update_log_start_offset(11);
    assert_eq!(p.next_fetch_offset(), 15);
    assert_eq!((p.start_offset(), p.end_offset()), (11, 14));
    assert_eq!(p.in_flight_batch_count(), 2);
    p
}

#[test]
fn a_release_after_the_log_start_moved_inside_a_batch_archives_what_is_below_it() {
    let mut p = acquired_then_log_start_inside_second_batch();
    p.release_acquired_records("a", 1).expect("a release write");
    assert_eq!(state(&p, 5), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 10), Some((RecordState::Archived, 1)));
    // The release keeps the delivery count (Kafka 4.4's DeliveryCountOps.NO_OP).
    assert_eq!(state(&p, 11), Some((RecordState::Available, 1)));
    assert_eq!(state(&p, 14), Some((RecordState::Available, 1)));
}

#[test]
fn a_lock_timeout_after_the_log_start_moved_inside_a_batch_archives_what_is_below_it() {
    let mut p = acquired_then_log_start_inside_second_batch();
    p.expire_locks(LOCK_MS).expect("an expiry write");
    assert_eq!(state(&p, 5), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 10), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 11), Some((RecordState::Available, 1)));
    assert_eq!(state(&p, 14), Some((RecordState::Available, 1)));
    assert_eq!(p.record_state(5).map(|s| s.member_id), Some(String::new()));
}

#[test]
fn a_failed_write_after_the_log_start_passed_its_records_archives_them() {
    let mut p = partition();
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(0, vec![batch(0, 4)]),
        0,
    );
    let write = p
        .acknowledge("a", &[ack(0, 4, ACCEPT)], 1)
        .expect("ok")
        .expect("write");
    p.update_log_start_offset(2);
    // The lock ran out while the write was pending: the revert offers the records again, but
    // those below the start offset are gone from the log.
    p.complete_write(write.write_id, false, LOCK_MS);
    assert_eq!(state(&p, 1), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 2), Some((RecordState::Available, 1)));
    assert_eq!(p.next_fetch_offset(), 2);
}

#[test]
fn acquiring_after_the_log_start_moved_inside_a_cached_batch_reuses_that_batch() {
    let mut p = partition();
    p.update_log_start_offset(5);
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(5, vec![batch(4, 7)]),
        0,
    );
    let write = p.expire_locks(LOCK_MS).expect("expiry");
    p.complete_write(write.write_id, true, LOCK_MS);
    p.update_log_start_offset(6);
    let mut from_six = read(6, vec![batch(4, 7), batch(8, 9)]);
    from_six.log_start_offset = 6;
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &from_six,
        LOCK_MS,
    );
    let ranges: Vec<(i64, i64)> = got
        .acquired
        .iter()
        .map(|r| (r.first_offset, r.last_offset))
        .collect();
    assert_eq!(ranges, vec![(6, 6), (7, 7), (8, 9)]);
    assert_eq!(p.in_flight_batch_count(), 2);
}
