//! A consumer group (KIP-848) and its members: the in-memory model, changed only by records.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::assignor::{MemberAssignment, SubscriptionType, TopicsImage};
use crate::records::classic_member_metadata::ClassicMemberMetadata;
use crate::records::consumer_records::{
    ConsumerMemberMetadataValue, ConsumerRecord, CurrentMemberAssignmentValue, PartitionEpochs,
    RegularExpressionValue,
};

/// The member epoch of a member that left.
pub(crate) const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// The member epoch of a static member that left temporarily (it keeps its assignment).
pub(crate) const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// Kafka's ConsumerGroupState.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConsumerGroupState {
    Empty,
    Assigning,
    Reconciling,
    Stable,
    Dead,
}

impl ConsumerGroupState {
    pub fn kafka_name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
            ConsumerGroupState::Dead => "Dead",
        }
    }
}

/// Kafka's MemberState, with its stored byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    Stable,
    UnrevokedPartitions,
    UnreleasedPartitions,
    /// A stored state this coordinator does not know (Kafka's UNKNOWN, 127): the member must
    /// rejoin owning nothing.
    Unknown,
}

impl MemberState {
    pub(crate) fn to_byte(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    pub(crate) fn from_byte(value: i8) -> Self {
        match value {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConsumerMember {
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    /// Sorted, without duplicates.
    pub(crate) subscribed_topic_names: Vec<String>,
    pub(crate) subscribed_topic_regex: Option<String>,
    pub(crate) rebalance_timeout_ms: i32,
    pub(crate) server_assignor: Option<String>,
    /// Set for a member that uses the classic protocol (JoinGroup, SyncGroup, Heartbeat).
    pub(crate) classic_member_metadata: Option<ClassicMemberMetadata>,
    pub(crate) member_epoch: i32,
    pub(crate) previous_member_epoch: i32,
    pub(crate) state: MemberState,
    pub(crate) assigned: PartitionEpochs,
    pub(crate) pending_revocation: PartitionEpochs,
}

impl ConsumerMember {
    pub(crate) fn new(member_id: &str) -> Self {
        Self {
            member_id: member_id.to_owned(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: Vec::new(),
            subscribed_topic_regex: None,
            rebalance_timeout_ms: -1,
            server_assignor: None,
            classic_member_metadata: None,
            member_epoch: 0,
            previous_member_epoch: -1,
            state: MemberState::Stable,
            assigned: PartitionEpochs::new(),
            pending_revocation: PartitionEpochs::new(),
        }
    }

    pub(crate) fn metadata_value(&self) -> ConsumerMemberMetadataValue {
        ConsumerMemberMetadataValue {
            instance_id: self.instance_id.clone(),
            rack_id: self.rack_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            subscribed_topic_names: self.subscribed_topic_names.clone(),
            // Kafka writes "" for a member without a regular expression.
            subscribed_topic_regex: Some(self.subscribed_topic_regex.clone().unwrap_or_default()),
            rebalance_timeout_ms: self.rebalance_timeout_ms,
            server_assignor: self.server_assignor.clone(),
            classic_member_metadata: self.classic_member_metadata.clone(),
        }
    }

    pub(crate) fn assignment_value(&self) -> CurrentMemberAssignmentValue {
        CurrentMemberAssignmentValue {
            member_epoch: self.member_epoch,
            previous_member_epoch: self.previous_member_epoch,
            state: self.state.to_byte(),
            assigned_partitions: self.assigned.clone(),
            partitions_pending_revocation: self.pending_revocation.clone(),
        }
    }

    /// Kafka's `useClassicProtocol`.
    pub(crate) fn uses_classic_protocol(&self) -> bool {
        self.classic_member_metadata.is_some()
    }

    pub(crate) fn is_reconciled_to(&self, assignment_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == assignment_epoch
    }

    /// The assigned partitions without their epochs (what the member is told it owns).
    pub(crate) fn assigned_partitions(&self) -> MemberAssignment {
        without_epochs(&self.assigned)
    }
}

pub(crate) fn without_epochs(partitions: &PartitionEpochs) -> MemberAssignment {
    partitions
        .iter()
        .filter(|(_, epochs)| !epochs.is_empty())
        .map(|(topic_id, epochs)| (*topic_id, epochs.keys().copied().collect()))
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConsumerGroup {
    pub(crate) group_id: String,
    pub(crate) group_epoch: i32,
    pub(crate) metadata_hash: i64,
    pub(crate) assignment_epoch: i32,
    pub(crate) assignment_timestamp_ms: i64,
    pub(crate) members: BTreeMap<String, ConsumerMember>,
    /// instance id -> member id
    pub(crate) static_members: BTreeMap<String, String>,
    pub(crate) target: BTreeMap<String, MemberAssignment>,
    pub(crate) regexes: BTreeMap<String, RegularExpressionValue>,
    /// A pre-4.1 `ConsumerGroupPartitionMetadata` record is stored for the group: the next
    /// epoch bump deletes it, as Kafka does once it has the metadata hash.
    pub(crate) has_partition_metadata_record: bool,
}

impl ConsumerGroup {
    pub(crate) fn new(group_id: &str) -> Self {
        Self {
            group_id: group_id.to_owned(),
            // Kafka 4.4's ModernGroup starts at epoch 1 (the assignment at 0): the first
            // member's join writes epoch 2.
            group_epoch: 1,
            metadata_hash: 0,
            assignment_epoch: 0,
            assignment_timestamp_ms: 0,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            target: BTreeMap::new(),
            regexes: BTreeMap::new(),
            has_partition_metadata_record: false,
        }
    }

    /// Kafka's `maybeUpdateGroupState`, computed from the stored state.
    pub(crate) fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|member| !member.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    pub(crate) fn static_member(&self, instance_id: &str) -> Option<&ConsumerMember> {
        self.static_members
            .get(instance_id)
            .and_then(|member_id| self.members.get(member_id))
    }

    /// Topic names the members subscribe to, by name or through a resolved regular expression.
    pub(crate) fn subscribed_topic_names(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for member in self.members.values() {
            names.extend(member.subscribed_topic_names.iter().cloned());
            if let Some(resolved) = member
                .subscribed_topic_regex
                .as_ref()
                .and_then(|regex| self.regexes.get(regex))
            {
                names.extend(resolved.topics.iter().cloned());
            }
        }
        names
    }

    pub(crate) fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        self.subscribed_topic_names().contains(topic)
    }

    /// The topic ids a member subscribes to that exist in `topics`.
    pub(crate) fn member_topic_ids(
        &self,
        member: &ConsumerMember,
        topics: &TopicsImage,
    ) -> BTreeSet<Uuid> {
        let regex_topics = member
            .subscribed_topic_regex
            .as_ref()
            .and_then(|regex| self.regexes.get(regex))
            .map(|resolved| resolved.topics.iter().collect::<Vec<_>>())
            .unwrap_or_default();
        member
            .subscribed_topic_names
            .iter()
            .chain(regex_topics)
            .filter_map(|name| topics.by_name(name).map(|topic| topic.topic_id))
            .collect()
    }

    /// The topic names `member` subscribes to, directly or through its resolved regex, whether
    /// or not they exist.
    pub(crate) fn member_topic_names<'a>(
        &'a self,
        member: &'a ConsumerMember,
    ) -> BTreeSet<&'a str> {
        let regex_topics = member
            .subscribed_topic_regex
            .as_ref()
            .and_then(|regex| self.regexes.get(regex))
            .into_iter()
            .flat_map(|resolved| resolved.topics.iter());
        member
            .subscribed_topic_names
            .iter()
            .chain(regex_topics)
            .map(String::as_str)
            .collect()
    }

    /// Kafka's subscription type: homogeneous when every member subscribes to the same topic
    /// names (existing or not), which picks the uniform assignor's algorithm.
    pub(crate) fn subscription_type(&self) -> SubscriptionType {
        let mut subscribers: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            for name in self.member_topic_names(member) {
                *subscribers.entry(name).or_default() += 1;
            }
        }
        SubscriptionType::from_topic_names(subscribers, self.members.len())
    }

    /// How many members subscribe with `regex`.
    pub(crate) fn regex_subscribers(&self, regex: &str) -> usize {
        self.members
            .values()
            .filter(|member| member.subscribed_topic_regex.as_deref() == Some(regex))
            .count()
    }

    /// Which member owns each partition (assigned or pending revocation).
    pub(crate) fn owners(&self) -> BTreeMap<(Uuid, i32), String> {
        let mut owners = BTreeMap::new();
        for member in self.members.values() {
            for partitions in [&member.assigned, &member.pending_revocation] {
                for (topic_id, epochs) in partitions {
                    for partition in epochs.keys() {
                        owners.insert((*topic_id, *partition), member.member_id.clone());
                    }
                }
            }
        }
        owners
    }

    /// The server assignor most members name, else `default` (ties go to the smaller name).
    pub(crate) fn preferred_assignor(&self, default: &str) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for name in self
            .members
            .values()
            .filter_map(|member| member.server_assignor.as_deref())
        {
            *counts.entry(name).or_default() += 1;
        }
        let mut best: Option<(&str, usize)> = None;
        for (name, count) in counts {
            if best.is_none_or(|(_, best_count)| count > best_count) {
                best = Some((name, count));
            }
        }
        best.map_or_else(|| default.to_owned(), |(name, _)| name.to_owned())
    }

    /// Applies one of this group's records. The group epoch tombstone (deleting the group) is
    /// the shard's to handle.
    pub(crate) fn apply(&mut self, record: &ConsumerRecord) {
        match record {
            ConsumerRecord::GroupMetadata {
                value: Some(value), ..
            } => {
                self.group_epoch = value.epoch;
                self.metadata_hash = value.metadata_hash;
            }
            ConsumerRecord::GroupMetadata { value: None, .. } => {}
            // Kafka 4.1+ keeps the metadata hash instead; the old record only forces a
            // recomputation (its group's hash loads as 0).
            ConsumerRecord::PartitionMetadata { value, .. } => {
                self.has_partition_metadata_record = value.is_some();
            }
            ConsumerRecord::MemberMetadata {
                member_id,
                value: Some(value),
                ..
            } => {
                let member = self
                    .members
                    .entry(member_id.clone())
                    .or_insert_with(|| ConsumerMember::new(member_id));
                member.instance_id = value.instance_id.clone();
                member.rack_id = value.rack_id.clone();
                member.client_id = value.client_id.clone();
                member.client_host = value.client_host.clone();
                let mut names = value.subscribed_topic_names.clone();
                names.sort();
                names.dedup();
                member.subscribed_topic_names = names;
                member.subscribed_topic_regex = value
                    .subscribed_topic_regex
                    .clone()
                    .filter(|regex| !regex.is_empty());
                member.rebalance_timeout_ms = value.rebalance_timeout_ms;
                member.server_assignor = value.server_assignor.clone();
                member.classic_member_metadata = value.classic_member_metadata.clone();
                if let Some(instance_id) = &value.instance_id {
                    self.static_members
                        .insert(instance_id.clone(), member_id.clone());
                }
            }
            ConsumerRecord::MemberMetadata {
                member_id,
                value: None,
                ..
            } => {
                if let Some(member) = self.members.remove(member_id) {
                    if let Some(instance_id) = &member.instance_id {
                        if self.static_members.get(instance_id) == Some(member_id) {
                            self.static_members.remove(instance_id);
                        }
                    }
                }
            }
            ConsumerRecord::TargetAssignmentMetadata { value, .. } => {
                let value = value.unwrap_or(
                    crate::records::consumer_records::TargetAssignmentMetadataValue {
                        assignment_epoch: 0,
                        assignment_timestamp_ms: 0,
                    },
                );
                self.assignment_epoch = value.assignment_epoch;
                self.assignment_timestamp_ms = value.assignment_timestamp_ms;
            }
            ConsumerRecord::TargetAssignmentMember {
                member_id, value, ..
            } => match value {
                Some(assignment) => {
                    self.target.insert(member_id.clone(), assignment.clone());
                }
                None => {
                    self.target.remove(member_id);
                }
            },
            ConsumerRecord::CurrentMemberAssignment {
                member_id,
                value: Some(value),
                ..
            } => {
                let member = self
                    .members
                    .entry(member_id.clone())
                    .or_insert_with(|| ConsumerMember::new(member_id));
                member.member_epoch = value.member_epoch;
                member.previous_member_epoch = value.previous_member_epoch;
                member.state = MemberState::from_byte(value.state);
                member.assigned = value.assigned_partitions.clone();
                member.pending_revocation = value.partitions_pending_revocation.clone();
            }
            ConsumerRecord::CurrentMemberAssignment {
                member_id,
                value: None,
                ..
            } => {
                if let Some(member) = self.members.get_mut(member_id) {
                    member.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                    member.previous_member_epoch = -1;
                    member.state = MemberState::Stable;
                    member.assigned.clear();
                    member.pending_revocation.clear();
                }
            }
            ConsumerRecord::RegularExpression { regex, value, .. } => match value {
                Some(resolved) => {
                    self.regexes.insert(regex.clone(), resolved.clone());
                }
                None => {
                    self.regexes.remove(regex);
                }
            },
        }
    }
}
