//! ConsumerGroupHeartbeat: joining, heartbeating, subscription changes, leaving, and the
//! reconciliation each heartbeat drives (Kafka's `consumerGroupHeartbeat`).

use super::admission::{update_member, validate_request};
use super::draft::Draft;
use super::group::{
    ConsumerGroup, ConsumerMember, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
use super::reconcile::{reconcile, ReconcileInput};
use super::subscriptions::{compile_regex, compute_target, metadata_hash, resolve_regex};
use super::TimerAction;
use crate::assignor::TopicsImage;
use crate::consumer_types::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use crate::core::timers::TimerKey;
use crate::core::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::consumer_records::{
    ConsumerRecord, RegularExpressionValue, TargetAssignmentMetadataValue,
};
use crate::records::GroupRecord;

/// A heartbeat's outcome before it is applied: records to write, timers to set, the answer.
pub(super) struct Outcome {
    pub(super) records: Vec<GroupRecord>,
    pub(super) timers: Vec<TimerAction>,
    pub(super) response: ConsumerGroupHeartbeatResponse,
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
            .consumer_heartbeat_outcome(request, now_ms, &mut effects)
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
        effects: &mut Effects,
    ) -> Result<Outcome, GroupError> {
        validate_request(&request, &self.config().consumer_assignors)?;
        if let Some(regex) = &request.subscribed_topic_regex {
            if !regex.is_empty() {
                compile_regex(regex)?;
            }
        }
        match request.member_epoch {
            LEAVE_GROUP_MEMBER_EPOCH | LEAVE_GROUP_STATIC_MEMBER_EPOCH => {
                return self.consumer_leave(&request, now_ms, effects);
            }
            _ => {}
        }
        if request.member_id.is_empty() {
            // ConsumerGroupHeartbeat v0: the coordinator names a joining member.
            request.member_id = uuid::Uuid::new_v4().to_string();
        }
        let mut timers = Vec::new();
        let (mut draft, upgraded) =
            self.consumer_group_for_heartbeat(&request, now_ms, &mut timers)?;
        let previous = self.member_for_heartbeat(&mut draft, &request, &mut timers)?;
        let member_id = request.member_id.clone();

        // 1. The member's subscription and details.
        let mut updated = previous.clone();
        update_member(&mut updated, &request);
        let is_new = !draft.group.members.contains_key(&member_id);
        // Kafka's `hasMemberSubscriptionChanged`: a new member moves the epoch only by what it
        // subscribes to (one subscribing to nothing joins the current epoch).
        let subscription_changed = updated.subscribed_topic_names
            != previous.subscribed_topic_names
            || updated.subscribed_topic_regex != previous.subscribed_topic_regex;
        let mut bump = subscription_changed;
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
            if draft.group.has_partition_metadata_record {
                draft.push(ConsumerRecord::PartitionMetadata {
                    group_id: draft.group.group_id.clone(),
                    value: None,
                });
            }
        }

        // 2. A new target assignment when the group epoch moved, at most once per
        // `group.consumer.assignment.interval.ms`.
        if draft.group.group_epoch > draft.group.assignment_epoch
            && self.may_compute_target(&draft.group, now_ms)
        {
            self.update_target_assignment(&mut draft, now_ms)?;
        }

        // 3. Reconcile the member towards its target.
        let current = draft
            .group
            .members
            .get(&member_id)
            .cloned()
            .unwrap_or_else(|| updated.clone());
        let reconciled = reconcile_member(
            &draft.group,
            &current,
            &self.topics,
            request.owned_partitions.as_deref(),
            subscription_changed,
        )?;
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
        if upgraded {
            self.release_upgraded_classic_requests(&draft.group.group_id, effects);
        }
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
}

/// The member one reconciliation step further, against the group's current target (Kafka's
/// `maybeReconcile`).
pub(crate) fn reconcile_member(
    group: &ConsumerGroup,
    member: &ConsumerMember,
    topics: &TopicsImage,
    owned: Option<&[(uuid::Uuid, Vec<i32>)]>,
    subscription_changed: bool,
) -> Result<ConsumerMember, GroupError> {
    if !subscription_changed && member.is_reconciled_to(group.assignment_epoch) {
        return Ok(member.clone());
    }
    let empty = Default::default();
    let owners = group.owners();
    let subscribed_topic_ids = group.member_topic_ids(member, topics);
    reconcile(
        member,
        &ReconcileInput {
            target_epoch: group.assignment_epoch,
            target: group.target.get(&member.member_id).unwrap_or(&empty),
            owners: &owners,
            owned,
            subscribed_topic_ids: &subscribed_topic_ids,
            subscription_changed,
        },
    )
}
