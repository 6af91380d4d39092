//! A share-partition loaded from its persisted state (Kafka's maybeInitialize).

use super::support::*;
use crate::partition::{
    AcquireMode, AcquiredRecords, RecordState, SharePartition, SharePartitionError,
};
use crate::state::{DeliveryState, PersistedState, StateBatch};

fn persisted_batch(
    first_offset: i64,
    last_offset: i64,
    delivery_state: DeliveryState,
    delivery_count: i16,
) -> StateBatch {
    StateBatch {
        first_offset,
        last_offset,
        delivery_state,
        delivery_count,
    }
}

fn persisted(start_offset: i64, batches: Vec<StateBatch>) -> PersistedState {
    PersistedState {
        state_epoch: 3,
        leader_epoch: 2,
        start_offset,
        batches,
    }
}

#[test]
fn replay_keeps_states_and_delivery_counts_and_fetches_the_gaps() {
    let state_read = persisted(
        10,
        vec![
            persisted_batch(10, 14, DeliveryState::Acknowledged, 1),
            persisted_batch(15, 19, DeliveryState::Available, 2),
            persisted_batch(20, 24, DeliveryState::Archived, 2),
            persisted_batch(30, 34, DeliveryState::Available, 1),
        ],
    );
    let mut p = SharePartition::from_persisted(config(), state_read).expect("loads");
    // The acknowledged batch at the front is done: the start offset moved past it.
    assert_eq!((p.start_offset(), p.end_offset()), (15, 34));
    assert_eq!(p.in_flight_batch_count(), 3);
    assert_eq!(p.state_epoch(), 3);
    assert_eq!(p.delivery_complete_count(), 5);
    assert_eq!(state(&p, 15), Some((RecordState::Available, 2)));
    assert_eq!(state(&p, 20), Some((RecordState::Archived, 2)));
    assert_eq!(state(&p, 27), None);
    assert_eq!(p.next_fetch_offset(), 15);

    let log = vec![
        batch(15, 19),
        batch(20, 24),
        batch(25, 29),
        batch(30, 34),
        batch(35, 39),
    ];
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(15, log),
        0,
    );
    let expected = vec![
        AcquiredRecords {
            first_offset: 15,
            last_offset: 19,
            delivery_count: 3,
        },
        AcquiredRecords {
            first_offset: 25,
            last_offset: 29,
            delivery_count: 1,
        },
        AcquiredRecords {
            first_offset: 30,
            last_offset: 34,
            delivery_count: 2,
        },
        AcquiredRecords {
            first_offset: 35,
            last_offset: 39,
            delivery_count: 1,
        },
    ];
    assert_eq!(got.acquired, expected);
    assert_eq!(got.count, 20);
    assert_eq!(p.end_offset(), 39);
}

/// Kafka's shouldThrottleRecordsDelivery looks at a whole batch's delivery count whatever its
/// state: a cached batch delivered often, even archived, ends the acquisition before it.
#[test]
fn a_batch_delivered_often_ends_the_acquisition_before_it() {
    let state_read = persisted(
        0,
        vec![
            persisted_batch(0, 4, DeliveryState::Available, 1),
            persisted_batch(5, 9, DeliveryState::Archived, 5),
            persisted_batch(10, 14, DeliveryState::Available, 1),
        ],
    );
    let mut p = SharePartition::from_persisted(config(), state_read).expect("loads");
    let log = vec![batch(0, 4), batch(5, 9), batch(10, 14)];
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(0, log.clone()),
        0,
    );
    assert_eq!(got.acquired.len(), 1);
    assert_eq!(got.acquired[0].last_offset, 4);
    assert_eq!(got.next_fetch_offset, 10);
    let got = p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(10, log),
        0,
    );
    assert_eq!(got.acquired.len(), 1);
    assert_eq!(got.acquired[0].first_offset, 10);
}

