//! Scenarios of Kafka's ShareCoordinatorShardTest, with Kafka 4.4's answers.

use std::collections::HashMap;

use uuid::Uuid;

use super::*;
use crate::state::{DeliveryState, PersistedState, SharePartitionKey, StateBatch};

const TOPIC: Uuid = Uuid::from_u128(0x1111);
const OTHER_TOPIC: Uuid = Uuid::from_u128(0x2222);
const NOW_MS: i64 = 1_700_000_000_000;

fn key(partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: "group1".to_string(),
        topic_id: TOPIC,
        partition,
    }
}

fn batch(first: i64, last: i64, state: DeliveryState, count: i16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

/// A shard, the records it has replayed, and the next offset of its partition.
struct Harness {
    shard: ShareCoordinatorShard,
    log: Vec<ShareRecord>,
}

impl Harness {
    fn new() -> Self {
        Harness::with(ShareCoordinatorSettings::default())
    }

    fn with(settings: ShareCoordinatorSettings) -> Self {
        let mut shard = ShareCoordinatorShard::new(settings);
        shard.set_topics(HashMap::from([(TOPIC, 3), (OTHER_TOPIC, 1)]));
        Harness {
            shard,
            log: Vec::new(),
        }
    }

    fn apply(&mut self, records: &[ShareRecord]) {
        for record in records {
            let offset = self.log.len() as i64;
            self.shard.replay(offset, record);
            self.log.push(record.clone());
        }
    }

    fn run<T>(&mut self, outcome: Outcome<T>) -> T {
        self.apply(&outcome.records);
        outcome.answer
    }

    fn init(&mut self, key: &SharePartitionKey, state_epoch: i32, start_offset: i64) {
        let outcome = self
            .shard
            .initialize_state(key, state_epoch, start_offset, NOW_MS);
        assert_eq!(self.run(outcome), Ok(()));
    }

    fn read(&mut self, key: &SharePartitionKey, leader_epoch: i32) -> ReadStateAnswer {
        let outcome = self.shard.read_state(key, leader_epoch, NOW_MS);
        self.run(outcome)
    }

    fn write(&mut self, request: &WriteStateRequest) -> WriteStateAnswer {
        let outcome = self.shard.write_state(request, NOW_MS);
        self.run(outcome)
    }
}

fn write_request(
    partition: i32,
    leader_epoch: i32,
    start_offset: i64,
    batches: Vec<StateBatch>,
) -> WriteStateRequest {
    WriteStateRequest {
        group_id: "group1".to_string(),
        topic_id: TOPIC,
        partition,
        state_epoch: 0,
        leader_epoch,
        start_offset,
        delivery_complete_count: 11,
        batches,
    }
}

fn snapshot(key: &SharePartitionKey, value: ShareSnapshotValue) -> ShareRecord {
    ShareRecord::Snapshot {
        key: key.clone(),
        value,
    }
}

fn snapshot_value(snapshot_epoch: i32, leader_epoch: i32, timestamp_ms: i64) -> ShareSnapshotValue {
    ShareSnapshotValue {
        snapshot_epoch,
        state_epoch: 0,
        leader_epoch,
        start_offset: 0,
        delivery_complete_count: 11,
        create_timestamp_ms: timestamp_ms,
        write_timestamp_ms: timestamp_ms,
        state_batches: vec![batch(0, 10, DeliveryState::Available, 1)],
    }
}

#[test]
fn a_snapshot_replaces_the_state_and_raises_the_epochs() {
    let mut h = Harness::new();
    let first = snapshot_value(0, 1, 0);
    let second = ShareSnapshotValue {
        snapshot_epoch: 1,
        state_epoch: 1,
        leader_epoch: 2,
        delivery_complete_count: 13,
        state_batches: vec![batch(11, 12, DeliveryState::Available, 1)],
        ..first.clone()
    };
    h.apply(&[snapshot(&key(0), first)]);
    assert_eq!(h.shard.leader_epoch(&key(0)), Some(1));
    h.apply(&[snapshot(&key(0), second.clone())]);
    let state = h.shard.state(&key(0)).expect("state");
    assert_eq!(state.batches, second.state_batches);
    assert_eq!(state.delivery_complete_count, 13);
    assert_eq!(h.shard.leader_epoch(&key(0)), Some(2));
    assert_eq!(h.shard.state_epoch(&key(0)), Some(1));
    // An older snapshot replayed later replaces the state but not the fencing epochs.
    h.apply(&[snapshot(&key(0), snapshot_value(2, 0, 0))]);
    assert_eq!(h.shard.leader_epoch(&key(0)), Some(2));
    assert_eq!(h.shard.state_epoch(&key(0)), Some(1));
    assert_eq!(h.shard.state(&key(0)).map(|s| s.leader_epoch), Some(0));
}

#[test]
fn initialize_writes_a_fresh_snapshot() {
    let h = Harness::new();
    let outcome = h.shard.initialize_state(&key(0), 5, 10, NOW_MS);
    assert_eq!(outcome.answer, Ok(()));
    assert_eq!(
        outcome.records,
        vec![snapshot(
            &key(0),
            ShareSnapshotValue {
                snapshot_epoch: 0,
                state_epoch: 5,
                leader_epoch: 0,
                start_offset: 10,
                delivery_complete_count: 0,
                create_timestamp_ms: NOW_MS,
                write_timestamp_ms: NOW_MS,
                state_batches: Vec::new(),
            }
        )]
    );
}

#[test]
fn initialize_with_an_unknown_start_offset_leaves_the_count_unknown() {
    let mut h = Harness::new();
    h.init(&key(0), 0, -1);
    let state = h.shard.state(&key(0)).expect("state");
    assert_eq!(state.start_offset, -1);
    assert_eq!(
        state.delivery_complete_count,
        UNKNOWN_DELIVERY_COMPLETE_COUNT
    );
}

#[test]
fn reinitializing_starts_over_under_the_next_snapshot_epoch() {
    let mut h = Harness::new();
    h.init(&key(0), 1, 0);
    h.read(&key(0), 3).expect("read");
    h.write(&WriteStateRequest {
        state_epoch: 1,
        ..write_request(0, 3, 0, vec![batch(0, 4, DeliveryState::Acknowledged, 1)])
    })
    .expect("write");
    let outcome = h.shard.initialize_state(&key(0), 2, 50, NOW_MS + 1);
    let [ShareRecord::Snapshot { value, .. }] = outcome.records.as_slice() else {
        panic!("one snapshot, got {:?}", outcome.records);
    };
    assert_eq!(value.snapshot_epoch, 1);
    assert_eq!(value.state_epoch, 2);
    assert_eq!(value.leader_epoch, 0);
    assert!(value.state_batches.is_empty());
    h.apply(&outcome.records);
    // The leader epoch seen before is still the fencing epoch.
    assert_eq!(h.shard.leader_epoch(&key(0)), Some(3));
    assert_eq!(h.shard.state_epoch(&key(0)), Some(2));
}

#[test]
fn initialize_refusals() {
    let mut h = Harness::new();
    let refused = |h: &Harness, key: &SharePartitionKey, state_epoch| {
        let outcome = h.shard.initialize_state(key, state_epoch, 0, NOW_MS);
        assert_eq!(outcome.records.is_empty(), outcome.answer.is_err());
        outcome.answer
    };
    assert_eq!(
        refused(&h, &key(-1), 0),
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::NegativePartitionId
        ))
    );
    assert_eq!(
        refused(&h, &key(0), -1),
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::NegativeStateEpoch
        ))
    );
    assert_eq!(
        refused(&h, &key(3), 0),
        Err(ShareStateError::UnknownTopicOrPartition)
    );
    h.init(&key(0), 5, 0);
    assert_eq!(
        refused(&h, &key(0), 4),
        Err(ShareStateError::FencedStateEpoch)
    );
    assert_eq!(refused(&h, &key(0), 5), Ok(()));
}

