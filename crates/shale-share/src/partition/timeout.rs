//! Acquisition locks running out (Kafka's releaseAcquisitionLockOnTimeout): the record is
//! offered again, or archived after its last allowed delivery or when the start offset moved
//! past it. Unlike an acknowledgement the change holds whether or not its write succeeds.

use super::acknowledge::state_batch;
use super::in_flight::{DeliveryCountOps, RecordState};
use super::types::StateWrite;
use super::writes::WriteKind;
use super::SharePartition;

impl SharePartition {
    /// Ends every lock whose deadline is at or before `now_ms`. A record whose change waits for
    /// a write keeps its lock until that write's outcome decides. A write returned means
    /// records changed: waiting share fetches may be answered now, as Kafka completes them on
    /// every expiry; the start offset moves once the write completes, whatever its outcome.
    pub fn expire_locks(&mut self, now_ms: u64) -> Option<StateWrite> {
        let start_offset = self.start_offset;
        let max_delivery_count = self.max_delivery_count();
        let mut changed = Vec::new();
        for cached in self.cached.values_mut() {
            if let Some(state) = cached.whole_state() {
                let start_within =
                    cached.first_offset < start_offset && cached.last_offset >= start_offset;
                if state.state == RecordState::Acquired
                    && state.lock_expired(now_ms)
                    && start_within
                {
                    cached.split();
                }
            }
            let last_of_batch = cached.last_offset;
            let per_offset = cached.is_per_offset();
            for (first, last, state) in cached.states_mut() {
                if state.state != RecordState::Acquired
                    || !state.lock_expired(now_ms)
                    || state.has_ongoing_transition()
                {
                    continue;
                }
                let below_start = if per_offset {
                    first < start_offset
                } else {
                    last_of_batch < start_offset
                };
                let to = if below_start {
                    RecordState::Archived
                } else {
                    RecordState::Available
                };
                if !state.try_update(to, DeliveryCountOps::NoOp, max_delivery_count, "") {
                    continue;
                }
                state.lock_deadline_ms = None;
                changed.push(state_batch(first, last, state));
            }
        }
        if changed.is_empty() {
            return None;
        }
        let write_id = self.reserve_write_id();
        Some(self.issue_write(write_id, WriteKind::LockExpiry, changed))
    }

    /// The earliest lock deadline still to act on, for the broker's timer.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.cached
            .values()
            .flat_map(|cached| cached.states())
            .filter(|(_, _, state)| {
                state.state == RecordState::Acquired && !state.has_ongoing_transition()
            })
            .filter_map(|(_, _, state)| state.lock_deadline_ms)
            .min()
    }
}
