//! Acquisition of new and cached records under both acquire modes, and the in-flight bound.

use super::support::*;
use crate::partition::{AcquireMode, AcquiredRecords, RecordState, SharePartition};

fn three_batches() -> Vec<crate::partition::LogBatch> {
    vec![batch(0, 4), batch(5, 9), batch(10, 14)]
}

fn records(first_offset: i64, last_offset: i64, delivery_count: i16) -> AcquiredRecords {
    AcquiredRecords {
        first_offset,
        last_offset,
        delivery_count,
    }
}

#[test]
fn whole_read_is_acquired_as_one_batch() {
    let mut p = partition();
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(0, three_batches()),
        0,
    );
    assert_eq!(got.acquired, vec![records(0, 14, 1)]);
    assert_eq!(got.count, 15);
    assert_eq!(got.next_fetch_offset, 15);
    assert_eq!((p.start_offset(), p.end_offset()), (0, 14));
    assert_eq!(p.in_flight_record_count(), 15);
}

#[test]
fn batch_size_splits_at_log_batch_boundaries() {
    let mut p = partition();
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        5,
        100,
        &read(0, three_batches()),
        0,
    );
    assert_eq!(
        got.acquired,
        vec![records(0, 4, 1), records(5, 9, 1), records(10, 14, 1)]
    );
    assert_eq!(p.in_flight_batch_count(), 3);
}

#[test]
fn batch_optimized_max_records_is_a_soft_limit_rounded_up_to_a_log_batch() {
    let mut p = partition();
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        7,
        &read(0, three_batches()),
        0,
    );
    assert_eq!(got.acquired, vec![records(0, 9, 1)]);
    assert_eq!(got.count, 10);
    assert_eq!(got.next_fetch_offset, 10);
}

#[test]
fn record_limit_locks_only_max_records_and_leaves_the_rest_available() {
    let mut p = partition();
    let got = p.acquire(
        "a",
        AcquireMode::RecordLimit,
        100,
        7,
        &read(0, three_batches()),
        0,
    );
    assert_eq!(got.acquired, vec![records(0, 6, 1)]);
    assert_eq!(got.count, 7);
    assert_eq!(got.next_fetch_offset, 7);
    assert_eq!(state(&p, 6), Some((RecordState::Acquired, 1)));
    assert_eq!(state(&p, 7), Some((RecordState::Available, 0)));
    assert_eq!(p.end_offset(), 9);

    // The rest of the split batch goes one by one, then the records after it as a new batch.
    let next = read(7, vec![batch(5, 9), batch(10, 14)]);
    let got = p.acquire("b", AcquireMode::RecordLimit, 100, 100, &next, 0);
    assert_eq!(
        got.acquired,
        vec![
            records(7, 7, 1),
            records(8, 8, 1),
            records(9, 9, 1),
            records(10, 14, 1)
        ]
    );
    assert_eq!(got.count, 8);
}

#[test]
fn record_limit_stops_inside_cached_batches() {
    let mut p = partition();
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(0, three_batches()),
        0,
    );
    p.release_acquired_records("a", 1)
        .map(|write| p.complete_write(write.write_id, true, 1))
        .expect("a release to write");
    let got = p.acquire(
        "b",
        AcquireMode::RecordLimit,
        100,
        3,
        &read(0, three_batches()),
        2,
    );
    assert_eq!(
        got.acquired,
        vec![records(0, 0, 2), records(1, 1, 2), records(2, 2, 2)]
    );
    assert_eq!(got.count, 3);
    assert_eq!(got.next_fetch_offset, 3);
}

#[test]
fn nothing_is_acquired_for_zero_max_records_or_an_empty_read() {
    let mut p = partition();
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        0,
        &read(0, three_batches()),
        0,
    );
    assert!(got.acquired.is_empty());
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        10,
        &read(0, Vec::new()),
        0,
    );
    assert!(got.acquired.is_empty());
    assert_eq!(p.in_flight_batch_count(), 0);
}

#[test]
fn records_at_or_past_the_high_watermark_are_not_acquired() {
    let mut p = partition();
    let mut limited = read(0, three_batches());
    limited.high_watermark = 10;
    let got = p.acquire("a", AcquireMode::BatchOptimized, 100, 100, &limited, 0);
    assert_eq!(got.acquired, vec![records(0, 9, 1)]);
}

#[test]
fn max_in_flight_records_stops_acquisition_until_the_start_offset_moves() {
    let mut cfg = config();
    cfg.max_in_flight_records = 10;
    let mut p = SharePartition::new(cfg, 0);
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(0, three_batches()),
        0,
    );
    assert_eq!(got.acquired, vec![records(0, 9, 1)]);
    assert!(!p.can_acquire_records());
    let got = p.acquire(
        "b",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(10, vec![batch(10, 14)]),
        0,
    );
    assert!(got.acquired.is_empty());

    let write = p
        .acknowledge("a", &[ack(0, 4, ACCEPT)], 1)
        .expect("accepted")
        .expect("a write");
    p.complete_write(write.write_id, true, 1);
    assert_eq!(p.start_offset(), 5);
    assert!(p.can_acquire_records());
    let got = p.acquire(
        "b",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(10, vec![batch(10, 14)]),
        2,
    );
    assert_eq!(got.acquired, vec![records(10, 14, 1)]);
    assert!(!p.can_acquire_records());
}

#[test]
fn released_records_below_the_end_offset_are_acquired_at_the_in_flight_bound() {
    let mut cfg = config();
    cfg.max_in_flight_records = 10;
    let mut p = SharePartition::new(cfg, 0);
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        5,
        100,
        &read(0, three_batches()),
        0,
    );
    let write = p
        .acknowledge("a", &[ack(5, 9, RELEASE)], 1)
        .expect("released")
        .expect("a write");
    p.complete_write(write.write_id, true, 1);
    assert!(p.can_acquire_records());
    assert_eq!(p.next_fetch_offset(), 5);
    let got = p.acquire(
        "b",
        AcquireMode::BatchOptimized,
        5,
        100,
        &read(5, vec![batch(5, 9), batch(10, 14)]),
        2,
    );
    assert_eq!(got.acquired, vec![records(5, 9, 2)]);
}

#[test]
fn a_persisted_start_offset_inside_the_first_batch_read_is_where_acquisition_starts() {
    let mut p = SharePartition::new(config(), 3);
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(3, vec![batch(0, 4)]),
        0,
    );
    assert_eq!(got.acquired, vec![records(3, 4, 1)]);
}
