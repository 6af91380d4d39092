//! Properties of every assignment over random groups evolving round after round: members join
//! and leave, subscriptions change, topics grow, and each round starts from the previous result.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::support::*;
use crate::assignor::range::RangeAssignor;
use crate::assignor::uniform::UniformAssignor;
use crate::assignor::{
    AssignmentMember, AssignmentSpec, MemberAssignment, PartitionAssignor, SubscriptionType,
    TopicMetadata, TopicsImage,
};

const SEEDS: u64 = 300;
const ROUNDS: usize = 8;

/// A random group and how it changes.
struct World {
    rng: Rng,
    image: TopicsImage,
    spec: AssignmentSpec,
    next_member: u32,
    homogeneous: bool,
}

impl World {
    fn new(seed: u64, homogeneous: bool) -> World {
        let mut rng = Rng::new(seed);
        let topic_count = 1 + rng.below(5);
        let mut image = TopicsImage::default();
        for n in 0..topic_count {
            // Some ids with the first bit set, so that Kafka's signed order matters.
            let id = if rng.chance(50) {
                Uuid::from_u64_pair(rng.next_u64() | (1 << 63), rng.next_u64())
            } else {
                Uuid::from_u64_pair(rng.next_u64() >> 1, rng.next_u64())
            };
            let partitions = usize::try_from(rng.below(9)).unwrap_or(0);
            image.topics.insert(
                id,
                TopicMetadata {
                    topic_id: id,
                    name: format!("topic-{n}"),
                    partition_racks: vec![BTreeSet::new(); partitions],
                },
            );
        }
        let mut world = World {
            rng,
            image,
            spec: AssignmentSpec::default(),
            next_member: 0,
            homogeneous,
        };
        let members = 1 + world.rng.below(7);
        let shared = world.random_subscription();
        for _ in 0..members {
            world.add_member(&shared);
        }
        world
    }

    fn random_subscription(&mut self) -> BTreeSet<Uuid> {
        let ids: Vec<Uuid> = self.image.topics.keys().copied().collect();
        ids.into_iter().filter(|_| self.rng.chance(60)).collect()
    }

    fn add_member(&mut self, shared: &BTreeSet<Uuid>) {
        let id = format!("member-{:03}-{}", self.rng.below(1000), self.next_member);
        self.next_member += 1;
        let subscribed = if self.homogeneous {
            shared.clone()
        } else {
            self.random_subscription()
        };
        let instance_id = self
            .rng
            .chance(30)
            .then(|| format!("instance-{}", self.next_member));
        self.spec.members.insert(
            id.clone(),
            AssignmentMember {
                member_id: id,
                instance_id,
                rack_id: None,
                subscribed_topic_ids: subscribed,
                current_assignment: MemberAssignment::new(),
            },
        );
    }

    /// Applies the result, then changes the group a little.
    fn evolve(&mut self, result: &BTreeMap<String, MemberAssignment>) {
        self.spec = holding_result(&self.spec, result);
        if self.rng.chance(30) {
            let shared = self
                .spec
                .members
                .values()
                .next()
                .map(|m| m.subscribed_topic_ids.clone())
                .unwrap_or_default();
            self.add_member(&shared);
        }
        if self.rng.chance(25) && self.spec.members.len() > 1 {
            let ids: Vec<String> = self.spec.members.keys().cloned().collect();
            let index = usize::try_from(self.rng.below(ids.len() as u64)).unwrap_or(0);
            self.spec.members.remove(&ids[index]);
        }
        if self.rng.chance(20) {
            // Partitions are only ever added, as in Kafka.
            let ids: Vec<Uuid> = self.image.topics.keys().copied().collect();
            let index = usize::try_from(self.rng.below(ids.len() as u64)).unwrap_or(0);
            if let Some(topic) = self.image.topics.get_mut(&ids[index]) {
                let more = usize::try_from(1 + self.rng.below(3)).unwrap_or(1);
                topic.partition_racks.extend(vec![BTreeSet::new(); more]);
            }
        }
        if self.rng.chance(20) {
            let subscription = self.random_subscription();
            if self.homogeneous {
                for member in self.spec.members.values_mut() {
                    member.subscribed_topic_ids = subscription.clone();
                }
            } else if let Some(member) = self.spec.members.values_mut().next() {
                member.subscribed_topic_ids = subscription;
            }
        }
    }
}

fn size(assignment: &MemberAssignment) -> usize {
    assignment.values().map(BTreeSet::len).sum()
}

