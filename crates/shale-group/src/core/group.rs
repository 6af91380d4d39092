//! A classic group and its members: the in-memory model the handlers work on.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use super::RequestToken;
use crate::error::GroupError;
use crate::records::consumer_protocol::{decode_subscription_topics, CONSUMER_PROTOCOL_TYPE};
use crate::records::{GroupMetadataValue, MemberMetadataValue, OffsetCommitValue};
use crate::types::{JoinGroupMember, JoinGroupProtocol};

/// The classic protocol's group states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// The name Kafka uses in DescribeGroups and ListGroups.
    pub fn kafka_name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    /// Parses a ListGroups states filter entry (case-insensitive, as Kafka).
    pub fn parse(name: &str) -> Option<Self> {
        [
            GroupState::Empty,
            GroupState::PreparingRebalance,
            GroupState::CompletingRebalance,
            GroupState::Stable,
            GroupState::Dead,
        ]
        .into_iter()
        .find(|state| state.kafka_name().eq_ignore_ascii_case(name))
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) member_id: String,
    pub(crate) group_instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) rebalance_timeout_ms: i32,
    pub(crate) session_timeout_ms: i32,
    pub(crate) protocols: Vec<JoinGroupProtocol>,
    pub(crate) assignment: Bytes,
    pub(crate) awaiting_join: Option<RequestToken>,
    pub(crate) awaiting_sync: Option<RequestToken>,
    /// Joined during the current rebalance and has never received a JoinGroup response.
    pub(crate) is_new: bool,
    /// Join order, which decides leader succession and the order of member lists.
    pub(crate) join_sequence: u64,
}

impl Member {
    pub(crate) fn metadata_for(&self, protocol: &str) -> Option<&Bytes> {
        self.protocols
            .iter()
            .find(|candidate| candidate.name == protocol)
            .map(|candidate| &candidate.metadata)
    }

    /// Same protocols with the same metadata, in the same order.
    pub(crate) fn matches(&self, protocols: &[JoinGroupProtocol]) -> bool {
        self.protocols == protocols
    }

    /// Members waiting for a rebalance to finish are not expected to heartbeat, except new
    /// members, whose parked join expires on its own timer.
    pub(crate) fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }
}

/// A topic partition.
pub(crate) type PartitionKey = (String, i32);

/// A committed (or pending transactional) offset and its position in replay order, which
/// decides between a transactional and a plain commit of the same partition (as Kafka's record
/// offsets do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredOffset {
    pub(crate) value: OffsetCommitValue,
    pub(crate) sequence: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) group_id: String,
    pub(crate) state: GroupState,
    /// When the group entered its current state; -1 when unknown.
    pub(crate) state_timestamp_ms: i64,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) generation_id: i32,
    pub(crate) leader_id: Option<String>,
    pub(crate) members: BTreeMap<String, Member>,
    /// group.instance.id -> member id
    pub(crate) static_members: BTreeMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, not joined yet.
    pub(crate) pending_members: BTreeSet<String>,
    /// Members that received the current generation's JoinGroup response but have not synced.
    pub(crate) pending_sync_members: BTreeSet<String>,
    /// A member joined during the initial delayed join: extend the delay once more.
    pub(crate) new_member_added: bool,
    /// While the initial delayed join runs: what remains of the rebalance timeout.
    pub(crate) initial_delay_remaining_ms: Option<i64>,
    /// Topics the consumer-protocol members subscribe to; None when unknown.
    pub(crate) subscribed_topics: Option<BTreeSet<String>>,
    pub(crate) offsets: BTreeMap<PartitionKey, StoredOffset>,
    /// Transactional offsets written but not yet committed or aborted, by producer id.
    pub(crate) pending_transactional_offsets: BTreeMap<i64, BTreeMap<PartitionKey, StoredOffset>>,
    pub(crate) next_join_sequence: u64,
}

