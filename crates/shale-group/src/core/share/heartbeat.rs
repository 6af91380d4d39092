//! ShareGroupHeartbeat: joining, heartbeating, subscription changes and leaving (Kafka 4.4's
//! `shareGroupHeartbeat`), and the share-partitions whose state must be initialized.

use std::collections::{BTreeMap, BTreeSet};

use super::group::{ShareGroup, ShareMember, LEAVE_GROUP_MEMBER_EPOCH};
use super::{share_session_key, ShareDraft};
use crate::assignor::{simple, AssignmentMember, AssignmentSpec, MemberAssignment};
use crate::core::consumer::{metadata_hash, TimerAction};
use crate::core::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::share_records::{ShareRecord, ShareTargetAssignmentMetadataValue};
use crate::share_types::{
    ShareGroupHeartbeatInput, ShareGroupHeartbeatOutcome, ShareGroupHeartbeatResponse,
};

/// A refusal with Kafka's message.
type Refusal = (GroupError, String);

fn invalid(message: &str) -> Refusal {
    (
        GroupError::InvalidRequest(message.to_owned()),
        message.to_owned(),
    )
}

/// Kafka's `throwIfShareGroupHeartbeatRequestIsInvalid`.
fn validate(request: &ShareGroupHeartbeatInput) -> Result<(), Refusal> {
    if request.member_id.is_empty() {
        return Err(invalid("MemberId can't be empty."));
    }
    if request.group_id.is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    if request.rack_id.as_deref() == Some("") {
        return Err(invalid("RackId can't be empty."));
    }
    if request.member_epoch == 0 {
        if request
            .subscribed_topic_names
            .as_ref()
            .is_none_or(|names| names.is_empty())
        {
            return Err(invalid(
                "SubscribedTopicNames must be set in first request.",
            ));
        }
    } else if request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH {
        return Err(invalid("MemberEpoch is invalid."));
    }
    Ok(())
}

fn unknown_member(member_id: &str, group_id: &str) -> Refusal {
    (
        GroupError::UnknownMemberId,
        format!("Member {member_id} is not a member of group {group_id}."),
    )
}

/// What a heartbeat decided before it is applied.
struct Decided {
    draft: ShareDraft,
    timers: Vec<TimerAction>,
    outcome: ShareGroupHeartbeatOutcome,
}

impl CoordinatorShard {
    pub fn share_group_heartbeat(
        &mut self,
        token: RequestToken,
        request: ShareGroupHeartbeatInput,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        let outcome = match self.decide_share_heartbeat(request, now_ms) {
            Ok(decided) => {
                effects.records.extend(decided.draft.records);
                self.apply_timer_actions(decided.timers);
                decided.outcome
            }
            Err((error, message)) => ShareGroupHeartbeatOutcome {
                response: ShareGroupHeartbeatResponse::refused(error, message),
                initialize: None,
            },
        };
        effects.reply(token, Response::ShareHeartbeat(Ok(outcome)));
        effects
    }

    /// A group id taken by a classic or consumer group.
    fn is_other_group(&self, group_id: &str) -> bool {
        self.groups.contains_key(group_id) || self.consumer_groups.contains_key(group_id)
    }

    /// Kafka's `shareGroup(groupId)`: the existing share group.
    pub(crate) fn existing_share_group(&self, group_id: &str) -> Result<&ShareGroup, Refusal> {
        match self.share_groups.get(group_id) {
            Some(group) => Ok(group),
            None if self.is_other_group(group_id) => Err((
                GroupError::GroupIdNotFound,
                format!("Group {group_id} is not a share group."),
            )),
            None => Err((
                GroupError::GroupIdNotFound,
                format!("Group {group_id} not found."),
            )),
        }
    }

