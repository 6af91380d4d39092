//! Fencing members of a consumer group, and the online downgrade it may make: when only
//! members using the classic protocol remain and `group.consumer.migration.policy` allows it,
//! the group becomes a classic group again (Kafka's `consumerGroupFenceMembers`,
//! `validateOnlineDowngradeWithFencedMembers`, `convertToClassicGroup` and
//! `ClassicGroup.fromConsumerGroup`).

use std::collections::BTreeSet;

use bytes::Bytes;

use super::admin::group_tombstones;
use super::draft::Draft;
use super::group::{ConsumerGroup, ConsumerMember};
use crate::assignor::{MemberAssignment, TopicsImage};
use crate::core::group::{Group, GroupState, Member};
use crate::core::timers::TimerKey;
use crate::core::{CoordinatorShard, Effects};
use crate::records::consumer_protocol::{
    encode_assignment, protocol_version, CONSUMER_PROTOCOL_TYPE,
};
use crate::records::GroupRecord;

impl CoordinatorShard {
    /// Removes `member_ids` from the consumer group (one epoch bump for all of them), or
    /// downgrades the group when only classic members would remain. Returns the records.
    pub(crate) fn fence_consumer_members(
        &mut self,
        group_id: &str,
        member_ids: &BTreeSet<String>,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Vec<GroupRecord> {
        let Some(group) = self.consumer_groups.get(group_id).cloned() else {
            return Vec::new();
        };
        if member_ids.is_empty() {
            // Nothing to fence: the epoch does not move.
            return Vec::new();
        }
        if self.may_downgrade_without(&group, member_ids) {
            // The conversion saves the members' timers (to restore them if its records are
            // not written) before it cancels them.
            return self.convert_to_classic_group(&group, member_ids, true, now_ms, effects);
        }
        for member_id in member_ids {
            for key in self.consumer_member_timers(group_id, member_id) {
                self.timers.cancel(&key);
            }
        }
        let mut draft = Draft::new(group);
        for member_id in member_ids {
            draft.remove_member(member_id);
        }
        draft.bump_epoch(&self.topics);
        draft.records
    }

    /// Kafka's `validateOnlineDowngradeWithFencedMembers`: every remaining member uses the
    /// classic protocol, some remain, the policy allows a downgrade and they fit in
    /// `group.max.size`.
    fn may_downgrade_without(&self, group: &ConsumerGroup, leaving: &BTreeSet<String>) -> bool {
        let remaining: Vec<&ConsumerMember> = group
            .members
            .values()
            .filter(|member| !leaving.contains(&member.member_id))
            .collect();
        remaining
            .iter()
            .all(|member| member.uses_classic_protocol())
            && !remaining.is_empty()
            && self.config().consumer_migration_policy.downgrade_enabled()
            && remaining.len() <= self.config().group_size_max
    }

    /// Kafka's `validateOnlineDowngradeWithReplacedMember`: a classic static member takes
    /// over the last member using the consumer protocol.
    pub(crate) fn may_downgrade_replacing(
        &self,
        group: &ConsumerGroup,
        replaced: &ConsumerMember,
    ) -> bool {
        let classic = group
            .members
            .values()
            .filter(|member| member.uses_classic_protocol())
            .count();
        classic + 1 == group.members.len()
            && !replaced.uses_classic_protocol()
            && self.config().consumer_migration_policy.downgrade_enabled()
            && group.members.len() <= self.config().group_size_max
    }

    /// Replaces the consumer group by a classic group of its members but `leaving`: the
    /// consumer group's tombstones, then the classic group's `GroupMetadata` with each member's
    /// target assignment. The classic group is installed at once (its rebalance needs it), as
    /// Kafka does; it rebalances when members left or a static member changed its subscription.
    /// The consumer group (from the live state, which is the log's, not the `group` draft) and
    /// its timers are saved until the records are replayed, and come back if they fail.
    pub(crate) fn convert_to_classic_group(
        &mut self,
        group: &ConsumerGroup,
        leaving: &BTreeSet<String>,
        rebalance: bool,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Vec<GroupRecord> {
        let group_id = group.group_id.clone();
        self.save_conversion(&group_id);
        let mut records: Vec<GroupRecord> = group_tombstones(group)
            .into_iter()
            .map(GroupRecord::Consumer)
            .collect();
        let mut classic = classic_group_from(group, leaving, &self.topics, now_ms);
        if let Some(holder) = self.groups.remove(&group_id) {
            // The committed offsets stay with the group.
            classic.offsets = holder.offsets;
            classic.pending_transactional_offsets = holder.pending_transactional_offsets;
        }
        records.push(GroupRecord::GroupMetadata {
            group_id: group_id.clone(),
            value: Some(classic.to_record_value()),
        });
        // The draft's members and the live group's (a replaced static member is only there).
        let live = self.consumer_groups.get(&group_id);
        let member_ids: BTreeSet<String> = group
            .members
            .keys()
            .chain(live.into_iter().flat_map(|live| live.members.keys()))
            .cloned()
            .collect();
        for member_id in &member_ids {
            for key in self.consumer_member_timers(&group_id, member_id) {
                self.timers.cancel(&key);
            }
        }
        for member in classic.members.values() {
            self.timers.schedule(
                TimerKey::Heartbeat {
                    group_id: group_id.clone(),
                    member_id: member.member_id.clone(),
                },
                now_ms + i64::from(member.session_timeout_ms),
            );
        }
        self.consumer_groups.remove(&group_id);
        self.groups.insert(group_id.clone(), classic);
        if rebalance {
            self.prepare_rebalance(&group_id, now_ms, effects);
        }
        records
    }
}

/// Kafka's `ClassicGroup.fromConsumerGroup`: a Stable classic group at the group epoch whose
/// members are the remaining (classic) members, each assigned its target assignment encoded at
/// its subscription's version.
fn classic_group_from(
    group: &ConsumerGroup,
    leaving: &BTreeSet<String>,
    topics: &TopicsImage,
    now_ms: i64,
) -> Group {
    let mut classic = Group::new(&group.group_id, now_ms);
    classic.state = GroupState::Stable;
    classic.generation_id = group.group_epoch;
    classic.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_owned());
    for member in group.members.values() {
        if leaving.contains(&member.member_id) {
            continue;
        }
        let Some(metadata) = &member.classic_member_metadata else {
            continue;
        };
        classic.add_member(Member {
            member_id: member.member_id.clone(),
            group_instance_id: member.instance_id.clone(),
            client_id: member.client_id.clone(),
            client_host: member.client_host.clone(),
            rebalance_timeout_ms: member.rebalance_timeout_ms,
            session_timeout_ms: metadata.session_timeout_ms,
            protocols: metadata.supported_protocols.clone(),
            assignment: Bytes::new(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            join_sequence: 0,
        });
    }
    classic.protocol_name = classic.select_protocol();
    classic.subscribed_topics = classic.compute_subscribed_topics();
    let protocol = classic.protocol_name.clone().unwrap_or_default();
    let empty = MemberAssignment::new();
    for member in classic.members.values_mut() {
        let target = group.target.get(&member.member_id).unwrap_or(&empty);
        let version = member
            .metadata_for(&protocol)
            .and_then(|metadata| protocol_version(metadata).ok())
            .unwrap_or(0);
        member.assignment = Bytes::from(encode_assignment(&named(target, topics), version));
    }
    classic
}

/// An assignment by topic name; topics no longer in the image are left out (as Kafka).
pub(crate) fn named(
    assignment: &MemberAssignment,
    topics: &TopicsImage,
) -> Vec<(String, Vec<i32>)> {
    assignment
        .iter()
        .filter_map(|(topic_id, partitions)| {
            let topic = topics.topics.get(topic_id)?;
            Some((topic.name.clone(), partitions.iter().copied().collect()))
        })
        .collect()
}
