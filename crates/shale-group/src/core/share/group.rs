//! A share group (KIP-932) and its members: the in-memory model, changed only by records.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::assignor::{MemberAssignment, SubscriptionType, TopicsImage};
use crate::records::share_records::{
    ShareCurrentAssignmentValue, ShareMemberMetadataValue, ShareRecord,
    ShareStatePartitionMetadataValue, ShareStateTopic,
};

/// The member epoch of a member that left (and of a fenced one).
pub(crate) const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;

/// Kafka's ShareGroupState: a share group is Stable as soon as it has a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShareGroupState {
    Empty,
    Stable,
    Dead,
}

impl ShareGroupState {
    pub fn kafka_name(self) -> &'static str {
        match self {
            ShareGroupState::Empty => "Empty",
            ShareGroupState::Stable => "Stable",
            ShareGroupState::Dead => "Dead",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShareMember {
    pub(crate) member_id: String,
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    /// Sorted, without duplicates.
    pub(crate) subscribed_topic_names: Vec<String>,
    pub(crate) member_epoch: i32,
    pub(crate) previous_member_epoch: i32,
    pub(crate) assigned: MemberAssignment,
}

impl ShareMember {
    pub(crate) fn new(member_id: &str) -> Self {
        Self {
            member_id: member_id.to_owned(),
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: Vec::new(),
            member_epoch: 0,
            previous_member_epoch: -1,
            assigned: MemberAssignment::new(),
        }
    }

    pub(crate) fn metadata_value(&self) -> ShareMemberMetadataValue {
        ShareMemberMetadataValue {
            rack_id: self.rack_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            subscribed_topic_names: self.subscribed_topic_names.clone(),
        }
    }

    pub(crate) fn assignment_value(&self) -> ShareCurrentAssignmentValue {
        ShareCurrentAssignmentValue {
            member_epoch: self.member_epoch,
            previous_member_epoch: self.previous_member_epoch,
            // MemberState.STABLE: share members never revoke.
            state: 0,
            assigned_partitions: self.assigned.clone(),
        }
    }

    /// The ids of the subscribed topics that exist.
    pub(crate) fn topic_ids(&self, topics: &TopicsImage) -> BTreeSet<Uuid> {
        self.subscribed_topic_names
            .iter()
            .filter_map(|name| topics.by_name(name).map(|topic| topic.topic_id))
            .collect()
    }
}

/// One topic of the share-partition state the group tracks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StateTopic {
    pub(crate) name: String,
    pub(crate) partitions: BTreeSet<i32>,
    /// When the record that put it here was replayed: an initialization older than
    /// `group.share.initialize.retry.interval.ms` is tried again.
    pub(crate) since_ms: i64,
}

/// Kafka's ShareGroupStatePartitionMetadataInfo.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StateMetadata {
    pub(crate) initializing: BTreeMap<Uuid, StateTopic>,
    pub(crate) initialized: BTreeMap<Uuid, StateTopic>,
    /// Topic id -> name.
    pub(crate) deleting: BTreeMap<Uuid, String>,
}

impl StateMetadata {
    pub(crate) fn from_value(value: &ShareStatePartitionMetadataValue, now_ms: i64) -> Self {
        let topics = |from: &BTreeMap<Uuid, ShareStateTopic>| {
            from.iter()
                .map(|(topic_id, topic)| {
                    (
                        *topic_id,
                        StateTopic {
                            name: topic.topic_name.clone(),
                            partitions: topic.partitions.clone(),
                            since_ms: now_ms,
                        },
                    )
                })
                .collect()
        };
        Self {
            initializing: topics(&value.initializing_topics),
            initialized: topics(&value.initialized_topics),
            deleting: value.deleting_topics.clone(),
        }
    }

    pub(crate) fn to_value(&self) -> ShareStatePartitionMetadataValue {
        let topics = |from: &BTreeMap<Uuid, StateTopic>| {
            from.iter()
                .map(|(topic_id, topic)| {
                    (
                        *topic_id,
                        ShareStateTopic {
                            topic_name: topic.name.clone(),
                            partitions: topic.partitions.clone(),
                        },
                    )
                })
                .collect()
        };
        ShareStatePartitionMetadataValue {
            initializing_topics: topics(&self.initializing),
            initialized_topics: topics(&self.initialized),
            deleting_topics: self.deleting.clone(),
        }
    }

    /// The initialized partitions, which are the only assignable ones.
    pub(crate) fn initialized_partitions(&self) -> BTreeMap<Uuid, BTreeSet<i32>> {
        self.initialized
            .iter()
            .map(|(topic_id, topic)| (*topic_id, topic.partitions.clone()))
            .collect()
    }
}

