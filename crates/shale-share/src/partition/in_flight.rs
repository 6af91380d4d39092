//! The state of in-flight records (Kafka's RecordState, InFlightState and InFlightBatch): a
//! batch keeps one state for all its offsets until an operation touches only some of them, and
//! from then on one state per offset.

use std::collections::BTreeMap;

use crate::state::DeliveryState;

/// Kafka's RecordState.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordState {
    Available,
    Acquired,
    Acknowledged,
    Archived,
}

impl RecordState {
    pub fn is_terminal(self) -> bool {
        matches!(self, RecordState::Acknowledged | RecordState::Archived)
    }

    /// Kafka's validateTransition: available only becomes acquired, acquired becomes anything
    /// else, terminal states stay.
    fn transition(self, to: RecordState) -> Option<RecordState> {
        if self == to || self.is_terminal() {
            return None;
        }
        if self == RecordState::Available && to != RecordState::Acquired {
            return None;
        }
        Some(to)
    }

    /// The state as persisted: a lock is not persisted, so acquired records are available.
    pub(crate) fn persisted(self) -> DeliveryState {
        match self {
            RecordState::Available | RecordState::Acquired => DeliveryState::Available,
            RecordState::Acknowledged => DeliveryState::Acknowledged,
            RecordState::Archived => DeliveryState::Archived,
        }
    }

    pub(crate) fn from_persisted(state: DeliveryState) -> RecordState {
        match state {
            DeliveryState::Available => RecordState::Available,
            DeliveryState::Acknowledged => RecordState::Acknowledged,
            DeliveryState::Archived => RecordState::Archived,
        }
    }
}

/// What a state change does to the delivery count (Kafka's DeliveryCountOps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeliveryCountOps {
    Increase,
    Decrease,
    NoOp,
}

/// What a state reverts to when its write fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rollback {
    pub write_id: u64,
    pub state: RecordState,
    pub delivery_count: i32,
    pub member_id: String,
    pub max_delivery_count: i32,
}

/// The state of one offset, or of a whole batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InFlightState {
    pub state: RecordState,
    pub delivery_count: i32,
    /// Empty unless acquired.
    pub member_id: String,
    /// When the acquisition lock runs out; the lock of a record whose write is pending still
    /// counts, for a failed write reverts to acquired only while the lock holds.
    pub lock_deadline_ms: Option<u64>,
    /// Set while a change waits for its state write.
    pub rollback: Option<Rollback>,
    /// Archived for good (the log start moved past it, or its transaction aborted): no failed
    /// write brings it back.
    pub terminal: bool,
}

impl InFlightState {
    pub fn new(state: RecordState, delivery_count: i32, member_id: &str) -> Self {
        InFlightState {
            state,
            delivery_count,
            member_id: member_id.to_string(),
            lock_deadline_ms: None,
            rollback: None,
            terminal: false,
        }
    }

    pub fn acquired(member_id: &str, delivery_count: i32, lock_deadline_ms: u64) -> Self {
        InFlightState {
            lock_deadline_ms: Some(lock_deadline_ms),
            ..InFlightState::new(RecordState::Acquired, delivery_count, member_id)
        }
    }

    pub fn has_ongoing_transition(&self) -> bool {
        self.rollback.is_some()
    }

    pub fn is_available(&self) -> bool {
        self.state == RecordState::Available && !self.has_ongoing_transition()
    }

    pub fn lock_expired(&self, now_ms: u64) -> bool {
        self.lock_deadline_ms
            .is_some_and(|deadline| deadline <= now_ms)
    }

    /// Kafka's tryUpdateState: a record that would become available again after its last
    /// allowed delivery is archived instead, except when the delivery is taken back.
    pub fn try_update(
        &mut self,
        to: RecordState,
        ops: DeliveryCountOps,
        max_delivery_count: i32,
        member_id: &str,
    ) -> bool {
        if self.has_ongoing_transition() {
            return false;
        }
        let to = if to == RecordState::Available
            && ops != DeliveryCountOps::Decrease
            && self.delivery_count >= max_delivery_count
        {
            RecordState::Archived
        } else {
            to
        };
        let Some(to) = self.state.transition(to) else {
            return false;
        };
        self.state = to;
        if to != RecordState::Archived {
            self.delivery_count = match ops {
                DeliveryCountOps::Increase => self.delivery_count.saturating_add(1),
                DeliveryCountOps::Decrease => self.delivery_count.saturating_sub(1),
                DeliveryCountOps::NoOp => self.delivery_count,
            };
        }
        self.member_id = member_id.to_string();
        true
    }

