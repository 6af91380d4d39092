//! Session and rebalance timeouts: a member that stops heartbeating, or that does not revoke
//! its partitions in time, is fenced (removed, and the group epoch moves).

use super::draft::Draft;
use super::group::MemberState;
use crate::core::{CoordinatorShard, Effects};

impl CoordinatorShard {
    pub(crate) fn on_consumer_session_expired(
        &mut self,
        group_id: &str,
        member_id: &str,
        effects: &mut Effects,
    ) {
        self.fence_consumer_member(group_id, member_id, effects);
    }

    pub(crate) fn on_consumer_rebalance_expired(
        &mut self,
        group_id: &str,
        member_id: &str,
        effects: &mut Effects,
    ) {
        let unrevoked = self
            .consumer_groups
            .get(group_id)
            .and_then(|group| group.members.get(member_id))
            .is_some_and(|member| member.state == MemberState::UnrevokedPartitions);
        if unrevoked {
            self.fence_consumer_member(group_id, member_id, effects);
        }
    }

    /// Kafka's `consumerGroupFenceMember`.
    fn fence_consumer_member(&mut self, group_id: &str, member_id: &str, effects: &mut Effects) {
        let Some(group) = self.consumer_groups.get(group_id) else {
            return;
        };
        if !group.members.contains_key(member_id) {
            return;
        }
        let mut draft = Draft::new(group.clone());
        draft.remove_member(member_id);
        draft.bump_epoch(&self.topics);
        effects.records.extend(draft.records);
        for key in self.consumer_member_timers(group_id, member_id) {
            self.timers.cancel(&key);
        }
    }
}
