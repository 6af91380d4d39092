//! Who may heartbeat: Kafka's request checks, the group a heartbeat is for (created, or
//! converted from an empty classic group), and the member it is from, with its epoch checked;
//! a static member rejoining replaces its previous instance.

use super::draft::Draft;
use super::group::{
    ConsumerGroup, ConsumerMember, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
use super::TimerAction;
use crate::consumer_types::ConsumerGroupHeartbeatRequest;
use crate::core::CoordinatorShard;
use crate::error::GroupError;
use crate::records::consumer_records::ConsumerRecord;
use crate::records::GroupRecord;

impl CoordinatorShard {
    /// Kafka's `getOrMaybeCreateConsumerGroup`: a joining member creates the group; an empty
    /// classic group is converted (its metadata is deleted, its offsets stay), a live one is
    /// upgraded when `group.consumer.migration.policy` allows it. The draft holds the records
    /// of a conversion; `upgraded` says a live classic group was converted.
    pub(super) fn consumer_group_for_heartbeat(
        &self,
        request: &ConsumerGroupHeartbeatRequest,
        now_ms: i64,
        timers: &mut Vec<TimerAction>,
    ) -> Result<(Draft, bool), GroupError> {
        if let Some(group) = self.consumer_groups.get(&request.group_id) {
            return Ok((Draft::new(group.clone()), false));
        }
        if self.is_share_group(&request.group_id) {
            return Err(GroupError::NotConsumerGroup);
        }
        let joining = request.member_epoch == 0;
        let mut draft = Draft::new(ConsumerGroup::new(&request.group_id));
        match self.groups.get(&request.group_id) {
            // "Consumer group G not found." / "Group G is not a consumer group."
            _ if !joining => return Err(GroupError::GroupIdNotFound),
            Some(classic) => {
                let empty = classic.members.is_empty() && classic.pending_members.is_empty();
                if !empty {
                    let upgraded = self.upgrade_classic_group(classic, now_ms, timers)?;
                    return Ok((upgraded, true));
                }
                draft.records.push(GroupRecord::GroupMetadata {
                    group_id: request.group_id.clone(),
                    value: None,
                });
            }
            None => {}
        }
        Ok((draft, false))
    }

    /// Finds (or admits) the member the heartbeat is from, checking its epoch; a static member
    /// rejoining replaces its previous instance, keeping its assignment.
    pub(super) fn member_for_heartbeat(
        &self,
        draft: &mut Draft,
        request: &ConsumerGroupHeartbeatRequest,
        timers: &mut Vec<TimerAction>,
    ) -> Result<ConsumerMember, GroupError> {
        let group = &draft.group;
        let size_max = self.config().consumer_group_size_max;
        let admit = |group: &ConsumerGroup| -> Result<ConsumerMember, GroupError> {
            if group.members.len() >= size_max {
                return Err(GroupError::GroupMaxSizeReached);
            }
            Ok(ConsumerMember::new(&request.member_id))
        };
        let Some(instance_id) = &request.instance_id else {
            return match group.members.get(&request.member_id) {
                Some(member) => {
                    if request.member_epoch != 0 {
                        validate_member_epoch(member, request)?;
                    }
                    Ok(member.clone())
                }
                None if request.member_epoch == 0 => admit(group),
                None => Err(GroupError::UnknownMemberId),
            };
        };
        let existing = group.static_member(instance_id).cloned();
        if request.member_epoch != 0 {
            // "Instance id X is unknown." / "... was fenced by member Y."
            let existing = existing.ok_or(GroupError::UnknownMemberId)?;
            if existing.member_id != request.member_id {
                return Err(GroupError::FencedInstanceId);
            }
            validate_member_epoch(&existing, request)?;
            return Ok(existing);
        }
        let Some(old) = existing else {
            return match group.members.get(&request.member_id) {
                Some(member) => Ok(member.clone()),
                None => admit(group),
            };
        };
        // A classic member's instance id is taken over without it leaving first (Kafka checks the
        // release only between two members using the consumer protocol).
        if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH && !old.uses_classic_protocol() {
            // "Static member X with instance id I cannot join the group because the instance
            // id is owned by Y member."
            return Err(GroupError::UnreleasedInstanceId);
        }
        Ok(self.replace_static_consumer_member(draft, &old, &request.member_id, timers))
    }

    /// A new instance of a static member takes over the old one's subscription, partitions
    /// and target under its own member id (Kafka's `replaceMember`).
    pub(super) fn replace_static_consumer_member(
        &self,
        draft: &mut Draft,
        old: &ConsumerMember,
        member_id: &str,
        timers: &mut Vec<TimerAction>,
    ) -> ConsumerMember {
        let target = draft.group.target.get(&old.member_id).cloned();
        draft.remove_member(&old.member_id);
        let mut replacement = ConsumerMember {
            member_id: member_id.to_owned(),
            member_epoch: 0,
            previous_member_epoch: 0,
            state: super::group::MemberState::Stable,
            pending_revocation: Default::default(),
            ..old.clone()
        };
        replacement.assigned = old.assigned.clone();
        draft.push(ConsumerRecord::MemberMetadata {
            group_id: draft.group.group_id.clone(),
            member_id: member_id.to_owned(),
            value: Some(replacement.metadata_value()),
        });
        // Kafka's `replaceMember` order: subscription, target, current assignment.
        draft.push(ConsumerRecord::TargetAssignmentMember {
            group_id: draft.group.group_id.clone(),
            member_id: member_id.to_owned(),
            value: Some(target.unwrap_or_default()),
        });
        draft.push(ConsumerRecord::CurrentMemberAssignment {
            group_id: draft.group.group_id.clone(),
            member_id: member_id.to_owned(),
            value: Some(replacement.assignment_value()),
        });
        for key in self.consumer_member_timers(&draft.group.group_id, &old.member_id) {
            timers.push(TimerAction::Cancel(key));
        }
        replacement
    }
}

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid` (the service's checks).
pub(super) fn validate_request(
    request: &ConsumerGroupHeartbeatRequest,
    assignors: &[String],
) -> Result<(), GroupError> {
    let invalid = |reason: &str| Err(GroupError::InvalidRequest(reason.to_owned()));
    if (request.api_version >= 1
        || request.member_epoch > 0
        || request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH)
        && request.member_id.is_empty()
    {
        return invalid("MemberId can't be empty.");
    }
    if request.group_id.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if request.instance_id.as_deref() == Some("") {
        return invalid("InstanceId can't be empty.");
    }
    if request.rack_id.as_deref() == Some("") {
        return invalid("RackId can't be empty.");
    }
    if request.member_epoch == 0 {
        if request.rebalance_timeout_ms == -1 {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if !request
            .owned_partitions
            .as_ref()
            .is_some_and(|owned| owned.is_empty())
        {
            return invalid("TopicPartitions must be empty when (re-)joining.");
        }
        if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none() {
            return invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            );
        }
    } else if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        if request.instance_id.is_none() {
            return invalid("InstanceId can't be null.");
        }
    } else if request.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        return invalid("MemberEpoch is invalid.");
    }
    if let Some(name) = &request.server_assignor {
        if !assignors.iter().any(|known| known == name) {
            return Err(GroupError::UnsupportedAssignor(name.clone()));
        }
    }
    Ok(())
}

/// Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`: an epoch ahead of the coordinator's, or
/// behind it other than the previous epoch with a subset of the partitions, is fenced.
fn validate_member_epoch(
    member: &ConsumerMember,
    request: &ConsumerGroupHeartbeatRequest,
) -> Result<(), GroupError> {
    let received = request.member_epoch;
    if received > member.member_epoch {
        return Err(GroupError::FencedMemberEpoch);
    }
    if received < member.member_epoch {
        let assigned = member.assigned_partitions();
        let subset = request.owned_partitions.as_ref().is_some_and(|owned| {
            owned.iter().all(|(topic_id, partitions)| {
                partitions.iter().all(|partition| {
                    assigned
                        .get(topic_id)
                        .is_some_and(|assigned| assigned.contains(partition))
                })
            })
        });
        if received != member.previous_member_epoch || !subset {
            return Err(GroupError::FencedMemberEpoch);
        }
    }
    Ok(())
}

/// Applies the fields a heartbeat sets (`None` and -1 mean "unchanged").
pub(super) fn update_member(member: &mut ConsumerMember, request: &ConsumerGroupHeartbeatRequest) {
    if let Some(instance_id) = &request.instance_id {
        member.instance_id = Some(instance_id.clone());
    }
    if let Some(rack_id) = &request.rack_id {
        member.rack_id = Some(rack_id.clone());
    }
    if request.rebalance_timeout_ms != -1 {
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    if let Some(assignor) = &request.server_assignor {
        member.server_assignor = Some(assignor.clone());
    }
    if let Some(names) = &request.subscribed_topic_names {
        let mut names = names.clone();
        names.sort();
        names.dedup();
        member.subscribed_topic_names = names;
    }
    if let Some(regex) = &request.subscribed_topic_regex {
        member.subscribed_topic_regex = Some(regex.clone()).filter(|regex| !regex.is_empty());
    }
    member.client_id = request.client_id.clone();
    member.client_host = request.client_host.clone();
}
