//! The uniform assignor with different subscriptions, worked by hand from Kafka's
//! `UniformHeterogeneousAssignmentBuilder`: topics taken most partitions per subscriber first
//! (then fewest subscribers, then topic id), each unheld partition to the topic's least loaded
//! subscriber (ties by member order), then each topic with two or more subscribers balanced by
//! moving the most loaded subscribers' highest partitions to the least loaded.

use super::support::*;
use crate::assignor::uniform::UniformAssignor;
use crate::assignor::{PartitionAssignor, SubscriptionType};

#[test]
fn overlapping_subscriptions_share_each_topic_among_its_subscribers() {
    let image = topics(&[(T1, 3), (T2, 3)]);
    let group = spec(vec![
        member("A", &[T1]),
        member("B", &[T1, T2]),
        member("C", &[T2]),
    ]);
    // T1 (1.5 per subscriber, T1 before T2 by id): A, B, A. T2: C (0) first, then C and B at 1.
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0, 2])])),
            ("B", parts(&[(T1, &[1]), (T2, &[2])])),
            ("C", parts(&[(T2, &[0, 1])])),
        ])
    );
}

#[test]
fn a_topic_with_one_subscriber_goes_whole_to_it() {
    let image = topics(&[(T1, 2), (T2, 4)]);
    let group = spec(vec![member("A", &[T1]), member("B", &[T1, T2])]);
    // T2 (4 per subscriber) first, all to B; T1 then to A, the least loaded; balancing T1 cannot
    // improve on it since A has nothing else.
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0, 1])])),
            ("B", parts(&[(T2, &[0, 1, 2, 3])])),
        ])
    );
}

#[test]
fn equal_ratios_take_the_topic_with_fewer_subscribers_first() {
    let image = topics(&[(T1, 4), (T2, 2)]);
    let group = spec(vec![member("A", &[T1, T2]), member("B", &[T1])]);
    // Both topics have 2 per subscriber; T2 has one subscriber so goes first, all to A; then T1
    // to B until B reaches A's 2, then B, then A.
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[3]), (T2, &[0, 1])])),
            ("B", parts(&[(T1, &[0, 1, 2])])),
        ])
    );
}

#[test]
fn a_joining_member_takes_the_minimum_from_the_most_loaded() {
    let image = topics(&[(T1, 4), (T2, 2)]);
    let group = spec(vec![
        member("A", &[T1, T2]).holding(parts(&[(T1, &[3]), (T2, &[0, 1])])),
        member("B", &[T1]).holding(parts(&[(T1, &[0, 1, 2])])),
        member("C", &[T1]),
    ]);
    // Balancing T1: B (3) gives its highest, T1-2, to C; A (3) gives T1-3 to C; then balanced.
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T2, &[0, 1])])),
            ("B", parts(&[(T1, &[0, 1])])),
            ("C", parts(&[(T1, &[2, 3])])),
        ])
    );
}

#[test]
fn a_dropped_topic_goes_to_its_remaining_subscribers() {
    let image = topics(&[(T1, 2), (T2, 2)]);
    let group = spec(vec![
        member("A", &[T1]).holding(parts(&[(T1, &[0]), (T2, &[0, 1])])),
        member("B", &[T1]).holding(parts(&[(T1, &[1])])),
        member("C", &[T2]),
    ]);
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0])])),
            ("B", parts(&[(T1, &[1])])),
            ("C", parts(&[(T2, &[0, 1])])),
        ])
    );
}

#[test]
fn the_subscription_type_chooses_the_algorithm() {
    // Same topic ids for both members, but Kafka counted a subscribed name that does not exist
    // for only one of them: the group is heterogeneous and the other algorithm runs.
    let image = topics(&[(T1, 3)]);
    let group = spec(vec![member("A", &[T1]), member("B", &[T1])]);
    assert_eq!(
        SubscriptionType::from_topic_names([("t1", 2), ("missing", 1)], 2),
        SubscriptionType::Heterogeneous
    );
    let heterogeneous = UniformAssignor
        .assign_with_subscription_type(&group, &image, SubscriptionType::Heterogeneous)
        .ok();
    assert_eq!(
        heterogeneous,
        Some(expect(vec![
            ("A", parts(&[(T1, &[0, 2])])),
            ("B", parts(&[(T1, &[1])])),
        ]))
    );
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0])])),
            ("B", parts(&[(T1, &[1, 2])])),
        ])
    );
}

#[test]
fn subscription_types_follow_kafkas_rule() {
    assert_eq!(
        SubscriptionType::from_topic_names([], 3),
        SubscriptionType::Homogeneous
    );
    assert_eq!(
        SubscriptionType::from_topic_names([("a", 3), ("b", 3)], 3),
        SubscriptionType::Homogeneous
    );
    assert_eq!(
        SubscriptionType::from_topic_names([("a", 3), ("b", 2)], 3),
        SubscriptionType::Heterogeneous
    );
    let same = spec(vec![member("A", &[T1, T2]), member("B", &[T1, T2])]);
    assert_eq!(same.subscription_type(), SubscriptionType::Homogeneous);
    let different = spec(vec![member("A", &[T1]), member("B", &[T1, T2])]);
    assert_eq!(
        different.subscription_type(),
        SubscriptionType::Heterogeneous
    );
}

#[test]
fn heterogeneous_members_without_topics_get_empty_assignments() {
    let image = topics(&[(T1, 2)]);
    let group = spec(vec![member("A", &[]), member("B", &[T1])]);
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![("A", parts(&[])), ("B", parts(&[(T1, &[0, 1])]))])
    );
}

#[test]
fn heterogeneous_racks_do_not_change_the_assignment() {
    let racked = with_racks(
        topics(&[(T1, 2), (T2, 1)]),
        &[(T1, &[&["r1"], &["r1"]]), (T2, &[&["r2"]])],
    );
    let plain = topics(&[(T1, 2), (T2, 1)]);
    let group = spec(vec![
        member("A", &[T1]).rack("r2"),
        member("B", &[T1, T2]).rack("r1"),
    ]);
    assert_eq!(
        run(&UniformAssignor, &group, &racked),
        run(&UniformAssignor, &group, &plain)
    );
}
