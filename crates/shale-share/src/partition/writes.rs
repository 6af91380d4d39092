//! State writes and their outcome (Kafka's rollbackOrProcessStateUpdates and the completion of
//! a lock expiry's write).

use crate::state::StateBatch;

use super::in_flight::RecordState;
use super::types::{StateWrite, WriteCompletion};
use super::SharePartition;

/// A write the broker has not reported on yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PendingWrite {
    pub kind: WriteKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteKind {
    /// Acknowledgements or a member's release: they hold only once written.
    Transition,
    /// Lock expiries: they hold whatever the outcome.
    LockExpiry,
}

impl SharePartition {
    pub(super) fn reserve_write_id(&mut self) -> u64 {
        let write_id = self.next_write_id;
        self.next_write_id = self.next_write_id.wrapping_add(1).max(1);
        write_id
    }

    pub(super) fn issue_write(
        &mut self,
        write_id: u64,
        kind: WriteKind,
        batches: Vec<StateBatch>,
    ) -> StateWrite {
        self.pending.insert(write_id, PendingWrite { kind });
        StateWrite {
            write_id,
            start_offset: self.start_offset,
            batches,
            state_epoch: self.state_epoch,
            leader_epoch: self.leader_epoch,
            delivery_complete_count: i32::try_from(self.delivery_complete_count())
                .unwrap_or(i32::MAX),
        }
    }

    /// The outcome of a [`StateWrite`]. A failed acknowledgement or release is reverted: the
    /// records are acquired by their member again, or offered again (archived at their last
    /// delivery) if the lock ran out meanwhile. An unknown `write_id` changes nothing.
    pub fn complete_write(&mut self, write_id: u64, ok: bool, now_ms: u64) -> WriteCompletion {
        let Some(pending) = self.pending.remove(&write_id) else {
            return WriteCompletion {
                records_available: false,
            };
        };
        let records_available = match pending.kind {
            WriteKind::LockExpiry => self.maybe_update_cached_state_and_offsets(),
            WriteKind::Transition if ok => {
                let released = self.complete_transitions(write_id, true, now_ms);
                let moved = self.maybe_update_cached_state_and_offsets();
                released || moved
            }
            WriteKind::Transition => {
                self.roll_back(write_id, now_ms);
                false
            }
        };
        WriteCompletion { records_available }
    }

    /// Ends every change waiting for `write_id`; true if any record is available after it.
    fn complete_transitions(&mut self, write_id: u64, committed: bool, now_ms: u64) -> bool {
        let mut any_available = false;
        for batch in self.cached.values_mut() {
            for (_, _, state) in batch.states_mut() {
                if state.pending_write() == Some(write_id) {
                    state.complete_transition(committed, now_ms);
                    any_available |= state.state == RecordState::Available;
                }
            }
        }
        any_available
    }

    /// Reverts the changes of `write_id`. A record offered again below the start offset (its
    /// lock ran out while the log start moved past it) is archived: Kafka's revert ignores the
    /// start offset, which would hand out a record the log no longer holds.
    pub(super) fn roll_back(&mut self, write_id: u64, now_ms: u64) {
        let start_offset = self.start_offset;
        for batch in self.cached.values_mut() {
            let mut straddles_start = false;
            for (first, last, state) in batch.states_mut() {
                if state.pending_write() != Some(write_id) {
                    continue;
                }
                state.complete_transition(false, now_ms);
                if state.state == RecordState::Available && first < start_offset {
                    if last < start_offset {
                        state.archive();
                    } else {
                        straddles_start = true;
                    }
                }
            }
            if straddles_start {
                batch.split();
                for (offset, _, state) in batch.states_mut() {
                    if offset < start_offset && state.state == RecordState::Available {
                        state.archive();
                    }
                }
            }
        }
    }
}