    fn decide_share_heartbeat(
        &self,
        request: ShareGroupHeartbeatInput,
        now_ms: i64,
    ) -> Result<Decided, Refusal> {
        validate(&request)?;
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH {
            return self.share_leave(&request, now_ms);
        }
        let group_id = request.group_id.clone();
        let member_id = request.member_id.clone();
        let joining = request.member_epoch == 0;
        let group = match self.share_groups.get(&group_id) {
            Some(group) => group.clone(),
            None if self.is_other_group(&group_id) => {
                return Err((
                    GroupError::GroupIdNotFound,
                    format!("Group {group_id} is not a share group."),
                ))
            }
            None if joining => ShareGroup::new(&group_id),
            None => {
                return Err((
                    GroupError::GroupIdNotFound,
                    format!("Share group {group_id} not found."),
                ))
            }
        };
        let size_max = self.config().share_group_size_max;
        if group.members.len() >= size_max && !group.members.contains_key(&member_id) {
            return Err((
                GroupError::GroupMaxSizeReached,
                format!("The share group has reached its maximum capacity of {size_max} members."),
            ));
        }
        let previous = match group.members.get(&member_id) {
            Some(member) => member.clone(),
            None if joining => ShareMember::new(&member_id),
            None => return Err(unknown_member(&member_id, &group_id)),
        };
        check_member_epoch(&previous, request.member_epoch)?;

        // 1. The member's subscription and details.
        let mut updated = previous.clone();
        if let Some(rack_id) = &request.rack_id {
            updated.rack_id = Some(rack_id.clone());
        }
        if let Some(names) = &request.subscribed_topic_names {
            let mut names = names.clone();
            names.sort();
            names.dedup();
            updated.subscribed_topic_names = names;
        }
        updated.client_id = request.client_id.clone();
        updated.client_host = request.client_host.clone();
        let is_new = !group.members.contains_key(&member_id);
        let mut draft = ShareDraft::new(group.clone(), now_ms);
        let subscription_changed =
            updated.subscribed_topic_names != previous.subscribed_topic_names;
        let mut bump = false;
        if is_new || updated.metadata_value() != previous.metadata_value() {
            draft.push(ShareRecord::MemberMetadata {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
                value: Some(updated.metadata_value()),
            });
            bump = subscription_changed;
        }
        if draft.group.assignment_epoch >= draft.group.group_epoch {
            bump |= initialized_assignment_pending(&group, is_new);
        }
        let names = group.subscribed_topic_names_with(Some(&updated), None);
        let hash = metadata_hash(&names.keys().cloned().collect(), &self.topics);
        bump |= hash != draft.group.metadata_hash;
        if bump {
            let epoch = draft.group.group_epoch + 1;
            draft.push_epoch(epoch, hash);
        }

        // 2. A new target assignment when the group epoch moved, at most once per
        // `share.assignment.interval.ms`.
        let group_epoch = draft.group.group_epoch;
        let interval_ms = i64::from(self.share_assignment_interval_ms(&group_id));
        let may_compute = draft.group.assignment_timestamp_ms == 0
            || interval_ms == 0
            || now_ms
                >= draft
                    .group
                    .assignment_timestamp_ms
                    .saturating_add(interval_ms);
        if draft.group.assignment_epoch < group_epoch && may_compute {
            self.update_share_target(&mut draft, now_ms);
        }

        // 3. The member takes its target (share members never revoke).
        let current = draft
            .group
            .members
            .get(&member_id)
            .cloned()
            .unwrap_or_else(|| updated.clone());
        let target_epoch = draft.group.assignment_epoch;
        let target = draft
            .group
            .target
            .get(&member_id)
            .cloned()
            .unwrap_or_default();
        let reconciled = self.reconcile_share_member(&current, target_epoch, &target, bump);
        if reconciled != current {
            draft.push(ShareRecord::CurrentMemberAssignment {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
                value: Some(reconciled.assignment_value()),
            });
        }
        let session_ms = self.share_session_timeout_ms(&group_id);
        let timers = vec![TimerAction::Schedule(
            share_session_key(&group_id, &member_id),
            now_ms + i64::from(session_ms),
        )];

        let changed = reconciled.assigned != previous.assigned;
        let assignment = (joining || request.subscribed_topic_names.is_some() || changed)
            .then(|| reconciled.assigned.clone());
        let subscribed: BTreeSet<String> = names.into_keys().collect();
        let initialize = self.maybe_initialize_share_state(&mut draft, &subscribed, now_ms);
        Ok(Decided {
            draft,
            timers,
            outcome: ShareGroupHeartbeatOutcome {
                response: ShareGroupHeartbeatResponse {
                    error: None,
                    error_message: None,
                    member_id: Some(member_id),
                    member_epoch: reconciled.member_epoch,
                    heartbeat_interval_ms: self.share_heartbeat_interval_ms(&group_id),
                    assignment,
                },
                initialize,
            },
        })
    }

    /// Kafka's `shareGroupLeave`: the member is fenced and answered with epoch -1.
    fn share_leave(
        &self,
        request: &ShareGroupHeartbeatInput,
        now_ms: i64,
    ) -> Result<Decided, Refusal> {
        let group = self.existing_share_group(&request.group_id)?;
        if !group.members.contains_key(&request.member_id) {
            return Err(unknown_member(&request.member_id, &request.group_id));
        }
        let mut draft = ShareDraft::new(group.clone(), now_ms);
        draft.fence(&request.member_id, &self.topics);
        Ok(Decided {
            draft,
            timers: vec![TimerAction::Cancel(share_session_key(
                &request.group_id,
                &request.member_id,
            ))],
            outcome: ShareGroupHeartbeatOutcome {
                response: ShareGroupHeartbeatResponse {
                    error: None,
                    error_message: None,
                    member_id: Some(request.member_id.clone()),
                    member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
                    heartbeat_interval_ms: 0,
                    assignment: None,
                },
                initialize: None,
            },
        })
    }

