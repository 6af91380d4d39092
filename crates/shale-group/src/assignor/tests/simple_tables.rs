//! The share groups' simple assignor: cases worked by hand from Kafka 4.4's
//! SimpleHomogeneousAssignmentBuilder and SimpleHeterogeneousAssignmentBuilder.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::support::*;
use crate::assignor::{simple, MemberAssignment, SubscriptionType, TopicsImage};

/// Every partition of every topic is assignable.
fn all_of(image: &TopicsImage) -> BTreeMap<Uuid, BTreeSet<i32>> {
    image
        .topics
        .values()
        .map(|topic| (topic.topic_id, (0..topic.partition_count()).collect()))
        .collect()
}

fn run_simple(
    members: Vec<Member>,
    image: &TopicsImage,
    assignable: &BTreeMap<Uuid, BTreeSet<i32>>,
    subscription_type: SubscriptionType,
) -> BTreeMap<String, MemberAssignment> {
    simple::assign(&spec(members), image, assignable, subscription_type)
}

fn homogeneous(members: Vec<Member>, image: &TopicsImage) -> BTreeMap<String, MemberAssignment> {
    run_simple(
        members,
        image,
        &all_of(image),
        SubscriptionType::Homogeneous,
    )
}

fn result(entries: &[(&str, MemberAssignment)]) -> BTreeMap<String, MemberAssignment> {
    entries
        .iter()
        .map(|(member, assignment)| ((*member).to_owned(), assignment.clone()))
        .collect()
}

#[test]
fn more_partitions_than_members_split_without_sharing() {
    // Sharing ceil(2/3) = 1; wanted: a ceil(1.5) = 2, b ceil(3) - ceil(1.5) = 1.
    let image = topics(&[(T1, 3)]);
    let assigned = homogeneous(vec![member("a", &[T1]), member("b", &[T1])], &image);
    assert_eq!(
        assigned,
        result(&[("a", parts(&[(T1, &[0, 2])])), ("b", parts(&[(T1, &[1])]))])
    );
}

#[test]
fn more_members_than_partitions_share_them() {
    // One partition, three members: sharing 3, each wants 1.
    let image = topics(&[(T1, 1)]);
    let assigned = homogeneous(
        vec![member("a", &[T1]), member("b", &[T1]), member("c", &[T1])],
        &image,
    );
    let all = parts(&[(T1, &[0])]);
    assert_eq!(
        assigned,
        result(&[("a", all.clone()), ("b", all.clone()), ("c", all)])
    );

    // Two partitions, four members: sharing 2, each wants 1.
    let image = topics(&[(T1, 2)]);
    let assigned = homogeneous(
        vec![
            member("a", &[T1]),
            member("b", &[T1]),
            member("c", &[T1]),
            member("d", &[T1]),
        ],
        &image,
    );
    assert_eq!(
        assigned,
        result(&[
            ("a", parts(&[(T1, &[0])])),
            ("b", parts(&[(T1, &[0])])),
            ("c", parts(&[(T1, &[1])])),
            ("d", parts(&[(T1, &[1])])),
        ])
    );
}

#[test]
fn current_assignment_is_kept_when_balanced() {
    let image = topics(&[(T1, 3)]);
    let assigned = homogeneous(
        vec![
            member("a", &[T1]).holding(parts(&[(T1, &[1, 2])])),
            member("b", &[T1]).holding(parts(&[(T1, &[0])])),
        ],
        &image,
    );
    assert_eq!(
        assigned,
        result(&[("a", parts(&[(T1, &[1, 2])])), ("b", parts(&[(T1, &[0])]))])
    );
}

#[test]
fn a_joining_member_takes_the_excess_of_an_overfilled_one() {
    let image = topics(&[(T1, 3)]);
    let assigned = homogeneous(
        vec![
            member("a", &[T1]).holding(parts(&[(T1, &[0, 1, 2])])),
            member("b", &[T1]),
        ],
        &image,
    );
    assert_eq!(
        assigned,
        result(&[("a", parts(&[(T1, &[1, 2])])), ("b", parts(&[(T1, &[0])]))])
    );
}