#[test]
fn a_write_before_initialization_is_refused() {
    let h = Harness::new();
    let outcome = h
        .shard
        .write_state(&write_request(0, 0, 0, Vec::new()), NOW_MS);
    assert!(outcome.records.is_empty());
    assert_eq!(
        outcome.answer,
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::WriteUninitialized
        ))
    );
    assert_eq!(
        outcome.answer.map_err(|e| e.message()),
        Err("Write operation on uninitialized share partition not allowed.".to_string())
    );
}

#[test]
fn a_write_becomes_an_update_record() {
    let mut h = Harness::new();
    h.init(&key(0), 0, 0);
    h.read(&key(0), 0).expect("read");
    let request = write_request(0, 0, 0, vec![batch(0, 10, DeliveryState::Available, 1)]);
    let outcome = h.shard.write_state(&request, NOW_MS);
    assert_eq!(outcome.answer, Ok(()));
    assert_eq!(
        outcome.records,
        vec![ShareRecord::Update {
            key: key(0),
            value: ShareUpdateValue {
                snapshot_epoch: 0,
                leader_epoch: 0,
                start_offset: 0,
                delivery_complete_count: 11,
                state_batches: vec![batch(0, 10, DeliveryState::Available, 1)],
            },
        }]
    );
    h.apply(&outcome.records);
    let next = write_request(0, 0, 0, vec![batch(11, 20, DeliveryState::Available, 1)]);
    h.write(&next).expect("write");
    // Adjacent batches with the same state become one.
    assert_eq!(
        h.shard.state(&key(0)).map(|s| s.batches.clone()),
        Some(vec![batch(0, 20, DeliveryState::Available, 1)])
    );
}

