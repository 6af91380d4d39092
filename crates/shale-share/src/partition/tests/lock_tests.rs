//! Acquisition locks: expiry, redelivery up to the delivery count limit, renewal.

use super::support::*;
use crate::partition::{AcquireMode, RecordState, SharePartition, SharePartitionError};
use crate::state::{DeliveryState, StateBatch};

fn acquire_all(p: &mut SharePartition, member: &str, now_ms: u64) -> Vec<(i64, i64, i16)> {
    let read = read_next(p, &[batch(0, 4)]);
    p.acquire(member, AcquireMode::BatchOptimized, 100, 100, &read, now_ms)
        .acquired
        .iter()
        .map(|r| (r.first_offset, r.last_offset, r.delivery_count))
        .collect()
}

#[test]
fn an_expired_lock_offers_the_records_again_with_the_next_delivery_count() {
    let mut p = partition();
    assert_eq!(acquire_all(&mut p, "a", 0), vec![(0, 4, 1)]);
    assert_eq!(p.next_deadline_ms(), Some(LOCK_MS));
    assert_eq!(p.expire_locks(LOCK_MS - 1), None);

    let write = p.expire_locks(LOCK_MS).expect("an expiry write");
    assert_eq!(
        write.batches,
        vec![StateBatch {
            first_offset: 0,
            last_offset: 4,
            delivery_state: DeliveryState::Available,
            delivery_count: 1,
        }]
    );
    assert_eq!(write.start_offset, 0);
    assert_eq!(state(&p, 2), Some((RecordState::Available, 1)));
    assert_eq!(p.next_deadline_ms(), None);
    assert_eq!(p.next_fetch_offset(), 0);
    // Nothing was done, so the start offset stays: the expiry itself was the news.
    assert!(
        !p.complete_write(write.write_id, true, LOCK_MS)
            .records_available
    );

    assert_eq!(acquire_all(&mut p, "b", LOCK_MS + 1), vec![(0, 4, 2)]);
    assert_eq!(
        p.record_state(0).map(|s| s.member_id),
        Some("b".to_string())
    );
}

#[test]
fn an_expiry_holds_even_when_its_write_fails() {
    let mut p = partition();
    acquire_all(&mut p, "a", 0);
    let write = p.expire_locks(LOCK_MS).expect("an expiry write");
    p.complete_write(write.write_id, false, LOCK_MS);
    assert_eq!(state(&p, 0), Some((RecordState::Available, 1)));
}

#[test]
fn records_are_archived_after_the_last_allowed_delivery() {
    let mut cfg = config();
    cfg.delivery_count_limit = 2;
    let mut p = SharePartition::new(cfg, 0);
    assert_eq!(acquire_all(&mut p, "a", 0), vec![(0, 4, 1)]);
    let write = p.expire_locks(LOCK_MS).expect("first expiry");
    p.complete_write(write.write_id, true, LOCK_MS);
    assert_eq!(acquire_all(&mut p, "a", LOCK_MS), vec![(0, 4, 2)]);

    let write = p.expire_locks(2 * LOCK_MS).expect("second expiry");
    assert_eq!(write.batches[0].delivery_state, DeliveryState::Archived);
    assert_eq!(state(&p, 0), Some((RecordState::Archived, 2)));
    assert_eq!(p.delivery_complete_count(), 5);
    p.complete_write(write.write_id, true, 2 * LOCK_MS);
    assert_eq!(p.start_offset(), 5);
    assert_eq!(p.in_flight_batch_count(), 0);
    assert_eq!(p.delivery_complete_count(), 0);
    assert!(acquire_all(&mut p, "a", 2 * LOCK_MS).is_empty());
}

#[test]
fn a_release_at_the_last_allowed_delivery_archives() {
    let mut cfg = config();
    cfg.delivery_count_limit = 2;
    let mut p = SharePartition::new(cfg, 0);
    acquire_all(&mut p, "a", 0);
    let write = p
        .acknowledge("a", &[ack(0, 4, RELEASE)], 1)
        .expect("ok")
        .expect("write");
    p.complete_write(write.write_id, true, 1);
    assert_eq!(acquire_all(&mut p, "a", 2), vec![(0, 4, 2)]);
    let write = p
        .acknowledge("a", &[ack(0, 4, RELEASE)], 3)
        .expect("ok")
        .expect("write");
    assert_eq!(write.batches[0].delivery_state, DeliveryState::Archived);
    p.complete_write(write.write_id, true, 3);
    assert_eq!(p.start_offset(), 5);
}

