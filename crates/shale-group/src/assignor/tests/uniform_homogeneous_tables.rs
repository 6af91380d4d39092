//! The uniform assignor with every member subscribed to the same topics, worked by hand from
//! Kafka 4.4's `UniformHomogeneousAssignmentBuilder`: quotas of P / M and P % M members with one
//! more; in member order each member keeps what it holds up to its quota, and passes an extra it
//! cannot fill on while the members left outnumber the extras left; unheld partitions (topic by
//! topic, ascending) and then the ones given back fill the members below quota in member order.

use std::collections::BTreeMap;

use super::support::*;
use crate::assignor::uniform::UniformAssignor;
use crate::assignor::{AssignmentSpec, PartitionAssignor};

fn three_members_two_topics() -> (AssignmentSpec, crate::assignor::TopicsImage) {
    let image = topics(&[(T1, 3), (T2, 3)]);
    let group = spec(vec![
        member("A", &[T1, T2]),
        member("B", &[T1, T2]),
        member("C", &[T1, T2]),
    ]);
    (group, image)
}

#[test]
fn three_members_two_topics_of_three_partitions() {
    let (group, image) = three_members_two_topics();
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0, 1])])),
            ("B", parts(&[(T1, &[2]), (T2, &[0])])),
            ("C", parts(&[(T2, &[1, 2])])),
        ])
    );
}

#[test]
fn a_member_joins_and_only_the_minimum_moves() {
    let image = topics(&[(T1, 3), (T2, 3)]);
    let group = spec(vec![
        member("A", &[T1, T2]).holding(parts(&[(T1, &[0, 1])])),
        member("B", &[T1, T2]).holding(parts(&[(T1, &[2]), (T2, &[0])])),
        member("C", &[T1, T2]).holding(parts(&[(T2, &[1, 2])])),
        member("D", &[T1, T2]),
    ]);
    // 6 partitions over 4 members: A and B may keep 2, C keeps 1 and gives back T2-2 to D.
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0, 1])])),
            ("B", parts(&[(T1, &[2]), (T2, &[0])])),
            ("C", parts(&[(T2, &[1])])),
            ("D", parts(&[(T2, &[2])])),
        ])
    );
}

#[test]
fn a_member_leaves_and_its_partitions_go_to_the_others() {
    let image = topics(&[(T1, 3), (T2, 3)]);
    let group = spec(vec![
        member("A", &[T1, T2]).holding(parts(&[(T1, &[0, 1])])),
        member("C", &[T1, T2]).holding(parts(&[(T2, &[1, 2])])),
    ]);
    // B held T1-2 and T2-0; A and C keep everything and take one each, in topic order.
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0, 1, 2])])),
            ("C", parts(&[(T2, &[0, 1, 2])])),
        ])
    );
}

#[test]
fn uneven_counts_with_nothing_held_give_the_extra_to_the_last_member() {
    // 7 over 3: A and B are offered the extra, hold nothing, and pass it on while the members
    // left outnumber the one extra; C, the last, must take it.
    let image = topics(&[(T1, 7)]);
    let group = spec(vec![
        member("A", &[T1]),
        member("B", &[T1]),
        member("C", &[T1]),
    ]);
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0, 1])])),
            ("B", parts(&[(T1, &[2, 3])])),
            ("C", parts(&[(T1, &[4, 5, 6])])),
        ])
    );
}

#[test]
fn more_members_than_partitions_leaves_the_first_members_empty() {
    let image = topics(&[(T1, 2)]);
    let group = spec(vec![
        member("A", &[T1]),
        member("B", &[T1]),
        member("C", &[T1]),
    ]);
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[])),
            ("B", parts(&[(T1, &[0])])),
            ("C", parts(&[(T1, &[1])])),
        ])
    );
}