#[test]
fn write_refusals() {
    let mut h = Harness::new();
    h.init(&key(0), 1, 0);
    h.read(&key(0), 5).expect("read");
    let refused = |h: &Harness, request: WriteStateRequest| {
        let outcome = h.shard.write_state(&request, NOW_MS);
        assert_eq!(outcome.records.is_empty(), outcome.answer.is_err());
        outcome.answer
    };
    assert_eq!(
        refused(&h, write_request(-1, 5, 0, Vec::new())),
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::NegativePartitionId
        ))
    );
    assert_eq!(
        refused(&h, write_request(0, -1, 0, Vec::new())),
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::NegativeLeaderEpoch
        ))
    );
    assert_eq!(
        refused(
            &h,
            WriteStateRequest {
                state_epoch: -1,
                ..write_request(0, 5, 0, Vec::new())
            }
        ),
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::NegativeStateEpoch
        ))
    );
    assert_eq!(
        refused(&h, write_request(0, 4, 0, Vec::new())),
        Err(ShareStateError::FencedLeaderEpoch)
    );
    assert_eq!(
        refused(&h, write_request(0, 5, 0, Vec::new())),
        Err(ShareStateError::FencedStateEpoch)
    );
    assert_eq!(
        refused(
            &h,
            WriteStateRequest {
                state_epoch: 1,
                ..write_request(0, 6, 0, Vec::new())
            }
        ),
        Ok(())
    );
    h.shard.set_topics(HashMap::new());
    assert_eq!(
        refused(
            &h,
            WriteStateRequest {
                state_epoch: 1,
                ..write_request(0, 5, 0, Vec::new())
            }
        ),
        Err(ShareStateError::UnknownTopicOrPartition)
    );
}

#[test]
fn nothing_is_served_before_the_first_metadata_image() {
    let mut shard = ShareCoordinatorShard::new(ShareCoordinatorSettings::default());
    shard.replay(0, &snapshot(&key(0), snapshot_value(0, 0, 0)));
    assert_eq!(
        shard.read_state(&key(0), 0, NOW_MS).answer,
        Err(ShareStateError::UnknownTopicOrPartition)
    );
    assert_eq!(
        shard.read_state_summary(&key(0)),
        Err(ShareStateError::UnknownTopicOrPartition)
    );
    assert_eq!(
        shard.delete_state(&key(0)).answer,
        Err(ShareStateError::UnknownTopicOrPartition)
    );
    assert_eq!(
        shard.initialize_state(&key(0), 0, 0, NOW_MS).answer,
        Err(ShareStateError::UnknownTopicOrPartition)
    );
}

