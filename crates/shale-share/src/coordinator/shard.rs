//! Kafka's ShareCoordinatorShard: the state of the share-partitions whose keys hash to one
//! `__share_group_state` partition, rebuilt by replaying that partition's records.
//!
//! Handlers never change the state: they answer and return the records to append, and
//! `replay` applies those records once they are written (and every record when the
//! partition is loaded).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use uuid::Uuid;

use super::combiner::combine_state_batches;
use super::offsets::RedundantOffsets;
use super::records::{
    decode_record, RecordKind, ShareRecord, ShareRecordError, ShareSnapshotValue, ShareUpdateValue,
    UNKNOWN_DELIVERY_COMPLETE_COUNT,
};
use super::requests::{
    DeleteStateAnswer, InitializeStateAnswer, InvalidRequest, Outcome, ReadStateAnswer,
    ReadStateSummaryAnswer, ShareOperation, ShareStateError, StateSummary, WriteStateAnswer,
    WriteStateRequest,
};
use super::settings::ShareCoordinatorSettings;
use crate::state::{PersistedState, SharePartitionKey, StateBatch};

/// PartitionFactory's values for a share-partition the coordinator holds nothing for.
const UNINITIALIZED_START_OFFSET: i64 = -1;
const DEFAULT_STATE_EPOCH: i32 = 0;
const DEFAULT_LEADER_EPOCH: i32 = 0;
/// The leader epoch InitializeShareGroupState starts a state with (no leader has read it).
const INITIAL_LEADER_EPOCH: i32 = 0;
/// Kafka writes a string field's length as an i16.
const GROUP_ID_BYTES_MAX: usize = i16::MAX as usize;

/// A share-partition's state as the coordinator keeps it (Kafka's ShareGroupOffset): the
/// last snapshot with the updates since merged in. Updates carry no timestamps, so the
/// timestamps are those of the last snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupOffset {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub batches: Vec<StateBatch>,
    pub create_timestamp_ms: i64,
    pub write_timestamp_ms: i64,
}

impl ShareGroupOffset {
    fn from_snapshot(value: &ShareSnapshotValue) -> Self {
        ShareGroupOffset {
            snapshot_epoch: value.snapshot_epoch,
            state_epoch: value.state_epoch,
            leader_epoch: value.leader_epoch,
            start_offset: value.start_offset,
            delivery_complete_count: value.delivery_complete_count,
            batches: value.state_batches.clone(),
            create_timestamp_ms: value.create_timestamp_ms,
            write_timestamp_ms: value.write_timestamp_ms,
        }
    }

    /// An update with no snapshot before it (Kafka's `fromRecord(ShareUpdateValue)`): state
    /// epoch and timestamps 0.
    fn from_update(value: &ShareUpdateValue) -> Self {
        ShareGroupOffset {
            snapshot_epoch: value.snapshot_epoch,
            state_epoch: 0,
            leader_epoch: value.leader_epoch,
            start_offset: value.start_offset,
            delivery_complete_count: value.delivery_complete_count,
            batches: value.state_batches.clone(),
            create_timestamp_ms: 0,
            write_timestamp_ms: 0,
        }
    }

    /// Kafka's `merge`: -1 start offset or leader epoch keep the current one. The update's
    /// delivery complete count replaces the current one: it is counted by the leader that
    /// wrote the update, for the start offset that update leaves.
    fn merged(&self, update: &ShareUpdateValue) -> Self {
        let start_offset = if update.start_offset == -1 {
            self.start_offset
        } else {
            update.start_offset
        };
        let leader_epoch = if update.leader_epoch == -1 {
            self.leader_epoch
        } else {
            update.leader_epoch
        };
        ShareGroupOffset {
            snapshot_epoch: self.snapshot_epoch,
            state_epoch: self.state_epoch,
            leader_epoch,
            start_offset,
            delivery_complete_count: update.delivery_complete_count,
            batches: combine_state_batches(&self.batches, &update.state_batches, start_offset),
            create_timestamp_ms: self.create_timestamp_ms,
            write_timestamp_ms: self.write_timestamp_ms,
        }
    }

    fn snapshot_value(&self) -> ShareSnapshotValue {
        ShareSnapshotValue {
            snapshot_epoch: self.snapshot_epoch,
            state_epoch: self.state_epoch,
            leader_epoch: self.leader_epoch,
            start_offset: self.start_offset,
            delivery_complete_count: self.delivery_complete_count,
            create_timestamp_ms: self.create_timestamp_ms,
            write_timestamp_ms: self.write_timestamp_ms,
            state_batches: self.batches.clone(),
        }
    }
}

