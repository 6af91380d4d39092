//! Kafka's `UniformHeterogeneousAssignmentBuilder`: members subscribe to different topics.
//!
//! 1. Every member keeps the partitions it holds of the topics it still subscribes to.
//! 2. The partitions nobody holds go, topic by topic, to the topic's least loaded subscribers.
//!    Topics are taken in the order most partitions per subscriber first, then fewest
//!    subscribers, then Kafka's topic id order.
//! 3. Topics with two or more subscribers are then balanced in that order: the most loaded
//!    subscribers give their highest partitions to the least loaded until the topic's subscribers
//!    are within one partition, round after round over the topics until a round moves nothing
//!    (at most 16 rounds).
//!
//! When the subscribers of a topic all have the same subscription this balances exactly; with
//! overlapping subscriptions it can end one partition off per topic, as Kafka's does.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use uuid::Uuid;

use super::order::kafka_uuid_cmp;
use super::uniform_balancer::MemberBalancer;
use super::{
    missing_topic, partition_count, AssignmentSpec, AssignorError, MemberAssignment, TopicsImage,
};

/// Kafka's `MAX_ITERATION_COUNT`: the rounds of the final balancing.
const MAX_BALANCE_ROUNDS: usize = 16;

pub(super) fn assign(
    assignor: &'static str,
    spec: &AssignmentSpec,
    topics: &TopicsImage,
) -> Result<BTreeMap<String, MemberAssignment>, AssignorError> {
    let mut builder = Builder::new(assignor, spec, topics)?;
    if !builder.subscribers.is_empty() {
        builder.keep_subscribed_partitions(spec);
        builder.assign_unassigned_partitions();
        builder.balance();
    }
    Ok(spec.members.keys().cloned().zip(builder.target).collect())
}

struct Builder {
    /// Each member's new assignment, by member index (member id order).
    target: Vec<MemberAssignment>,
    /// The number of partitions in `target`, by member index.
    sizes: Vec<usize>,
    /// The subscribers of each subscribed topic, as ascending member indexes.
    subscribers: BTreeMap<Uuid, Vec<usize>>,
    /// The partition count of each subscribed topic.
    counts: BTreeMap<Uuid, usize>,
    /// The member index holding each partition of each subscribed topic in `target`.
    owners: BTreeMap<Uuid, Vec<Option<usize>>>,
}

impl Builder {
    fn new(
        assignor: &'static str,
        spec: &AssignmentSpec,
        topics: &TopicsImage,
    ) -> Result<Builder, AssignorError> {
        let mut subscribers: BTreeMap<Uuid, Vec<usize>> = BTreeMap::new();
        let mut counts = BTreeMap::new();
        for (index, member) in spec.members.values().enumerate() {
            for topic_id in &member.subscribed_topic_ids {
                let topic = topics
                    .topics
                    .get(topic_id)
                    .ok_or_else(|| missing_topic(assignor, *topic_id))?;
                counts.insert(*topic_id, partition_count(topic));
                subscribers.entry(*topic_id).or_default().push(index);
            }
        }
        let owners = counts
            .iter()
            .map(|(topic_id, count)| (*topic_id, vec![None; *count]))
            .collect();
        Ok(Builder {
            target: vec![MemberAssignment::new(); spec.members.len()],
            sizes: vec![0; spec.members.len()],
            subscribers,
            counts,
            owners,
        })
    }

    /// Kafka's `maybeRevokePartitions`: a member keeps what it holds of the topics it still
    /// subscribes to, and loses the other topics.
    fn keep_subscribed_partitions(&mut self, spec: &AssignmentSpec) {
        for (index, member) in spec.members.values().enumerate() {
            for (topic_id, partitions) in &member.current_assignment {
                if !member.subscribed_topic_ids.contains(topic_id) {
                    continue;
                }
                let Some(owners) = self.owners.get_mut(topic_id) else {
                    continue;
                };
                for &partition in partitions {
                    // A partition beyond the count does not exist, and one held by an earlier
                    // member cannot be held twice (neither occurs with a consistent input).
                    let Some(owner @ None) = usize::try_from(partition)
                        .ok()
                        .and_then(|p| owners.get_mut(p))
                    else {
                        continue;
                    };
                    *owner = Some(index);
                    self.sizes[index] += 1;
                    self.target[index]
                        .entry(*topic_id)
                        .or_default()
                        .insert(partition);
                }
            }
        }
    }

    /// Kafka's `sortTopicIds`: most partitions per subscriber first, then fewest subscribers,
    /// then Kafka's topic id order.
    fn sorted_topics(&self, topic_ids: impl IntoIterator<Item = Uuid>) -> Vec<Uuid> {
        let mut sorted: Vec<Uuid> = topic_ids.into_iter().collect();
        sorted.sort_by(|a, b| self.topic_order(a, b));
        sorted
    }

    fn topic_order(&self, left: &Uuid, right: &Uuid) -> Ordering {
        let (left_partitions, left_subscribers) = self.topic_shape(left);
        let (right_partitions, right_subscribers) = self.topic_shape(right);
        // Kafka compares the ratios as doubles; the same division gives the same doubles.
        let left_ratio = left_partitions as f64 / left_subscribers as f64;
        let right_ratio = right_partitions as f64 / right_subscribers as f64;
        right_ratio
            .total_cmp(&left_ratio)
            .then(left_subscribers.cmp(&right_subscribers))
            .then_with(|| kafka_uuid_cmp(left, right))
    }

