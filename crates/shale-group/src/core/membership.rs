//! Heartbeats, LeaveGroup and the timeouts that remove members: the session timeout and the
//! expiry of member ids handed out with MEMBER_ID_REQUIRED.

use super::group::GroupState;
use super::timers::TimerKey;
use super::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::types::{HeartbeatRequest, LeaveGroupRequest, LeaveGroupResponse, LeaveMemberResult};

impl CoordinatorShard {
    pub fn heartbeat(
        &mut self,
        token: RequestToken,
        request: HeartbeatRequest,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        let result = self.heartbeat_inner(&request, now_ms);
        effects.reply(token, Response::Heartbeat(result));
        effects
    }

    fn heartbeat_inner(
        &mut self,
        request: &HeartbeatRequest,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        if request.group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        if self.consumer_groups.contains_key(&request.group_id) {
            return self.heartbeat_consumer_group(request, now_ms);
        }
        let group = self
            .groups
            .get(&request.group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        match group.state {
            GroupState::Dead => return Err(GroupError::CoordinatorNotAvailable),
            GroupState::Empty => return Err(GroupError::UnknownMemberId),
            _ => {}
        }
        group.validate_member(&request.member_id, request.group_instance_id.as_deref())?;
        if request.generation_id != group.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        let session_timeout_ms = group
            .members
            .get(&request.member_id)
            .map(|member| i64::from(member.session_timeout_ms))
            .ok_or(GroupError::UnknownMemberId)?;
        let state = group.state;
        self.timers.schedule(
            TimerKey::Heartbeat {
                group_id: request.group_id.clone(),
                member_id: request.member_id.clone(),
            },
            now_ms + session_timeout_ms,
        );
        if state == GroupState::PreparingRebalance {
            // The member must rejoin.
            return Err(GroupError::RebalanceInProgress);
        }
        Ok(())
    }

    pub fn leave_group(
        &mut self,
        token: RequestToken,
        request: LeaveGroupRequest,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        let result = self.leave_group_inner(request, now_ms, &mut effects);
        effects.reply(token, Response::Leave(result));
        effects
    }

    fn leave_group_inner(
        &mut self,
        request: LeaveGroupRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<LeaveGroupResponse, GroupError> {
        if request.group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        if self.consumer_groups.contains_key(&request.group_id) {
            return self.leave_consumer_group(request, now_ms, effects);
        }
        let group = self
            .groups
            .get(&request.group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if group.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        let mut results = Vec::with_capacity(request.members.len());
        let mut leaving = Vec::new();
        let mut pending_leaving = Vec::new();
        for identity in request.members {
            let outcome = match &identity.group_instance_id {
                None if group.pending_members.contains(&identity.member_id) => {
                    pending_leaving.push(identity.member_id.clone());
                    Ok(())
                }
                None if group.members.contains_key(&identity.member_id) => {
                    leaving.push(identity.member_id.clone());
                    Ok(())
                }
                None => Err(GroupError::UnknownMemberId),
                Some(instance_id) => match group.static_members.get(instance_id) {
                    None => Err(GroupError::UnknownMemberId),
                    // An empty member id is an admin removing the static member by instance id.
                    Some(current)
                        if !identity.member_id.is_empty() && *current != identity.member_id =>
                    {
                        Err(GroupError::FencedInstanceId)
                    }
                    Some(current) => {
                        leaving.push(current.clone());
                        Ok(())
                    }
                },
            };
            results.push(LeaveMemberResult {
                member_id: identity.member_id,
                group_instance_id: identity.group_instance_id,
                error: outcome.err(),
            });
        }
        for member_id in pending_leaving {
            self.remove_pending_member(&request.group_id, &member_id, now_ms, effects);
        }
        for member_id in leaving {
            self.remove_member_and_update_group(&request.group_id, &member_id, now_ms, effects);
        }
        Ok(LeaveGroupResponse { members: results })
    }

    /// Removes a member (leave or session timeout) and rebalances the others.
    pub(crate) fn remove_member_and_update_group(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        self.timers.cancel(&TimerKey::Heartbeat {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        });
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        let Some(mut member) = group.remove_member(member_id) else {
            return;
        };
        if let Some(token) = member.awaiting_join.take() {
            effects.reply(token, Response::Join(Err(GroupError::UnknownMemberId)));
        }
        if let Some(token) = member.awaiting_sync.take() {
            effects.reply(token, Response::Sync(Err(GroupError::UnknownMemberId)));
        }
        match group.state {
            GroupState::Dead | GroupState::Empty => {}
            GroupState::PreparingRebalance => {
                self.complete_join_if_all_joined(group_id, now_ms, effects)
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.prepare_rebalance(group_id, now_ms, effects)
            }
        }
    }

    fn remove_pending_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        self.timers.cancel(&TimerKey::PendingMember {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        });
        let removed = self
            .groups
            .get_mut(group_id)
            .is_some_and(|group| group.pending_members.remove(member_id));
        if removed {
            // The join phase may have been waiting only for this member.
            self.complete_join_if_all_joined(group_id, now_ms, effects);
        }
    }

    pub(crate) fn on_heartbeat_expired(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let Some(member) = self
            .groups
            .get(group_id)
            .and_then(|group| group.members.get(member_id))
        else {
            return;
        };
        if member.has_satisfied_heartbeat() {
            // Waiting in a rebalance counts as alive; expect a heartbeat after it.
            let deadline = now_ms + i64::from(member.session_timeout_ms);
            self.timers.schedule(
                TimerKey::Heartbeat {
                    group_id: group_id.to_owned(),
                    member_id: member_id.to_owned(),
                },
                deadline,
            );
            return;
        }
        tracing::info!(group_id, member_id, "member session expired");
        self.remove_member_and_update_group(group_id, member_id, now_ms, effects);
    }

    pub(crate) fn on_pending_member_expired(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        self.remove_pending_member(group_id, member_id, now_ms, effects);
    }
}