/// What a write turns into: the request, or for a read that moves the leader epoch, the
/// current state under the new epoch with no batches.
struct StateWrite<'a> {
    start_offset: i64,
    leader_epoch: Option<i32>,
    delivery_complete_count: i32,
    batches: &'a [StateBatch],
}

#[derive(Debug)]
pub struct ShareCoordinatorShard {
    settings: ShareCoordinatorSettings,
    states: BTreeMap<SharePartitionKey, ShareGroupOffset>,
    /// The highest leader epoch seen per share-partition, from its records: writes and
    /// reads from an older leader are fenced against it.
    leader_epochs: HashMap<SharePartitionKey, i32>,
    /// The highest state epoch seen per share-partition, from its snapshots.
    state_epochs: HashMap<SharePartitionKey, i32>,
    /// Update records replayed since the last snapshot that reset the count.
    updates_since_snapshot: HashMap<SharePartitionKey, usize>,
    redundant: RedundantOffsets,
    /// Each topic's partition count from the metadata image; None until the first image,
    /// when Kafka answers every request UNKNOWN_TOPIC_OR_PARTITION.
    topics: Option<HashMap<Uuid, i32>>,
}

impl ShareCoordinatorShard {
    pub fn new(settings: ShareCoordinatorSettings) -> Self {
        ShareCoordinatorShard {
            settings,
            states: BTreeMap::new(),
            leader_epochs: HashMap::new(),
            state_epochs: HashMap::new(),
            updates_since_snapshot: HashMap::new(),
            redundant: RedundantOffsets::default(),
            topics: None,
        }
    }

    pub fn settings(&self) -> &ShareCoordinatorSettings {
        &self.settings
    }

    /// The metadata image's topics (id to partition count), given at load and on every
    /// image change (Kafka's onLoaded / onMetadataUpdate).
    pub fn set_topics(&mut self, partition_counts: HashMap<Uuid, i32>) {
        self.topics = Some(partition_counts);
    }

    pub fn state(&self, key: &SharePartitionKey) -> Option<&ShareGroupOffset> {
        self.states.get(key)
    }

    pub fn leader_epoch(&self, key: &SharePartitionKey) -> Option<i32> {
        self.leader_epochs.get(key).copied()
    }

    pub fn state_epoch(&self, key: &SharePartitionKey) -> Option<i32> {
        self.state_epochs.get(key).copied()
    }

    pub fn keys(&self) -> impl Iterator<Item = &SharePartitionKey> {
        self.states.keys()
    }

    /// Applies one record written at `offset` of the shard's partition.
    pub fn replay(&mut self, offset: i64, record: &ShareRecord) {
        match record {
            ShareRecord::Snapshot { key, value } => self.replay_snapshot(offset, key, value),
            ShareRecord::Update { key, value } => self.replay_update(key, value),
            ShareRecord::Tombstone {
                key,
                kind: RecordKind::Snapshot,
            } => self.replay_tombstone(offset, key),
            // Kafka never writes one, and its replay could not apply it.
            ShareRecord::Tombstone {
                kind: RecordKind::Update,
                ..
            } => {}
        }
    }