impl Group {
    pub(crate) fn new(group_id: &str, now_ms: i64) -> Self {
        Self {
            group_id: group_id.to_owned(),
            state: GroupState::Empty,
            state_timestamp_ms: now_ms,
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            pending_members: BTreeSet::new(),
            pending_sync_members: BTreeSet::new(),
            new_member_added: false,
            initial_delay_remaining_ms: None,
            subscribed_topics: None,
            offsets: BTreeMap::new(),
            pending_transactional_offsets: BTreeMap::new(),
            next_join_sequence: 0,
        }
    }

    pub(crate) fn transition(&mut self, state: GroupState, now_ms: i64) {
        self.state = state;
        self.state_timestamp_ms = now_ms;
    }

    pub(crate) fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    pub(crate) fn members_in_join_order(&self) -> Vec<&Member> {
        let mut members: Vec<&Member> = self.members.values().collect();
        members.sort_by_key(|member| member.join_sequence);
        members
    }

    pub(crate) fn awaiting_join_count(&self) -> usize {
        self.members
            .values()
            .filter(|member| member.awaiting_join.is_some())
            .count()
    }

    pub(crate) fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.awaiting_join_count() && self.pending_members.is_empty()
    }

    /// The longest rebalance timeout of the members (how long a join phase may last).
    pub(crate) fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .values()
            .map(|member| i64::from(member.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    /// Kafka's `supportsProtocols`: an empty group accepts any non-empty protocol list; otherwise
    /// the protocol type must match and one protocol must be supported by every member.
    pub(crate) fn supports_protocols(
        &self,
        protocol_type: &str,
        protocols: &[JoinGroupProtocol],
    ) -> bool {
        if self.state == GroupState::Empty {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|protocol| {
                self.members
                    .values()
                    .all(|member| member.metadata_for(&protocol.name).is_some())
            })
    }

    /// The protocol every member supports that most members prefer; ties go to the protocol the
    /// earliest member lists first.
    pub(crate) fn select_protocol(&self) -> Option<String> {
        let members = self.members_in_join_order();
        let first = members.first()?;
        let candidates: Vec<&str> = first
            .protocols
            .iter()
            .map(|protocol| protocol.name.as_str())
            .filter(|name| {
                members
                    .iter()
                    .all(|member| member.metadata_for(name).is_some())
            })
            .collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in &members {
            if let Some(choice) = member
                .protocols
                .iter()
                .map(|protocol| protocol.name.as_str())
                .find(|name| candidates.contains(name))
            {
                *votes.entry(choice).or_default() += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for candidate in candidates {
            let count = votes.get(candidate).copied().unwrap_or(0);
            if best.is_none_or(|(_, best_count)| count > best_count) {
                best = Some((candidate, count));
            }
        }
        best.map(|(name, _)| name.to_owned())
    }

    /// Kafka's `validateMember`: a static member must present its current member id.
    pub(crate) fn validate_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), GroupError> {
        match group_instance_id {
            Some(instance_id) => match self.static_members.get(instance_id) {
                None => Err(GroupError::UnknownMemberId),
                Some(current) if current != member_id => Err(GroupError::FencedInstanceId),
                Some(_) => Ok(()),
            },
            None if self.members.contains_key(member_id) => Ok(()),
            None => Err(GroupError::UnknownMemberId),
        }
    }

    pub(crate) fn add_member(&mut self, mut member: Member) {
        member.join_sequence = self.next_join_sequence;
        self.next_join_sequence += 1;
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        if let Some(instance_id) = &member.group_instance_id {
            self.static_members
                .insert(instance_id.clone(), member.member_id.clone());
        }
        self.members.insert(member.member_id.clone(), member);
    }

    pub(crate) fn remove_member(&mut self, member_id: &str) -> Option<Member> {
        let member = self.members.remove(member_id)?;
        if let Some(instance_id) = &member.group_instance_id {
            if self.static_members.get(instance_id).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance_id);
            }
        }
        self.pending_sync_members.remove(member_id);
        if self.is_leader(member_id) {
            self.leader_id = self
                .members_in_join_order()
                .first()
                .map(|next| next.member_id.clone());
        }
        Some(member)
    }

    /// The members with their metadata for the selected protocol, as the leader receives them.
    pub(crate) fn join_members(&self) -> Vec<JoinGroupMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or_default();
        self.members_in_join_order()
            .into_iter()
            .map(|member| JoinGroupMember {
                member_id: member.member_id.clone(),
                group_instance_id: member.group_instance_id.clone(),
                metadata: member.metadata_for(protocol).cloned().unwrap_or_default(),
            })
            .collect()
    }

    pub(crate) fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for member in self.members.values() {
            let metadata = member.metadata_for(protocol)?;
            topics.extend(decode_subscription_topics(metadata).ok()?);
        }
        Some(topics)
    }

    /// Kafka's `isSubscribedToTopic`: a consumer group whose subscriptions could not be read
    /// counts as subscribed to everything; other protocol types to nothing.
    pub(crate) fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        if self.members.is_empty() {
            return false;
        }
        match &self.subscribed_topics {
            Some(topics) => topics.contains(topic),
            None => self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE),
        }
    }

    pub(crate) fn has_pending_transactional_offset(&self, topic: &str, partition: i32) -> bool {
        let key = (topic.to_owned(), partition);
        self.pending_transactional_offsets
            .values()
            .any(|offsets| offsets.contains_key(&key))
    }

    /// The group as `GroupMetadataValue`.
    pub(crate) fn to_record_value(&self) -> GroupMetadataValue {
        let protocol = self.protocol_name.as_deref().unwrap_or_default();
        GroupMetadataValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation_id,
            protocol: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            current_state_timestamp_ms: self.state_timestamp_ms,
            members: self
                .members_in_join_order()
                .into_iter()
                .map(|member| MemberMetadataValue {
                    member_id: member.member_id.clone(),
                    group_instance_id: member.group_instance_id.clone(),
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    rebalance_timeout_ms: member.rebalance_timeout_ms,
                    session_timeout_ms: member.session_timeout_ms,
                    subscription: member.metadata_for(protocol).cloned().unwrap_or_default(),
                    assignment: member.assignment.clone(),
                })
                .collect(),
        }
    }

    /// Rebuilds the group from a stored record (loading), keeping its offsets.
    pub(crate) fn from_record_value(
        group_id: &str,
        value: &GroupMetadataValue,
        offsets: BTreeMap<PartitionKey, StoredOffset>,
        pending_transactional_offsets: BTreeMap<i64, BTreeMap<PartitionKey, StoredOffset>>,
    ) -> Self {
        let mut group = Group::new(group_id, value.current_state_timestamp_ms);
        group.protocol_type = Some(value.protocol_type.clone()).filter(|kind| !kind.is_empty());
        group.protocol_name = value.protocol.clone();
        group.generation_id = value.generation;
        for stored in &value.members {
            group.add_member(Member {
                member_id: stored.member_id.clone(),
                group_instance_id: stored.group_instance_id.clone(),
                client_id: stored.client_id.clone(),
                client_host: stored.client_host.clone(),
                // Records written before rebalance timeouts existed carry -1.
                rebalance_timeout_ms: if stored.rebalance_timeout_ms == -1 {
                    stored.session_timeout_ms
                } else {
                    stored.rebalance_timeout_ms
                },
                session_timeout_ms: stored.session_timeout_ms,
                protocols: vec![JoinGroupProtocol {
                    name: value.protocol.clone().unwrap_or_default(),
                    metadata: stored.subscription.clone(),
                }],
                assignment: stored.assignment.clone(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
                join_sequence: 0,
            });
        }
        group.leader_id = value
            .leader
            .clone()
            .filter(|leader| group.members.contains_key(leader))
            .or(group.leader_id);
        group.state = if group.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        group.subscribed_topics = group.compute_subscribed_topics();
        group.offsets = offsets;
        group.pending_transactional_offsets = pending_transactional_offsets;
        group
    }
}