#[test]
fn an_overshared_partition_loses_members_who_move_on() {
    // Both hold p0 of two partitions: sharing 1, so one of them gives p0 up and takes p1.
    let image = topics(&[(T1, 2)]);
    let assigned = homogeneous(
        vec![
            member("a", &[T1]).holding(parts(&[(T1, &[0])])),
            member("b", &[T1]).holding(parts(&[(T1, &[0])])),
        ],
        &image,
    );
    assert_eq!(
        assigned,
        result(&[("a", parts(&[(T1, &[1])])), ("b", parts(&[(T1, &[0])]))])
    );
}

#[test]
fn only_initialized_partitions_are_assigned() {
    let image = topics(&[(T1, 3)]);
    let assignable = BTreeMap::from([(topic_id(T1), BTreeSet::from([0]))]);
    let assigned = run_simple(
        vec![
            member("a", &[T1]).holding(parts(&[(T1, &[2])])),
            member("b", &[T1]),
        ],
        &image,
        &assignable,
        SubscriptionType::Homogeneous,
    );
    let only_first = parts(&[(T1, &[0])]);
    assert_eq!(
        assigned,
        result(&[("a", only_first.clone()), ("b", only_first)])
    );
    // Nothing initialized: nothing assigned, every member still answered.
    let assigned = run_simple(
        vec![member("a", &[T1])],
        &image,
        &BTreeMap::new(),
        SubscriptionType::Homogeneous,
    );
    assert_eq!(assigned, result(&[("a", MemberAssignment::new())]));
}

#[test]
fn unsubscribed_topics_are_dropped() {
    let image = topics(&[(T1, 1), (T2, 1)]);
    let assigned = homogeneous(
        vec![member("a", &[T1]).holding(parts(&[(T1, &[0]), (T2, &[0])]))],
        &image,
    );
    assert_eq!(assigned, result(&[("a", parts(&[(T1, &[0])]))]));
}

#[test]
fn heterogeneous_groups_balance_each_topic_among_its_subscribers() {
    let image = topics(&[(T1, 2), (T2, 2)]);
    let assigned = run_simple(
        vec![
            member("a", &[T1]),
            member("b", &[T2]),
            member("c", &[T1, T2]),
        ],
        &image,
        &all_of(&image),
        SubscriptionType::Heterogeneous,
    );
    assert_eq!(
        assigned,
        result(&[
            ("a", parts(&[(T1, &[0])])),
            ("b", parts(&[(T2, &[0])])),
            ("c", parts(&[(T1, &[1]), (T2, &[1])])),
        ])
    );
    // A member that left a topic gives it up to a subscriber.
    let assigned = run_simple(
        vec![
            member("a", &[T1]).holding(parts(&[(T1, &[0]), (T2, &[0, 1])])),
            member("b", &[T2]),
        ],
        &image,
        &all_of(&image),
        SubscriptionType::Heterogeneous,
    );
    assert_eq!(
        assigned,
        result(&[
            ("a", parts(&[(T1, &[0, 1])])),
            ("b", parts(&[(T2, &[0, 1])])),
        ])
    );
}

#[test]
fn balance_and_sharing_hold_for_many_shapes() {
    let mut rng = Rng::new(932);
    for _ in 0..200 {
        let partitions = 1 + rng.below(6) as usize;
        let member_count = 1 + rng.below(8) as usize;
        let image = topics(&[(T1, partitions)]);
        const IDS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
        let members: Vec<Member> = IDS[..member_count]
            .iter()
            .map(|id| {
                let held: Vec<i32> = (0..partitions as i32).filter(|_| rng.chance(40)).collect();
                member(id, &[T1]).holding(parts(&[(T1, &held)]))
            })
            .collect();
        let assigned = homogeneous(members, &image);
        let sizes: Vec<usize> = assigned
            .values()
            .map(|a| a.values().map(BTreeSet::len).sum())
            .collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(max - min <= 1, "unbalanced {sizes:?}");
        let sharing = member_count.div_ceil(partitions);
        for partition in 0..partitions as i32 {
            let holders = assigned
                .values()
                .filter(|a| a.get(&topic_id(T1)).is_some_and(|p| p.contains(&partition)))
                .count();
            assert!(holders <= sharing);
            assert!(holders >= 1, "partition {partition} unassigned");
        }
    }
}