fn flatten(assignment: &MemberAssignment) -> BTreeSet<(Uuid, i32)> {
    assignment
        .iter()
        .flat_map(|(t, ps)| ps.iter().map(|p| (*t, *p)))
        .collect()
}

/// Every partition of a subscribed topic assigned exactly once, only to a subscriber; nothing
/// else assigned; every member present; no empty partition set.
fn check_valid(
    spec: &AssignmentSpec,
    image: &TopicsImage,
    result: &BTreeMap<String, MemberAssignment>,
    context: &str,
) {
    assert_eq!(
        result.keys().collect::<Vec<_>>(),
        spec.members.keys().collect::<Vec<_>>(),
        "{context}: one entry per member"
    );
    let mut seen: BTreeSet<(Uuid, i32)> = BTreeSet::new();
    for (id, assignment) in result {
        let member = &spec.members[id];
        for (topic, partitions) in assignment {
            assert!(!partitions.is_empty(), "{context}: empty set for {id}");
            assert!(
                member.subscribed_topic_ids.contains(topic),
                "{context}: {id} got a topic it does not subscribe to"
            );
            for p in partitions {
                assert!(
                    seen.insert((*topic, *p)),
                    "{context}: {topic}-{p} assigned twice"
                );
            }
        }
    }
    let subscribed: BTreeSet<Uuid> = spec
        .members
        .values()
        .flat_map(|m| m.subscribed_topic_ids.iter().copied())
        .collect();
    let expected: BTreeSet<(Uuid, i32)> = subscribed
        .iter()
        .flat_map(|t| (0..image.topics[t].partition_count()).map(|p| (*t, p)))
        .collect();
    assert_eq!(
        seen, expected,
        "{context}: exactly the subscribed partitions"
    );
}

fn check_balanced(result: &BTreeMap<String, MemberAssignment>, context: &str) {
    let sizes: Vec<usize> = result.values().map(size).collect();
    if let (Some(max), Some(min)) = (sizes.iter().max(), sizes.iter().min()) {
        assert!(max - min <= 1, "{context}: sizes {sizes:?}");
    }
}

/// A member keeps as much of what it held as its new size allows.
fn check_sticky(spec: &AssignmentSpec, result: &BTreeMap<String, MemberAssignment>, context: &str) {
    for (id, member) in &spec.members {
        let held: BTreeSet<(Uuid, i32)> = flatten(&member.current_assignment)
            .into_iter()
            .filter(|(t, _)| member.subscribed_topic_ids.contains(t))
            .collect();
        let now = flatten(&result[id]);
        let kept = held.intersection(&now).count();
        assert_eq!(
            kept,
            held.len().min(now.len()),
            "{context}: {id} held {held:?} and got {now:?}"
        );
    }
}

fn check_deterministic(
    assignor: &dyn PartitionAssignor,
    spec: &AssignmentSpec,
    image: &TopicsImage,
    subscription_type: SubscriptionType,
    result: &BTreeMap<String, MemberAssignment>,
    context: &str,
) {
    let again = assignor.assign_with_subscription_type(spec, image, subscription_type);
    assert_eq!(
        again.as_ref().ok(),
        Some(result),
        "{context}: same input, same output"
    );
}

/// Assigning again from the result changes nothing.
fn check_fixed_point(
    assignor: &dyn PartitionAssignor,
    spec: &AssignmentSpec,
    image: &TopicsImage,
    subscription_type: SubscriptionType,
    result: &BTreeMap<String, MemberAssignment>,
    context: &str,
) {
    let next = holding_result(spec, result);
    let again = assignor.assign_with_subscription_type(&next, image, subscription_type);
    assert_eq!(
        again.as_ref().ok(),
        Some(result),
        "{context}: stable when nothing changes"
    );
}

fn assign(
    assignor: &dyn PartitionAssignor,
    world: &World,
    subscription_type: SubscriptionType,
    context: &str,
) -> BTreeMap<String, MemberAssignment> {
    match assignor.assign_with_subscription_type(&world.spec, &world.image, subscription_type) {
        Ok(result) => result,
        Err(error) => panic!("{context}: {error}"),
    }
}