#[test]
fn a_read_from_a_new_leader_records_its_epoch() {
    let mut h = Harness::new();
    h.init(&key(0), 0, -1);
    let outcome = h.shard.read_state(&key(0), 2, NOW_MS);
    assert_eq!(
        outcome.answer,
        Ok(PersistedState {
            state_epoch: 0,
            leader_epoch: 2,
            start_offset: -1,
            batches: Vec::new(),
        })
    );
    assert_eq!(
        outcome.records,
        vec![ShareRecord::Update {
            key: key(0),
            value: ShareUpdateValue {
                snapshot_epoch: 0,
                leader_epoch: 2,
                start_offset: -1,
                delivery_complete_count: UNKNOWN_DELIVERY_COMPLETE_COUNT,
                state_batches: Vec::new(),
            },
        }]
    );
    h.apply(&outcome.records);
    assert_eq!(h.shard.leader_epoch(&key(0)), Some(2));
    // The same leader reads without writing; an older one is fenced.
    assert!(h.shard.read_state(&key(0), 2, NOW_MS).records.is_empty());
    assert_eq!(
        h.shard.read_state(&key(0), 1, NOW_MS).answer,
        Err(ShareStateError::FencedLeaderEpoch)
    );
}

#[test]
fn read_refusals() {
    let mut h = Harness::new();
    assert_eq!(
        h.read(&key(0), 1),
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::ReadUninitialized
        ))
    );
    h.init(&key(0), 0, 0);
    assert_eq!(
        h.read(&key(-1), 1),
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::NegativePartitionId
        ))
    );
    assert_eq!(
        h.read(&key(0), -1),
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::NegativeLeaderEpoch
        ))
    );
    assert_eq!(
        h.shard
            .read_state(&key(0), -1, NOW_MS)
            .answer
            .map_err(|e| e.message()),
        Err("The leader epoch cannot be a negative number.".to_string())
    );
}

#[test]
fn read_summary_answers_defaults_for_a_share_partition_without_state() {
    let mut h = Harness::new();
    assert_eq!(
        h.shard.read_state_summary(&key(0)),
        Ok(StateSummary {
            state_epoch: 0,
            leader_epoch: 0,
            start_offset: -1,
            delivery_complete_count: -1,
        })
    );
    h.init(&key(0), 3, 0);
    h.read(&key(0), 4).expect("read");
    h.write(&WriteStateRequest {
        state_epoch: 3,
        ..write_request(0, 4, 7, Vec::new())
    })
    .expect("write");
    assert_eq!(
        h.shard.read_state_summary(&key(0)),
        Ok(StateSummary {
            state_epoch: 3,
            leader_epoch: 4,
            start_offset: 7,
            delivery_complete_count: 11,
        })
    );
    assert_eq!(
        h.shard.read_state_summary(&key(-1)),
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::NegativePartitionId
        ))
    );
}

#[test]
fn the_start_offset_only_moves_forward() {
    let mut h = Harness::new();
    h.init(&key(0), 0, 100);
    h.read(&key(0), 0).expect("read");
    let behind = WriteStateRequest {
        delivery_complete_count: 50,
        ..write_request(
            0,
            0,
            90,
            vec![batch(95, 110, DeliveryState::Acknowledged, 1)],
        )
    };
    let outcome = h.shard.write_state(&behind, NOW_MS);
    assert_eq!(
        outcome.records,
        vec![ShareRecord::Update {
            key: key(0),
            value: ShareUpdateValue {
                snapshot_epoch: 0,
                leader_epoch: 0,
                start_offset: 100,
                // The count of the start offset in force.
                delivery_complete_count: 0,
                state_batches: vec![batch(100, 110, DeliveryState::Acknowledged, 1)],
            },
        }]
    );
    h.apply(&outcome.records);
    // At the same start offset the larger count is kept.
    let same = WriteStateRequest {
        delivery_complete_count: 3,
        ..write_request(0, 0, 100, Vec::new())
    };
    let outcome = h.shard.write_state(&same, NOW_MS);
    let [ShareRecord::Update { value, .. }] = outcome.records.as_slice() else {
        panic!("one update, got {:?}", outcome.records);
    };
    assert_eq!(value.delivery_complete_count, 3);
    h.apply(&outcome.records);
    let lower = WriteStateRequest {
        delivery_complete_count: 1,
        ..write_request(0, 0, 100, Vec::new())
    };
    let outcome = h.shard.write_state(&lower, NOW_MS);
    let [ShareRecord::Update { value, .. }] = outcome.records.as_slice() else {
        panic!("one update, got {:?}", outcome.records);
    };
    assert_eq!(value.delivery_complete_count, 3);
}

fn settings_with_updates_per_snapshot(count: usize) -> ShareCoordinatorSettings {
    ShareCoordinatorSettings {
        snapshot_update_records_per_snapshot: count,
        ..ShareCoordinatorSettings::default()
    }
}