    /// A change that holds only once `write_id` is written.
    pub fn start_transition(
        &mut self,
        write_id: u64,
        to: RecordState,
        ops: DeliveryCountOps,
        max_delivery_count: i32,
        member_id: &str,
    ) -> bool {
        let before = Rollback {
            write_id,
            state: self.state,
            delivery_count: self.delivery_count,
            member_id: self.member_id.clone(),
            max_delivery_count,
        };
        if !self.try_update(to, ops, max_delivery_count, member_id) {
            return false;
        }
        self.rollback = Some(before);
        true
    }

    /// Kafka's completeStateTransition. A failed change reverts to what it was, unless the lock
    /// ran out meanwhile: then the record is offered again, or archived at its last delivery.
    /// Kafka keeps the delivery count, reasoning that only acquisition changes it; a member's
    /// release takes a delivery back, though, and kept after a failed write it would let the
    /// record be delivered once more than the limit (or hand out a count of 0), so the count
    /// reverts too.
    pub fn complete_transition(&mut self, committed: bool, now_ms: u64) {
        if committed || self.terminal {
            self.lock_deadline_ms = None;
            self.rollback = None;
            return;
        }
        let Some(before) = self.rollback.take() else {
            return;
        };
        self.delivery_count = before.delivery_count;
        if self.lock_expired(now_ms) {
            self.state = if before.delivery_count >= before.max_delivery_count {
                RecordState::Archived
            } else {
                RecordState::Available
            };
            self.member_id.clear();
            self.lock_deadline_ms = None;
        } else {
            self.state = before.state;
            self.member_id = before.member_id;
        }
    }

    /// Kafka's archive: for good, whatever the state was.
    pub fn archive(&mut self) {
        self.terminal = true;
        self.state = RecordState::Archived;
        self.member_id.clear();
        self.lock_deadline_ms = None;
    }

    pub fn pending_write(&self) -> Option<u64> {
        self.rollback.as_ref().map(|rollback| rollback.write_id)
    }
}

/// The states of one cached batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchStates {
    Whole(InFlightState),
    PerOffset(BTreeMap<i64, InFlightState>),
}

/// One cached batch: the range acquired together, or read back from the persister.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InFlightBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub states: BatchStates,
}

impl InFlightBatch {
    pub fn whole(first_offset: i64, last_offset: i64, state: InFlightState) -> Self {
        InFlightBatch {
            first_offset,
            last_offset,
            states: BatchStates::Whole(state),
        }
    }

    pub fn whole_state(&self) -> Option<&InFlightState> {
        match &self.states {
            BatchStates::Whole(state) => Some(state),
            BatchStates::PerOffset(_) => None,
        }
    }

    pub fn is_per_offset(&self) -> bool {
        matches!(self.states, BatchStates::PerOffset(_))
    }

    /// Kafka's maybeInitializeOffsetStateUpdate(): every offset starts from the batch's state,
    /// its lock included.
    pub fn split(&mut self) {
        if let BatchStates::Whole(state) = &self.states {
            let offsets = (self.first_offset..=self.last_offset)
                .map(|offset| (offset, state.clone()))
                .collect();
            self.states = BatchStates::PerOffset(offsets);
        }
    }

    /// Kafka's maybeInitializeOffsetStateUpdate(target, delay) of record-limit acquisition: the
    /// offsets up to `target` keep the acquired state, the rest are available and not counted
    /// as delivered.
    pub fn split_acquired_up_to(&mut self, target_offset: i64) {
        if let BatchStates::Whole(state) = &self.states {
            let offsets = (self.first_offset..=self.last_offset)
                .map(|offset| {
                    let offset_state = if offset <= target_offset {
                        state.clone()
                    } else {
                        InFlightState::new(
                            RecordState::Available,
                            state.delivery_count.saturating_sub(1),
                            "",
                        )
                    };
                    (offset, offset_state)
                })
                .collect();
            self.states = BatchStates::PerOffset(offsets);
        }
    }

    /// Every state of the batch with the offsets it covers.
    pub fn states_mut(&mut self) -> Vec<(i64, i64, &mut InFlightState)> {
        let (first, last) = (self.first_offset, self.last_offset);
        match &mut self.states {
            BatchStates::Whole(state) => vec![(first, last, state)],
            BatchStates::PerOffset(offsets) => offsets
                .iter_mut()
                .map(|(offset, state)| (*offset, *offset, state))
                .collect(),
        }
    }

    pub fn states(&self) -> Vec<(i64, i64, &InFlightState)> {
        match &self.states {
            BatchStates::Whole(state) => vec![(self.first_offset, self.last_offset, state)],
            BatchStates::PerOffset(offsets) => offsets
                .iter()
                .map(|(offset, state)| (*offset, *offset, state))
                .collect(),
        }
    }

    /// The state that holds `offset`, for a whole batch the batch's.
    pub fn state_at(&self, offset: i64) -> Option<&InFlightState> {
        match &self.states {
            BatchStates::Whole(state) => Some(state),
            BatchStates::PerOffset(offsets) => offsets.get(&offset),
        }
    }
}
