//! Leaving: -1 removes the member (and moves the group epoch), -2 lets a static member leave
//! for a while, keeping its partitions until its session expires.

use super::draft::Draft;
use super::group::{LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH};
use super::heartbeat::Outcome;
use super::TimerAction;
use crate::consumer_types::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use crate::core::CoordinatorShard;
use crate::error::GroupError;
use crate::records::consumer_records::ConsumerRecord;

impl CoordinatorShard {
    /// A member leaving (-1), or a static member leaving for a while (-2).
    pub(super) fn consumer_leave(
        &mut self,
        request: &ConsumerGroupHeartbeatRequest,
    ) -> Result<Outcome, GroupError> {
        let group = self
            .consumer_groups
            .get(&request.group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        let member = match &request.instance_id {
            None => group
                .members
                .get(&request.member_id)
                .ok_or(GroupError::UnknownMemberId)?,
            Some(instance_id) => {
                let member = group
                    .static_member(instance_id)
                    .ok_or(GroupError::UnknownMemberId)?;
                if member.member_id != request.member_id {
                    return Err(GroupError::FencedInstanceId);
                }
                member
            }
        };
        let mut draft = Draft::new(group.clone());
        let member_id = member.member_id.clone();
        let mut timers = Vec::new();
        let member_epoch = if request.instance_id.is_some()
            && request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
        {
            // The static member keeps its partitions until its session expires.
            // Kafka 4.4's `consumerGroupStaticMemberGroupLeave`: the epoch is set (the
            // previous one stays), pending revocations are dropped, and the partitions'
            // assignment epochs are reset to 0 for the instance that takes over.
            let mut left = member.clone();
            left.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
            left.pending_revocation.clear();
            for epochs in left.assigned.values_mut() {
                for epoch in epochs.values_mut() {
                    *epoch = 0;
                }
            }
            draft.push(ConsumerRecord::CurrentMemberAssignment {
                group_id: request.group_id.clone(),
                member_id: member_id.clone(),
                value: Some(left.assignment_value()),
            });
            LEAVE_GROUP_STATIC_MEMBER_EPOCH
        } else {
            draft.remove_member(&member_id);
            draft.bump_epoch(&self.topics);
            for key in self.consumer_member_timers(&request.group_id, &member_id) {
                timers.push(TimerAction::Cancel(key));
            }
            LEAVE_GROUP_MEMBER_EPOCH
        };
        Ok(Outcome {
            records: draft.records,
            timers,
            response: ConsumerGroupHeartbeatResponse {
                member_id: request.member_id.clone(),
                member_epoch,
                heartbeat_interval_ms: 0,
                assignment: None,
            },
        })
    }
}