#[test]
fn a_later_member_holding_the_extra_keeps_it() {
    // 4 over 3: A and B hold one each and pass the extra on; C holds two and keeps both, so
    // nothing moves.
    let image = topics(&[(T1, 4)]);
    let group = spec(vec![
        member("A", &[T1]).holding(parts(&[(T1, &[2])])),
        member("B", &[T1]).holding(parts(&[(T1, &[3])])),
        member("C", &[T1]).holding(parts(&[(T1, &[0, 1])])),
    ]);
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[2])])),
            ("B", parts(&[(T1, &[3])])),
            ("C", parts(&[(T1, &[0, 1])])),
        ])
    );
}

#[test]
fn a_member_over_its_quota_gives_back_its_highest_partitions() {
    let image = topics(&[(T1, 6)]);
    let group = spec(vec![
        member("A", &[T1]).holding(parts(&[(T1, &[0, 1, 2, 3, 4, 5])])),
        member("B", &[T1]),
        member("C", &[T1]),
    ]);
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0, 1])])),
            ("B", parts(&[(T1, &[2, 3])])),
            ("C", parts(&[(T1, &[4, 5])])),
        ])
    );
}

#[test]
fn an_unsubscribed_topic_is_dropped_from_the_assignment() {
    let image = topics(&[(T1, 3), (T2, 1)]);
    let group = spec(vec![
        member("A", &[T1]).holding(parts(&[(T1, &[0, 1, 2]), (T2, &[0])])),
        member("B", &[T1]),
    ]);
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0, 1])])),
            ("B", parts(&[(T1, &[2])])),
        ])
    );
}

#[test]
fn a_topic_with_no_subscriber_is_not_assigned() {
    let image = topics(&[(T1, 2), (T2, 4)]);
    let group = spec(vec![member("A", &[T1]), member("B", &[T1])]);
    assert_eq!(
        run(&UniformAssignor, &group, &image),
        expect(vec![
            ("A", parts(&[(T1, &[0])])),
            ("B", parts(&[(T1, &[1])]))
        ])
    );
}

#[test]
fn an_empty_group_gets_an_empty_assignment() {
    let image = topics(&[(T1, 3)]);
    assert_eq!(
        run(&UniformAssignor, &spec(vec![]), &image),
        BTreeMap::new()
    );
    let idle = spec(vec![member("A", &[]), member("B", &[])]);
    assert_eq!(
        run(&UniformAssignor, &idle, &image),
        expect(vec![("A", parts(&[])), ("B", parts(&[]))])
    );
}

#[test]
fn racks_do_not_change_the_assignment_as_in_kafka_4_4() {
    // Kafka 4.4's UniformAssignor never reads racks: B's rack holds T1-0's replica and A's rack
    // T1-1's, yet A still gets T1-0.
    let plain = topics(&[(T1, 2)]);
    let racked = with_racks(topics(&[(T1, 2)]), &[(T1, &[&["r1"], &["r2"]])]);
    let group = spec(vec![
        member("A", &[T1]).rack("r2"),
        member("B", &[T1]).rack("r1"),
    ]);
    let expected = expect(vec![
        ("A", parts(&[(T1, &[0])])),
        ("B", parts(&[(T1, &[1])])),
    ]);
    assert_eq!(run(&UniformAssignor, &group, &racked), expected);
    assert_eq!(run(&UniformAssignor, &group, &plain), expected);
}

#[test]
fn a_subscription_to_a_topic_missing_from_the_image_fails() {
    let image = topics(&[(T1, 2)]);
    let group = spec(vec![member("A", &[T1, T3]), member("B", &[T1, T3])]);
    assert!(UniformAssignor.assign(&group, &image).is_err());
}

#[test]
fn a_homogeneous_claim_over_different_subscriptions_is_refused() {
    let image = topics(&[(T1, 2), (T2, 2)]);
    let group = spec(vec![member("A", &[T1]), member("B", &[T1, T2])]);
    let claimed = UniformAssignor.assign_with_subscription_type(
        &group,
        &image,
        crate::assignor::SubscriptionType::Homogeneous,
    );
    assert!(claimed.is_err());
}
