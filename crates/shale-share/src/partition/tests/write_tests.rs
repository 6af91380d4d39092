//! The outcome of state writes: a failed acknowledgement or release is reverted.

use super::support::*;
use crate::partition::{AcquireMode, RecordState, SharePartition};

fn acquired() -> SharePartition {
    let mut p = partition();
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(0, vec![batch(0, 4)]),
        0,
    );
    p
}

#[test]
fn a_failed_accept_returns_the_records_to_their_holder() {
    let mut p = acquired();
    let write = p
        .acknowledge("a", &[ack(0, 4, ACCEPT)], 1_000)
        .expect("ok")
        .expect("write");
    assert_eq!(p.delivery_complete_count(), 5);
    let done = p.complete_write(write.write_id, false, 2_000);
    assert!(!done.records_available);
    assert_eq!(state(&p, 0), Some((RecordState::Acquired, 1)));
    assert_eq!(
        p.record_state(0).map(|s| s.member_id),
        Some("a".to_string())
    );
    assert_eq!(p.delivery_complete_count(), 0);
    assert_eq!(p.start_offset(), 0);
    assert_eq!(p.next_deadline_ms(), Some(LOCK_MS));

    let write = p
        .acknowledge("a", &[ack(0, 4, ACCEPT)], 3_000)
        .expect("ok")
        .expect("write");
    p.complete_write(write.write_id, true, 3_000);
    assert_eq!(p.start_offset(), 5);
}

#[test]
fn a_lock_that_ran_out_during_a_failed_write_offers_the_records_again() {
    let mut p = acquired();
    let write = p
        .acknowledge("a", &[ack(0, 4, ACCEPT)], 1_000)
        .expect("ok")
        .expect("write");
    // The pending change keeps its lock: the expiry waits for the write's outcome.
    assert_eq!(p.next_deadline_ms(), None);
    assert_eq!(p.expire_locks(LOCK_MS), None);
    p.complete_write(write.write_id, false, LOCK_MS + 1);
    assert_eq!(state(&p, 0), Some((RecordState::Available, 1)));
    assert_eq!(p.next_fetch_offset(), 0);
}

#[test]
fn a_failed_write_at_the_last_delivery_archives_once_the_lock_ran_out() {
    let mut cfg = config();
    cfg.delivery_count_limit = 1;
    let mut p = SharePartition::new(cfg, 0);
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(0, vec![batch(0, 4)]),
        0,
    );
    let write = p
        .acknowledge("a", &[ack(0, 4, ACCEPT)], 1_000)
        .expect("ok")
        .expect("write");
    p.complete_write(write.write_id, false, LOCK_MS);
    assert_eq!(state(&p, 0), Some((RecordState::Archived, 1)));
}

#[test]
fn a_failed_release_keeps_the_records_acquired() {
    let mut p = acquired();
    let write = p.release_acquired_records("a", 1).expect("write");
    p.complete_write(write.write_id, false, 2);
    assert_eq!(
        p.record_state(0).map(|s| (s.state, s.member_id)),
        Some((RecordState::Acquired, "a".to_string()))
    );
}

#[test]
fn writes_complete_in_any_order_and_unknown_ids_change_nothing() {
    let mut p = partition();
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        5,
        100,
        &read(0, vec![batch(0, 4), batch(5, 9)]),
        0,
    );
    let first = p
        .acknowledge("a", &[ack(0, 4, ACCEPT)], 1)
        .expect("ok")
        .expect("write");
    let second = p
        .acknowledge("a", &[ack(5, 9, ACCEPT)], 1)
        .expect("ok")
        .expect("write");
    assert_ne!(first.write_id, second.write_id);
    p.complete_write(second.write_id, true, 2);
    assert_eq!(p.start_offset(), 0);
    p.complete_write(first.write_id, true, 2);
    assert_eq!(p.start_offset(), 10);
    assert!(!p.complete_write(first.write_id, true, 3).records_available);
    assert!(!p.complete_write(9_999, false, 3).records_available);
}
