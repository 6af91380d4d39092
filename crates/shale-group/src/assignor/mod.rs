//! Server-side partition assignors of the consumer group protocol (KIP-848).
//!
//! The coordinator computes a group's target assignment with the assignor its members chose
//! (`group.remote.assignor`, limited by `group.consumer.assignors`). An assignor is a pure
//! function of the members' subscriptions, racks and current assignments and of the subscribed
//! topics' partitions and replica racks: the same input always gives the same assignment.

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;
use uuid::Uuid;

/// Partitions of one member, by topic id.
pub type MemberAssignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// What the coordinator knows of one topic from the cluster metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub topic_id: Uuid,
    pub name: String,
    /// The racks of each partition's replicas, indexed by partition; its length is the
    /// topic's partition count. A partition whose replicas name no rack has an empty set.
    pub partition_racks: Vec<BTreeSet<String>>,
}

impl TopicMetadata {
    pub fn partition_count(&self) -> i32 {
        i32::try_from(self.partition_racks.len()).unwrap_or(i32::MAX)
    }
}

/// The topics of the cluster, by id, as the coordinator last saw them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicsImage {
    pub topics: BTreeMap<Uuid, TopicMetadata>,
}

impl TopicsImage {
    pub fn by_name(&self, name: &str) -> Option<&TopicMetadata> {
        self.topics.values().find(|topic| topic.name == name)
    }
}

/// One member as the assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignmentMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// Subscribed topics that exist (names and regular expressions already resolved).
    pub subscribed_topic_ids: BTreeSet<Uuid>,
    /// The member's current target assignment, which a sticky assignor keeps where it can.
    pub current_assignment: MemberAssignment,
}

/// The input of one assignment: every member of the group, by member id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignmentSpec {
    pub members: BTreeMap<String, AssignmentMember>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AssignorError {
    #[error("the {assignor} assignor could not assign partitions: {reason}")]
    Failed {
        assignor: &'static str,
        reason: String,
    },
}

/// A server-side assignor, named as Kafka names it (`uniform`, `range`).
pub trait PartitionAssignor: Send + Sync {
    fn name(&self) -> &'static str;

    /// The new target assignment: an entry for every member of `spec` (possibly empty), each
    /// partition of a subscribed topic given to at most one member.
    fn assign(
        &self,
        spec: &AssignmentSpec,
        topics: &TopicsImage,
    ) -> Result<BTreeMap<String, MemberAssignment>, AssignorError>;
}
