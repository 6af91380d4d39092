//! Kafka's `UniformHomogeneousAssignmentBuilder`: every member subscribes to the same topics.
//!
//! Balance first, then stickiness. With P partitions and M members every member's quota is
//! P / M, and P % M members hold one more. Members are taken in member order; each keeps its
//! current partitions up to its quota and gives back the rest. The extra partition is offered to
//! each member in turn while extras remain; a member that cannot fill it from what it holds
//! passes it on, as long as enough members are left to take the remaining extras (Kafka 4.4's
//! rule, read from its `maybeRevokePartitions`), so that a later member holding one more keeps
//! it. The partitions nobody holds (topic by topic, ascending), then those given back, fill the
//! members below their quota in member order. A member therefore keeps min(current, quota)
//! partitions, and only the partitions over a quota or of departed members move.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::order::in_kafka_order;
use super::{
    current_owners, missing_topic, partition_count, AssignmentSpec, AssignorError,
    MemberAssignment, TopicsImage,
};

pub(super) fn assign(
    assignor: &'static str,
    spec: &AssignmentSpec,
    topics: &TopicsImage,
) -> Result<BTreeMap<String, MemberAssignment>, AssignorError> {
    let mut target: BTreeMap<String, MemberAssignment> = spec
        .members
        .keys()
        .map(|id| (id.clone(), MemberAssignment::new()))
        .collect();
    // Kafka reads the subscription of the first member: the group is homogeneous.
    let Some(first) = spec.members.values().next() else {
        return Ok(target);
    };
    let subscribed = &first.subscribed_topic_ids;
    if subscribed.is_empty() {
        return Ok(target);
    }
    if let Some(other) = spec
        .members
        .values()
        .find(|member| &member.subscribed_topic_ids != subscribed)
    {
        return Err(AssignorError::Failed {
            assignor,
            reason: format!(
                "the group was said to be homogeneous but member {} subscribes to other topics \
                 than member {}",
                other.member_id, first.member_id
            ),
        });
    }

    // The partitions nobody holds, topic by topic.
    let owners = current_owners(spec);
    let mut counts: BTreeMap<Uuid, usize> = BTreeMap::new();
    let mut unassigned: Vec<(Uuid, i32)> = Vec::new();
    let mut total_partitions: usize = 0;
    for topic_id in in_kafka_order(subscribed) {
        let topic = topics
            .topics
            .get(&topic_id)
            .ok_or_else(|| missing_topic(assignor, topic_id))?;
        let count = partition_count(topic);
        counts.insert(topic_id, count);
        unassigned.extend(
            (0..topic.partition_count())
                .filter(|p| !owners.contains_key(&(topic_id, *p)))
                .map(|p| (topic_id, p)),
        );
        total_partitions += count;
    }

    let member_count = spec.members.len();
    let minimum_quota = total_partitions / member_count;
    let mut members_with_extra = total_partitions % member_count;

    // Keep what each member holds up to its quota; give back the rest.
    let mut unfilled: Vec<(&str, usize)> = Vec::new();
    for (position, (member_id, member)) in spec.members.iter().enumerate() {
        let mut quota = minimum_quota;
        let mut takes_extra = false;
        if members_with_extra > 0 {
            quota += 1;
            takes_extra = true;
        }
        let assignment = target.entry(member_id.clone()).or_default();
        for topic_id in in_kafka_order(member.current_assignment.keys()) {
            let Some(&count) = counts.get(&topic_id) else {
                // No longer subscribed: the whole topic goes.
                continue;
            };
            let held = member
                .current_assignment
                .get(&topic_id)
                .into_iter()
                .flatten()
                // A partition beyond the count does not exist (Kafka never shrinks a topic).
                .filter(|p| usize::try_from(**p).is_ok_and(|p| p < count))
                .filter(|p| owners.get(&(topic_id, **p)) == Some(&member_id.as_str()));
            for &partition in held {
                if quota > 0 {
                    quota -= 1;
                    assignment.entry(topic_id).or_default().insert(partition);
                } else {
                    unassigned.push((topic_id, partition));
                }
            }
        }
        // This member and the ones after it: while they outnumber the extras left, a member
        // that cannot fill its extra from what it holds passes it on.
        let members_left = member_count - position;
        if quota > 0 && takes_extra && members_left > members_with_extra {
            quota -= 1;
            takes_extra = false;
        }
        if quota > 0 {
            unfilled.push((member_id.as_str(), quota));
        }
        if takes_extra {
            members_with_extra -= 1;
        }
    }

    // Fill the members below their quota, in member order.
    let mut next = unassigned.into_iter();
    for (member_id, quota) in unfilled {
        let assignment = target.entry(member_id.to_owned()).or_default();
        for (topic_id, partition) in next.by_ref().take(quota) {
            assignment.entry(topic_id).or_default().insert(partition);
        }
    }
    if next.next().is_some() {
        return Err(AssignorError::Failed {
            assignor,
            reason: "partitions were left unassigned".to_owned(),
        });
    }
    Ok(target)
}
