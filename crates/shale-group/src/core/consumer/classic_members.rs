//! SyncGroup, Heartbeat and LeaveGroup from members of a consumer group that use the classic
//! protocol (Kafka's `classicGroupSyncToConsumerGroup`, `classicGroupHeartbeatToConsumerGroup`
//! and `classicGroupLeaveToConsumerGroup`). The coordinator computed the assignment: SyncGroup
//! hands a member its assigned partitions; a member whose epoch is behind the group's, or that
//! must revoke partitions, is told REBALANCE_IN_PROGRESS and rejoins.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::downgrade::named;
use super::group::{ConsumerGroup, ConsumerMember, MemberState};
use crate::core::timers::TimerKey;
use crate::core::CoordinatorShard;
use crate::core::Effects;
use crate::error::GroupError;
use crate::records::consumer_protocol::{
    encode_assignment, protocol_version, CONSUMER_PROTOCOL_TYPE,
};
use crate::types::{
    HeartbeatRequest, LeaveGroupRequest, LeaveGroupResponse, LeaveMemberResult, SyncGroupRequest,
    SyncGroupResponse,
};

impl CoordinatorShard {
    pub(crate) fn sync_consumer_group(
        &mut self,
        request: &SyncGroupRequest,
        now_ms: i64,
    ) -> Result<SyncGroupResponse, GroupError> {
        let group = self
            .consumer_groups
            .get(&request.group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if group.members.is_empty() {
            return Err(GroupError::UnknownMemberId);
        }
        let member = classic_member(
            group,
            &request.member_id,
            request.group_instance_id.as_deref(),
        )?;
        if member.member_epoch != request.generation_id {
            // "The request generation id G is not equal to the member epoch E of member M."
            return Err(GroupError::IllegalGeneration);
        }
        let protocol_name = first_protocol_name(member);
        if request
            .protocol_type
            .as_deref()
            .is_some_and(|kind| kind != CONSUMER_PROTOCOL_TYPE)
            || request
                .protocol_name
                .as_deref()
                .is_some_and(|name| Some(name) != protocol_name.as_deref())
        {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        let group_id = request.group_id.clone();
        let member_id = member.member_id.clone();
        if group.group_epoch > member.member_epoch
            && member.state != MemberState::UnrevokedPartitions
        {
            // A new rebalance: the member must rejoin (it already did when it has partitions to
            // revoke first).
            let deadline_ms = now_ms + i64::from(member.rebalance_timeout_ms.max(0));
            self.timers.schedule_if_absent(
                TimerKey::ConsumerJoin {
                    group_id,
                    member_id,
                },
                deadline_ms,
            );
            return Err(GroupError::RebalanceInProgress);
        }
        let assignment = self.classic_assignment(member);
        let session_ms = self.consumer_member_session_ms(&group_id, member);
        self.timers.cancel(&TimerKey::ConsumerSync {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
        });
        self.timers.schedule(
            TimerKey::ConsumerSession {
                group_id,
                member_id,
            },
            now_ms + i64::from(session_ms),
        );
        Ok(SyncGroupResponse {
            protocol_type: request.protocol_type.clone(),
            protocol_name: request.protocol_name.clone(),
            assignment,
        })
    }

    /// The member's assigned partitions as a `ConsumerProtocolAssignment`, at the version of
    /// the subscription of its first protocol.
    fn classic_assignment(&self, member: &ConsumerMember) -> Bytes {
        let version = member
            .classic_member_metadata
            .as_ref()
            .and_then(|classic| classic.supported_protocols.first())
            .and_then(|protocol| protocol_version(&protocol.metadata).ok())
            .unwrap_or(0);
        let partitions = named(&member.assigned_partitions(), &self.topics);
        Bytes::from(encode_assignment(&partitions, version))
    }

    pub(crate) fn heartbeat_consumer_group(
        &mut self,
        request: &HeartbeatRequest,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        let group = self
            .consumer_groups
            .get(&request.group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        let member = classic_member(
            group,
            &request.member_id,
            request.group_instance_id.as_deref(),
        )?;
        if member.member_epoch != request.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        let group_id = request.group_id.clone();
        let member_id = member.member_id.clone();
        let session_ms = self.consumer_member_session_ms(&group_id, member);
        // The member rejoins when the group epoch moved, when it must revoke partitions, or
        // when the partitions it waits for were released.
        let rejoin = member.member_epoch < group.group_epoch
            || member.state == MemberState::UnrevokedPartitions
            || (member.state == MemberState::UnreleasedPartitions
                && !waiting_on_unreleased_partition(group, member));
        let rebalance_timeout_ms = member.rebalance_timeout_ms;
        self.timers.schedule(
            TimerKey::ConsumerSession {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            },
            now_ms + i64::from(session_ms),
        );
        if rejoin {
            self.timers.schedule_if_absent(
                TimerKey::ConsumerJoin {
                    group_id,
                    member_id,
                },
                now_ms + i64::from(rebalance_timeout_ms.max(0)),
            );
            return Err(GroupError::RebalanceInProgress);
        }
        Ok(())
    }

    /// LeaveGroup to a consumer group: each named member (by member id, or by instance id for
    /// static members, which an admin may remove without a member id) is fenced; all of them
    /// together move the epoch once, or downgrade the group.
    pub(crate) fn leave_consumer_group(
        &mut self,
        request: LeaveGroupRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<LeaveGroupResponse, GroupError> {
        let group = self
            .consumer_groups
            .get(&request.group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        let mut results = Vec::with_capacity(request.members.len());
        let mut leaving = BTreeSet::new();
        for identity in request.members {
            let outcome = match &identity.group_instance_id {
                None => group
                    .members
                    .get(&identity.member_id)
                    .map(|member| member.member_id.clone())
                    .ok_or(GroupError::UnknownMemberId),
                // "Instance id I is unknown."
                Some(instance_id) => match group.static_member(instance_id) {
                    None => Err(GroupError::UnknownMemberId),
                    Some(member)
                        if !identity.member_id.is_empty()
                            && member.member_id != identity.member_id =>
                    {
                        Err(GroupError::FencedInstanceId)
                    }
                    Some(member) => Ok(member.member_id.clone()),
                },
            };
            let error = match outcome {
                Ok(member_id) => {
                    leaving.insert(member_id);
                    None
                }
                Err(error) => Some(error),
            };
            results.push(LeaveMemberResult {
                member_id: identity.member_id,
                group_instance_id: identity.group_instance_id,
                error,
            });
        }
        let records = self.fence_consumer_members(&request.group_id, &leaving, now_ms, effects);
        effects.records.extend(records);
        Ok(LeaveGroupResponse { members: results })
    }
}

/// Kafka's `validateConsumerGroupMember` and `throwIfMemberDoesNotUseClassicProtocol`.
fn classic_member<'a>(
    group: &'a ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<&'a ConsumerMember, GroupError> {
    let member = match instance_id {
        None => group
            .members
            .get(member_id)
            .ok_or(GroupError::UnknownMemberId)?,
        Some(instance_id) => {
            // "Member with instance id I is not a member of group G."
            let member = group
                .static_member(instance_id)
                .ok_or(GroupError::UnknownMemberId)?;
            if member.member_id != member_id {
                return Err(GroupError::FencedInstanceId);
            }
            member
        }
    };
    if !member.uses_classic_protocol() {
        // "Member M does not use the classic protocol."
        return Err(GroupError::UnknownMemberId);
    }
    Ok(member)
}

fn first_protocol_name(member: &ConsumerMember) -> Option<String> {
    member
        .classic_member_metadata
        .as_ref()
        .and_then(|classic| classic.supported_protocols.first())
        .map(|protocol| protocol.name.clone())
}

/// Kafka's `waitingOnUnreleasedPartition`: a partition of the member's target it does not have
/// is still owned by another member.
fn waiting_on_unreleased_partition(group: &ConsumerGroup, member: &ConsumerMember) -> bool {
    let Some(target) = group.target.get(&member.member_id) else {
        return false;
    };
    let owners = group.owners();
    let assigned = member.assigned_partitions();
    target.iter().any(|(topic_id, partitions)| {
        partitions.iter().any(|partition| {
            !assigned
                .get(topic_id)
                .is_some_and(|owned| owned.contains(partition))
                && owners.contains_key(&(*topic_id, *partition))
        })
    })
}
