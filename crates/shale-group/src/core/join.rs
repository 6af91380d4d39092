//! JoinGroup and SyncGroup, and the rebalance they drive: PreparingRebalance (members rejoin,
//! bounded by the rebalance timeout or, for a group that was empty, the initial rebalance
//! delay), CompletingRebalance (the leader computes assignments), Stable.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::group::{Group, GroupState, Member};
use super::timers::TimerKey;
use super::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::GroupRecord;
use crate::types::{JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse};

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

    pub(crate) fn maybe_prepare_rebalance_or_complete_join(
        &mut self,
        group_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let can_rebalance = self.groups.get(group_id).is_some_and(|group| {
            matches!(
                group.state,
                GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
            )
        });
        if can_rebalance {
            self.prepare_rebalance(group_id, now_ms, effects);
        } else {
            self.maybe_complete_join(group_id, now_ms, effects);
        }
    }

    pub(crate) fn prepare_rebalance(&mut self, group_id: &str, now_ms: i64, effects: &mut Effects) {
        let initial_delay_ms = i64::from(self.config().initial_rebalance_delay_ms);
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if group.state == GroupState::CompletingRebalance {
            for member in group.members.values_mut() {
                member.assignment = Bytes::new();
                if let Some(token) = member.awaiting_sync.take() {
                    effects.reply(token, Response::Sync(Err(GroupError::RebalanceInProgress)));
                }
            }
        }
        group.pending_sync_members.clear();
        self.timers.cancel(&TimerKey::Sync {
            group_id: group_id.to_owned(),
        });
        let is_initial = group.state == GroupState::Empty;
        group.transition(GroupState::PreparingRebalance, now_ms);
        let join_timer = TimerKey::Join {
            group_id: group_id.to_owned(),
        };
        if is_initial {
            // Even without a delay the join completes from the timer, not inline, so members
            // arriving at the same moment share the first generation (as Kafka).
            let initial_delay_ms = initial_delay_ms.max(0);
            group.new_member_added = false;
            group.initial_delay_remaining_ms =
                Some((group.rebalance_timeout_ms() - initial_delay_ms).max(0));
            self.timers.schedule(join_timer, now_ms + initial_delay_ms);
        } else {
            let deadline = now_ms + group.rebalance_timeout_ms();
            self.timers.schedule(join_timer, deadline);
            self.maybe_complete_join(group_id, now_ms, effects);
        }
    }

    /// Completes the join phase once every member rejoined, except during the initial delayed
    /// join, which only its timer ends.
    pub(crate) fn maybe_complete_join(
        &mut self,
        group_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let initial = self
            .groups
            .get(group_id)
            .is_some_and(|group| group.initial_delay_remaining_ms.is_some());
        if !initial {
            self.complete_join_if_all_joined(group_id, now_ms, effects);
        }
    }

    /// After a member or pending member is removed: complete the join phase if everybody left
    /// has rejoined, even during the initial delay.
    pub(crate) fn complete_join_if_all_joined(
        &mut self,
        group_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let ready = self.groups.get(group_id).is_some_and(|group| {
            group.state == GroupState::PreparingRebalance && group.has_all_members_joined()
        });
        if ready {
            self.complete_join(group_id, now_ms, effects);
        }
    }

    pub(crate) fn on_join_timer(&mut self, group_id: &str, now_ms: i64, effects: &mut Effects) {
        let initial_delay_ms = i64::from(self.config().initial_rebalance_delay_ms);
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if group.state != GroupState::PreparingRebalance {
            return;
        }
        if let Some(remaining_ms) = group.initial_delay_remaining_ms {
            if group.new_member_added && remaining_ms > 0 {
                // Members are still arriving: wait one more delay, within the rebalance timeout.
                group.new_member_added = false;
                let delay_ms = initial_delay_ms.min(remaining_ms);
                group.initial_delay_remaining_ms = Some((remaining_ms - initial_delay_ms).max(0));
                self.timers.schedule(
                    TimerKey::Join {
                        group_id: group_id.to_owned(),
                    },
                    now_ms + delay_ms,
                );
                return;
            }
        }
        self.complete_join(group_id, now_ms, effects);
    }

    /// Ends the join phase: members that did not rejoin are removed (static ones are kept), a new
    /// generation starts, and every member gets its JoinGroup response.
    pub(crate) fn complete_join(&mut self, group_id: &str, now_ms: i64, effects: &mut Effects) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if group.state == GroupState::Dead {
            return;
        }
        self.timers.cancel(&TimerKey::Join {
            group_id: group_id.to_owned(),
        });
        group.initial_delay_remaining_ms = None;
        group.new_member_added = false;
        let gone: Vec<String> = group
            .members
            .values()
            .filter(|member| member.awaiting_join.is_none() && member.group_instance_id.is_none())
            .map(|member| member.member_id.clone())
            .collect();
        for member_id in gone {
            if let Some(mut member) = group.remove_member(&member_id) {
                if let Some(token) = member.awaiting_sync.take() {
                    effects.reply(token, Response::Sync(Err(GroupError::UnknownMemberId)));
                }
            }
            self.timers.cancel(&TimerKey::Heartbeat {
                group_id: group_id.to_owned(),
                member_id,
            });
        }
        if !elect_joined_leader(group) && !group.members.is_empty() {
            // Only static members that have not rejoined remain: wait for them or for their
            // session timeouts.
            let deadline = now_ms + group.rebalance_timeout_ms();
            self.timers.schedule(
                TimerKey::Join {
                    group_id: group_id.to_owned(),
                },
                deadline,
            );
            return;
        }
        group.generation_id = group.generation_id.wrapping_add(1);
        group.pending_sync_members.clear();
        if group.members.is_empty() {
            group.protocol_name = None;
            group.subscribed_topics = None;
            group.leader_id = None;
            group.transition(GroupState::Empty, now_ms);
            effects.records.push(GroupRecord::GroupMetadata {
                group_id: group_id.to_owned(),
                value: Some(group.to_record_value()),
            });
            return;
        }
        group.protocol_name = group.select_protocol();
        group.subscribed_topics = group.compute_subscribed_topics();
        group.transition(GroupState::CompletingRebalance, now_ms);
        let member_ids: Vec<String> = group
            .members_in_join_order()
            .into_iter()
            .map(|member| member.member_id.clone())
            .collect();
        let mut heartbeats = Vec::new();
        for member_id in member_ids {
            let response = current_generation_response(group, &member_id);
            if let Some(member) = group.members.get_mut(&member_id) {
                if let Some(token) = member.awaiting_join.take() {
                    effects.reply(token, Response::Join(Ok(response)));
                }
                member.is_new = false;
                heartbeats.push((member_id.clone(), i64::from(member.session_timeout_ms)));
            }
            group.pending_sync_members.insert(member_id);
        }
        let sync_deadline = now_ms + group.rebalance_timeout_ms();
        for (member_id, session_timeout_ms) in heartbeats {
            self.timers.schedule(
                TimerKey::Heartbeat {
                    group_id: group_id.to_owned(),
                    member_id,
                },
                now_ms + session_timeout_ms,
            );
        }
        self.timers.schedule(
            TimerKey::Sync {
                group_id: group_id.to_owned(),
            },
            sync_deadline,
        );
    }

    /// Members that got their JoinGroup response but did not sync within the rebalance timeout
    /// are removed and the group rebalances.
    pub(crate) fn on_pending_sync_expired(
        &mut self,
        group_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if !matches!(
            group.state,
            GroupState::CompletingRebalance | GroupState::Stable
        ) || group.pending_sync_members.is_empty()
        {
            return;
        }
        let laggards: Vec<String> = group.pending_sync_members.iter().cloned().collect();
        for member_id in laggards {
            if let Some(mut member) = group.remove_member(&member_id) {
                if let Some(token) = member.awaiting_join.take() {
                    effects.reply(token, Response::Join(Err(GroupError::UnknownMemberId)));
                }
            }
            self.timers.cancel(&TimerKey::Heartbeat {
                group_id: group_id.to_owned(),
                member_id,
            });
        }
        self.prepare_rebalance(group_id, now_ms, effects);
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

/// SyncGroup v5+ names the protocol type and name; only a mismatch of two known values counts.
fn is_protocol_inconsistent(requested: Option<&str>, current: Option<&str>) -> bool {
    matches!((requested, current), (Some(requested), Some(current)) if requested != current)
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

/// Makes sure the leader is a member that rejoined; false when no member rejoined.
fn elect_joined_leader(group: &mut Group) -> bool {
    let Some(leader_id) = group.leader_id.clone() else {
        return true;
    };
    if group
        .members
        .get(&leader_id)
        .is_some_and(|leader| leader.awaiting_join.is_some())
    {
        return true;
    }
    let next = group
        .members_in_join_order()
        .into_iter()
        .find(|member| member.awaiting_join.is_some())
        .map(|member| member.member_id.clone());
    match next {
        Some(next) => {
            group.leader_id = Some(next);
            true
        }
        None => false,
    }
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
