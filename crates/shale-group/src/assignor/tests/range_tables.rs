//! The range assignor, worked by hand from the examples of Kafka's `RangeAssignor` javadoc and
//! its algorithm: per topic, P / N partitions to each subscriber and one more to the first P % N,
//! in the order static members by instance id, then the others by member id.

use std::collections::BTreeMap;

use super::support::*;
use crate::assignor::range::RangeAssignor;
use crate::assignor::PartitionAssignor;

#[test]
fn javadoc_two_members_two_co_partitioned_topics() {
    let image = topics(&[(T1, 3), (T2, 3)]);
    let group = spec(vec![member("M0", &[T1, T2]), member("M1", &[T1, T2])]);
    assert_eq!(
        run(&RangeAssignor, &group, &image),
        expect(vec![
            ("M0", parts(&[(T1, &[0, 1]), (T2, &[0, 1])])),
            ("M1", parts(&[(T1, &[2]), (T2, &[2])])),
        ])
    );
}

#[test]
fn javadoc_new_member_ids_shuffle_dynamic_members() {
    // After a rolling bounce M0 came back as M3 and M1 as M2: ordered by member id, M2 now
    // takes the first ranges.
    let image = topics(&[(T1, 3), (T2, 3)]);
    let group = spec(vec![
        member("M3", &[T1, T2]).holding(parts(&[(T1, &[0, 1]), (T2, &[0, 1])])),
        member("M2", &[T1, T2]).holding(parts(&[(T1, &[2]), (T2, &[2])])),
    ]);
    assert_eq!(
        run(&RangeAssignor, &group, &image),
        expect(vec![
            ("M2", parts(&[(T1, &[0, 1]), (T2, &[0, 1])])),
            ("M3", parts(&[(T1, &[2]), (T2, &[2])])),
        ])
    );
}

#[test]
fn javadoc_instance_ids_keep_static_members_ranges() {
    let image = topics(&[(T1, 3), (T2, 3)]);
    let before = spec(vec![
        member("M0", &[T1, T2]).instance("I0"),
        member("M1", &[T1, T2]).instance("I1"),
    ]);
    let after = spec(vec![
        member("M3", &[T1, T2]).instance("I0"),
        member("M2", &[T1, T2]).instance("I1"),
    ]);
    assert_eq!(
        run(&RangeAssignor, &before, &image),
        expect(vec![
            ("M0", parts(&[(T1, &[0, 1]), (T2, &[0, 1])])),
            ("M1", parts(&[(T1, &[2]), (T2, &[2])])),
        ])
    );
    assert_eq!(
        run(&RangeAssignor, &after, &image),
        expect(vec![
            ("M3", parts(&[(T1, &[0, 1]), (T2, &[0, 1])])),
            ("M2", parts(&[(T1, &[2]), (T2, &[2])])),
        ])
    );
}

#[test]
fn static_members_come_before_dynamic_ones() {
    let image = topics(&[(T1, 3)]);
    let group = spec(vec![member("a", &[T1]), member("z", &[T1]).instance("i")]);
    assert_eq!(
        run(&RangeAssignor, &group, &image),
        expect(vec![
            ("z", parts(&[(T1, &[0, 1])])),
            ("a", parts(&[(T1, &[2])])),
        ])
    );
}

#[test]
fn heterogeneous_subscriptions_range_each_topic_over_its_subscribers() {
    let image = topics(&[(T1, 3), (T2, 3)]);
    let group = spec(vec![
        member("M0", &[T1]),
        member("M1", &[T1, T2]),
        member("M2", &[T2]),
    ]);
    assert_eq!(
        run(&RangeAssignor, &group, &image),
        expect(vec![
            ("M0", parts(&[(T1, &[0, 1])])),
            ("M1", parts(&[(T1, &[2]), (T2, &[0, 1])])),
            ("M2", parts(&[(T2, &[2])])),
        ])
    );
}

#[test]
fn uneven_counts_and_more_members_than_partitions() {
    let seven = topics(&[(T1, 7)]);
    let three = spec(vec![
        member("M0", &[T1]),
        member("M1", &[T1]),
        member("M2", &[T1]),
    ]);
    assert_eq!(
        run(&RangeAssignor, &three, &seven),
        expect(vec![
            ("M0", parts(&[(T1, &[0, 1, 2])])),
            ("M1", parts(&[(T1, &[3, 4])])),
            ("M2", parts(&[(T1, &[5, 6])])),
        ])
    );
    let two = topics(&[(T1, 2)]);
    assert_eq!(
        run(&RangeAssignor, &three, &two),
        expect(vec![
            ("M0", parts(&[(T1, &[0])])),
            ("M1", parts(&[(T1, &[1])])),
            ("M2", parts(&[])),
        ])
    );
}

#[test]
fn topics_of_different_sizes_are_ranged_independently() {
    let image = topics(&[(T1, 4), (T2, 2)]);
    let group = spec(vec![member("M0", &[T1, T2]), member("M1", &[T1, T2])]);
    assert_eq!(
        run(&RangeAssignor, &group, &image),
        expect(vec![
            ("M0", parts(&[(T1, &[0, 1]), (T2, &[0])])),
            ("M1", parts(&[(T1, &[2, 3]), (T2, &[1])])),
        ])
    );
}

#[test]
fn the_current_assignment_does_not_matter() {
    let image = topics(&[(T1, 4)]);
    let fresh = spec(vec![member("M0", &[T1]), member("M1", &[T1])]);
    let holding = spec(vec![
        member("M0", &[T1]).holding(parts(&[(T1, &[2, 3])])),
        member("M1", &[T1]).holding(parts(&[(T1, &[0, 1])])),
    ]);
    assert_eq!(
        run(&RangeAssignor, &holding, &image),
        run(&RangeAssignor, &fresh, &image)
    );
}

#[test]
fn range_racks_do_not_change_the_assignment_as_in_kafka_4_4() {
    let plain = topics(&[(T1, 2)]);
    let racked = with_racks(topics(&[(T1, 2)]), &[(T1, &[&["r1"], &["r2"]])]);
    let group = spec(vec![
        member("M0", &[T1]).rack("r2"),
        member("M1", &[T1]).rack("r1"),
    ]);
    let expected = expect(vec![
        ("M0", parts(&[(T1, &[0])])),
        ("M1", parts(&[(T1, &[1])])),
    ]);
    assert_eq!(run(&RangeAssignor, &group, &racked), expected);
    assert_eq!(run(&RangeAssignor, &group, &plain), expected);
}

#[test]
fn range_empty_group_idle_members_and_unsubscribed_topics() {
    let image = topics(&[(T1, 2), (T2, 3)]);
    assert_eq!(run(&RangeAssignor, &spec(vec![]), &image), BTreeMap::new());
    let group = spec(vec![member("M0", &[]), member("M1", &[T1])]);
    assert_eq!(
        run(&RangeAssignor, &group, &image),
        expect(vec![("M0", parts(&[])), ("M1", parts(&[(T1, &[0, 1])]))])
    );
}

#[test]
fn range_subscription_to_a_missing_topic_fails() {
    let image = topics(&[(T1, 2)]);
    let group = spec(vec![member("M0", &[T3])]);
    assert!(RangeAssignor.assign(&group, &image).is_err());
}
