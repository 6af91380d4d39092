//! Share groups (KIP-932), beside the classic and consumer groups of the same shard.
//!
//! Like a consumer group, a share group changes only through its records: handlers build the
//! records of a change on a draft copy and `replay` applies them once written. Share groups
//! hold no committed offsets (their progress is the share-partition state of
//! `__share_group_state`); the coordinator tracks which share-partitions of the subscribed
//! topics have state (`ShareGroupStatePartitionMetadata`) and assigns only those. Session
//! timers are not stored: they restart when the partition is loaded.

mod admin;
pub(crate) mod group;
mod heartbeat;
mod offsets;
mod state;

pub use group::ShareGroupState;

use group::{ShareGroup, ShareMember};

use super::timers::TimerKey;
use super::{CoordinatorShard, Effects};
use crate::assignor::TopicsImage;
use crate::core::consumer::{metadata_hash, TimerAction};
use crate::records::share_records::{
    ShareGroupMetadataValue, ShareRecord, ShareTargetAssignmentMetadataValue,
};
use crate::records::GroupRecord;

/// A working copy of a share group: each record is applied to it at once, so later steps see
/// its effect; the shard changes only when the records are replayed after being written.
pub(crate) struct ShareDraft {
    pub(crate) group: ShareGroup,
    pub(crate) records: Vec<GroupRecord>,
    now_ms: i64,
}

impl ShareDraft {
    pub(crate) fn new(group: ShareGroup, now_ms: i64) -> Self {
        Self {
            group,
            records: Vec::new(),
            now_ms,
        }
    }

    pub(crate) fn push(&mut self, record: ShareRecord) {
        self.group.apply(&record, self.now_ms);
        self.records.push(GroupRecord::Share(record));
    }

    pub(crate) fn push_epoch(&mut self, epoch: i32, metadata_hash: i64) {
        self.push(ShareRecord::GroupMetadata {
            group_id: self.group.group_id.clone(),
            value: Some(ShareGroupMetadataValue {
                epoch,
                metadata_hash,
            }),
        });
    }

    /// Kafka's `shareGroupFenceMember`: the member's current and target assignments and
    /// subscription go, the group epoch moves on, and the assignment epoch follows when the
    /// group is left empty.
    pub(crate) fn fence(&mut self, member_id: &str, topics: &TopicsImage) {
        let group_id = self.group.group_id.clone();
        let last = self.group.members.len() == 1;
        let names = self
            .group
            .subscribed_topic_names_with(None, Some(member_id));
        let hash = metadata_hash(&names.into_keys().collect(), topics);
        self.push(ShareRecord::CurrentMemberAssignment {
            group_id: group_id.clone(),
            member_id: member_id.to_owned(),
            value: None,
        });
        self.push(ShareRecord::TargetAssignmentMember {
            group_id: group_id.clone(),
            member_id: member_id.to_owned(),
            value: None,
        });
        self.push(ShareRecord::MemberMetadata {
            group_id: group_id.clone(),
            member_id: member_id.to_owned(),
            value: None,
        });
        let epoch = self.group.group_epoch + 1;
        self.push_epoch(epoch, hash);
        if last {
            self.push(ShareRecord::TargetAssignmentMetadata {
                group_id,
                value: Some(ShareTargetAssignmentMetadataValue {
                    assignment_epoch: epoch,
                    assignment_timestamp_ms: 0,
                }),
            });
        }
    }
}

impl CoordinatorShard {
    pub(crate) fn replay_share(&mut self, record: &ShareRecord) {
        let group_id = record.group_id();
        if let ShareRecord::GroupMetadata { value: None, .. } = record {
            // The group epoch tombstone is the last record of a deleted group.
            if let Some(group) = self.share_groups.remove(group_id) {
                for member_id in group.members.keys() {
                    self.timers.cancel(&share_session_key(group_id, member_id));
                }
            }
            return;
        }
        let creates = matches!(
            record,
            ShareRecord::GroupMetadata { value: Some(_), .. }
                | ShareRecord::MemberMetadata { value: Some(_), .. }
                | ShareRecord::CurrentMemberAssignment { value: Some(_), .. }
                | ShareRecord::TargetAssignmentMember { value: Some(_), .. }
                | ShareRecord::TargetAssignmentMetadata { value: Some(_), .. }
                | ShareRecord::StatePartitionMetadata { value: Some(_), .. }
        );
        if !creates && !self.share_groups.contains_key(group_id) {
            return;
        }
        let now_ms = self.last_now_ms;
        self.share_groups
            .entry(group_id.to_owned())
            .or_insert_with(|| ShareGroup::new(group_id))
            .apply(record, now_ms);
    }