#[test]
fn uniform_homogeneous_is_valid_balanced_sticky_and_stable() {
    for seed in 0..SEEDS {
        let mut world = World::new(seed, true);
        for round in 0..ROUNDS {
            let context = format!("seed {seed} round {round}");
            let kind = SubscriptionType::Homogeneous;
            let result = assign(&UniformAssignor, &world, kind, &context);
            check_valid(&world.spec, &world.image, &result, &context);
            check_balanced(&result, &context);
            check_sticky(&world.spec, &result, &context);
            check_deterministic(
                &UniformAssignor,
                &world.spec,
                &world.image,
                kind,
                &result,
                &context,
            );
            check_fixed_point(
                &UniformAssignor,
                &world.spec,
                &world.image,
                kind,
                &result,
                &context,
            );
            world.evolve(&result);
        }
    }
}

#[test]
fn uniform_heterogeneous_is_valid_and_stable() {
    for seed in 0..SEEDS {
        let mut world = World::new(seed, false);
        for round in 0..ROUNDS {
            let context = format!("seed {seed} round {round}");
            let kind = world.spec.subscription_type();
            let result = assign(&UniformAssignor, &world, kind, &context);
            check_valid(&world.spec, &world.image, &result, &context);
            check_deterministic(
                &UniformAssignor,
                &world.spec,
                &world.image,
                kind,
                &result,
                &context,
            );
            check_fixed_point(
                &UniformAssignor,
                &world.spec,
                &world.image,
                kind,
                &result,
                &context,
            );
            world.evolve(&result);
        }
    }
}

#[test]
fn uniform_heterogeneous_balances_identical_subscriptions() {
    // Kafka's heterogeneous builder balances exactly when a topic's subscribers all have the
    // same subscription; run it on homogeneous groups.
    for seed in 0..SEEDS {
        let mut world = World::new(seed, true);
        for round in 0..ROUNDS {
            let context = format!("seed {seed} round {round}");
            let kind = SubscriptionType::Heterogeneous;
            let result = assign(&UniformAssignor, &world, kind, &context);
            check_valid(&world.spec, &world.image, &result, &context);
            check_balanced(&result, &context);
            check_fixed_point(
                &UniformAssignor,
                &world.spec,
                &world.image,
                kind,
                &result,
                &context,
            );
            world.evolve(&result);
        }
    }
}

#[test]
fn range_is_valid_contiguous_and_co_partitioned() {
    for seed in 0..SEEDS {
        let homogeneous = seed % 2 == 0;
        let mut world = World::new(seed, homogeneous);
        for round in 0..ROUNDS {
            let context = format!("seed {seed} round {round}");
            let kind = world.spec.subscription_type();
            let result = assign(&RangeAssignor, &world, kind, &context);
            check_valid(&world.spec, &world.image, &result, &context);
            check_ranges(&world.spec, &world.image, &result, &context);
            check_deterministic(
                &RangeAssignor,
                &world.spec,
                &world.image,
                kind,
                &result,
                &context,
            );
            check_fixed_point(
                &RangeAssignor,
                &world.spec,
                &world.image,
                kind,
                &result,
                &context,
            );
            world.evolve(&result);
        }
    }
}

/// Each subscriber's partitions of a topic are one contiguous range, within one of the others'
/// sizes; topics with the same partition count and subscribers give each member the same
/// partition numbers.
fn check_ranges(
    spec: &AssignmentSpec,
    image: &TopicsImage,
    result: &BTreeMap<String, MemberAssignment>,
    context: &str,
) {
    let mut by_topic: BTreeMap<Uuid, BTreeMap<&str, Vec<i32>>> = BTreeMap::new();
    for (id, member) in &spec.members {
        for topic in &member.subscribed_topic_ids {
            let partitions: Vec<i32> = result[id]
                .get(topic)
                .map(|ps| ps.iter().copied().collect())
                .unwrap_or_default();
            if let (Some(first), Some(last)) = (partitions.first(), partitions.last()) {
                assert_eq!(
                    usize::try_from(last - first + 1).ok(),
                    Some(partitions.len()),
                    "{context}: {id} range {partitions:?}"
                );
            }
            by_topic.entry(*topic).or_default().insert(id, partitions);
        }
    }
    for (topic, members) in &by_topic {
        let sizes: Vec<usize> = members.values().map(Vec::len).collect();
        let (Some(max), Some(min)) = (sizes.iter().max(), sizes.iter().min()) else {
            continue;
        };
        assert!(max - min <= 1, "{context}: {topic} sizes {sizes:?}");
        for (other, other_members) in &by_topic {
            let same_shape = image.topics[topic].partition_count()
                == image.topics[other].partition_count()
                && members.keys().eq(other_members.keys());
            if same_shape {
                assert_eq!(members, other_members, "{context}: co-partitioning");
            }
        }
    }
}
