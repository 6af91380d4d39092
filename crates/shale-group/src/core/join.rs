//! JoinGroup: new, pending, existing and static members, and the rebalance each one starts.

use bytes::Bytes;

use super::group::{Group, GroupState, Member};
use super::timers::TimerKey;
use super::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::GroupRecord;
use crate::types::{JoinGroupRequest, JoinGroupResponse};

impl CoordinatorShard {
    pub fn join_group(
        &mut self,
        token: RequestToken,
        request: JoinGroupRequest,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        let group_id = request.group_id.clone();
        let created = !self.groups.contains_key(&group_id);
        if let Err(error) = self.join_group_inner(token, request, now_ms, &mut effects) {
            // A group created for a join that failed holds nothing: drop it again.
            if created
                && self.groups.get(&group_id).is_some_and(|group| {
                    group.members.is_empty() && group.pending_members.is_empty()
                })
            {
                self.groups.remove(&group_id);
            }
            effects.reply(token, Response::Join(Err(error)));
        }
        // Tombstones of an empty consumer group replaced by this classic group do not count.
        let wrote_group = effects
            .records
            .iter()
            .any(|record| !matches!(record, GroupRecord::Consumer(_)));
        if created && !wrote_group && !self.consumer_groups.contains_key(&group_id) {
            // As Kafka: a new group is stored at once (empty), so that it survives a failover.
            if let Some(group) = self.groups.get(&group_id) {
                let mut value = group.to_record_value();
                value.protocol = None;
                value.leader = None;
                value.members.clear();
                effects.records.push(GroupRecord::GroupMetadata {
                    group_id,
                    value: Some(value),
                });
            }
        }
        effects
    }

