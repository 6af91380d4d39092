//! `replay`: the only way stored state (committed offsets, stored group metadata) changes.

use std::collections::BTreeMap;

use super::group::{Group, GroupState, StoredOffset};
use super::timers::TimerKey;
use super::CoordinatorShard;
use crate::records::{GroupRecord, MemberMetadataValue, OffsetCommitValue};

/// The persisted view of one group, for comparing a live shard with one rebuilt from records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSnapshot {
    pub state: GroupState,
    pub protocol_type: Option<String>,
    pub generation_id: i32,
    pub protocol_name: Option<String>,
    pub leader_id: Option<String>,
    pub members: Vec<MemberMetadataValue>,
    pub offsets: BTreeMap<(String, i32), OffsetCommitValue>,
}

/// The persisted view of a shard.
pub type ShardSnapshot = BTreeMap<String, GroupSnapshot>;

impl CoordinatorShard {
    /// Applies a record that was appended to (or loaded from) the partition.
    pub fn replay(&mut self, record: &GroupRecord) {
        let now_ms = self.last_now_ms;
        self.end_conversion(record.group_id());
        match record {
            GroupRecord::OffsetCommit {
                group_id,
                topic,
                partition,
                value: Some(value),
            } => {
                // Offsets of a group without metadata belong to a simple (empty) group.
                self.replay_sequence += 1;
                let sequence = self.replay_sequence;
                let group = self
                    .groups
                    .entry(group_id.clone())
                    .or_insert_with(|| Group::new(group_id, now_ms));
                group.offsets.insert(
                    (topic.clone(), *partition),
                    StoredOffset {
                        value: value.clone(),
                        sequence,
                    },
                );
            }
            GroupRecord::OffsetCommit {
                group_id,
                topic,
                partition,
                value: None,
            } => {
                if let Some(group) = self.groups.get_mut(group_id) {
                    let key = (topic.clone(), *partition);
                    group.offsets.remove(&key);
                    // A tombstone also drops pending transactional offsets of the partition.
                    for pending in group.pending_transactional_offsets.values_mut() {
                        pending.remove(&key);
                    }
                    group
                        .pending_transactional_offsets
                        .retain(|_, pending| !pending.is_empty());
                }
            }
            GroupRecord::GroupMetadata {
                group_id,
                value: Some(value),
            } => {
                if self.live && self.groups.contains_key(group_id) {
                    // Written from the live state, which already holds it (and may have moved
                    // on, e.g. members joined after the record of a new group was made).
                    return;
                }
                let (offsets, pending) = match self.groups.remove(group_id) {
                    Some(old) => {
                        self.timers.cancel_group(&old);
                        (old.offsets, old.pending_transactional_offsets)
                    }
                    None => Default::default(),
                };
                let group = Group::from_record_value(group_id, value, offsets, pending);
                if self.live {
                    for member in group.members.values() {
                        self.timers.schedule(
                            TimerKey::Heartbeat {
                                group_id: group_id.clone(),
                                member_id: member.member_id.clone(),
                            },
                            now_ms + i64::from(member.session_timeout_ms),
                        );
                    }
                }
                self.groups.insert(group_id.clone(), group);
            }
            GroupRecord::GroupMetadata {
                group_id,
                value: None,
            } => {
                if let Some(old) = self.groups.remove(group_id) {
                    self.timers.cancel_group(&old);
                    // Offsets outlive the group's metadata (Kafka keeps them apart): an empty
                    // classic group converted to a consumer group keeps its offsets.
                    if !old.offsets.is_empty() || !old.pending_transactional_offsets.is_empty() {
                        let mut holder = Group::new(group_id, now_ms);
                        holder.offsets = old.offsets;
                        holder.pending_transactional_offsets = old.pending_transactional_offsets;
                        self.groups.insert(group_id.clone(), holder);
                    }
                }
            }
            GroupRecord::Consumer(record) => self.replay_consumer(record),
            GroupRecord::Share(record) => self.replay_share(record),
        }
    }

    /// The persisted view of every group.
    pub fn snapshot(&self) -> ShardSnapshot {
        self.groups
            .values()
            .map(|group| {
                let value = group.to_record_value();
                (
                    group.group_id.clone(),
                    GroupSnapshot {
                        state: group.state,
                        protocol_type: group.protocol_type.clone(),
                        generation_id: group.generation_id,
                        protocol_name: group.protocol_name.clone(),
                        leader_id: group.leader_id.clone(),
                        members: value.members,
                        offsets: group
                            .offsets
                            .iter()
                            .map(|(key, stored)| (key.clone(), stored.value.clone()))
                            .collect(),
                    },
                )
            })
            .collect()
    }
}
