//! JoinGroup to a consumer group: a member of the classic protocol joins (or rejoins) a
//! consumer group, which assigns it like any member; its generation is its member epoch
//! (Kafka's `classicGroupJoinToConsumerGroup`). Refused with INCONSISTENT_GROUP_PROTOCOL when
//! `group.consumer.migration.policy` is `disabled`, as Kafka 4.4 refuses it. A static member taking over the last member
//! using the consumer protocol downgrades the group when the policy allows it.

use std::collections::BTreeSet;

use super::draft::Draft;
use super::group::ConsumerMember;
use super::heartbeat::reconcile_member;
use super::subscriptions::metadata_hash;
use super::upgrade::by_topic_id;
use super::TimerAction;
use crate::config::MigrationPolicy;
use crate::core::timers::TimerKey;
use crate::core::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::classic_member_metadata::ClassicMemberMetadata;
use crate::records::consumer_protocol::{decode_subscription, CONSUMER_PROTOCOL_TYPE};
use crate::records::consumer_records::ConsumerRecord;
use crate::types::{JoinGroupRequest, JoinGroupResponse};

impl CoordinatorShard {
    /// Whether a JoinGroup for `group_id` goes to a consumer group: a non-empty one (an empty
    /// consumer group is replaced by a classic group under every policy, as Kafka's
    /// `classicGroupJoin` does).
    pub(crate) fn joins_consumer_group(&self, group_id: &str) -> bool {
        self.consumer_groups
            .get(group_id)
            .is_some_and(|group| !group.members.is_empty())
    }