/// Kafka's `combineInitMaps`: the union of two topic maps by partition; name and time are
/// taken from `newer` where it has the topic.
pub(crate) fn combine(
    older: &BTreeMap<Uuid, StateTopic>,
    newer: &BTreeMap<Uuid, StateTopic>,
) -> BTreeMap<Uuid, StateTopic> {
    let mut combined = older.clone();
    for (topic_id, topic) in newer {
        let entry = combined.entry(*topic_id).or_insert_with(|| StateTopic {
            name: topic.name.clone(),
            partitions: BTreeSet::new(),
            since_ms: topic.since_ms,
        });
        entry.name = topic.name.clone();
        entry.since_ms = topic.since_ms;
        entry.partitions.extend(topic.partitions.iter().copied());
    }
    combined
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShareGroup {
    pub(crate) group_id: String,
    pub(crate) group_epoch: i32,
    pub(crate) metadata_hash: i64,
    pub(crate) assignment_epoch: i32,
    pub(crate) assignment_timestamp_ms: i64,
    pub(crate) members: BTreeMap<String, ShareMember>,
    pub(crate) target: BTreeMap<String, MemberAssignment>,
    /// None until a ShareGroupStatePartitionMetadata record is stored for the group.
    pub(crate) state_metadata: Option<StateMetadata>,
}

impl ShareGroup {
    pub(crate) fn new(group_id: &str) -> Self {
        Self {
            group_id: group_id.to_owned(),
            // Kafka 4.4's ModernGroup starts at epoch 1 (the assignment at 0).
            group_epoch: 1,
            metadata_hash: 0,
            assignment_epoch: 0,
            assignment_timestamp_ms: 0,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            state_metadata: None,
        }
    }

    pub(crate) fn state(&self) -> ShareGroupState {
        if self.members.is_empty() {
            ShareGroupState::Empty
        } else {
            ShareGroupState::Stable
        }
    }

    /// Topic names subscribed to by the members, `updated` replacing (or adding) its member
    /// and `removed` left out.
    pub(crate) fn subscribed_topic_names_with(
        &self,
        updated: Option<&ShareMember>,
        removed: Option<&str>,
    ) -> BTreeMap<String, usize> {
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        let replaced = updated.map(|member| member.member_id.as_str());
        let members = self
            .members
            .values()
            .filter(|member| Some(member.member_id.as_str()) != replaced)
            .filter(|member| Some(member.member_id.as_str()) != removed)
            .chain(updated);
        for member in members {
            for name in &member.subscribed_topic_names {
                *names.entry(name.clone()).or_default() += 1;
            }
        }
        names
    }

    pub(crate) fn subscription_type(&self) -> SubscriptionType {
        let names = self.subscribed_topic_names_with(None, None);
        SubscriptionType::from_topic_names(
            names.iter().map(|(name, count)| (name.as_str(), *count)),
            self.members.len(),
        )
    }

    /// Applies one of this group's records (the group epoch tombstone is the shard's).
    pub(crate) fn apply(&mut self, record: &ShareRecord, now_ms: i64) {
        match record {
            ShareRecord::GroupMetadata {
                value: Some(value), ..
            } => {
                self.group_epoch = value.epoch;
                self.metadata_hash = value.metadata_hash;
            }
            ShareRecord::GroupMetadata { value: None, .. } => {}
            ShareRecord::MemberMetadata {
                member_id,
                value: Some(value),
                ..
            } => {
                let member = self
                    .members
                    .entry(member_id.clone())
                    .or_insert_with(|| ShareMember::new(member_id));
                member.rack_id = value.rack_id.clone();
                member.client_id = value.client_id.clone();
                member.client_host = value.client_host.clone();
                let mut names = value.subscribed_topic_names.clone();
                names.sort();
                names.dedup();
                member.subscribed_topic_names = names;
            }
            ShareRecord::MemberMetadata {
                member_id,
                value: None,
                ..
            } => {
                self.members.remove(member_id);
            }
            ShareRecord::TargetAssignmentMetadata { value, .. } => match value {
                Some(value) => {
                    self.assignment_epoch = value.assignment_epoch;
                    self.assignment_timestamp_ms = value.assignment_timestamp_ms;
                }
                None => {
                    self.assignment_epoch = -1;
                    self.assignment_timestamp_ms = 0;
                }
            },
            ShareRecord::TargetAssignmentMember {
                member_id, value, ..
            } => match value {
                Some(assignment) => {
                    self.target.insert(member_id.clone(), assignment.clone());
                }
                None => {
                    self.target.remove(member_id);
                }
            },
            ShareRecord::CurrentMemberAssignment {
                member_id,
                value: Some(value),
                ..
            } => {
                let member = self
                    .members
                    .entry(member_id.clone())
                    .or_insert_with(|| ShareMember::new(member_id));
                member.member_epoch = value.member_epoch;
                member.previous_member_epoch = value.previous_member_epoch;
                member.assigned = value.assigned_partitions.clone();
            }
            ShareRecord::CurrentMemberAssignment {
                member_id,
                value: None,
                ..
            } => {
                if let Some(member) = self.members.get_mut(member_id) {
                    member.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                    member.previous_member_epoch = -1;
                    member.assigned.clear();
                }
            }
            ShareRecord::StatePartitionMetadata { value, .. } => {
                self.state_metadata = value
                    .as_ref()
                    .map(|value| StateMetadata::from_value(value, now_ms));
            }
        }
    }
}
