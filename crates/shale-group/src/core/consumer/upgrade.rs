//! The online upgrade: a member joining with ConsumerGroupHeartbeat turns a live classic group
//! of the consumer protocol type into a consumer group whose members keep their classic
//! protocol (Kafka's `validateOnlineUpgrade`, `convertToConsumerGroup` and
//! `ConsumerGroup.fromClassicGroup`).

use super::draft::Draft;
use super::group::{ConsumerGroup, ConsumerMember, MemberState};
use super::subscriptions::metadata_hash;
use super::TimerAction;
use crate::assignor::{MemberAssignment, TopicsImage};
use crate::core::group::Group;
use crate::core::timers::TimerKey;
use crate::core::{CoordinatorShard, Effects, Response};
use crate::error::GroupError;
use crate::records::classic_member_metadata::ClassicMemberMetadata;
use crate::records::consumer_protocol::{
    decode_assignment, decode_subscription, CONSUMER_PROTOCOL_TYPE,
};
use crate::records::consumer_records::{
    ConsumerGroupMetadataValue, ConsumerRecord, PartitionEpochs, TargetAssignmentMetadataValue,
};
use crate::records::GroupRecord;

impl CoordinatorShard {
    /// The consumer group a live classic group becomes, as a draft holding the records of the
    /// conversion (the classic group's tombstone, then the consumer group's records in Kafka's
    /// order); refused with GROUP_ID_NOT_FOUND when the policy, the protocol type or
    /// `group.consumer.max.size` forbids it, or a member's protocol cannot be read.
    pub(super) fn upgrade_classic_group(
        &self,
        classic: &Group,
        now_ms: i64,
        timers: &mut Vec<TimerAction>,
    ) -> Result<Draft, GroupError> {
        if !self.config().consumer_migration_policy.upgrade_enabled() {
            // "Cannot upgrade classic group G to consumer group because online upgrade is
            // disabled."
            return Err(GroupError::GroupIdNotFound);
        }
        if classic.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            // "... because the group does not use the consumer embedded protocol."
            return Err(GroupError::GroupIdNotFound);
        }
        if classic.members.len() > self.config().consumer_group_size_max {
            // "... because the group size exceeds the consumer group maximum size."
            return Err(GroupError::GroupIdNotFound);
        }
        let members = converted_members(classic, &self.topics)?;
        let group_id = classic.group_id.clone();
        let generation = classic.generation_id;
        let mut draft = Draft::new(ConsumerGroup::new(&group_id));
        draft.records.push(GroupRecord::GroupMetadata {
            group_id: group_id.clone(),
            value: None,
        });
        for member in &members {
            draft.push(ConsumerRecord::MemberMetadata {
                group_id: group_id.clone(),
                member_id: member.member_id.clone(),
                value: Some(member.metadata_value()),
            });
        }
        let hash = metadata_hash(&draft.group.subscribed_topic_names(), &self.topics);
        draft.push(ConsumerRecord::GroupMetadata {
            group_id: group_id.clone(),
            value: Some(ConsumerGroupMetadataValue {
                epoch: generation,
                metadata_hash: hash,
            }),
        });
        for member in &members {
            draft.push(ConsumerRecord::TargetAssignmentMember {
                group_id: group_id.clone(),
                member_id: member.member_id.clone(),
                value: Some(member.assigned_partitions()),
            });
        }
        draft.push(ConsumerRecord::TargetAssignmentMetadata {
            group_id: group_id.clone(),
            value: Some(TargetAssignmentMetadataValue {
                assignment_epoch: generation,
                assignment_timestamp_ms: 0,
            }),
        });
        for member in &members {
            draft.push(ConsumerRecord::CurrentMemberAssignment {
                group_id: group_id.clone(),
                member_id: member.member_id.clone(),
                value: Some(member.assignment_value()),
            });
            // Each member keeps its classic session timeout.
            let session_ms = member
                .classic_member_metadata
                .as_ref()
                .map_or(0, |classic| classic.session_timeout_ms);
            timers.push(TimerAction::Schedule(
                TimerKey::ConsumerSession {
                    group_id: group_id.clone(),
                    member_id: member.member_id.clone(),
                },
                now_ms + i64::from(session_ms),
            ));
        }
        Ok(draft)
    }

    /// The converted classic group's parked JoinGroup and SyncGroup requests are answered
    /// REBALANCE_IN_PROGRESS so that their members rejoin the consumer group.
    pub(super) fn release_upgraded_classic_requests(
        &mut self,
        group_id: &str,
        effects: &mut Effects,
    ) {
        let Some(classic) = self.groups.get_mut(group_id) else {
            return;
        };
        for member in classic.members.values_mut() {
            if let Some(token) = member.awaiting_join.take() {
                effects.reply(token, Response::Join(Err(GroupError::RebalanceInProgress)));
            }
            if let Some(token) = member.awaiting_sync.take() {
                effects.reply(token, Response::Sync(Err(GroupError::RebalanceInProgress)));
            }
        }
    }
}

