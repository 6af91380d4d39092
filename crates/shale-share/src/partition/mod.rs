//! A share-partition on its leader (Kafka's SharePartition), as a pure state machine: time is
//! passed in, and every change the share coordinator must persist is handed back as a
//! [`StateWrite`] whose outcome the broker reports with [`SharePartition::complete_write`].
//!
//! The share-partition keeps the records between its start offset (everything before is done)
//! and its end offset (the last offset ever acquired) in `cached`, by the batches they were
//! acquired in: available, acquired by one member under a lock, acknowledged or archived, each
//! with its delivery count. Acknowledgements and releases change the state at once but hold only
//! once written; a failed write reverts them (Kafka's rollbackOrProcessStateUpdates). Lock
//! expiries hold whatever their write's outcome, as in Kafka.

mod aborted;
mod acknowledge;
mod acquire;
mod error;
mod in_flight;
mod offsets;
mod release;
mod timeout;
mod types;
mod writes;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use acknowledge::validate_acknowledgement_batches;
pub use error::SharePartitionError;
pub use in_flight::RecordState;
pub use types::{
    AckBatch, AckType, AcquireMode, AcquiredRecords, LogBatch, LogRead, ShareAcquiredRecords,
    SharePartitionConfig, StateWrite, WriteCompletion,
};

use crate::state::PersistedState;
use in_flight::{InFlightBatch, InFlightState};
use writes::PendingWrite;

/// Kafka's MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT: records delivered this often (or half the
/// delivery count limit, if more) are handed out in ever smaller batches, so one bad record
/// does not take a whole batch to its last delivery.
const MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT: i32 = 2;

/// Offsets after a persisted state's first gap that were neither acquired nor persisted by the
/// previous leader and must still be fetched (Kafka's GapWindow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct GapWindow {
    /// The end offset when the state was read: once the end offset moves past it, every gap
    /// left is a real one (no record there).
    end_offset: i64,
    gap_start_offset: i64,
}

/// One offset's state, for describing a share-partition and for tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSnapshot {
    pub state: RecordState,
    pub delivery_count: i16,
    /// Empty unless acquired.
    pub member_id: String,
    pub lock_deadline_ms: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct SharePartition {
    config: SharePartitionConfig,
    cached: BTreeMap<i64, InFlightBatch>,
    start_offset: i64,
    end_offset: i64,
    gap_window: Option<GapWindow>,
    state_epoch: i32,
    leader_epoch: i32,
    next_write_id: u64,
    pending: BTreeMap<u64, PendingWrite>,
}

impl SharePartition {
    /// A share-partition with no persisted state, starting at `start_offset` (the offset
    /// `share.auto.offset.reset` resolved to).
    pub fn new(config: SharePartitionConfig, start_offset: i64) -> Self {
        SharePartition {
            config,
            cached: BTreeMap::new(),
            start_offset,
            end_offset: start_offset,
            gap_window: None,
            state_epoch: 0,
            leader_epoch: 0,
            next_write_id: 1,
            pending: BTreeMap::new(),
        }
    }

    /// Kafka's maybeInitialize from a ReadShareGroupState answer. Persisted batches are in
    /// offset order and at or above the start offset; offsets between them that the previous
    /// leader never persisted are fetched again before anything after the last batch.
    pub fn from_persisted(
        config: SharePartitionConfig,
        persisted: PersistedState,
    ) -> Result<Self, SharePartitionError> {
        if persisted.start_offset < 0 {
            return Err(SharePartitionError::StartOffsetUnknown);
        }
        let mut partition = SharePartition::new(config, persisted.start_offset);
        partition.state_epoch = persisted.state_epoch;
        partition.leader_epoch = persisted.leader_epoch;
        let start_offset = persisted.start_offset;
        let mut gap_start_offset = None;
        let mut previous_last_offset = start_offset - 1;
        for batch in &persisted.batches {
            if batch.first_offset < start_offset {
                return Err(SharePartitionError::InvalidPersistedState(format!(
                    "Invalid state batch found for the share partition. The base offset: {} is less than the start offset: {}.",
                    batch.first_offset, start_offset
                )));
            }
            if batch.first_offset > batch.last_offset || batch.first_offset <= previous_last_offset
            {
                return Err(SharePartitionError::InvalidPersistedState(format!(
                    "Invalid state batch found for the share partition: {}-{} is empty or overlaps the batch before it.",
                    batch.first_offset, batch.last_offset
                )));
            }
            if gap_start_offset.is_none() && batch.first_offset > previous_last_offset + 1 {
                gap_start_offset = Some(previous_last_offset + 1);
            }
            previous_last_offset = batch.last_offset;
            let state = RecordState::from_persisted(batch.delivery_state);
            let in_flight = InFlightBatch::whole(
                batch.first_offset,
                batch.last_offset,
                InFlightState::new(state, i32::from(batch.delivery_count), ""),
            );
            partition.cached.insert(batch.first_offset, in_flight);
        }
        if let Some(last) = partition.cached.values().next_back() {
            partition.end_offset = last.last_offset;
            partition.gap_window = gap_start_offset.map(|gap_start_offset| GapWindow {
                end_offset: partition.end_offset,
                gap_start_offset,
            });
            partition.maybe_update_cached_state_and_offsets();
        }
        Ok(partition)
    }

