//! The share groups' `simple` assignor (KIP-932), as Kafka 4.4's SimpleAssignor with its
//! homogeneous and heterogeneous builders: a partition may be given to several members.
//!
//! Each partition wants `ceil(members / partitions)` members (its sharing) and each member
//! wants its share of the `sharing * partitions` assignments, spread by Kafka's ceiling
//! differences so that two members differ by at most one. Current assignments are kept unless
//! a member holds more than it wants or a partition is shared more than it wants; what is
//! missing is then handed round the unfilled members. Balance comes before stickiness. The
//! heterogeneous builder does the same topic by topic, among the members subscribed to it.
//!
//! Kafka walks hash maps and sets in hash order; this walks members, topics and partitions in
//! sorted order, so that every run gives the same answer. Where Kafka's hash order is the
//! sorted one (small member and partition sets, as in `simple_kafka_cases.rs`, which holds
//! answers of Kafka's own assignor) the answers are Kafka's; otherwise the rules (which
//! partitions are revoked, how many each member and partition gets) are, and which of several
//! equal choices is made may differ. Only partitions whose share-partition state is initialized
//! are assignable; a current partition that is no longer assignable is dropped (Kafka 4.4's
//! homogeneous builder fails on one).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{AssignmentSpec, MemberAssignment, SubscriptionType, TopicsImage};

pub const NAME: &str = "simple";

/// The new target assignment of every member of `spec` (each has an entry, maybe empty).
/// `assignable` holds the partitions that may be assigned, by topic id.
pub fn assign(
    spec: &AssignmentSpec,
    topics: &TopicsImage,
    assignable: &BTreeMap<Uuid, BTreeSet<i32>>,
    subscription_type: SubscriptionType,
) -> BTreeMap<String, MemberAssignment> {
    let members: Vec<&str> = spec.members.keys().map(String::as_str).collect();
    let mut result: BTreeMap<String, MemberAssignment> = members
        .iter()
        .map(|member_id| ((*member_id).to_owned(), MemberAssignment::new()))
        .collect();
    let Some(first) = spec.members.values().next() else {
        return result;
    };
    let targets_of = |topic_id: &Uuid| -> Vec<i32> {
        let count = topics
            .topics
            .get(topic_id)
            .map_or(0, |topic| topic.partition_count());
        (0..count)
            .filter(|partition| {
                assignable
                    .get(topic_id)
                    .is_some_and(|allowed| allowed.contains(partition))
            })
            .collect()
    };
    let current: Vec<&MemberAssignment> = spec
        .members
        .values()
        .map(|member| &member.current_assignment)
        .collect();
    match subscription_type {
        SubscriptionType::Homogeneous => {
            let subscribed = &first.subscribed_topic_ids;
            let targets: Vec<(Uuid, i32)> = subscribed
                .iter()
                .flat_map(|topic_id| {
                    targets_of(topic_id)
                        .into_iter()
                        .map(move |partition| (*topic_id, partition))
                })
                .collect();
            let subscribers: Vec<usize> = (0..members.len()).collect();
            let assigned = share_out(&targets, &subscribers, &current, members.len());
            for (index, partitions) in assigned.into_iter().enumerate() {
                let entry = result.entry(members[index].to_owned()).or_default();
                for (topic_id, partition) in partitions {
                    entry.entry(topic_id).or_default().insert(partition);
                }
            }
        }
        SubscriptionType::Heterogeneous => {
            let subscribed: BTreeSet<Uuid> = spec
                .members
                .values()
                .flat_map(|member| member.subscribed_topic_ids.iter().copied())
                .collect();
            for topic_id in subscribed {
                let targets: Vec<(Uuid, i32)> = targets_of(&topic_id)
                    .into_iter()
                    .map(|partition| (topic_id, partition))
                    .collect();
                let subscribers: Vec<usize> = spec
                    .members
                    .values()
                    .enumerate()
                    .filter(|(_, member)| member.subscribed_topic_ids.contains(&topic_id))
                    .map(|(index, _)| index)
                    .collect();
                let topic_current: Vec<MemberAssignment> = current
                    .iter()
                    .map(|assignment| {
                        assignment
                            .get(&topic_id)
                            .map(|partitions| BTreeMap::from([(topic_id, partitions.clone())]))
                            .unwrap_or_default()
                    })
                    .collect();
                let topic_current: Vec<&MemberAssignment> = topic_current.iter().collect();
                let assigned = share_out(&targets, &subscribers, &topic_current, members.len());
                for (index, partitions) in assigned.into_iter().enumerate() {
                    let entry = result.entry(members[index].to_owned()).or_default();
                    for (topic_id, partition) in partitions {
                        entry.entry(topic_id).or_default().insert(partition);
                    }
                }
            }
        }
    }
    result
}