#[test]
fn a_snapshot_follows_the_configured_number_of_updates() {
    let mut h = Harness::with(settings_with_updates_per_snapshot(2));
    h.init(&key(0), 0, 0);
    let mut kinds = Vec::new();
    for i in 0..6 {
        let first = i * 10;
        let request = write_request(
            0,
            0,
            0,
            vec![batch(first, first + 9, DeliveryState::Acknowledged, 1)],
        );
        let outcome = h.shard.write_state(&request, NOW_MS + i);
        kinds.extend(outcome.records.iter().map(ShareRecord::kind));
        h.apply(&outcome.records);
    }
    // Two updates, then a snapshot, which starts the count again.
    use RecordKind::{Snapshot, Update};
    assert_eq!(
        kinds,
        vec![Update, Update, Snapshot, Update, Update, Snapshot]
    );
    let state = h.shard.state(&key(0)).expect("state");
    assert_eq!(state.snapshot_epoch, 2);
    assert_eq!(state.create_timestamp_ms, NOW_MS + 5);
    assert_eq!(
        state.batches,
        vec![batch(0, 59, DeliveryState::Acknowledged, 1)]
    );
}

#[test]
fn with_zero_updates_per_snapshot_every_write_is_a_snapshot() {
    // Kafka's testNonSequentialBatchUpdates, with the acquired states as available (acquired
    // records are never persisted here). The read by the leader of epoch 0 writes nothing:
    // initialization already recorded epoch 0.
    let mut h = Harness::with(settings_with_updates_per_snapshot(0));
    h.init(&key(0), 0, 0);
    assert!(h.shard.read_state(&key(0), 0, NOW_MS).records.is_empty());
    h.write(&write_request(
        0,
        0,
        0,
        vec![batch(0, 10, DeliveryState::Available, 1)],
    ))
    .expect("write");
    let initial = write_request(
        0,
        0,
        100,
        vec![
            batch(100, 109, DeliveryState::Available, 1),
            batch(110, 119, DeliveryState::Available, 2),
            batch(120, 129, DeliveryState::Available, 0),
        ],
    );
    let outcome = h.shard.write_state(&initial, NOW_MS);
    let [ShareRecord::Snapshot { value, .. }] = outcome.records.as_slice() else {
        panic!("one snapshot, got {:?}", outcome.records);
    };
    assert_eq!(value.snapshot_epoch, 2);
    assert_eq!(value.state_batches, initial.batches);
    h.apply(&outcome.records);
    h.write(&WriteStateRequest {
        delivery_complete_count: 10,
        ..write_request(
            0,
            0,
            -1,
            vec![batch(100, 109, DeliveryState::Acknowledged, 1)],
        )
    })
    .expect("write");
    let last = WriteStateRequest {
        delivery_complete_count: 10,
        ..write_request(
            0,
            0,
            110,
            vec![batch(120, 129, DeliveryState::Acknowledged, 1)],
        )
    };
    let outcome = h.shard.write_state(&last, NOW_MS);
    assert_eq!(
        outcome.records,
        vec![snapshot(
            &key(0),
            ShareSnapshotValue {
                snapshot_epoch: 4,
                state_epoch: 0,
                leader_epoch: 0,
                start_offset: 110,
                delivery_complete_count: 10,
                create_timestamp_ms: NOW_MS,
                write_timestamp_ms: NOW_MS,
                // The second batch is not lost.
                state_batches: vec![
                    batch(110, 119, DeliveryState::Available, 2),
                    batch(120, 129, DeliveryState::Acknowledged, 1),
                ],
            }
        )]
    );
}

