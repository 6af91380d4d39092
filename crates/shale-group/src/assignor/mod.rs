//! Server-side partition assignors of the consumer group protocol (KIP-848).
//!
//! The coordinator computes a group's target assignment with the assignor its members chose
//! (`group.remote.assignor`, limited by `group.consumer.assignors`). An assignor is a pure
//! function of the members' subscriptions, racks and current assignments and of the subscribed
//! topics' partitions and replica racks: the same input always gives the same assignment.
//!
//! - [`uniform`]: Kafka's `UniformAssignor` (`uniform`, the default), balanced and sticky.
//! - [`range`]: Kafka's server-side `RangeAssignor` (`range`), co-partitioning topics.
//! - [`simple`]: Kafka's `SimpleAssignor` of share groups (`simple`), where members share partitions.
//!
//! Both follow Apache Kafka 4.4's classes of the same names step for step. Where Kafka iterates a
//! `HashMap` or `HashSet` (the members, the topics of a member's assignment) and the order decides
//! an outcome, these iterate in a defined order instead: members by member id, topics in Kafka's
//! `Uuid` order, partitions ascending. Kafka 4.4's built-in assignors do not read the racks of
//! members or replicas (its tests use a custom assignor for rack-aware placement), so neither do
//! these: the racks are in the input for assignors that do.

mod order;
pub mod range;
pub mod simple;
pub mod uniform;
mod uniform_balancer;
mod uniform_heterogeneous;
mod uniform_homogeneous;

#[cfg(test)]
mod tests;

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

impl AssignmentSpec {
    /// The subscription type as the topic ids show it: homogeneous when every member subscribes
    /// to the same existing topics. Kafka decides it from the subscribed topic *names*, which also
    /// counts names of topics that do not exist; a coordinator that knows the names should say so
    /// with [`PartitionAssignor::assign_with_subscription_type`] and
    /// [`SubscriptionType::from_topic_names`].
    pub fn subscription_type(&self) -> SubscriptionType {
        let mut subscriptions = self.members.values().map(|m| &m.subscribed_topic_ids);
        match subscriptions.next() {
            Some(first) if subscriptions.any(|other| other != first) => {
                SubscriptionType::Heterogeneous
            }
            _ => SubscriptionType::Homogeneous,
        }
    }
}

/// Whether all members subscribe to the same topics (Kafka's `SubscriptionType`); the uniform
/// assignor picks its algorithm by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionType {
    Homogeneous,
    Heterogeneous,
}

impl SubscriptionType {
    /// Kafka's `ModernGroup.subscriptionType`: from the number of members subscribed to each
    /// topic name, homogeneous when every name has all `member_count` members (or no name is
    /// subscribed at all).
    pub fn from_topic_names<'a>(
        subscriber_counts: impl IntoIterator<Item = (&'a str, usize)>,
        member_count: usize,
    ) -> SubscriptionType {
        if subscriber_counts
            .into_iter()
            .any(|(_, count)| count != member_count)
        {
            SubscriptionType::Heterogeneous
        } else {
            SubscriptionType::Homogeneous
        }
    }
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

    /// [`assign`](Self::assign) with the group's subscription type as the coordinator computed
    /// it, as Kafka's `GroupSpec.subscriptionType()` carries it. An assignor whose result does not
    /// depend on it need not override this.
    fn assign_with_subscription_type(
        &self,
        spec: &AssignmentSpec,
        topics: &TopicsImage,
        subscription_type: SubscriptionType,
    ) -> Result<BTreeMap<String, MemberAssignment>, AssignorError> {
        let _ = subscription_type;
        self.assign(spec, topics)
    }
}

static UNIFORM: uniform::UniformAssignor = uniform::UniformAssignor;
static RANGE: range::RangeAssignor = range::RangeAssignor;

/// The built-in assignor Kafka names `name` (`uniform` or `range`, exactly as spelled).
pub fn assignor_named(name: &str) -> Option<&'static dyn PartitionAssignor> {
    match name {
        uniform::NAME => Some(&UNIFORM),
        range::NAME => Some(&RANGE),
        _ => None,
    }
}

/// The names of the built-in assignors, in the order of Kafka's default
/// `group.consumer.assignors` (the first is the default).
pub fn assignor_names() -> [&'static str; 2] {
    [uniform::NAME, range::NAME]
}

/// The holder of every partition in the members' current assignments, as Kafka's
/// `GroupSpec.isPartitionAssigned` answers from the group's target assignment. A target
/// assignment never gives a partition to two members; should the input do so, the first member
/// in member order holds it, so that no partition is ever assigned twice.
fn current_owners(spec: &AssignmentSpec) -> BTreeMap<(Uuid, i32), &str> {
    let mut owners = BTreeMap::new();
    for (member_id, member) in &spec.members {
        for (topic, partitions) in &member.current_assignment {
            for partition in partitions {
                owners
                    .entry((*topic, *partition))
                    .or_insert(member_id.as_str());
            }
        }
    }
    owners
}

/// Kafka's "doesn't exist in the topic metadata" failure.
fn missing_topic(assignor: &'static str, topic: Uuid) -> AssignorError {
    AssignorError::Failed {
        assignor,
        reason: format!(
            "members are subscribed to topic {topic} which doesn't exist in the topic metadata"
        ),
    }
}

/// The partition count of `topic` as a `usize`.
fn partition_count(topic: &TopicMetadata) -> usize {
    topic.partition_racks.len()
}
