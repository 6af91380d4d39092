//! Consumer groups of the next-generation protocol (KIP-848), beside the classic groups of the
//! same shard.
//!
//! Unlike classic groups, a consumer group changes only through its records: handlers build
//! the records of a change on a draft copy of the group, and `replay` applies them
//! once they were written (the partition task serves one request at a time, so the next request
//! sees them). Only the conversions between protocols change the shard before their records
//! are written, and they are undone when the append fails (`rollback.rs`). The records are Kafka's, so a group loads from `__consumer_offsets` with its
//! members, epochs and assignments. Timers (session and rebalance timeouts) are not stored:
//! they restart when the partition is loaded.
//!
//! Committed offsets of a consumer group are kept, like every group's, in the classic group map
//! (an entry with no members and no protocol holds them, as Kafka's OffsetMetadataManager
//! holds offsets apart from groups); that entry is never listed or described as a classic group.

mod admin;
mod admission;
mod classic_join;
mod classic_members;
mod downgrade;
mod draft;
mod expiry;
pub(crate) mod group;
mod heartbeat;
mod leave;
mod offsets;
mod reconcile;
mod replay;
mod rollback;
mod subscriptions;
mod topics;
mod upgrade;

use std::sync::Arc;

pub(crate) use admin::{failed_consumer_description as failed_description, group_tombstones};
pub use group::{ConsumerGroupState, MemberState};
pub(crate) use rollback::Conversion;
pub(crate) use subscriptions::metadata_hash;

use super::timers::TimerKey;
use super::CoordinatorShard;
use crate::assignor::PartitionAssignor;
use crate::config::{GroupConfigSource, NoGroupOverrides};

/// Finds a server assignor by its Kafka name (`uniform`, `range`). The broker passes
/// `shale_group::assignor::assignor_named` here.
pub type AssignorLookup = Arc<dyn Fn(&str) -> Option<&'static dyn PartitionAssignor> + Send + Sync>;

/// What the consumer protocol needs besides [`crate::GroupConfig`].
#[derive(Clone)]
pub struct ConsumerSettings {
    pub assignors: AssignorLookup,
    /// Per-group `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms`.
    pub group_configs: Arc<dyn GroupConfigSource>,
}

impl Default for ConsumerSettings {
    /// No assignor: a consumer group heartbeat that needs one is refused with
    /// UNSUPPORTED_ASSIGNOR naming it.
    fn default() -> Self {
        Self {
            assignors: Arc::new(|_| None),
            group_configs: Arc::new(NoGroupOverrides),
        }
    }
}

impl std::fmt::Debug for ConsumerSettings {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ConsumerSettings")
            .finish_non_exhaustive()
    }
}

/// A timer change a handler decided, made only when its request succeeds.
pub(crate) enum TimerAction {
    Schedule(TimerKey, i64),
    Cancel(TimerKey),
}

impl CoordinatorShard {
    pub(crate) fn apply_timer_actions(&mut self, actions: Vec<TimerAction>) {
        for action in actions {
            match action {
                TimerAction::Schedule(key, deadline_ms) => self.timers.schedule(key, deadline_ms),
                TimerAction::Cancel(key) => self.timers.cancel(&key),
            }
        }
    }

    /// The member's timers: session and rebalance, and a classic member's join and sync.
    pub(crate) fn consumer_member_timers(&self, group_id: &str, member_id: &str) -> [TimerKey; 4] {
        let (group_id, member_id) = (group_id.to_owned(), member_id.to_owned());
        [
            TimerKey::ConsumerSession {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            },
            TimerKey::ConsumerRebalance {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            },
            TimerKey::ConsumerJoin {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            },
            TimerKey::ConsumerSync {
                group_id,
                member_id,
            },
        ]
    }

    /// A member's session timeout: a classic member's own (from its JoinGroup), else the
    /// group's `consumer.session.timeout.ms`.
    pub(crate) fn consumer_member_session_ms(
        &self,
        group_id: &str,
        member: &group::ConsumerMember,
    ) -> i32 {
        member
            .classic_member_metadata
            .as_ref()
            .map(|classic| classic.session_timeout_ms)
            .unwrap_or_else(|| self.consumer_session_timeout_ms(group_id))
    }

    /// `consumer.session.timeout.ms` of the group, else `group.consumer.session.timeout.ms`.
    pub(crate) fn consumer_session_timeout_ms(&self, group_id: &str) -> i32 {
        self.consumer
            .group_configs
            .overrides(group_id)
            .consumer_session_timeout_ms
            .unwrap_or(self.config().consumer_session_timeout_ms)
    }

    /// `consumer.heartbeat.interval.ms` of the group, else `group.consumer.heartbeat.interval.ms`.
    pub(crate) fn consumer_heartbeat_interval_ms(&self, group_id: &str) -> i32 {
        self.consumer
            .group_configs
            .overrides(group_id)
            .consumer_heartbeat_interval_ms
            .unwrap_or(self.config().consumer_heartbeat_interval_ms)
    }

    /// `consumer.assignment.interval.ms` of the group, else `group.consumer.assignment.interval.ms`.
    pub(crate) fn consumer_assignment_interval_ms(&self, group_id: &str) -> i32 {
        self.consumer
            .group_configs
            .overrides(group_id)
            .consumer_assignment_interval_ms
            .unwrap_or(self.config().consumer_assignment_interval_ms)
    }

    /// Kafka's `canComputeNextTargetAssignment`: never computed, no interval, or the interval
    /// since the last one has passed.
    pub(crate) fn may_compute_target(&self, group: &group::ConsumerGroup, now_ms: i64) -> bool {
        let interval_ms = i64::from(self.consumer_assignment_interval_ms(&group.group_id));
        group.assignment_timestamp_ms == 0
            || interval_ms == 0
            || now_ms >= group.assignment_timestamp_ms.saturating_add(interval_ms)
    }

    /// Loading is over: every loaded member must heartbeat within its session, and a member
    /// that still has partitions to revoke within its rebalance timeout.
    pub(crate) fn start_consumer_timers(&mut self, now_ms: i64) {
        let mut actions = Vec::new();
        for group in self.consumer_groups.values() {
            for member in group.members.values() {
                let [session, rebalance, ..] =
                    self.consumer_member_timers(&group.group_id, &member.member_id);
                let session_ms = self.consumer_member_session_ms(&group.group_id, member);
                actions.push(TimerAction::Schedule(
                    session,
                    now_ms + i64::from(session_ms),
                ));
                // Classic members have join and sync timers instead, set by their requests.
                if member.state == MemberState::UnrevokedPartitions
                    && !member.uses_classic_protocol()
                {
                    let deadline_ms = now_ms + i64::from(member.rebalance_timeout_ms.max(0));
                    actions.push(TimerAction::Schedule(rebalance, deadline_ms));
                }
            }
        }
        self.apply_timer_actions(actions);
    }

    /// The state of a consumer group, if one exists.
    pub fn consumer_group_state(&self, group_id: &str) -> Option<ConsumerGroupState> {
        self.consumer_groups
            .get(group_id)
            .map(|group| group.state())
    }
}