#[test]
fn delete_writes_a_tombstone_that_forgets_the_share_partition() {
    let mut h = Harness::new();
    let outcome = h.shard.delete_state(&key(0));
    assert_eq!(
        outcome,
        Outcome {
            records: Vec::new(),
            answer: Ok(())
        }
    );
    h.init(&key(0), 2, 0);
    h.read(&key(0), 1).expect("read");
    let outcome = h.shard.delete_state(&key(0));
    assert_eq!(outcome.answer, Ok(()));
    assert_eq!(outcome.records, vec![ShareRecord::tombstone(key(0))]);
    h.apply(&outcome.records);
    assert_eq!(h.shard.state(&key(0)), None);
    assert_eq!(h.shard.leader_epoch(&key(0)), None);
    assert_eq!(h.shard.state_epoch(&key(0)), None);
    // With the state epoch gone, an older state epoch initializes again.
    assert_eq!(
        h.shard.initialize_state(&key(0), 0, 0, NOW_MS).answer,
        Ok(())
    );
    assert_eq!(
        h.shard.delete_state(&key(-1)).answer,
        Err(ShareStateError::InvalidRequest(
            InvalidRequest::NegativePartitionId
        ))
    );
    assert_eq!(
        h.shard.delete_state(&key(5)).answer,
        Err(ShareStateError::UnknownTopicOrPartition)
    );
}

#[test]
fn cold_partitions_get_a_fresh_snapshot() {
    let interval_ms =
        ShareCoordinatorSettings::default().cold_partition_snapshot_interval_ms as i64;
    let mut h = Harness::new();
    h.apply(&[
        snapshot(&key(0), snapshot_value(0, 0, NOW_MS)),
        snapshot(&key(1), snapshot_value(0, 0, NOW_MS + 15_000)),
    ]);
    assert!(h.shard.snapshot_cold_partitions(NOW_MS + 5_000).is_empty());
    let now_ms = NOW_MS + interval_ms;
    let records = h.shard.snapshot_cold_partitions(now_ms);
    assert_eq!(
        records,
        vec![snapshot(
            &key(0),
            ShareSnapshotValue {
                snapshot_epoch: 1,
                write_timestamp_ms: now_ms,
                ..snapshot_value(0, 0, NOW_MS)
            }
        )]
    );
    h.apply(&records);
    assert_eq!(
        h.shard.state(&key(1)).map(|s| s.write_timestamp_ms),
        Some(NOW_MS + 15_000)
    );
    // Once every share-partition's last snapshot is such a rewrite, nothing is written.
    let records = h.shard.snapshot_cold_partitions(now_ms + 15_000);
    assert_eq!(records.len(), 1);
    h.apply(&records);
    assert!(h
        .shard
        .snapshot_cold_partitions(now_ms + 10 * interval_ms)
        .is_empty());
    // Updates carry no time: they do not make a share-partition warm.
    h.apply(&[ShareRecord::Update {
        key: key(0),
        value: ShareUpdateValue {
            snapshot_epoch: 1,
            leader_epoch: 0,
            start_offset: 0,
            delivery_complete_count: 11,
            state_batches: Vec::new(),
        },
    }]);
    assert_eq!(
        h.shard.state(&key(0)).map(|s| s.write_timestamp_ms),
        Some(now_ms)
    );
    assert!(h
        .shard
        .snapshot_cold_partitions(now_ms + 10 * interval_ms)
        .is_empty());
}

#[test]
fn deleted_topics_get_tombstones() {
    let mut h = Harness::new();
    let other = SharePartitionKey {
        topic_id: OTHER_TOPIC,
        ..key(0)
    };
    h.apply(&[
        snapshot(&key(0), snapshot_value(0, 0, 0)),
        snapshot(&key(2), snapshot_value(0, 0, 0)),
        snapshot(&other, snapshot_value(0, 0, 0)),
    ]);
    assert!(h.shard.cleanup_deleted_topics(&[]).is_empty());
    assert!(h
        .shard
        .cleanup_deleted_topics(&[Uuid::from_u128(9)])
        .is_empty());
    assert_eq!(
        h.shard.cleanup_deleted_topics(&[TOPIC]),
        vec![
            ShareRecord::tombstone(key(0)),
            ShareRecord::tombstone(key(2))
        ]
    );
}

#[test]
fn the_redundant_prefix_follows_the_snapshots() {
    let mut h = Harness::new();
    assert_eq!(h.shard.last_redundant_offset(), None);
    h.init(&key(0), 0, 0); // offset 0
    h.init(&key(1), 0, 0); // offset 1
    h.read(&key(0), 1).expect("read"); // offset 2, an update
    assert_eq!(h.shard.last_redundant_offset(), None);
    h.init(&key(0), 0, 5); // offset 3
    assert_eq!(h.shard.last_redundant_offset(), Some(1));
    h.init(&key(1), 0, 5); // offset 4
    assert_eq!(h.shard.last_redundant_offset(), Some(3));
}