    /// Runs the simple assignor over the initialized partitions and writes the members' new
    /// targets and the assignment epoch (Kafka's TargetAssignmentBuilder).
    fn update_share_target(&self, draft: &mut ShareDraft, now_ms: i64) {
        let group = &draft.group;
        let assignable = group
            .state_metadata
            .as_ref()
            .map(|metadata| metadata.initialized_partitions())
            .unwrap_or_default();
        let members = group
            .members
            .values()
            .map(|member| {
                (
                    member.member_id.clone(),
                    AssignmentMember {
                        member_id: member.member_id.clone(),
                        instance_id: None,
                        rack_id: member.rack_id.clone(),
                        subscribed_topic_ids: member.topic_ids(&self.topics),
                        current_assignment: group
                            .target
                            .get(&member.member_id)
                            .cloned()
                            .unwrap_or_default(),
                    },
                )
            })
            .collect();
        let spec = AssignmentSpec { members };
        let mut target =
            simple::assign(&spec, &self.topics, &assignable, group.subscription_type());
        for assigned in target.values_mut() {
            assigned.retain(|_, partitions| !partitions.is_empty());
        }
        let group_id = group.group_id.clone();
        let epoch = group.group_epoch;
        let changes: Vec<(String, MemberAssignment)> = group
            .members
            .keys()
            .filter_map(|member_id| {
                let new = target.remove(member_id).unwrap_or_default();
                (group.target.get(member_id) != Some(&new)).then(|| (member_id.clone(), new))
            })
            .collect();
        for (member_id, assignment) in changes {
            draft.push(ShareRecord::TargetAssignmentMember {
                group_id: group_id.clone(),
                member_id,
                value: Some(assignment),
            });
        }
        draft.push(ShareRecord::TargetAssignmentMetadata {
            group_id,
            value: Some(ShareTargetAssignmentMetadataValue {
                assignment_epoch: epoch,
                assignment_timestamp_ms: now_ms,
            }),
        });
    }

    /// Kafka's ShareGroupAssignmentBuilder: a member behind the target epoch takes its target
    /// and the epoch; a member whose subscription changed takes its target's subscribed topics.
    fn reconcile_share_member(
        &self,
        member: &ShareMember,
        target_epoch: i32,
        target: &MemberAssignment,
        subscription_changed: bool,
    ) -> ShareMember {
        if !subscription_changed && member.member_epoch == target_epoch {
            return member.clone();
        }
        let subscribed = member.topic_ids(&self.topics);
        let filtered: MemberAssignment = target
            .iter()
            .filter(|(topic_id, _)| subscribed.contains(topic_id))
            .map(|(topic_id, partitions)| (*topic_id, partitions.clone()))
            .collect();
        let mut reconciled = member.clone();
        reconciled.assigned = filtered;
        if target_epoch != member.member_epoch {
            reconciled.previous_member_epoch = member.member_epoch;
            reconciled.member_epoch = target_epoch;
        }
        reconciled
    }
}

/// Kafka's `throwIfShareGroupMemberEpochIsInvalid`.
fn check_member_epoch(member: &ShareMember, received: i32) -> Result<(), Refusal> {
    if received == 0 {
        return Ok(());
    }
    if received > member.member_epoch {
        return Err((
            GroupError::FencedMemberEpoch,
            format!(
                "The share group member has a greater member epoch ({received}) than the one \
                 known by the group coordinator ({}). The member must abandon all its \
                 partitions and rejoin.",
                member.member_epoch
            ),
        ));
    }
    if received < member.member_epoch && received != member.previous_member_epoch {
        return Err((
            GroupError::FencedMemberEpoch,
            format!(
                "The share group member has a smaller member epoch ({received}) than the one \
                 known by the group coordinator ({}), and it does not match the previous \
                 member epoch ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch, member.previous_member_epoch
            ),
        ));
    }
    Ok(())
}

/// Kafka's `initializedAssignmentPending`: partitions of a subscribed topic were initialized
/// that the target assignment does not hold yet, so the group must move to a new epoch.
/// `group` is the group before this heartbeat (a joining member subscribes to nothing yet).
fn initialized_assignment_pending(group: &ShareGroup, joining: bool) -> bool {
    if group.members.is_empty() && !joining {
        return false;
    }
    let Some(metadata) = &group.state_metadata else {
        return false;
    };
    if metadata.initialized.is_empty() {
        return false;
    }
    let subscribed = group.subscribed_topic_names_with(None, None);
    if subscribed.is_empty() {
        return false;
    }
    let mut assigned: BTreeMap<uuid::Uuid, BTreeSet<i32>> = BTreeMap::new();
    for assignment in group.target.values() {
        for (topic_id, partitions) in assignment {
            assigned
                .entry(*topic_id)
                .or_default()
                .extend(partitions.iter().copied());
        }
    }
    metadata.initialized.iter().any(|(topic_id, topic)| {
        subscribed.contains_key(&topic.name) && assigned.get(topic_id) != Some(&topic.partitions)
    })
}
