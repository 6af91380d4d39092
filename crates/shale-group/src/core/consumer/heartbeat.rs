//! ConsumerGroupHeartbeat: joining, heartbeating, subscription changes, leaving, and the
//! reconciliation each heartbeat drives (Kafka's `consumerGroupHeartbeat`).

use super::draft::Draft;
use super::group::{
    ConsumerGroup, ConsumerMember, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
use super::reconcile::{reconcile, ReconcileInput};
use super::subscriptions::{compile_regex, compute_target, metadata_hash, resolve_regex};
use super::TimerAction;
use crate::consumer_types::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use crate::core::timers::TimerKey;
use crate::core::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::consumer_records::{
    ConsumerRecord, RegularExpressionValue, TargetAssignmentMetadataValue,
};
use crate::records::GroupRecord;

/// A heartbeat's outcome before it is applied: records to write, timers to set, the answer.
struct Outcome {
    records: Vec<GroupRecord>,
    timers: Vec<TimerAction>,
    response: ConsumerGroupHeartbeatResponse,
}

impl CoordinatorShard {
    pub fn consumer_group_heartbeat(
        &mut self,
        token: RequestToken,
        request: ConsumerGroupHeartbeatRequest,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        let result = self
            .consumer_heartbeat_outcome(request, now_ms)
            .map(|outcome| {
                effects.records.extend(outcome.records);
                self.apply_timer_actions(outcome.timers);
                outcome.response
            });
        effects.reply(token, Response::ConsumerHeartbeat(result));
        effects
    }

    fn consumer_heartbeat_outcome(
        &mut self,
        mut request: ConsumerGroupHeartbeatRequest,
        now_ms: i64,
    ) -> Result<Outcome, GroupError> {
        validate_request(&request, &self.config().consumer_assignors)?;
        if let Some(regex) = &request.subscribed_topic_regex {
            if !regex.is_empty() {
                compile_regex(regex)?;
            }
        }
        match request.member_epoch {
            LEAVE_GROUP_MEMBER_EPOCH | LEAVE_GROUP_STATIC_MEMBER_EPOCH => {
                return self.consumer_leave(&request);
            }
            _ => {}
        }
        if request.member_id.is_empty() {
            // ConsumerGroupHeartbeat v0: the coordinator names a joining member.
            request.member_id = uuid::Uuid::new_v4().to_string();
        }
        let mut records = Vec::new();
        let group = self.consumer_group_for_heartbeat(&request, &mut records)?;
        let mut draft = Draft::new(group);
        draft.records = records;
        let mut timers = Vec::new();
        let previous = self.member_for_heartbeat(&mut draft, &request, &mut timers)?;
        let member_id = request.member_id.clone();

        // 1. The member's subscription and details.
        let mut updated = previous.clone();
        update_member(&mut updated, &request);
        let is_new = !draft.group.members.contains_key(&member_id);
        let mut bump = is_new
            || updated.subscribed_topic_names != previous.subscribed_topic_names
            || updated.subscribed_topic_regex != previous.subscribed_topic_regex;
        let default_assignor = self
            .config()
            .consumer_assignors
            .first()
            .cloned()
            .unwrap_or_default();
        let assignor_before = draft.group.preferred_assignor(&default_assignor);
        if is_new || updated.metadata_value() != previous.metadata_value() {
            draft.push(ConsumerRecord::MemberMetadata {
                group_id: draft.group.group_id.clone(),
                member_id: member_id.clone(),
                value: Some(updated.metadata_value()),
            });
        }
        // Kafka's `hasPreferredServerAssignorChanged`: the group assigns with another assignor.
        bump |= draft.group.preferred_assignor(&default_assignor) != assignor_before;
        if let Some(regex) = &updated.subscribed_topic_regex {
            if !draft.group.regexes.contains_key(regex) {
                let resolved = RegularExpressionValue {
                    topics: resolve_regex(regex, &self.topics),
                    version: self.topics_version,
                    timestamp_ms: now_ms,
                };
                draft.push(ConsumerRecord::RegularExpression {
                    group_id: draft.group.group_id.clone(),
                    regex: regex.clone(),
                    value: Some(resolved),
                });
            }
        }
        if let Some(old_regex) = &previous.subscribed_topic_regex {
            if updated.subscribed_topic_regex.as_ref() != Some(old_regex)
                && draft.group.regex_subscribers(old_regex) == 0
                && draft.group.regexes.contains_key(old_regex)
            {
                draft.push(ConsumerRecord::RegularExpression {
                    group_id: draft.group.group_id.clone(),
                    regex: old_regex.clone(),
                    value: None,
                });
            }
        }
        let hash = metadata_hash(&draft.group.subscribed_topic_names(), &self.topics);
        bump |= hash != draft.group.metadata_hash;
        if bump {
            draft.bump_epoch(&self.topics);
        }

        // 2. A new target assignment when the group epoch moved.
        if draft.group.group_epoch > draft.group.assignment_epoch {
            self.update_target_assignment(&mut draft, now_ms)?;
        }

        // 3. Reconcile the member towards its target.
        let current = draft
            .group
            .members
            .get(&member_id)
            .cloned()
            .unwrap_or_else(|| updated.clone());
        let reconciled =
            reconcile_member(&draft.group, &current, request.owned_partitions.as_deref());
        if reconciled != current {
            draft.push(ConsumerRecord::CurrentMemberAssignment {
                group_id: draft.group.group_id.clone(),
                member_id: member_id.clone(),
                value: Some(reconciled.assignment_value()),
            });
            let key = TimerKey::ConsumerRebalance {
                group_id: draft.group.group_id.clone(),
                member_id: member_id.clone(),
            };
            if reconciled.state == super::group::MemberState::UnrevokedPartitions {
                let deadline_ms = now_ms + i64::from(reconciled.rebalance_timeout_ms.max(0));
                timers.push(TimerAction::Schedule(key, deadline_ms));
            } else {
                timers.push(TimerAction::Cancel(key));
            }
        }
        let session_ms = self.consumer_session_timeout_ms(&draft.group.group_id);
        timers.push(TimerAction::Schedule(
            TimerKey::ConsumerSession {
                group_id: draft.group.group_id.clone(),
                member_id: member_id.clone(),
            },
            now_ms + i64::from(session_ms),
        ));

        // The assignment is sent on (re)joins, full requests, and when it changed.
        let full_request = request.rebalance_timeout_ms != -1
            && (request.subscribed_topic_names.is_some()
                || request.subscribed_topic_regex.is_some())
            && request.owned_partitions.is_some();
        let changed = reconciled.assigned_partitions() != previous.assigned_partitions();
        let assignment = (request.member_epoch == 0 || full_request || changed)
            .then(|| reconciled.assigned_partitions());
        Ok(Outcome {
            records: draft.records,
            timers,
            response: ConsumerGroupHeartbeatResponse {
                member_id,
                member_epoch: reconciled.member_epoch,
                heartbeat_interval_ms: self.consumer_heartbeat_interval_ms(&draft.group.group_id),
                assignment,
            },
        })
    }

    /// Kafka's `getOrMaybeCreateConsumerGroup`: a joining member creates the group; an empty
    /// classic group is converted (its metadata is deleted, its offsets stay).
    fn consumer_group_for_heartbeat(
        &self,
        request: &ConsumerGroupHeartbeatRequest,
        records: &mut Vec<GroupRecord>,
    ) -> Result<ConsumerGroup, GroupError> {
        if let Some(group) = self.consumer_groups.get(&request.group_id) {
            return Ok(group.clone());
        }
        let joining = request.member_epoch == 0;
        match self.groups.get(&request.group_id) {
            Some(classic) => {
                let empty = classic.members.is_empty() && classic.pending_members.is_empty();
                if !joining || !empty {
                    // Migration hook: a live classic group would be upgraded here when
                    // `group.consumer.migration.policy` allows it; Shale does not convert yet.
                    return Err(GroupError::GroupIdNotFound);
                }
                records.push(GroupRecord::GroupMetadata {
                    group_id: request.group_id.clone(),
                    value: None,
                });
            }
            None if !joining => return Err(GroupError::GroupIdNotFound),
            None => {}
        }
        Ok(ConsumerGroup::new(&request.group_id))
    }

    /// Finds (or admits) the member the heartbeat is from, checking its epoch; a static member
    /// rejoining replaces its previous instance, keeping its assignment.
    fn member_for_heartbeat(
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
        if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            // "Static member X with instance id I cannot join the group because the instance
            // id is owned by Y member."
            return Err(GroupError::UnreleasedInstanceId);
        }
        // The new instance takes over the old one's subscription, partitions and target.
        let target = group.target.get(&old.member_id).cloned();
        draft.remove_member(&old.member_id);
        let mut replacement = ConsumerMember {
            member_id: request.member_id.clone(),
            member_epoch: 0,
            previous_member_epoch: 0,
            state: super::group::MemberState::Stable,
            pending_revocation: Default::default(),
            ..old.clone()
        };
        replacement.assigned = old.assigned.clone();
        draft.push(ConsumerRecord::MemberMetadata {
            group_id: draft.group.group_id.clone(),
            member_id: request.member_id.clone(),
            value: Some(replacement.metadata_value()),
        });
        // Kafka's `replaceMember` order: subscription, target, current assignment.
        draft.push(ConsumerRecord::TargetAssignmentMember {
            group_id: draft.group.group_id.clone(),
            member_id: request.member_id.clone(),
            value: Some(target.unwrap_or_default()),
        });
        draft.push(ConsumerRecord::CurrentMemberAssignment {
            group_id: draft.group.group_id.clone(),
            member_id: request.member_id.clone(),
            value: Some(replacement.assignment_value()),
        });
        for key in self.consumer_member_timers(&draft.group.group_id, &old.member_id) {
            timers.push(TimerAction::Cancel(key));
        }
        Ok(replacement)
    }

    /// Runs the group's assignor and writes the members' new targets and the assignment epoch.
    pub(crate) fn update_target_assignment(
        &self,
        draft: &mut Draft,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        let default = self
            .config()
            .consumer_assignors
            .first()
            .cloned()
            .unwrap_or_default();
        let name = draft.group.preferred_assignor(&default);
        let assignor =
            (self.consumer.assignors)(&name).ok_or(GroupError::UnsupportedAssignor(name))?;
        let target = compute_target(&draft.group, &self.topics, assignor)?;
        let group_id = draft.group.group_id.clone();
        let member_ids: Vec<String> = draft.group.members.keys().cloned().collect();
        for member_id in member_ids {
            let new = target.get(&member_id).cloned().unwrap_or_default();
            let old = draft
                .group
                .target
                .get(&member_id)
                .cloned()
                .unwrap_or_default();
            if new != old {
                draft.push(ConsumerRecord::TargetAssignmentMember {
                    group_id: group_id.clone(),
                    member_id,
                    value: Some(new),
                });
            }
        }
        let assignment_epoch = draft.group.group_epoch;
        draft.push(ConsumerRecord::TargetAssignmentMetadata {
            group_id,
            value: Some(TargetAssignmentMetadataValue {
                assignment_epoch,
                assignment_timestamp_ms: now_ms,
            }),
        });
        Ok(())
    }

    /// A member leaving (-1), or a static member leaving for a while (-2).
    fn consumer_leave(
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
            let mut left = member.clone();
            left.previous_member_epoch = left.member_epoch;
            left.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
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

/// The member one reconciliation step further, against the group's current target.
pub(crate) fn reconcile_member(
    group: &ConsumerGroup,
    member: &ConsumerMember,
    owned: Option<&[(uuid::Uuid, Vec<i32>)]>,
) -> ConsumerMember {
    if member.is_reconciled_to(group.assignment_epoch) {
        return member.clone();
    }
    let empty = Default::default();
    let owners = group.owners();
    reconcile(
        member,
        &ReconcileInput {
            target_epoch: group.assignment_epoch,
            target: group.target.get(&member.member_id).unwrap_or(&empty),
            owners: &owners,
            owned,
        },
    )
}

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid` (the service's checks).
fn validate_request(
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
fn update_member(member: &mut ConsumerMember, request: &ConsumerGroupHeartbeatRequest) {
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
