//! The replication side of one hosted partition: the leader's follower tracking (when this
//! broker leads) and a signal that wakes acks=all producers when the high watermark moves or
//! leadership changes.

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::leader_state::{Assignment, LeaderState};

/// The high watermark and leader epoch, as seen by waiting producers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HighWatermarkSignal {
    pub high_watermark: i64,
    pub leader_epoch: i32,
    /// Whether this broker leads the partition at `leader_epoch`.
    pub is_leader: bool,
}

/// Per-partition replication state, owned by `Partition`.
pub struct PartitionReplication {
    leader: Mutex<Option<LeaderState>>,
    signal: watch::Sender<HighWatermarkSignal>,
}

impl std::fmt::Debug for PartitionReplication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionReplication")
            .field("signal", &*self.signal.borrow())
            .finish()
    }
}

/// What the metadata image says about one partition, for [`PartitionReplication::apply`].
#[derive(Clone, Debug)]
pub struct RoleUpdate {
    pub local_id: i32,
    pub leader_id: i32,
    pub assignment: Assignment,
    pub lag_time_max_ms: i64,
    /// KIP-966's strict min ISR: the topic's `min.insync.replicas` while the image has
    /// `eligible.leader.replicas.version` on, else 1 (the high watermark then follows the
    /// ISR alone, as before Kafka 4.1).
    pub min_insync_replicas: i32,
}

impl PartitionReplication {
    pub fn new(high_watermark: i64) -> PartitionReplication {
        PartitionReplication {
            leader: Mutex::new(None),
            signal: watch::channel(HighWatermarkSignal {
                high_watermark,
                leader_epoch: -1,
                is_leader: false,
            })
            .0,
        }
    }

    /// Applies the image: becomes leader at a new epoch (followers tracked from scratch),
    /// takes a committed ISR at the same epoch, or stops leading.
    pub fn apply(&self, update: RoleUpdate, epoch_start_offset: i64, now_ms: i64) {
        let is_leader = update.leader_id == update.local_id;
        let epoch = update.assignment.leader_epoch;
        let mut leader = self.leader.lock();
        match (&mut *leader, is_leader) {
            (Some(state), true) if state.leader_epoch() == epoch => {
                state.set_lag_time_max_ms(update.lag_time_max_ms);
                state.set_min_insync_replicas(update.min_insync_replicas);
                state.update_assignment(update.assignment, now_ms);
            }
            (_, true) => {
                let mut state = LeaderState::new(
                    update.local_id,
                    update.assignment,
                    epoch_start_offset,
                    update.lag_time_max_ms,
                    now_ms,
                );
                state.set_min_insync_replicas(update.min_insync_replicas);
                *leader = Some(state);
            }
            (_, false) => *leader = None,
        }
        drop(leader);
        self.signal.send_if_modified(|s| {
            let changed = s.leader_epoch != epoch || s.is_leader != is_leader;
            s.leader_epoch = epoch;
            s.is_leader = is_leader;
            changed
        });
    }

    /// Runs `f` on the leader state; `None` when this broker does not lead.
    pub fn with_leader<R>(&self, f: impl FnOnce(&mut LeaderState) -> R) -> Option<R> {
        self.leader.lock().as_mut().map(f)
    }

    /// The committed ISR size, `None` when not leading.
    pub fn isr_len(&self) -> Option<usize> {
        self.with_leader(|s| s.isr().len())
    }

    pub fn high_watermark_candidate(&self, leader_end_offset: i64) -> Option<i64> {
        self.with_leader(|s| s.high_watermark_candidate(leader_end_offset))
    }

    pub fn subscribe(&self) -> watch::Receiver<HighWatermarkSignal> {
        self.signal.subscribe()
    }

    /// Tells waiting producers the high watermark moved (it only moves forward here).
    pub fn publish_high_watermark(&self, high_watermark: i64) {
        self.signal.send_if_modified(|s| {
            let changed = high_watermark > s.high_watermark;
            s.high_watermark = s.high_watermark.max(high_watermark);
            changed
        });
    }

    /// A follower truncated below its high watermark: the signal follows it down.
    pub fn reset_high_watermark(&self, high_watermark: i64) {
        self.signal
            .send_modify(|s| s.high_watermark = high_watermark);
    }

    /// Marks a proposal as failed (controller refused or unreachable).
    pub fn isr_proposal_failed(&self) {
        self.with_leader(LeaderState::proposal_failed);
    }

    /// Applies the controller's answer to our proposal, if we still lead at its epoch.
    pub fn isr_proposal_committed(&self, assignment: Assignment, now_ms: i64) {
        self.with_leader(|s| {
            if s.leader_epoch() == assignment.leader_epoch {
                s.update_assignment(assignment, now_ms);
            }
        });
    }
}