    fn topic_shape(&self, topic_id: &Uuid) -> (usize, usize) {
        let partitions = self.counts.get(topic_id).copied().unwrap_or(0);
        let subscribers = self.subscribers.get(topic_id).map_or(1, Vec::len).max(1);
        (partitions, subscribers)
    }

    /// Kafka's `assignRemainingPartitions`: topic by topic, each unheld partition to the least
    /// loaded subscriber.
    fn assign_unassigned_partitions(&mut self) {
        let unassigned: BTreeMap<Uuid, Vec<i32>> = self
            .owners
            .iter()
            .map(|(topic_id, owners)| {
                let free = owners
                    .iter()
                    .enumerate()
                    .filter(|(_, owner)| owner.is_none())
                    .filter_map(|(p, _)| i32::try_from(p).ok())
                    .collect::<Vec<i32>>();
                (*topic_id, free)
            })
            .filter(|(_, free)| !free.is_empty())
            .collect();
        let mut balancer = MemberBalancer::default();
        for topic_id in self.sorted_topics(unassigned.keys().copied()) {
            let subscribers = self.subscribers.get(&topic_id).cloned().unwrap_or_default();
            balancer.initialize(&subscribers, &self.sizes);
            for &partition in unassigned.get(&topic_id).into_iter().flatten() {
                let member = balancer.next_least_loaded(&self.sizes);
                self.move_partition(topic_id, partition, member);
            }
        }
    }

    /// Kafka's `balance` and `balanceTopics`.
    fn balance(&mut self) {
        let movable = self
            .subscribers
            .iter()
            .filter(|(_, subscribers)| subscribers.len() >= 2)
            .map(|(topic_id, _)| *topic_id);
        let sorted = self.sorted_topics(movable);
        if sorted.is_empty() {
            return;
        }
        let mut balancer = MemberBalancer::default();
        // The last topic that moved partitions: reaching it again with no move in between means
        // a whole round over the topics moved nothing.
        let mut last_moved: Option<usize> = None;
        for _ in 0..MAX_BALANCE_ROUNDS {
            for (position, topic_id) in sorted.iter().enumerate() {
                if last_moved == Some(position) {
                    return;
                }
                let moved = self.balance_topic(*topic_id, &mut balancer);
                if moved > 0 || last_moved.is_none() {
                    last_moved = Some(position);
                }
            }
        }
    }

    /// Kafka's `balanceTopic`: moves the topic's partitions from its most loaded subscribers to
    /// its least loaded until they are within one; answers the number moved.
    fn balance_topic(&mut self, topic_id: Uuid, balancer: &mut MemberBalancer) -> usize {
        let subscribers = self.subscribers.get(&topic_id).cloned().unwrap_or_default();
        if balancer.initialize(&subscribers, &self.sizes) <= 1 {
            return 0;
        }
        let owners = self.owners.get(&topic_id).cloned().unwrap_or_default();
        // The topic's partitions grouped by owner (each owner's ascending), so that an owner's
        // last partition is found at once.
        let mut partitions: Vec<usize> = (0..owners.len()).collect();
        partitions.sort_by_key(|p| (owner_key(owners[*p]), *p));
        let mut start: BTreeMap<usize, usize> = BTreeMap::new();
        let mut end: BTreeMap<usize, usize> = BTreeMap::new();
        for (position, partition) in partitions.iter().enumerate() {
            if let Some(owner) = owners[*partition] {
                start.entry(owner).or_insert(position);
                end.insert(owner, position + 1);
            }
        }

        let mut moved = 0;
        while !balancer.is_balanced() {
            // The most loaded subscriber that still has a partition of the topic to give.
            let giver = loop {
                let Some(member) = balancer.next_most_loaded(&self.sizes) else {
                    break None;
                };
                match (start.get(&member), end.get(&member)) {
                    (Some(first), Some(last)) if last > first => break Some(member),
                    _ => balancer.exclude_most_loaded(),
                }
            };
            let Some(giver) = giver else {
                break;
            };
            let Some(last) = end.get_mut(&giver) else {
                break;
            };
            *last -= 1;
            let partition = partitions[*last];
            let taker = balancer.next_least_loaded(&self.sizes);
            if balancer.is_balanced() {
                break;
            }
            let Ok(partition) = i32::try_from(partition) else {
                break;
            };
            self.move_partition(topic_id, partition, taker);
            moved += 1;
        }
        moved
    }

    /// Kafka's `assignPartition`: gives the partition to `member`, taking it from its holder.
    fn move_partition(&mut self, topic_id: Uuid, partition: i32, member: usize) {
        let Some(slot) = usize::try_from(partition)
            .ok()
            .and_then(|p| self.owners.get_mut(&topic_id).and_then(|o| o.get_mut(p)))
        else {
            return;
        };
        if let Some(holder) = slot.replace(member) {
            let assignment = &mut self.target[holder];
            if let Some(held) = assignment.get_mut(&topic_id) {
                held.remove(&partition);
                if held.is_empty() {
                    assignment.remove(&topic_id);
                }
            }
            self.sizes[holder] -= 1;
        }
        self.target[member]
            .entry(topic_id)
            .or_default()
            .insert(partition);
        self.sizes[member] += 1;
    }
}

/// Kafka sorts by owner index with -1 for no owner.
fn owner_key(owner: Option<usize>) -> i64 {
    owner.map_or(-1, |o| i64::try_from(o).unwrap_or(i64::MAX))
}
