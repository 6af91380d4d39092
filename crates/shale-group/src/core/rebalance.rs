//! The rebalance: PreparingRebalance (members rejoin, bounded by the rebalance timeout or, for
//! a group that was empty, the initial rebalance delay), then CompletingRebalance (the leader
//! computes assignments) until SyncGroup makes the group Stable.

use bytes::Bytes;

use super::group::{Group, GroupState};
use super::join::current_generation_response;
use super::timers::TimerKey;
use super::{CoordinatorShard, Effects, Response};
use crate::error::GroupError;
use crate::records::GroupRecord;

impl CoordinatorShard {
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