    pub(crate) fn join_consumer_group(
        &mut self,
        token: RequestToken,
        request: JoinGroupRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<(), GroupError> {
        let Some(group) = self.consumer_groups.get(&request.group_id).cloned() else {
            return Err(GroupError::UnknownMemberId);
        };
        if self.config().consumer_migration_policy == MigrationPolicy::Disabled {
            // "Cannot join the consumer group G with the classic protocol because the group
            // migration is disabled."
            return Err(GroupError::InconsistentGroupProtocol);
        }
        let is_unknown_member = request.member_id.is_empty();
        let member_id = if is_unknown_member {
            uuid::Uuid::new_v4().to_string()
        } else {
            request.member_id.clone()
        };
        // A static member taking over its instance id does not count against the size.
        let replaces_static = request
            .group_instance_id
            .as_deref()
            .is_some_and(|instance_id| group.static_member(instance_id).is_some());
        if !replaces_static
            && group.members.len() >= self.config().consumer_group_size_max
            && !group.members.contains_key(&member_id)
        {
            // "The consumer group has reached its maximum capacity of N members."
            return Err(GroupError::GroupMaxSizeReached);
        }
        if !supports_classic_protocols(&group, &request) {
            // "Member M's protocols are not supported."
            return Err(GroupError::InconsistentGroupProtocol);
        }
        if is_unknown_member
            && request.require_known_member_id
            && request.group_instance_id.is_none()
        {
            return Err(GroupError::MemberIdRequired { member_id });
        }
        let subscription = request
            .protocols
            .first()
            .and_then(|protocol| decode_subscription(&protocol.metadata).ok())
            .ok_or_else(|| {
                GroupError::UnknownServerError(
                    "Malformed embedded consumer protocol in subscription deserialization."
                        .to_owned(),
                )
            })?;

        let mut draft = Draft::new(group.clone());
        let mut timers = Vec::new();
        let replaced = request
            .group_instance_id
            .as_deref()
            .and_then(|instance_id| group.static_member(instance_id))
            .cloned();
        let member = match (&request.group_instance_id, &replaced) {
            (None, _) => group
                .members
                .get(&member_id)
                .cloned()
                .unwrap_or_else(|| ConsumerMember::new(&member_id)),
            (Some(_), None) if is_unknown_member => ConsumerMember::new(&member_id),
            // "Instance id I is unknown."
            (Some(_), None) => return Err(GroupError::UnknownMemberId),
            (Some(_), Some(old)) if is_unknown_member => {
                self.replace_static_consumer_member(&mut draft, old, &member_id, &mut timers)
            }
            (Some(_), Some(old)) if old.member_id != member_id => {
                // "Static member M with instance id I was fenced by member N."
                return Err(GroupError::FencedInstanceId);
            }
            (Some(_), Some(old)) => old.clone(),
        };
        let downgrade = replaced
            .as_ref()
            .is_some_and(|old| self.may_downgrade_replacing(&group, old));

        // 1. The member's subscription and classic metadata.
        let mut updated = member.clone();
        if let Some(instance_id) = &request.group_instance_id {
            updated.instance_id = Some(instance_id.clone());
        }
        if let Some(rack_id) = &subscription.rack_id {
            updated.rack_id = Some(rack_id.clone());
        }
        if request.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
        }
        let mut names = subscription.topics.clone();
        names.sort();
        names.dedup();
        updated.subscribed_topic_names = names;
        // A classic member cannot subscribe with a regular expression.
        updated.subscribed_topic_regex = None;
        updated.client_id = request.client_id.clone();
        updated.client_host = request.client_host.clone();
        updated.classic_member_metadata = Some(ClassicMemberMetadata {
            session_timeout_ms: request.session_timeout_ms,
            supported_protocols: request.protocols.clone(),
        });
        let is_new = !draft.group.members.contains_key(&member_id);
        if is_new || updated.metadata_value() != member.metadata_value() {
            draft.push(ConsumerRecord::MemberMetadata {
                group_id: draft.group.group_id.clone(),
                member_id: member_id.clone(),
                value: Some(updated.metadata_value()),
            });
        }
        let mut bump = updated.subscribed_topic_names != member.subscribed_topic_names;
        if let Some(old_regex) = &member.subscribed_topic_regex {
            // A static member subscribed by regular expression was replaced.
            bump = true;
            if draft.group.regex_subscribers(old_regex) == 0
                && draft.group.regexes.contains_key(old_regex)
            {
                draft.push(ConsumerRecord::RegularExpression {
                    group_id: draft.group.group_id.clone(),
                    regex: old_regex.clone(),
                    value: None,
                });
            }
        }
        let subscription_changed = bump;
        let hash = metadata_hash(&draft.group.subscribed_topic_names(), &self.topics);
        bump |= hash != draft.group.metadata_hash;
        if bump {
            draft.bump_epoch(&self.topics);
            if draft.group.has_partition_metadata_record {
                draft.push(ConsumerRecord::PartitionMetadata {
                    group_id: draft.group.group_id.clone(),
                    value: None,
                });
            }
        }
        let owned: Vec<(uuid::Uuid, Vec<i32>)> =
            by_topic_id(&subscription.owned_partitions, &self.topics)
                .into_iter()
                .map(|(topic_id, partitions)| (topic_id, partitions.into_iter().collect()))
                .collect();

        let mut reconciled = draft
            .group
            .members
            .get(&member_id)
            .cloned()
            .unwrap_or_else(|| updated.clone());
        if downgrade {
            // 2. Without a subscription change the member reconciles with the current target
            // (with one, the classic group rebalances anyway); 3. the group becomes classic.
            if !bump {
                reconciled = self.reconcile_classic(&mut draft, &reconciled, &owned, false)?;
            }
            // The conversion saves the live members' timers first, then cancels them (the
            // replaced member's too), so the timer changes of the replacement come after it.
            let records = self.convert_to_classic_group(
                &draft.group,
                &BTreeSet::new(),
                bump,
                now_ms,
                effects,
            );
            self.apply_timer_actions(timers);
            effects.records.extend(draft.records);
            effects.records.extend(records);
        } else {
            // 2. A new target when the group epoch moved; 3. reconcile the member.
            if draft.group.group_epoch > draft.group.assignment_epoch
                && self.may_compute_target(&draft.group, now_ms)
            {
                self.update_target_assignment(&mut draft, now_ms)?;
                reconciled = draft
                    .group
                    .members
                    .get(&member_id)
                    .cloned()
                    .unwrap_or(reconciled);
            }
            reconciled =
                self.reconcile_classic(&mut draft, &reconciled, &owned, subscription_changed)?;
            let group_id = draft.group.group_id.clone();
            timers.push(TimerAction::Cancel(TimerKey::ConsumerJoin {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            }));
            timers.push(TimerAction::Schedule(
                TimerKey::ConsumerSession {
                    group_id: group_id.clone(),
                    member_id: member_id.clone(),
                },
                now_ms + i64::from(request.session_timeout_ms),
            ));
            timers.push(TimerAction::Schedule(
                TimerKey::ConsumerSync {
                    group_id,
                    member_id: member_id.clone(),
                },
                now_ms + i64::from(request.rebalance_timeout_ms.max(0)),
            ));
            self.apply_timer_actions(timers);
            effects.records.extend(draft.records);
        }
        let protocol_name = request
            .protocols
            .first()
            .map(|protocol| protocol.name.clone());
        effects.reply(
            token,
            Response::Join(Ok(JoinGroupResponse {
                generation_id: reconciled.member_epoch,
                protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_owned()),
                protocol_name,
                leader: String::new(),
                skip_assignment: false,
                member_id,
                members: Vec::new(),
            })),
        );
        Ok(())
    }

    /// One reconciliation step of a classic member, which reports what it owns in its
    /// subscription; classic members have no rebalance timer (they rejoin instead).
    fn reconcile_classic(
        &self,
        draft: &mut Draft,
        member: &ConsumerMember,
        owned: &[(uuid::Uuid, Vec<i32>)],
        subscription_changed: bool,
    ) -> Result<ConsumerMember, GroupError> {
        let reconciled = reconcile_member(
            &draft.group,
            member,
            &self.topics,
            Some(owned),
            subscription_changed,
        )?;
        if reconciled != *member {
            draft.push(ConsumerRecord::CurrentMemberAssignment {
                group_id: draft.group.group_id.clone(),
                member_id: member.member_id.clone(),
                value: Some(reconciled.assignment_value()),
            });
        }
        Ok(reconciled)
    }
}

/// Kafka's `supportsClassicProtocols`: the "consumer" protocol type, and a protocol every
/// classic member of the group supports.
fn supports_classic_protocols(
    group: &super::group::ConsumerGroup,
    request: &JoinGroupRequest,
) -> bool {
    if request.protocol_type != CONSUMER_PROTOCOL_TYPE {
        return false;
    }
    if group.members.is_empty() {
        return !request.protocols.is_empty();
    }
    request.protocols.iter().any(|protocol| {
        group
            .members
            .values()
            .filter_map(|member| member.classic_member_metadata.as_ref())
            .all(|classic| {
                classic
                    .supported_protocols
                    .iter()
                    .any(|supported| supported.name == protocol.name)
            })
    })
}