    /// The leader epoch sent with every state write: the partition's current one.
    pub fn set_leader_epoch(&mut self, leader_epoch: i32) {
        self.leader_epoch = leader_epoch;
    }

    /// Takes effect for the next acquisition, acknowledgement or expiry.
    pub fn set_config(&mut self, config: SharePartitionConfig) {
        self.config = config;
    }

    pub fn config(&self) -> &SharePartitionConfig {
        &self.config
    }

    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }

    pub fn state_epoch(&self) -> i32 {
        self.state_epoch
    }

    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    /// KIP-1226's delivery complete count: acknowledged and archived records at or above the
    /// start offset. Kafka keeps it as a running count; counted here from the cache, it cannot
    /// drift from the states (Kafka's misses a release whose failed write archives).
    pub fn delivery_complete_count(&self) -> i64 {
        self.cached
            .range(..=self.end_offset)
            .flat_map(|(_, batch)| batch.states())
            .filter(|(_, _, state)| state.state.is_terminal())
            .map(|(first, last, _)| {
                let from = first.max(self.start_offset);
                if last >= from {
                    last - from + 1
                } else {
                    0
                }
            })
            .sum()
    }

    /// How many batches are cached (Kafka's in-flight batch count).
    pub fn in_flight_batch_count(&self) -> usize {
        self.cached.len()
    }

    /// Kafka's numInFlightRecords: everything between the start and end offsets.
    pub fn in_flight_record_count(&self) -> i64 {
        if self.cached.is_empty() {
            0
        } else {
            self.end_offset - self.start_offset + 1
        }
    }

    /// `(start offset, delivery complete count)`, what DescribeShareGroupOffsets reports
    /// through the share coordinator.
    pub fn summary(&self) -> (i64, i64) {
        (self.start_offset, self.delivery_complete_count())
    }

    /// KIP-1226's lag: the records up to `high_watermark` that still await delivery.
    pub fn lag(&self, high_watermark: i64) -> i64 {
        (high_watermark - self.start_offset - self.delivery_complete_count()).max(0)
    }

    /// The state of `offset`, if it is cached.
    pub fn record_state(&self, offset: i64) -> Option<RecordSnapshot> {
        let (_, batch) = self.cached.range(..=offset).next_back()?;
        if offset > batch.last_offset {
            return None;
        }
        let state = batch.state_at(offset)?;
        Some(RecordSnapshot {
            state: state.state,
            delivery_count: clamp_delivery_count(state.delivery_count),
            member_id: state.member_id.clone(),
            lock_deadline_ms: state.lock_deadline_ms,
        })
    }

    /// Kafka's nextFetchOffset: the first available offset cached, a gap of the persisted
    /// state still to fetch, or the offset after the end offset.
    pub fn next_fetch_offset(&self) -> i64 {
        let Some(last_cached) = self.cached.values().next_back() else {
            return self.end_offset;
        };
        if self.start_offset > last_cached.last_offset {
            return self.end_offset;
        }
        let gap_window_active = self.gap_window_active();
        let mut gap_start_offset = self.gap_window.map_or(-1, |gap| gap.gap_start_offset);
        for (first_offset, batch) in &self.cached {
            if gap_window_active {
                if *first_offset > gap_start_offset {
                    return gap_start_offset;
                }
                gap_start_offset = gap_start_offset.max(batch.last_offset + 1);
            }
            if let Some((offset, _, _)) = batch
                .states()
                .into_iter()
                .find(|(_, _, state)| state.is_available())
            {
                return offset;
            }
        }
        self.end_offset + 1
    }

    /// Kafka's canAcquireRecords: records released before the end offset can always be
    /// acquired again; new ones only below `max_in_flight_records`.
    pub fn can_acquire_records(&self) -> bool {
        if self.next_fetch_offset() != self.end_offset + 1 {
            return true;
        }
        self.in_flight_record_count() < self.max_in_flight_records()
    }

    fn max_in_flight_records(&self) -> i64 {
        i64::try_from(self.config.max_in_flight_records).unwrap_or(i64::MAX)
    }

    fn max_delivery_count(&self) -> i32 {
        i32::from(self.config.delivery_count_limit)
    }

    fn throttle_records_delivery_limit(&self) -> i32 {
        let max = self.max_delivery_count();
        MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT.max((max + 1) / 2)
    }

    fn lock_deadline_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_add(self.config.record_lock_duration_ms)
    }

    fn gap_window_active(&self) -> bool {
        self.gap_window
            .is_some_and(|gap| gap.end_offset == self.end_offset)
    }
}

/// Delivery counts are bounded by `share.delivery.count.limit` (an i16), so the clamp only
/// matters for persisted counts a corrupt state might carry.
fn clamp_delivery_count(delivery_count: i32) -> i16 {
    i16::try_from(delivery_count).unwrap_or(if delivery_count < 0 { 0 } else { i16::MAX })
}