#[test]
fn replaying_the_written_records_rebuilds_the_same_state() {
    let mut h = Harness::with(settings_with_updates_per_snapshot(1));
    h.init(&key(0), 0, 0);
    h.init(&key(1), 0, -1);
    h.read(&key(0), 1).expect("read");
    h.read(&key(1), 2).expect("read");
    for i in 0..5i64 {
        let request = WriteStateRequest {
            delivery_complete_count: i as i32,
            ..write_request(
                (i % 2) as i32,
                2,
                i * 3,
                vec![
                    batch(i * 4, i * 4 + 5, DeliveryState::Acknowledged, 1),
                    batch(i * 4 + 2, i * 4 + 3, DeliveryState::Archived, 2),
                ],
            )
        };
        h.write(&request).expect("write");
    }
    h.apply(&h.shard.delete_state(&key(1)).records);
    h.init(&key(2), 0, 9);

    let mut loaded = ShareCoordinatorShard::new(settings_with_updates_per_snapshot(1));
    for (offset, record) in h.log.iter().enumerate() {
        let (key_bytes, value_bytes) = encode_record(record);
        let decoded = decode_record(&key_bytes, value_bytes.as_deref()).expect("decodes");
        assert_eq!(&decoded, record);
        loaded.replay(offset as i64, &decoded);
    }
    for partition in 0..3 {
        assert_eq!(
            loaded.state(&key(partition)),
            h.shard.state(&key(partition))
        );
        assert_eq!(
            loaded.leader_epoch(&key(partition)),
            h.shard.leader_epoch(&key(partition))
        );
    }
    assert_eq!(
        loaded.last_redundant_offset(),
        h.shard.last_redundant_offset()
    );
}

#[test]
fn loading_skips_unknown_record_types_and_stops_at_corrupt_ones() {
    let mut h = Harness::new();
    h.init(&key(0), 0, 0);
    let mut loaded = ShareCoordinatorShard::new(ShareCoordinatorSettings::default());
    let (key_bytes, value_bytes) = encode_record(&h.log[0]);
    assert_eq!(
        loaded.replay_bytes(0, &key_bytes, value_bytes.as_deref()),
        Ok(true)
    );
    assert_eq!(loaded.state(&key(0)), h.shard.state(&key(0)));
    let mut unknown = key_bytes.to_vec();
    unknown[1] = 9;
    assert_eq!(loaded.replay_bytes(1, &unknown, Some(&[0, 0])), Ok(false));
    assert_eq!(
        loaded.replay_bytes(2, &key_bytes, Some(&[0])),
        Err(ShareRecordError::Truncated { buffer: "value" })
    );
    assert_eq!(loaded.state(&key(0)), h.shard.state(&key(0)));
}

#[test]
fn failed_operations_are_described_as_kafka_describes_them() {
    assert_eq!(
        ShareOperation::WriteState.failure_message("The coordinator is not available."),
        "Unable to write share group state: The coordinator is not available."
    );
    assert_eq!(
        ShareOperation::ReadStateSummary.failure_message("x"),
        "Unable to read share group state summary: x"
    );
    assert_eq!(
        ShareOperation::InitializeState.failure_message("x"),
        "Unable to initialize share group state: x"
    );
    assert_eq!(
        ShareOperation::ReadState.failure_message("x"),
        "Unable to read share group state: x"
    );
    assert_eq!(
        ShareOperation::DeleteState.failure_message("x"),
        "Unable to delete share group state: x"
    );
}

#[test]
fn a_group_id_too_long_for_the_record_is_refused() {
    let h = Harness::new();
    let long = SharePartitionKey {
        group_id: "g".repeat(32_768),
        ..key(0)
    };
    let outcome = h.shard.initialize_state(&long, 0, 0, NOW_MS);
    assert!(outcome.records.is_empty());
    assert_eq!(
        outcome.answer,
        Err(ShareStateError::UnknownServerError(
            "Unable to initialize share group state: 'groupId' field is too long to be serialized"
                .to_string()
        ))
    );
    let longest = SharePartitionKey {
        group_id: "g".repeat(32_767),
        ..key(0)
    };
    assert_eq!(
        h.shard.initialize_state(&longest, 0, 0, NOW_MS).answer,
        Ok(())
    );
}
