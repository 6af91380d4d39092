//! Session and rebalance timeouts: a member that stops heartbeating, or that does not revoke
//! its partitions in time, is fenced (removed, and the group epoch moves, or the group is
//! downgraded when only classic members remain); so is a classic member that does not rejoin
//! or sync within its rebalance timeout.

use std::collections::BTreeSet;

use super::group::MemberState;
use crate::core::{CoordinatorShard, Effects};

impl CoordinatorShard {
    pub(crate) fn on_consumer_session_expired(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        self.fence_consumer_member(group_id, member_id, now_ms, effects);
    }

    /// A classic member did not rejoin after it was told to, or did not sync after joining.
    pub(crate) fn on_consumer_classic_timeout(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        self.fence_consumer_member(group_id, member_id, now_ms, effects);
    }

    pub(crate) fn on_consumer_rebalance_expired(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let unrevoked = self
            .consumer_groups
            .get(group_id)
            .and_then(|group| group.members.get(member_id))
            .is_some_and(|member| member.state == MemberState::UnrevokedPartitions);
        if unrevoked {
            self.fence_consumer_member(group_id, member_id, now_ms, effects);
        }
    }

    /// Kafka's `consumerGroupFenceMember`.
    fn fence_consumer_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let known = self
            .consumer_groups
            .get(group_id)
            .is_some_and(|group| group.members.contains_key(member_id));
        if !known {
            return;
        }
        let leaving = BTreeSet::from([member_id.to_owned()]);
        let records = self.fence_consumer_members(group_id, &leaving, now_ms, effects);
        effects.records.extend(records);
    }
}