#[test]
fn a_gap_at_the_start_is_fetched_first() {
    let state_read = persisted(
        5,
        vec![persisted_batch(10, 14, DeliveryState::Acknowledged, 1)],
    );
    let mut p = SharePartition::from_persisted(config(), state_read).expect("loads");
    assert_eq!(p.start_offset(), 5);
    assert_eq!(p.next_fetch_offset(), 5);
    let log = vec![batch(5, 9), batch(10, 14), batch(15, 19)];
    let got = p.acquire("a", AcquireMode::BatchOptimized, 100, 100, &read(5, log), 0);
    let ranges: Vec<(i64, i64)> = got
        .acquired
        .iter()
        .map(|r| (r.first_offset, r.last_offset))
        .collect();
    assert_eq!(ranges, vec![(5, 9), (15, 19)]);
    let write = p
        .acknowledge("a", &[ack(5, 9, ACCEPT)], 1)
        .expect("ok")
        .expect("write");
    assert_eq!(write.state_epoch, 3);
    assert_eq!(write.leader_epoch, 2);
    p.complete_write(write.write_id, true, 1);
    assert_eq!(p.start_offset(), 15);
}

#[test]
fn a_fully_done_state_starts_after_it() {
    let state_read = persisted(0, vec![persisted_batch(0, 9, DeliveryState::Archived, 5)]);
    let p = SharePartition::from_persisted(config(), state_read).expect("loads");
    assert_eq!((p.start_offset(), p.end_offset()), (10, 10));
    assert_eq!(p.in_flight_batch_count(), 0);
    assert_eq!(p.next_fetch_offset(), 10);
}

#[test]
fn an_empty_state_starts_at_its_start_offset() {
    let p = SharePartition::from_persisted(config(), persisted(42, Vec::new())).expect("loads");
    assert_eq!(
        (p.start_offset(), p.end_offset(), p.next_fetch_offset()),
        (42, 42, 42)
    );
}

#[test]
fn invalid_states_are_refused() {
    assert_eq!(
        SharePartition::from_persisted(config(), persisted(-1, Vec::new())).map(|_| ()),
        Err(SharePartitionError::StartOffsetUnknown)
    );
    let below_start = persisted(
        10,
        vec![persisted_batch(5, 12, DeliveryState::Available, 1)],
    );
    assert!(matches!(
        SharePartition::from_persisted(config(), below_start),
        Err(SharePartitionError::InvalidPersistedState(_))
    ));
    let overlapping = persisted(
        0,
        vec![
            persisted_batch(0, 5, DeliveryState::Available, 1),
            persisted_batch(5, 9, DeliveryState::Available, 1),
        ],
    );
    assert!(matches!(
        SharePartition::from_persisted(config(), overlapping),
        Err(SharePartitionError::InvalidPersistedState(_))
    ));
}

#[test]
fn a_log_start_past_the_first_gap_moves_the_gap_with_it() {
    let state_read = persisted(
        0,
        vec![
            persisted_batch(8, 9, DeliveryState::Available, 1),
            persisted_batch(10, 14, DeliveryState::Acknowledged, 1),
        ],
    );
    let mut p = SharePartition::from_persisted(config(), state_read).expect("loads");
    assert_eq!(p.next_fetch_offset(), 0);
    p.update_log_start_offset(5);
    assert_eq!((p.start_offset(), p.next_fetch_offset()), (5, 5));
    let log = vec![batch(4, 7), batch(8, 9), batch(10, 14), batch(15, 19)];
    let got = p.acquire("a", AcquireMode::BatchOptimized, 100, 100, &read(5, log), 0);
    let ranges: Vec<(i64, i64)> = got
        .acquired
        .iter()
        .map(|r| (r.first_offset, r.last_offset))
        .collect();
    assert_eq!(ranges, vec![(5, 7), (8, 9), (15, 19)]);
    let write = p
        .acknowledge("a", &[ack(5, 7, ACCEPT), ack(8, 9, ACCEPT)], 1)
        .expect("ok")
        .expect("write");
    p.complete_write(write.write_id, true, 1);
    assert_eq!(p.start_offset(), 15);
}