    fn join_group_inner(
        &mut self,
        token: RequestToken,
        request: JoinGroupRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<(), GroupError> {
        if request.group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        if request.session_timeout_ms < self.config().session_timeout_ms_min
            || request.session_timeout_ms > self.config().session_timeout_ms_max
        {
            return Err(GroupError::InvalidSessionTimeout);
        }
        // Kafka answers a JoinGroup to a share group with INCONSISTENT_GROUP_PROTOCOL.
        if self.is_share_group(&request.group_id) {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        // A classic member joins a live consumer group as one of its members (unless
        // `group.consumer.migration.policy` is `disabled`).
        if self.joins_consumer_group(&request.group_id) {
            return self.join_consumer_group(token, request, now_ms, effects);
        }
        // An empty consumer group is replaced by the classic group (Kafka's
        // `maybeDeleteEmptyConsumerGroup`).
        // Until its tombstones are written the consumer group is kept to come back.
        if self.consumer_groups.contains_key(&request.group_id) {
            self.save_conversion(&request.group_id);
        }
        if let Some(empty) = self.consumer_groups.remove(&request.group_id) {
            for key in empty
                .members
                .keys()
                .flat_map(|member_id| self.consumer_member_timers(&empty.group_id, member_id))
                .collect::<Vec<_>>()
            {
                self.timers.cancel(&key);
            }
            effects.records.extend(
                super::consumer::group_tombstones(&empty)
                    .into_iter()
                    .map(GroupRecord::Consumer),
            );
        }
        let is_unknown_member = request.member_id.is_empty();
        if !self.groups.contains_key(&request.group_id) {
            if !is_unknown_member {
                return Err(GroupError::UnknownMemberId);
            }
            self.groups.insert(
                request.group_id.clone(),
                Group::new(&request.group_id, now_ms),
            );
        }
        let group_size_max = self.config().group_size_max;
        let group = self.group(&request.group_id)?;
        if !accepts_joining_member(group, &request.member_id, group_size_max) {
            // A member over the limit (group.max.size was lowered) is removed, as Kafka does.
            if group.members.contains_key(&request.member_id) {
                self.remove_member_and_update_group(
                    &request.group_id,
                    &request.member_id,
                    now_ms,
                    effects,
                );
            }
            return Err(GroupError::GroupMaxSizeReached);
        }
        if group.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if !group.supports_protocols(&request.protocol_type, &request.protocols) {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        if is_unknown_member {
            self.join_new_member(token, request, now_ms, effects)
        } else {
            self.join_existing_member(token, request, now_ms, effects)
        }
    }

    fn join_new_member(
        &mut self,
        token: RequestToken,
        request: JoinGroupRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<(), GroupError> {
        let prefix = request
            .group_instance_id
            .clone()
            .unwrap_or_else(|| request.client_id.clone());
        let member_id = self.new_member_id(&prefix);
        let group = self.group(&request.group_id)?;
        if let Some(instance_id) = request.group_instance_id.clone() {
            if let Some(old_member_id) = group.static_members.get(&instance_id).cloned() {
                return self.replace_static_member(
                    token,
                    request,
                    old_member_id,
                    member_id,
                    now_ms,
                    effects,
                );
            }
            self.add_member_and_rebalance(token, request, member_id, now_ms, effects);
            return Ok(());
        }
        if request.require_known_member_id {
            let session_timeout_ms = i64::from(request.session_timeout_ms);
            let group = self.group_mut(&request.group_id)?;
            group.pending_members.insert(member_id.clone());
            self.timers.schedule(
                TimerKey::PendingMember {
                    group_id: request.group_id.clone(),
                    member_id: member_id.clone(),
                },
                now_ms + session_timeout_ms,
            );
            return Err(GroupError::MemberIdRequired { member_id });
        }
        self.add_member_and_rebalance(token, request, member_id, now_ms, effects);
        Ok(())
    }

    fn join_existing_member(
        &mut self,
        token: RequestToken,
        request: JoinGroupRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<(), GroupError> {
        let group_id = request.group_id.clone();
        let member_id = request.member_id.clone();
        let group = self.group_mut(&group_id)?;
        if group.pending_members.remove(&member_id) {
            self.timers.cancel(&TimerKey::PendingMember {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            });
            self.add_member_and_rebalance(token, request, member_id, now_ms, effects);
            return Ok(());
        }
        group.validate_member(&member_id, request.group_instance_id.as_deref())?;
        let member = group
            .members
            .get(&member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        let unchanged = member.matches(&request.protocols);
        match group.state {
            GroupState::PreparingRebalance => {
                self.update_member_and_rebalance(token, request, now_ms, effects)
            }
            GroupState::CompletingRebalance if unchanged => {
                // The member missed the JoinGroup response: send it again.
                let response = current_generation_response(group, &member_id);
                effects.reply(token, Response::Join(Ok(response)));
                Ok(())
            }
            GroupState::Stable if unchanged && !group.is_leader(&member_id) => {
                // A follower with unchanged metadata: let it sync with the current generation.
                let response = current_generation_response(group, &member_id);
                effects.reply(token, Response::Join(Ok(response)));
                Ok(())
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member_and_rebalance(token, request, now_ms, effects)
            }
            GroupState::Empty => Err(GroupError::UnknownMemberId),
            GroupState::Dead => Err(GroupError::CoordinatorNotAvailable),
        }
    }

    fn add_member_and_rebalance(
        &mut self,
        token: RequestToken,
        request: JoinGroupRequest,
        member_id: String,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let join_timeout_ms = self.config().new_member_join_timeout_ms;
        let Some(group) = self.groups.get_mut(&request.group_id) else {
            return;
        };
        if group.state == GroupState::PreparingRebalance
            && group.initial_delay_remaining_ms.is_some()
        {
            group.new_member_added = true;
        }
        if group.members.is_empty() {
            group.protocol_type = Some(request.protocol_type.clone());
        }
        group.add_member(Member {
            member_id: member_id.clone(),
            group_instance_id: request.group_instance_id.clone(),
            client_id: request.client_id.clone(),
            client_host: request.client_host.clone(),
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            session_timeout_ms: request.session_timeout_ms,
            protocols: request.protocols,
            assignment: Bytes::new(),
            awaiting_join: Some(token),
            awaiting_sync: None,
            is_new: true,
            join_sequence: 0,
        });
        // A parked JoinGroup cannot heartbeat; a new member that went away must not hold the
        // rebalance forever, so its join expires on its own.
        self.timers.schedule(
            TimerKey::Heartbeat {
                group_id: request.group_id.clone(),
                member_id,
            },
            now_ms + join_timeout_ms,
        );
        self.maybe_prepare_rebalance_or_complete_join(&request.group_id, now_ms, effects);
    }

    fn update_member_and_rebalance(
        &mut self,
        token: RequestToken,
        request: JoinGroupRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<(), GroupError> {
        let group = self.group_mut(&request.group_id)?;
        let member = group
            .members
            .get_mut(&request.member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        update_member(member, &request);
        if let Some(displaced) = member.awaiting_join.replace(token) {
            effects.reply(
                displaced,
                Response::Join(Err(GroupError::RebalanceInProgress)),
            );
        }
        self.maybe_prepare_rebalance_or_complete_join(&request.group_id, now_ms, effects);
        Ok(())
    }

    /// KIP-345: a static member restarted with a new member id. The old id is fenced; in a
    /// Stable group whose selected protocol does not change, the member gets the current
    /// generation back without a rebalance.
    fn replace_static_member(
        &mut self,
        token: RequestToken,
        request: JoinGroupRequest,
        old_member_id: String,
        new_member_id: String,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<(), GroupError> {
        let group_id = request.group_id.clone();
        let group = self.group_mut(&group_id)?;
        let previous_leader = group.leader_id.clone().unwrap_or_default();
        let mut member = group
            .members
            .remove(&old_member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if let Some(fenced) = member.awaiting_join.take() {
            effects.reply(fenced, Response::Join(Err(GroupError::FencedInstanceId)));
        }
        if let Some(fenced) = member.awaiting_sync.take() {
            effects.reply(fenced, Response::Sync(Err(GroupError::FencedInstanceId)));
        }
        member.member_id = new_member_id.clone();
        update_member(&mut member, &request);
        member.awaiting_join = Some(token);
        if group.pending_sync_members.remove(&old_member_id) {
            group.pending_sync_members.insert(new_member_id.clone());
        }
        if group.is_leader(&old_member_id) {
            group.leader_id = Some(new_member_id.clone());
        }
        if let Some(instance_id) = &member.group_instance_id {
            group
                .static_members
                .insert(instance_id.clone(), new_member_id.clone());
        }
        let session_timeout_ms = i64::from(member.session_timeout_ms);
        group.members.insert(new_member_id.clone(), member);
        self.timers.cancel(&TimerKey::Heartbeat {
            group_id: group_id.clone(),
            member_id: old_member_id,
        });
        self.timers.schedule(
            TimerKey::Heartbeat {
                group_id: group_id.clone(),
                member_id: new_member_id.clone(),
            },
            now_ms + session_timeout_ms,
        );
        let group = self.group_mut(&group_id)?;
        match group.state {
            GroupState::Stable => {
                if group.select_protocol() == group.protocol_name {
                    let is_leader = group.is_leader(&new_member_id);
                    let mut response = current_generation_response(group, &new_member_id);
                    if request.supports_skip_assignment {
                        response.skip_assignment = is_leader;
                    } else {
                        // Before KIP-814 a restarted static leader must not recompute the
                        // assignment: it is told the previous leader id and gets no members.
                        response.members.clear();
                        response.leader = previous_leader;
                    }
                    if let Some(member) = group.members.get_mut(&new_member_id) {
                        member.awaiting_join = None;
                    }
                    effects.records.push(GroupRecord::GroupMetadata {
                        group_id: group_id.clone(),
                        value: Some(group.to_record_value()),
                    });
                    effects.reply(token, Response::Join(Ok(response)));
                } else {
                    self.maybe_prepare_rebalance_or_complete_join(&group_id, now_ms, effects);
                }
            }
            // The leader may already have an assignment naming the old member id: rebalance.
            GroupState::CompletingRebalance => self.prepare_rebalance(&group_id, now_ms, effects),
            GroupState::PreparingRebalance => self.maybe_complete_join(&group_id, now_ms, effects),
            GroupState::Empty | GroupState::Dead => {
                return Err(GroupError::UnknownServerError(
                    "static member in a group without members".into(),
                ))
            }
        }
        Ok(())
    }

    pub(crate) fn group(&self, group_id: &str) -> Result<&Group, GroupError> {
        self.groups.get(group_id).ok_or(GroupError::UnknownMemberId)
    }

    pub(crate) fn group_mut(&mut self, group_id: &str) -> Result<&mut Group, GroupError> {
        self.groups
            .get_mut(group_id)
            .ok_or(GroupError::UnknownMemberId)
    }
}

/// Kafka's `acceptJoiningMember`: `group.max.size` counts members (or, while preparing a
/// rebalance, members already rejoined).
fn accepts_joining_member(group: &Group, member_id: &str, group_size_max: usize) -> bool {
    match group.state {
        GroupState::Empty | GroupState::Dead => true,
        GroupState::PreparingRebalance => {
            group
                .members
                .get(member_id)
                .is_some_and(|member| member.awaiting_join.is_some())
                || group.awaiting_join_count() < group_size_max
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            group.members.contains_key(member_id) || group.members.len() < group_size_max
        }
    }
}

fn update_member(member: &mut Member, request: &JoinGroupRequest) {
    member.protocols = request.protocols.clone();
    member.rebalance_timeout_ms = request.rebalance_timeout_ms;
    member.session_timeout_ms = request.session_timeout_ms;
}

pub(crate) fn current_generation_response(group: &Group, member_id: &str) -> JoinGroupResponse {
    JoinGroupResponse {
        generation_id: group.generation_id,
        protocol_type: group.protocol_type.clone(),
        protocol_name: group.protocol_name.clone(),
        leader: group.leader_id.clone().unwrap_or_default(),
        skip_assignment: false,
        member_id: member_id.to_owned(),
        members: if group.is_leader(member_id) {
            group.join_members()
        } else {
            Vec::new()
        },
    }
}