#[test]
fn records_near_their_last_delivery_are_handed_out_alone() {
    let mut cfg = config();
    cfg.delivery_count_limit = 3;
    let mut p = SharePartition::new(cfg, 0);
    acquire_all(&mut p, "a", 0);
    let write = p.expire_locks(LOCK_MS).expect("expiry");
    p.complete_write(write.write_id, true, LOCK_MS);
    assert_eq!(acquire_all(&mut p, "a", LOCK_MS), vec![(0, 4, 2)]);
    let write = p.expire_locks(2 * LOCK_MS).expect("expiry");
    p.complete_write(write.write_id, true, 2 * LOCK_MS);

    // Delivered twice of three: the third, last delivery isolates each record.
    assert_eq!(acquire_all(&mut p, "a", 2 * LOCK_MS), vec![(0, 0, 3)]);
    assert_eq!(acquire_all(&mut p, "b", 2 * LOCK_MS), vec![(1, 1, 3)]);
}

#[test]
fn renew_restarts_the_lock_without_a_write() {
    let mut p = partition();
    acquire_all(&mut p, "a", 0);
    let renewed = p
        .acknowledge("a", &[ack(0, 4, RENEW)], 20_000)
        .expect("renewed");
    assert_eq!(renewed, None);
    assert_eq!(p.next_deadline_ms(), Some(20_000 + LOCK_MS));
    assert_eq!(p.expire_locks(LOCK_MS), None);
    assert_eq!(state(&p, 0), Some((RecordState::Acquired, 1)));
    assert!(p.expire_locks(20_000 + LOCK_MS).is_some());
    assert_eq!(state(&p, 0), Some((RecordState::Available, 1)));
}

#[test]
fn renew_of_some_offsets_renews_only_those() {
    let mut p = partition();
    acquire_all(&mut p, "a", 0);
    let batch = crate::partition::AckBatch {
        first_offset: 0,
        last_offset: 4,
        ack_types: vec![RENEW, RENEW, ACCEPT, ACCEPT, ACCEPT],
    };
    let write = p
        .acknowledge("a", &[batch], 10_000)
        .expect("ok")
        .expect("write");
    assert_eq!(write.batches.len(), 3);
    p.complete_write(write.write_id, true, 10_000);
    assert_eq!(p.next_deadline_ms(), Some(10_000 + LOCK_MS));
    assert!(p.expire_locks(LOCK_MS).is_none());
    assert_eq!(state(&p, 1), Some((RecordState::Acquired, 1)));
}

#[test]
fn renew_is_refused_when_the_group_disables_it() {
    let mut cfg = config();
    cfg.renew_acknowledge_enabled = false;
    let mut p = SharePartition::new(cfg, 0);
    acquire_all(&mut p, "a", 0);
    let refused = p.acknowledge("a", &[ack(0, 4, RENEW)], 1);
    assert!(matches!(
        refused,
        Err(SharePartitionError::InvalidRecordState(_))
    ));
    assert_eq!(p.next_deadline_ms(), Some(LOCK_MS));
}

#[test]
fn an_acknowledgement_after_the_lock_ran_out_is_refused() {
    let mut p = partition();
    acquire_all(&mut p, "a", 0);
    p.expire_locks(LOCK_MS);
    let refused = p.acknowledge("a", &[ack(0, 4, ACCEPT)], LOCK_MS + 1);
    assert!(matches!(
        refused,
        Err(SharePartitionError::InvalidRecordState(_))
    ));
}

/// Kafka's testAcquisitionLockTimeoutCauseSPSOMoveForward: part of a batch reaches its last
/// delivery, is archived at its lock's end, and the start offset moves past it while the batch
/// stays cached.
#[test]
fn archiving_part_of_a_batch_moves_the_start_offset_into_it() {
    let mut cfg = config();
    cfg.delivery_count_limit = 2;
    let mut p = SharePartition::new(cfg, 0);
    let whole = read(0, vec![batch(0, 9)]);
    p.acquire("a", AcquireMode::BatchOptimized, 100, 100, &whole, 0);
    let write = p.expire_locks(LOCK_MS).expect("expiry");
    p.complete_write(write.write_id, true, LOCK_MS);
    assert_eq!(state(&p, 0), Some((RecordState::Available, 1)));

    let first_half = read(0, vec![batch(0, 4)]);
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &first_half,
        LOCK_MS,
    );
    assert_eq!(got.count, 5);
    assert_eq!(p.record_state(5).and_then(|s| s.lock_deadline_ms), None);
    assert_eq!(
        p.record_state(4).and_then(|s| s.lock_deadline_ms),
        Some(2 * LOCK_MS)
    );

    let write = p.expire_locks(2 * LOCK_MS).expect("expiry");
    assert_eq!(state(&p, 0), Some((RecordState::Archived, 2)));
    assert_eq!(state(&p, 5), Some((RecordState::Available, 1)));
    assert_eq!(p.next_fetch_offset(), 5);
    p.complete_write(write.write_id, true, 2 * LOCK_MS);
    assert_eq!(p.start_offset(), 5);
    assert_eq!(p.in_flight_batch_count(), 1);
}
