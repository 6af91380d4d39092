//! Leaving: -1 removes the member (and moves the group epoch), -2 lets a static member leave
//! for a while, keeping its partitions until its session expires.

use std::collections::BTreeSet;

use super::draft::Draft;
use super::group::{LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH};
use super::heartbeat::Outcome;
use crate::consumer_types::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use crate::core::{CoordinatorShard, Effects};
use crate::error::GroupError;
use crate::records::consumer_records::ConsumerRecord;

impl CoordinatorShard {
    /// A member leaving (-1), or a static member leaving for a while (-2).
    pub(super) fn consumer_leave(
        &mut self,
        request: &ConsumerGroupHeartbeatRequest,
        now_ms: i64,
        effects: &mut Effects,
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
            let leaving = BTreeSet::from([member_id]);
            draft.records =
                self.fence_consumer_members(&request.group_id, &leaving, now_ms, effects);
            LEAVE_GROUP_MEMBER_EPOCH
        };
        Ok(Outcome {
            records: draft.records,
            timers: Vec::new(),
            response: ConsumerGroupHeartbeatResponse {
                member_id: request.member_id.clone(),
                member_epoch,
                heartbeat_interval_ms: 0,
                assignment: None,
            },
        })
    }
}
