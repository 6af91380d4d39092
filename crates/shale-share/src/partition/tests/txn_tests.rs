//! read_committed: the records of aborted transactions are archived, never handed out.

use super::support::*;
use crate::partition::{AckBatch, AcquireMode, AcquiredRecords, LogBatch, RecordState};

fn transactional(base_offset: i64, last_offset: i64, producer_id: i64) -> LogBatch {
    LogBatch {
        base_offset,
        last_offset,
        producer_id,
        is_transactional: true,
        is_control: false,
    }
}

fn marker(offset: i64, producer_id: i64) -> LogBatch {
    LogBatch {
        base_offset: offset,
        last_offset: offset,
        producer_id,
        is_transactional: true,
        is_control: true,
    }
}

/// Producer 7 aborts 0-1 (marker at 2), producer 8 commits 3-4 (marker at 5), then plain 6-8.
fn log() -> Vec<LogBatch> {
    vec![
        transactional(0, 1, 7),
        marker(2, 7),
        transactional(3, 4, 8),
        marker(5, 8),
        batch(6, 8),
    ]
}

fn ranges(acquired: &[AcquiredRecords]) -> Vec<(i64, i64)> {
    acquired
        .iter()
        .map(|r| (r.first_offset, r.last_offset))
        .collect()
}

#[test]
fn read_committed_archives_aborted_records_and_hands_out_the_rest() {
    let mut p = partition();
    let mut committed = read(0, log());
    committed.read_committed = true;
    committed.aborted = vec![(7, 0)];
    let got = p.acquire("a", AcquireMode::BatchOptimized, 100, 100, &committed, 0);
    assert_eq!(ranges(&got.acquired), vec![(2, 8)]);
    assert_eq!(got.count, 7);
    assert_eq!(state(&p, 0), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 1), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 2), Some((RecordState::Acquired, 1)));
    assert_eq!(p.delivery_complete_count(), 2);

    // The client acknowledges the markers as gaps; then everything is done.
    let acks = AckBatch {
        first_offset: 2,
        last_offset: 8,
        ack_types: vec![0, ACCEPT, ACCEPT, 0, ACCEPT, ACCEPT, ACCEPT],
    };
    let write = p.acknowledge("a", &[acks], 1).expect("ok").expect("write");
    p.complete_write(write.write_id, true, 1);
    assert_eq!(p.start_offset(), 9);
    assert_eq!(p.in_flight_batch_count(), 0);
}

#[test]
fn aborted_records_in_the_middle_split_the_acquired_ranges() {
    let mut p = partition();
    let mut committed = read(
        0,
        vec![
            batch(0, 1),
            transactional(2, 3, 7),
            marker(4, 7),
            batch(5, 6),
        ],
    );
    committed.read_committed = true;
    committed.aborted = vec![(7, 2)];
    let got = p.acquire("a", AcquireMode::BatchOptimized, 100, 100, &committed, 0);
    assert_eq!(ranges(&got.acquired), vec![(0, 1), (4, 6)]);
    assert_eq!(got.count, 5);
}

#[test]
fn read_uncommitted_hands_out_aborted_records() {
    let mut p = partition();
    let mut uncommitted = read(0, log());
    uncommitted.aborted = vec![(7, 0)];
    let got = p.acquire("a", AcquireMode::BatchOptimized, 100, 100, &uncommitted, 0);
    assert_eq!(ranges(&got.acquired), vec![(0, 8)]);
}

#[test]
fn a_transaction_aborted_after_the_read_range_archives_nothing() {
    let mut p = partition();
    let mut committed = read(0, log());
    committed.read_committed = true;
    committed.aborted = vec![(7, 20)];
    let got = p.acquire("a", AcquireMode::BatchOptimized, 100, 100, &committed, 0);
    assert_eq!(ranges(&got.acquired), vec![(0, 8)]);
}