/// The classic members as consumer group members of the generation, Stable, with the
/// subscription of the group's protocol and their last assignment.
fn converted_members(
    classic: &Group,
    topics: &TopicsImage,
) -> Result<Vec<ConsumerMember>, GroupError> {
    // A group still forming its first generation has no protocol yet: Kafka's conversion
    // fails there with an unexpected error (it reads the absent protocol name).
    let protocol = classic.protocol_name.clone().ok_or_else(|| {
        GroupError::UnknownServerError(format!(
            "the classic group {} has not selected a protocol yet",
            classic.group_id
        ))
    })?;
    let generation = classic.generation_id;
    let mut members = Vec::with_capacity(classic.members.len());
    for old in classic.members_in_join_order() {
        // "Cannot upgrade classic group G to consumer group because the embedded consumer
        // protocol is malformed." / "... because an unsupported custom assignor is in use."
        let assigned = if old.assignment.is_empty() {
            // A member that joined but never synced has no assignment yet.
            MemberAssignment::new()
        } else {
            let assignment =
                decode_assignment(&old.assignment).map_err(|_| GroupError::GroupIdNotFound)?;
            if assignment.has_user_data {
                return Err(GroupError::GroupIdNotFound);
            }
            by_topic_id(&assignment.partitions, topics)
        };
        let metadata = old
            .metadata_for(&protocol)
            .ok_or(GroupError::GroupIdNotFound)?;
        let subscription =
            decode_subscription(metadata).map_err(|_| GroupError::GroupIdNotFound)?;
        let mut member = ConsumerMember::new(&old.member_id);
        member.member_epoch = generation;
        member.previous_member_epoch = generation;
        member.state = MemberState::Stable;
        member.instance_id = old.group_instance_id.clone();
        member.rack_id = subscription.rack_id.clone();
        member.rebalance_timeout_ms = old.rebalance_timeout_ms;
        member.client_id = old.client_id.clone();
        member.client_host = old.client_host.clone();
        let mut names = subscription.topics.clone();
        names.sort();
        names.dedup();
        member.subscribed_topic_names = names;
        member.assigned = with_epoch(&assigned, generation);
        member.classic_member_metadata = Some(ClassicMemberMetadata {
            session_timeout_ms: old.session_timeout_ms,
            supported_protocols: old.protocols.clone(),
        });
        members.push(member);
    }
    Ok(members)
}

/// Partitions by topic id; topics the image does not know are left out (as Kafka).
pub(crate) fn by_topic_id(
    partitions: &[(String, Vec<i32>)],
    topics: &TopicsImage,
) -> MemberAssignment {
    let mut assignment = MemberAssignment::new();
    for (name, indexes) in partitions {
        if let Some(topic) = topics.by_name(name) {
            assignment
                .entry(topic.topic_id)
                .or_default()
                .extend(indexes.iter().copied());
        }
    }
    assignment
}

fn with_epoch(assignment: &MemberAssignment, epoch: i32) -> PartitionEpochs {
    assignment
        .iter()
        .map(|(topic_id, partitions)| {
            (
                *topic_id,
                partitions
                    .iter()
                    .map(|partition| (*partition, epoch))
                    .collect(),
            )
        })
        .collect()
}
