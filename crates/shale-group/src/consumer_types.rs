//! Requests and answers of the consumer group protocol (KIP-848), in the coordinator's own
//! types: the broker converts ConsumerGroupHeartbeat and ConsumerGroupDescribe to and from them.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::assignor::MemberAssignment;

/// ConsumerGroupHeartbeat, with the fields as the client sent them (`None` = "unchanged" for
/// the nullable ones, as the protocol defines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupHeartbeatRequest {
    /// The request's API version: v0 lets the coordinator choose the member id, v1+ the client.
    pub api_version: i16,
    pub group_id: String,
    pub member_id: String,
    /// 0 to join, -1 to leave, -2 for a static member leaving temporarily.
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1 when unchanged.
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// The partitions the member owns now, by topic id.
    pub owned_partitions: Option<Vec<(Uuid, Vec<i32>)>>,
    pub client_id: String,
    pub client_host: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupHeartbeatResponse {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// The member's assignment, when it changed (or the member must be told it again).
    pub assignment: Option<MemberAssignment>,
}

/// One topic's partitions in a described assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedTopicPartitions {
    pub topic_id: Uuid,
    pub topic_name: String,
    pub partitions: BTreeSet<i32>,
}

/// A member of a consumer group, as ConsumerGroupDescribe answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConsumerMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub assignment: Vec<DescribedTopicPartitions>,
    pub target_assignment: Vec<DescribedTopicPartitions>,
    /// 1 for a consumer-protocol member, 0 for a classic member of a converted group.
    pub member_type: i8,
}

/// A consumer group, as ConsumerGroupDescribe answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConsumerGroup {
    pub group_id: String,
    pub error: Option<crate::GroupError>,
    /// Kafka's state name: "Empty", "Assigning", "Reconciling", "Stable", "Dead".
    pub group_state: String,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor_name: String,
    pub members: Vec<DescribedConsumerMember>,
}

/// Assignments keyed by member id.
pub type GroupAssignment = BTreeMap<String, MemberAssignment>;