    /// Loading is over: every loaded member must heartbeat within its session, and
    /// initializations found in the log count from now.
    pub(crate) fn start_share_timers(&mut self, now_ms: i64) {
        let mut actions = Vec::new();
        for group in self.share_groups.values_mut() {
            if let Some(metadata) = group.state_metadata.as_mut() {
                for topic in metadata.initializing.values_mut() {
                    topic.since_ms = now_ms;
                }
            }
        }
        for group in self.share_groups.values() {
            let session_ms = self.share_session_timeout_ms(&group.group_id);
            for member_id in group.members.keys() {
                actions.push(TimerAction::Schedule(
                    share_session_key(&group.group_id, member_id),
                    now_ms + i64::from(session_ms),
                ));
            }
        }
        self.apply_timer_actions(actions);
    }

    /// A member's session expired: it is fenced (Kafka's "the member session expired").
    pub(crate) fn on_share_session_expired(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let Some(group) = self.share_groups.get(group_id) else {
            return;
        };
        if !group.members.contains_key(member_id) {
            return;
        }
        tracing::info!(
            group_id,
            member_id,
            "share group member fenced because the member session expired"
        );
        let mut draft = ShareDraft::new(group.clone(), now_ms);
        draft.fence(member_id, &self.topics);
        effects.records.extend(draft.records);
    }

    /// `share.session.timeout.ms` of the group, else `group.share.session.timeout.ms`.
    pub(crate) fn share_session_timeout_ms(&self, group_id: &str) -> i32 {
        self.consumer
            .group_configs
            .share_overrides(group_id)
            .share_session_timeout_ms
            .unwrap_or(self.config().share_session_timeout_ms)
    }

    /// `share.heartbeat.interval.ms` of the group, else `group.share.heartbeat.interval.ms`.
    pub(crate) fn share_heartbeat_interval_ms(&self, group_id: &str) -> i32 {
        self.consumer
            .group_configs
            .share_overrides(group_id)
            .share_heartbeat_interval_ms
            .unwrap_or(self.config().share_heartbeat_interval_ms)
    }

    /// `share.assignment.interval.ms` of the group, else `group.share.assignment.interval.ms`.
    pub(crate) fn share_assignment_interval_ms(&self, group_id: &str) -> i32 {
        self.consumer
            .group_configs
            .share_overrides(group_id)
            .share_assignment_interval_ms
            .unwrap_or(self.config().share_assignment_interval_ms)
    }

    /// The state of a share group, if one exists.
    pub fn share_group_state(&self, group_id: &str) -> Option<ShareGroupState> {
        self.share_groups.get(group_id).map(ShareGroup::state)
    }

    /// Whether `group_id` names a share group (which classic and consumer calls refuse).
    pub(crate) fn is_share_group(&self, group_id: &str) -> bool {
        self.share_groups.contains_key(group_id)
    }

    /// The member's assigned partitions, for tests and the broker's checks.
    pub fn share_member_assignment(
        &self,
        group_id: &str,
        member_id: &str,
    ) -> Option<crate::assignor::MemberAssignment> {
        self.share_groups
            .get(group_id)
            .and_then(|group| group.members.get(member_id))
            .map(|member: &ShareMember| member.assigned.clone())
    }
}

pub(crate) fn share_session_key(group_id: &str, member_id: &str) -> TimerKey {
    TimerKey::ShareSession {
        group_id: group_id.to_owned(),
        member_id: member_id.to_owned(),
    }
}
