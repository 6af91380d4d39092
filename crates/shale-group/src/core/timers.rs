//! The shard's timers: a deadline-ordered set plus an index by key, so rescheduling and
//! cancelling are cheap and `next_deadline_ms` is the first element.

use std::collections::{BTreeSet, HashMap};

use super::group::Group;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TimerKey {
    /// A member's session timeout (or, while a new member's join is parked, its join timeout).
    Heartbeat { group_id: String, member_id: String },
    /// A member id handed out with MEMBER_ID_REQUIRED that has not joined yet.
    PendingMember { group_id: String, member_id: String },
    /// The join phase: initial rebalance delay or rebalance timeout.
    Join { group_id: String },
    /// Members that got a JoinGroup response but have not sent SyncGroup.
    Sync { group_id: String },
    /// Periodic offset expiration (`offsets.retention.check.interval.ms`).
    OffsetExpiration,
    /// A consumer group member's session timeout.
    ConsumerSession { group_id: String, member_id: String },
    /// A consumer group member must revoke its partitions before this (rebalance timeout).
    ConsumerRebalance { group_id: String, member_id: String },
    /// A classic member of a consumer group told to rejoin must send JoinGroup before this.
    ConsumerJoin { group_id: String, member_id: String },
    /// A classic member of a consumer group that joined must send SyncGroup before this.
    ConsumerSync { group_id: String, member_id: String },
    /// A share group member's session timeout.
    ShareSession { group_id: String, member_id: String },
}

#[derive(Debug, Default)]
pub(crate) struct Timers {
    queue: BTreeSet<(i64, TimerKey)>,
    deadlines: HashMap<TimerKey, i64>,
}

impl Timers {
    pub(crate) fn schedule(&mut self, key: TimerKey, deadline_ms: i64) {
        if let Some(previous) = self.deadlines.insert(key.clone(), deadline_ms) {
            self.queue.remove(&(previous, key.clone()));
        }
        self.queue.insert((deadline_ms, key));
    }

    /// Schedules `key` unless it is already scheduled (Kafka's `scheduleIfAbsent`).
    pub(crate) fn schedule_if_absent(&mut self, key: TimerKey, deadline_ms: i64) {
        if !self.deadlines.contains_key(&key) {
            self.schedule(key, deadline_ms);
        }
    }

    pub(crate) fn cancel(&mut self, key: &TimerKey) {
        if let Some(previous) = self.deadlines.remove(key) {
            self.queue.remove(&(previous, key.clone()));
        }
    }

    pub(crate) fn deadline_ms(&self, key: &TimerKey) -> Option<i64> {
        self.deadlines.get(key).copied()
    }

    /// Every timer in deadline order (tests compare whole timer sets).
    #[cfg(test)]
    pub(crate) fn all(&self) -> Vec<(i64, TimerKey)> {
        self.queue.iter().cloned().collect()
    }

    pub(crate) fn next_deadline_ms(&self) -> Option<i64> {
        self.queue.first().map(|(deadline, _)| *deadline)
    }

    /// Removes and returns the earliest timer due at `now_ms`, with its deadline.
    pub(crate) fn pop_due(&mut self, now_ms: i64) -> Option<(i64, TimerKey)> {
        let (deadline, _) = self.queue.first()?;
        if *deadline > now_ms {
            return None;
        }
        let (deadline, key) = self.queue.pop_first()?;
        self.deadlines.remove(&key);
        Some((deadline, key))
    }

    /// Cancels every timer of `group` (its members, pending members, join and sync phases).
    pub(crate) fn cancel_group(&mut self, group: &Group) {
        let group_id = &group.group_id;
        for member_id in group.members.keys() {
            self.cancel(&TimerKey::Heartbeat {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            });
        }
        for member_id in &group.pending_members {
            self.cancel(&TimerKey::PendingMember {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            });
        }
        self.cancel(&TimerKey::Join {
            group_id: group_id.clone(),
        });
        self.cancel(&TimerKey::Sync {
            group_id: group_id.clone(),
        });
    }
}