    /// Decodes and applies one record of the partition while loading it: false for a record
    /// type this version does not know, which Kafka's loader skips; an error for a record that
    /// cannot be read, on which Kafka's load fails.
    pub fn replay_bytes(
        &mut self,
        offset: i64,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<bool, ShareRecordError> {
        match decode_record(key, value) {
            Ok(record) => {
                self.replay(offset, &record);
                Ok(true)
            }
            Err(error) if error.is_unknown_kind() => Ok(false),
            Err(error) => Err(error),
        }
    }

    fn replay_snapshot(
        &mut self,
        offset: i64,
        key: &SharePartitionKey,
        value: &ShareSnapshotValue,
    ) {
        raise(&mut self.leader_epochs, key, value.leader_epoch);
        raise(&mut self.state_epochs, key, value.state_epoch);
        self.states
            .insert(key.clone(), ShareGroupOffset::from_snapshot(value));
        // Only a snapshot that was due resets the count: one written for another reason
        // (initialization, a cold snapshot) leaves the next due snapshot where it was.
        if let Some(count) = self.updates_since_snapshot.get_mut(key) {
            if *count >= self.settings.snapshot_update_records_per_snapshot {
                *count = 0;
            }
        }
        self.redundant.on_snapshot(key, offset, false);
    }

    fn replay_update(&mut self, key: &SharePartitionKey, value: &ShareUpdateValue) {
        raise(&mut self.leader_epochs, key, value.leader_epoch);
        let merged = match self.states.get(key) {
            Some(current) => current.merged(value),
            None => ShareGroupOffset::from_update(value),
        };
        self.states.insert(key.clone(), merged);
        self.updates_since_snapshot
            .entry(key.clone())
            .and_modify(|count| *count += 1)
            .or_insert(1);
    }

    fn replay_tombstone(&mut self, offset: i64, key: &SharePartitionKey) {
        self.states.remove(key);
        self.leader_epochs.remove(key);
        self.state_epochs.remove(key);
        self.updates_since_snapshot.remove(key);
        self.redundant.on_snapshot(key, offset, true);
    }

    /// WriteShareGroupState for one share-partition (Kafka's `writeState`).
    pub fn write_state(
        &self,
        request: &WriteStateRequest,
        now_ms: i64,
    ) -> Outcome<WriteStateAnswer> {
        let key = request.key();
        if request.partition < 0 {
            return refuse(InvalidRequest::NegativePartitionId);
        }
        if request.leader_epoch < 0 {
            return refuse(InvalidRequest::NegativeLeaderEpoch);
        }
        if request.state_epoch < 0 {
            return refuse(InvalidRequest::NegativeStateEpoch);
        }
        let Some(current) = self.states.get(&key) else {
            return refuse(InvalidRequest::WriteUninitialized);
        };
        if self
            .leader_epoch(&key)
            .is_some_and(|known| known > request.leader_epoch)
        {
            return Outcome::answer(Err(ShareStateError::FencedLeaderEpoch));
        }
        if self
            .state_epoch(&key)
            .is_some_and(|known| known > request.state_epoch)
        {
            return Outcome::answer(Err(ShareStateError::FencedStateEpoch));
        }
        if let Err(error) = self.check_topic(&key) {
            return Outcome::answer(Err(error));
        }
        // A write keeps the leader epoch the state has: only a read moves it.
        let write = StateWrite {
            start_offset: request.start_offset,
            leader_epoch: None,
            delivery_complete_count: request.delivery_complete_count,
            batches: &request.batches,
        };
        Outcome {
            records: vec![self.state_record(&key, current, &write, now_ms)],
            answer: Ok(()),
        }
    }

    /// ReadShareGroupState for one share-partition (Kafka's
    /// `readStateAndMaybeUpdateLeaderEpoch`): a read from a newer leader also records its
    /// epoch, so that writes from the older one are fenced from then on.
    pub fn read_state(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Outcome<ReadStateAnswer> {
        if key.partition < 0 {
            return refuse(InvalidRequest::NegativePartitionId);
        }
        if leader_epoch < 0 {
            return refuse(InvalidRequest::NegativeLeaderEpoch);
        }
        let Some(current) = self.states.get(key) else {
            return refuse(InvalidRequest::ReadUninitialized);
        };
        let known_epoch = self.leader_epoch(key);
        if known_epoch.is_some_and(|known| known > leader_epoch) {
            return Outcome::answer(Err(ShareStateError::FencedLeaderEpoch));
        }
        if let Err(error) = self.check_topic(key) {
            return Outcome::answer(Err(error));
        }
        let mut state = PersistedState {
            state_epoch: current.state_epoch,
            leader_epoch: current.leader_epoch,
            start_offset: current.start_offset,
            batches: current.batches.clone(),
        };
        if known_epoch == Some(leader_epoch) {
            return Outcome::answer(Ok(state));
        }
        let write = StateWrite {
            start_offset: current.start_offset,
            leader_epoch: Some(leader_epoch),
            delivery_complete_count: current.delivery_complete_count,
            batches: &[],
        };
        let record = self.state_record(key, current, &write, now_ms);
        state.leader_epoch = leader_epoch;
        Outcome {
            records: vec![record],
            answer: Ok(state),
        }
    }

    /// ReadShareGroupStateSummary for one share-partition: no leader-epoch fencing, and the
    /// PartitionFactory defaults for a share-partition with no state.
    pub fn read_state_summary(&self, key: &SharePartitionKey) -> ReadStateSummaryAnswer {
        if key.partition < 0 {
            return Err(InvalidRequest::NegativePartitionId.into());
        }
        self.check_topic(key)?;
        Ok(match self.states.get(key) {
            Some(state) => StateSummary {
                state_epoch: state.state_epoch,
                leader_epoch: state.leader_epoch,
                start_offset: state.start_offset,
                delivery_complete_count: state.delivery_complete_count,
            },
            None => StateSummary {
                state_epoch: DEFAULT_STATE_EPOCH,
                leader_epoch: DEFAULT_LEADER_EPOCH,
                start_offset: UNINITIALIZED_START_OFFSET,
                delivery_complete_count: UNKNOWN_DELIVERY_COMPLETE_COUNT,
            },
        })
    }

    /// InitializeShareGroupState for one share-partition: a fresh snapshot at `start_offset`
    /// (-1: to be decided by the share-partition leader) under `state_epoch`, whatever state
    /// there was before.
    pub fn initialize_state(
        &self,
        key: &SharePartitionKey,
        state_epoch: i32,
        start_offset: i64,
        now_ms: i64,
    ) -> Outcome<InitializeStateAnswer> {
        if key.partition < 0 {
            return refuse(InvalidRequest::NegativePartitionId);
        }
        if state_epoch < 0 {
            return refuse(InvalidRequest::NegativeStateEpoch);
        }
        if self
            .state_epoch(key)
            .is_some_and(|known| known > state_epoch)
        {
            return Outcome::answer(Err(ShareStateError::FencedStateEpoch));
        }
        if let Err(error) = self.check_topic(key) {
            return Outcome::answer(Err(error));
        }
        if key.group_id.len() > GROUP_ID_BYTES_MAX {
            // Kafka fails the same way, when its runtime serializes the snapshot.
            return Outcome::answer(Err(ShareStateError::UnknownServerError(
                ShareOperation::InitializeState
                    .failure_message("'groupId' field is too long to be serialized"),
            )));
        }
        let snapshot_epoch = self
            .states
            .get(key)
            .map_or(0, |state| state.snapshot_epoch.wrapping_add(1));
        // A known start offset starts the count of completed deliveries at zero; an unknown
        // one leaves it unknown too (KIP-1226).
        let delivery_complete_count = if start_offset == UNINITIALIZED_START_OFFSET {
            UNKNOWN_DELIVERY_COMPLETE_COUNT
        } else {
            0
        };
        let value = ShareSnapshotValue {
            snapshot_epoch,
            state_epoch,
            leader_epoch: INITIAL_LEADER_EPOCH,
            start_offset,
            delivery_complete_count,
            create_timestamp_ms: now_ms,
            write_timestamp_ms: now_ms,
            state_batches: Vec::new(),
        };
        Outcome {
            records: vec![ShareRecord::Snapshot {
                key: key.clone(),
                value,
            }],
            answer: Ok(()),
        }
    }

    /// DeleteShareGroupState for one share-partition: a tombstone, or nothing when there is
    /// no state.
    pub fn delete_state(&self, key: &SharePartitionKey) -> Outcome<DeleteStateAnswer> {
        if key.partition < 0 {
            return refuse(InvalidRequest::NegativePartitionId);
        }
        if let Err(error) = self.check_topic(key) {
            return Outcome::answer(Err(error));
        }
        if !self.states.contains_key(key) {
            return Outcome::answer(Ok(()));
        }
        Outcome {
            records: vec![ShareRecord::tombstone(key.clone())],
            answer: Ok(()),
        }
    }

    /// Kafka's `snapshotColdPartitions`, run every `cold_partition_snapshot_interval_ms`:
    /// share-partitions whose last snapshot is at least that old get a new one, so that the
    /// records before it become redundant and can be pruned. When every share-partition's
    /// last snapshot is already such a rewrite, nothing is written: nothing changed.
    pub fn snapshot_cold_partitions(&self, now_ms: i64) -> Vec<ShareRecord> {
        let rewritten = self
            .states
            .values()
            .filter(|state| state.create_timestamp_ms != state.write_timestamp_ms)
            .count();
        if rewritten == self.states.len() {
            return Vec::new();
        }
        let interval_ms =
            i64::try_from(self.settings.cold_partition_snapshot_interval_ms).unwrap_or(i64::MAX);
        self.states
            .iter()
            .filter(|(_, state)| now_ms.saturating_sub(state.write_timestamp_ms) >= interval_ms)
            .map(|(key, state)| {
                let mut value = state.snapshot_value();
                value.snapshot_epoch = state.snapshot_epoch.wrapping_add(1);
                value.write_timestamp_ms = now_ms;
                ShareRecord::Snapshot {
                    key: key.clone(),
                    value,
                }
            })
            .collect()
    }

    /// The offset below which every record of the shard's partition is superseded, for
    /// DeleteRecords (Kafka's `lastRedundantOffset`); None when there is nothing to prune.
    pub fn last_redundant_offset(&self) -> Option<i64> {
        self.redundant.last_redundant_offset()
    }

    /// Tombstones for every share-partition of a deleted topic (Kafka's
    /// `maybeCleanupShareState`).
    pub fn cleanup_deleted_topics(&self, deleted: &[Uuid]) -> Vec<ShareRecord> {
        if deleted.is_empty() {
            return Vec::new();
        }
        let deleted: HashSet<&Uuid> = deleted.iter().collect();
        self.states
            .keys()
            .filter(|key| deleted.contains(&key.topic_id))
            .map(|key| ShareRecord::tombstone(key.clone()))
            .collect()
    }

    fn check_topic(&self, key: &SharePartitionKey) -> Result<(), ShareStateError> {
        let Some(topics) = &self.topics else {
            return Err(ShareStateError::UnknownTopicOrPartition);
        };
        match topics.get(&key.topic_id) {
            Some(&count) if key.partition < count => Ok(()),
            _ => Err(ShareStateError::UnknownTopicOrPartition),
        }
    }

    /// Kafka's `generateShareStateRecord`: an update record, or a full snapshot once
    /// `snapshot_update_records_per_snapshot` updates have been written since the last one.
    /// The start offset only moves forward. The delivery complete count belongs to the start
    /// offset it was counted from: a write behind the current start offset keeps the current
    /// count, one at it keeps the larger. The write's batches are combined among themselves
    /// for an update and with the current state for a snapshot.
    fn state_record(
        &self,
        key: &SharePartitionKey,
        current: &ShareGroupOffset,
        write: &StateWrite<'_>,
        now_ms: i64,
    ) -> ShareRecord {
        let leader_epoch = write.leader_epoch.unwrap_or(current.leader_epoch);
        let start_offset = write.start_offset.max(current.start_offset);
        let delivery_complete_count = match write.start_offset.cmp(&current.start_offset) {
            Ordering::Equal => write
                .delivery_complete_count
                .max(current.delivery_complete_count),
            Ordering::Less => current.delivery_complete_count,
            Ordering::Greater => write.delivery_complete_count,
        };
        let updates = self.updates_since_snapshot.get(key).copied().unwrap_or(0);
        if updates >= self.settings.snapshot_update_records_per_snapshot {
            let value = ShareSnapshotValue {
                snapshot_epoch: current.snapshot_epoch.wrapping_add(1),
                state_epoch: current.state_epoch,
                leader_epoch,
                start_offset,
                delivery_complete_count,
                create_timestamp_ms: now_ms,
                write_timestamp_ms: now_ms,
                state_batches: combine_state_batches(&current.batches, write.batches, start_offset),
            };
            return ShareRecord::Snapshot {
                key: key.clone(),
                value,
            };
        }
        let value = ShareUpdateValue {
            snapshot_epoch: current.snapshot_epoch,
            leader_epoch,
            start_offset,
            delivery_complete_count,
            state_batches: combine_state_batches(&[], write.batches, start_offset),
        };
        ShareRecord::Update {
            key: key.clone(),
            value,
        }
    }
}

impl From<InvalidRequest> for ShareStateError {
    fn from(reason: InvalidRequest) -> Self {
        ShareStateError::InvalidRequest(reason)
    }
}

fn refuse<T>(reason: InvalidRequest) -> Outcome<Result<T, ShareStateError>> {
    Outcome::answer(Err(reason.into()))
}

/// Epochs only move forward: an older record replayed later does not lower them.
fn raise(epochs: &mut HashMap<SharePartitionKey, i32>, key: &SharePartitionKey, epoch: i32) {
    epochs
        .entry(key.clone())
        .and_modify(|known| *known = (*known).max(epoch))
        .or_insert(epoch);
}
