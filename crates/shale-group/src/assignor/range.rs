//! Kafka's server-side `RangeAssignor` (`range`).
//!
//! Each topic is cut into contiguous ranges, one per subscriber: with P partitions and N
//! subscribers every subscriber gets P / N and the first P % N one more, in member order. The
//! member order is the same for every topic, so topics with the same partition count and the same
//! subscribers are co-partitioned: a member gets the same partition numbers of each, which joins
//! across topics need. The order is static members first, by `group.instance.id`, then the
//! others by member id: a static member that rejoins under a new member id keeps its ranges as
//! long as the members, their subscriptions and the topics do not change. Kafka 4.4's range
//! assignor reads nothing else: neither the current assignment nor the racks.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use uuid::Uuid;

use super::order::java_string_cmp;
use super::{
    AssignmentMember, AssignmentSpec, AssignorError, MemberAssignment, PartitionAssignor,
    TopicsImage,
};

/// Kafka's `RangeAssignor.NAME`.
pub const NAME: &str = "range";

#[derive(Debug, Clone, Copy, Default)]
pub struct RangeAssignor;

impl PartitionAssignor for RangeAssignor {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Kafka's homogeneous and heterogeneous paths give the same ranges (the homogeneous one
    /// only saves counting subscribers), so the subscription type does not matter here.
    fn assign(
        &self,
        spec: &AssignmentSpec,
        topics: &TopicsImage,
    ) -> Result<BTreeMap<String, MemberAssignment>, AssignorError> {
        let members = sorted_members(spec);

        // Each subscribed topic's partition count and subscriber count.
        let mut ranges: BTreeMap<Uuid, TopicRanges> = BTreeMap::new();
        for member in &members {
            for topic_id in &member.subscribed_topic_ids {
                let Some(topic) = topics.topics.get(topic_id) else {
                    return Err(AssignorError::Failed {
                        assignor: NAME,
                        reason: format!("member is subscribed to a non-existent topic {topic_id}"),
                    });
                };
                ranges
                    .entry(*topic_id)
                    .or_insert_with(|| TopicRanges::new(topic.partition_count()))
                    .subscribers += 1;
            }
        }

        let mut target: BTreeMap<String, MemberAssignment> = BTreeMap::new();
        for member in members {
            let mut assignment = MemberAssignment::new();
            for topic_id in &member.subscribed_topic_ids {
                if let Some(range) = ranges.get_mut(topic_id).and_then(TopicRanges::next_range) {
                    assignment.insert(*topic_id, range.collect());
                }
            }
            target.insert(member.member_id.clone(), assignment);
        }
        Ok(target)
    }
}

/// Kafka's `sortMemberIds`: static members first by instance id, then the others by member id,
/// both compared as Java strings.
fn sorted_members(spec: &AssignmentSpec) -> Vec<&AssignmentMember> {
    let mut members: Vec<&AssignmentMember> = spec.members.values().collect();
    members.sort_by(|a, b| match (&a.instance_id, &b.instance_id) {
        (Some(a), Some(b)) => java_string_cmp(a, b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_string_cmp(&a.member_id, &b.member_id),
    });
    members
}

/// The ranges of one topic, handed out in member order (Kafka's `RangeAssignor.TopicMetadata`).
struct TopicRanges {
    partitions: i32,
    subscribers: i32,
    /// Where the next range starts.
    next_start: i32,
    /// How many of the next ranges get one partition over the minimum; computed at the first
    /// range, once all subscribers are counted.
    extra: Option<i32>,
}

impl TopicRanges {
    fn new(partitions: i32) -> TopicRanges {
        TopicRanges {
            partitions,
            subscribers: 0,
            next_start: 0,
            extra: None,
        }
    }

    /// The next subscriber's range, `None` when it is empty.
    fn next_range(&mut self) -> Option<std::ops::Range<i32>> {
        let subscribers = self.subscribers.max(1);
        let minimum = self.partitions / subscribers;
        let extra = self.extra.get_or_insert(self.partitions % subscribers);
        let mut quota = minimum;
        if *extra > 0 {
            quota += 1;
            *extra -= 1;
        }
        let start = self.next_start;
        let end = start.saturating_add(quota).min(self.partitions);
        self.next_start = end;
        (start < end).then_some(start..end)
    }
}