/// How many members each partition wants, and how many partitions each subscriber wants
/// (indexed by member; non-subscribers want none), as Kafka computes them in doubles.
fn desired_counts(
    partition_count: usize,
    subscribers: &[usize],
    member_count: usize,
) -> (usize, Vec<usize>) {
    let mut wanted = vec![0; member_count];
    if partition_count == 0 || subscribers.is_empty() {
        return (0, wanted);
    }
    let sharing = subscribers.len().div_ceil(partition_count);
    let precise = (sharing * partition_count) as f64 / subscribers.len() as f64;
    for (position, member) in subscribers.iter().enumerate() {
        let upper = (precise * (position + 1) as f64).ceil() as usize;
        let lower = (precise * position as f64).ceil() as usize;
        wanted[*member] = upper - lower;
    }
    (sharing, wanted)
}

/// One builder pass over `targets` among `subscribers`: the partitions each member ends with.
fn share_out(
    targets: &[(Uuid, i32)],
    subscribers: &[usize],
    current: &[&MemberAssignment],
    member_count: usize,
) -> Vec<BTreeSet<(Uuid, i32)>> {
    let (sharing, wanted) = desired_counts(targets.len(), subscribers, member_count);
    let target_set: BTreeSet<(Uuid, i32)> = targets.iter().copied().collect();
    let mut by_partition: BTreeMap<(Uuid, i32), BTreeSet<usize>> = BTreeMap::new();
    let mut by_member: Vec<BTreeSet<(Uuid, i32)>> = vec![BTreeSet::new(); member_count];

    // Keep what each member holds of the assignable partitions.
    for (member, assignment) in current.iter().enumerate() {
        for (topic_id, partitions) in assignment.iter() {
            for partition in partitions {
                let key = (*topic_id, *partition);
                if target_set.contains(&key) {
                    by_partition.entry(key).or_default().insert(member);
                    by_member[member].insert(key);
                }
            }
        }
    }
    // Members holding more than they want give up the excess.
    for member in 0..member_count {
        while by_member[member].len() > wanted[member] {
            let Some(key) = by_member[member].pop_first() else {
                break;
            };
            if let Some(holders) = by_partition.get_mut(&key) {
                holders.remove(&member);
            }
        }
    }
    let mut unfilled: BTreeSet<usize> = subscribers
        .iter()
        .copied()
        .filter(|member| by_member[*member].len() < wanted[*member])
        .collect();
    // Partitions shared more than they want lose members, who become unfilled.
    for (key, holders) in by_partition.iter_mut() {
        while holders.len() > sharing {
            let Some(member) = holders.pop_first() else {
                break;
            };
            by_member[member].remove(key);
            unfilled.insert(member);
        }
    }
    for key in targets {
        by_partition.entry(*key).or_default();
    }
    assign_remaining(
        &mut by_partition,
        &mut by_member,
        unfilled,
        &wanted,
        sharing,
    );
    by_member
}

/// Hands partitions that want more members round the unfilled members, cycling through them
/// once per pass; a partition none of them can take (they all hold it) is left short.
fn assign_remaining(
    by_partition: &mut BTreeMap<(Uuid, i32), BTreeSet<usize>>,
    by_member: &mut [BTreeSet<(Uuid, i32)>],
    unfilled: BTreeSet<usize>,
    wanted: &[usize],
    sharing: usize,
) {
    let mut unfilled: Vec<usize> = unfilled.into_iter().collect();
    if unfilled.is_empty() {
        return;
    }
    let mut position = 0;
    let mut assigned_this_pass = false;
    for (key, holders) in by_partition.iter_mut() {
        let mut to_make = sharing.saturating_sub(holders.len());
        while to_make > 0 {
            if position >= unfilled.len() {
                if !assigned_this_pass || unfilled.is_empty() {
                    break;
                }
                position = 0;
                assigned_this_pass = false;
            }
            let member = unfilled[position];
            position += 1;
            if holders.insert(member) {
                by_member[member].insert(*key);
                to_make -= 1;
                assigned_this_pass = true;
                if by_member[member].len() >= wanted[member] {
                    position -= 1;
                    unfilled.remove(position);
                }
            }
        }
        if unfilled.is_empty() {
            break;
        }
    }
}
