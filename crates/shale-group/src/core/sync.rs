//! SyncGroup: the leader's assignment is stored, then delivered to every member.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::group::{Group, GroupState};
use super::timers::TimerKey;
use super::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::GroupRecord;
use crate::types::{SyncGroupRequest, SyncGroupResponse};

impl CoordinatorShard {
    pub fn sync_group(
        &mut self,
        token: RequestToken,
        request: SyncGroupRequest,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        if let Err(error) = self.sync_group_inner(token, request, now_ms, &mut effects) {
            effects.reply(token, Response::Sync(Err(error)));
        }
        effects
    }

    fn sync_group_inner(
        &mut self,
        token: RequestToken,
        request: SyncGroupRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<(), GroupError> {
        if request.group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        if self.consumer_groups.contains_key(&request.group_id) {
            let response = self.sync_consumer_group(&request, now_ms)?;
            effects.reply(token, Response::Sync(Ok(response)));
            return Ok(());
        }
        let group = self
            .groups
            .get_mut(&request.group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if group.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        group.validate_member(&request.member_id, request.group_instance_id.as_deref())?;
        if request.generation_id != group.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        if is_protocol_inconsistent(
            request.protocol_type.as_deref(),
            group.protocol_type.as_deref(),
        ) || is_protocol_inconsistent(
            request.protocol_name.as_deref(),
            group.protocol_name.as_deref(),
        ) {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        match group.state {
            GroupState::Empty => Err(GroupError::UnknownMemberId),
            GroupState::Dead => Err(GroupError::CoordinatorNotAvailable),
            GroupState::PreparingRebalance => Err(GroupError::RebalanceInProgress),
            GroupState::Stable => {
                group.pending_sync_members.remove(&request.member_id);
                let response = sync_response(group, &request.member_id);
                if group.pending_sync_members.is_empty() {
                    self.timers.cancel(&TimerKey::Sync {
                        group_id: request.group_id.clone(),
                    });
                }
                effects.reply(token, Response::Sync(Ok(response)));
                Ok(())
            }
            GroupState::CompletingRebalance => {
                group.pending_sync_members.remove(&request.member_id);
                let is_leader = group.is_leader(&request.member_id);
                if let Some(member) = group.members.get_mut(&request.member_id) {
                    if let Some(displaced) = member.awaiting_sync.replace(token) {
                        effects.reply(
                            displaced,
                            Response::Sync(Err(GroupError::RebalanceInProgress)),
                        );
                    }
                }
                if group.pending_sync_members.is_empty() {
                    self.timers.cancel(&TimerKey::Sync {
                        group_id: request.group_id.clone(),
                    });
                }
                if is_leader {
                    self.complete_sync(&request, now_ms, effects)?;
                }
                Ok(())
            }
        }
    }

    /// The leader's assignment arrived: store it, then answer every member waiting in SyncGroup.
    fn complete_sync(
        &mut self,
        request: &SyncGroupRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<(), GroupError> {
        let assignments: BTreeMap<&str, &Bytes> = request
            .assignments
            .iter()
            .map(|assignment| (assignment.member_id.as_str(), &assignment.assignment))
            .collect();
        let group = self.group_mut(&request.group_id)?;
        for member in group.members.values_mut() {
            member.assignment = assignments
                .get(member.member_id.as_str())
                .map(|assignment| (*assignment).clone())
                .unwrap_or_default();
        }
        group.transition(GroupState::Stable, now_ms);
        effects.records.push(GroupRecord::GroupMetadata {
            group_id: request.group_id.clone(),
            value: Some(group.to_record_value()),
        });
        self.propagate_assignment(&request.group_id, now_ms, effects);
        Ok(())
    }

    fn propagate_assignment(&mut self, group_id: &str, now_ms: i64, effects: &mut Effects) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        let mut heartbeats = Vec::new();
        let waiting: Vec<String> = group
            .members
            .values()
            .filter(|member| member.awaiting_sync.is_some())
            .map(|member| member.member_id.clone())
            .collect();
        for member_id in waiting {
            let response = sync_response(group, &member_id);
            if let Some(member) = group.members.get_mut(&member_id) {
                if let Some(token) = member.awaiting_sync.take() {
                    effects.reply(token, Response::Sync(Ok(response)));
                }
                heartbeats.push((member_id, i64::from(member.session_timeout_ms)));
            }
        }
        for (member_id, session_timeout_ms) in heartbeats {
            self.timers.schedule(
                TimerKey::Heartbeat {
                    group_id: group_id.to_owned(),
                    member_id,
                },
                now_ms + session_timeout_ms,
            );
        }
    }
}

/// SyncGroup v5+ names the protocol type and name; only a mismatch of two known values counts.
fn is_protocol_inconsistent(requested: Option<&str>, current: Option<&str>) -> bool {
    matches!((requested, current), (Some(requested), Some(current)) if requested != current)
}

fn sync_response(group: &Group, member_id: &str) -> SyncGroupResponse {
    SyncGroupResponse {
        protocol_type: group.protocol_type.clone(),
        protocol_name: group.protocol_name.clone(),
        assignment: group
            .members
            .get(member_id)
            .map(|member| member.assignment.clone())
            .unwrap_or_default(),
    }
}
