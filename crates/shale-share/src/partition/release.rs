//! A member's records given back when it leaves or its share session closes (Kafka's
//! releaseAcquiredRecords): they are offered again with the delivery count they were handed
//! out with (Kafka 4.4 leaves the count as it is), or archived at the delivery count limit
//! or below the start offset.

use super::acknowledge::state_batch;
use super::in_flight::{BatchStates, DeliveryCountOps, RecordState};
use super::types::StateWrite;
use super::writes::WriteKind;
use super::SharePartition;

impl SharePartition {
    /// Releases every record `member_id` holds. The change waits for the returned write.
    pub fn release_acquired_records(&mut self, member_id: &str, now_ms: u64) -> Option<StateWrite> {
        let write_id = self.reserve_write_id();
        let start_offset = self.start_offset;
        let max_delivery_count = self.max_delivery_count();
        let mut changed = Vec::new();
        let mut failed = false;
        'batches: for cached in self.cached.values_mut() {
            if let Some(state) = cached.whole_state() {
                let start_within =
                    cached.first_offset < start_offset && cached.last_offset >= start_offset;
                if state.state == RecordState::Acquired
                    && state.member_id == member_id
                    && start_within
                {
                    cached.split();
                }
            }
            let (first, last) = (cached.first_offset, cached.last_offset);
            match &mut cached.states {
                BatchStates::PerOffset(offsets) => {
                    for (offset, state) in offsets.iter_mut() {
                        // Kafka stops at the first offset of another member and leaves the rest
                        // of the batch to its locks.
                        if state.member_id != member_id && !state.member_id.is_empty() {
                            continue 'batches;
                        }
                        if state.state != RecordState::Acquired {
                            continue;
                        }
                        let to = if *offset < start_offset {
                            RecordState::Archived
                        } else {
                            RecordState::Available
                        };
                        if !state.start_transition(
                            write_id,
                            to,
                            DeliveryCountOps::NoOp,
                            max_delivery_count,
                            "",
                        ) {
                            failed = true;
                            break 'batches;
                        }
                        changed.push(state_batch(*offset, *offset, state));
                    }
                }
                BatchStates::Whole(state) => {
                    if state.member_id != member_id || state.state != RecordState::Acquired {
                        continue;
                    }
                    let to = if last < start_offset {
                        RecordState::Archived
                    } else {
                        RecordState::Available
                    };
                    if !state.start_transition(
                        write_id,
                        to,
                        DeliveryCountOps::NoOp,
                        max_delivery_count,
                        "",
                    ) {
                        failed = true;
                        break;
                    }
                    changed.push(state_batch(first, last, state));
                }
            }
        }
        if failed {
            self.roll_back(write_id, now_ms);
            return None;
        }
        if changed.is_empty() {
            return None;
        }
        Some(self.issue_write(write_id, WriteKind::Transition, changed))
    }
}
