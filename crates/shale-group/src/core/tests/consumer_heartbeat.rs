//! ConsumerGroupHeartbeat: epochs, reconciliation, subscriptions and request validation.

use super::consumer_harness::*;
use crate::config::GroupConfig;
use crate::core::{ConsumerGroupState, MemberState};
use crate::error::GroupError;
use crate::records::consumer_records::ConsumerRecord;
use crate::records::GroupRecord;

#[test]
fn first_member_gets_every_partition_at_epoch_two() {
    let mut h = ConsumerHarness::new();
    let response = h.heartbeat(join("a", &["orders"])).unwrap();
    assert_eq!(response.member_id, "a");
    assert_eq!(response.member_epoch, 2);
    assert_eq!(response.heartbeat_interval_ms, 5_000);
    assert_eq!(
        response.assignment,
        Some(assignment(&[(ORDERS, &[0, 1, 2, 3])]))
    );
    assert_eq!(
        h.shard.consumer_group_state(GROUP),
        Some(ConsumerGroupState::Stable)
    );
    // Kafka's records for a join, in Kafka's order.
    let kinds: Vec<&str> = h
        .log
        .iter()
        .map(|record| match record {
            GroupRecord::Consumer(ConsumerRecord::MemberMetadata { .. }) => "member",
            GroupRecord::Consumer(ConsumerRecord::GroupMetadata { .. }) => "epoch",
            GroupRecord::Consumer(ConsumerRecord::TargetAssignmentMember { .. }) => "target",
            GroupRecord::Consumer(ConsumerRecord::TargetAssignmentMetadata { .. }) => {
                "target-epoch"
            }
            GroupRecord::Consumer(ConsumerRecord::CurrentMemberAssignment { .. }) => "current",
            other => panic!("unexpected record {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["member", "epoch", "target", "target-epoch", "current"]
    );
    // A heartbeat that changes nothing writes nothing and sends no assignment.
    let mark = h.log.len();
    let again = h
        .heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    assert_eq!(again.member_epoch, 2);
    assert_eq!(again.assignment, None);
    assert!(h.records_since(mark).is_empty());
}

#[test]
fn second_member_gets_only_moved_partitions_after_they_are_revoked() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    let b = h.heartbeat(join("b", &["orders"])).unwrap();
    // b joins epoch 2 but its partitions are still a's: nothing yet.
    assert_eq!(b.member_epoch, 3);
    assert_eq!(b.assignment, Some(assignment(&[])));
    assert_eq!(
        h.shard.consumer_group_state(GROUP),
        Some(ConsumerGroupState::Reconciling)
    );

    // a keeps epoch 1 and is asked to give up only 1 and 3.
    let a = h
        .heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    assert_eq!(a.member_epoch, 2);
    assert_eq!(a.assignment, Some(assignment(&[(ORDERS, &[0, 2])])));
    let group = &h.shard.consumer_groups[GROUP];
    assert_eq!(group.members["a"].state, MemberState::UnrevokedPartitions);
    assert_eq!(group.members["b"].state, MemberState::UnreleasedPartitions);

    // b still gets nothing while a owns them.
    let b = h.heartbeat(beat("b", 3, &[])).unwrap();
    assert_eq!(b.assignment, None);
    assert!(h.shard.consumer_groups[GROUP].members["b"]
        .assigned
        .is_empty());

    // a acknowledges: it moves to epoch 2 and keeps 0 and 2.
    let a = h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 2])])).unwrap();
    assert_eq!(a.member_epoch, 3);
    assert_eq!(a.assignment, None);

    // Now b gets 1 and 3.
    let b = h.heartbeat(beat("b", 3, &[])).unwrap();
    assert_eq!(b.assignment, Some(assignment(&[(ORDERS, &[1, 3])])));
    assert_eq!(
        h.shard.consumer_group_state(GROUP),
        Some(ConsumerGroupState::Stable)
    );
    // No partition was ever owned by both.
    let group = &h.shard.consumer_groups[GROUP];
    assert_eq!(
        group.members["a"].assigned_partitions(),
        assignment(&[(ORDERS, &[0, 2])])
    );
    assert_eq!(
        group.members["b"].assigned_partitions(),
        assignment(&[(ORDERS, &[1, 3])])
    );
}

#[test]
fn a_member_that_did_not_report_its_partitions_keeps_them_until_it_does() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    h.heartbeat(join("b", &["orders"])).unwrap();
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    let mut partial = beat("a", 2, &[]);
    partial.owned_partitions = None;
    let a = h.heartbeat(partial).unwrap();
    assert_eq!(a.member_epoch, 2, "no progress without owned partitions");
}

#[test]
fn epochs_ahead_or_unknown_are_fenced_and_the_previous_epoch_is_tolerated() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    assert_eq!(
        h.heartbeat(beat("a", 6, &[])),
        Err(GroupError::FencedMemberEpoch)
    );
    assert_eq!(
        h.heartbeat(beat("nobody", 2, &[])),
        Err(GroupError::UnknownMemberId)
    );
    // The group moves to epoch 2 with a second member; a is at epoch 2 after revoking.
    h.heartbeat(join("b", &["orders"])).unwrap();
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 2])])).unwrap();
    // The answer with epoch 2 was lost: epoch 1 with a subset of the partitions is accepted.
    let retry = h.heartbeat(beat("a", 2, &[(ORDERS, &[0])])).unwrap();
    assert_eq!(retry.member_epoch, 3);
    // But not with partitions it does not hold.
    assert_eq!(
        h.heartbeat(beat("a", 2, &[(ORDERS, &[1])])),
        Err(GroupError::FencedMemberEpoch)
    );
}

#[test]
fn invalid_requests_get_kafkas_messages() {
    let mut h = ConsumerHarness::new();
    let invalid = |reason: &str| Err(GroupError::InvalidRequest(reason.to_owned()));
    assert_eq!(
        h.heartbeat(join("", &["orders"])),
        invalid("MemberId can't be empty.")
    );
    let mut request = join("a", &["orders"]);
    request.group_id.clear();
    assert_eq!(h.heartbeat(request), invalid("GroupId can't be empty."));
    let mut request = join("a", &["orders"]);
    request.instance_id = Some(String::new());
    assert_eq!(h.heartbeat(request), invalid("InstanceId can't be empty."));
    let mut request = join("a", &["orders"]);
    request.rack_id = Some(String::new());
    assert_eq!(h.heartbeat(request), invalid("RackId can't be empty."));
    let mut request = join("a", &["orders"]);
    request.rebalance_timeout_ms = -1;
    assert_eq!(
        h.heartbeat(request),
        invalid("RebalanceTimeoutMs must be provided in first request.")
    );
    let mut request = join("a", &["orders"]);
    request.owned_partitions = Some(vec![(ORDERS, vec![0])]);
    assert_eq!(
        h.heartbeat(request),
        invalid("TopicPartitions must be empty when (re-)joining.")
    );
    let mut request = join("a", &["orders"]);
    request.subscribed_topic_names = None;
    assert_eq!(
        h.heartbeat(request),
        invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    );
    let mut request = beat("a", -2, &[]);
    request.instance_id = None;
    assert_eq!(h.heartbeat(request), invalid("InstanceId can't be null."));
    assert_eq!(
        h.heartbeat(beat("a", -3, &[])),
        invalid("MemberEpoch is invalid.")
    );
    let mut request = join("a", &[]);
    request.subscribed_topic_regex = Some("orders(".to_owned());
    assert!(matches!(
        h.heartbeat(request),
        Err(GroupError::InvalidRegularExpression(message))
            if message == "SubscribedTopicRegex `orders(` is not a valid regular expression: missing closing )."
    ));
    // Nothing of these was stored.
    assert!(h.log.is_empty());
    assert_eq!(h.shard.consumer_group_state(GROUP), None);
}

#[test]
fn version_zero_lets_the_coordinator_choose_the_member_id() {
    let mut h = ConsumerHarness::new();
    let mut request = join("", &["orders"]);
    request.api_version = 0;
    let response = h.heartbeat(request).unwrap();
    assert!(uuid::Uuid::parse_str(&response.member_id).is_ok());
    assert_eq!(response.member_epoch, 2);
}

#[test]
fn an_assignor_outside_group_consumer_assignors_is_unsupported() {
    let mut h = ConsumerHarness::new();
    let mut request = join("a", &["orders"]);
    request.server_assignor = Some("sticky".to_owned());
    assert_eq!(
        h.heartbeat(request),
        Err(GroupError::UnsupportedAssignor("sticky".to_owned()))
    );
    // "range" is configured but this coordinator was given no range assignor.
    let mut request = join("a", &["orders"]);
    request.server_assignor = Some("range".to_owned());
    assert_eq!(
        h.heartbeat(request),
        Err(GroupError::UnsupportedAssignor("range".to_owned()))
    );
    assert!(h.log.is_empty());
}

#[test]
fn group_consumer_max_size_refuses_one_more_member() {
    let config = GroupConfig {
        consumer_group_size_max: 1,
        ..test_config()
    };
    let mut h = ConsumerHarness::with(config, FixedOverrides::default());
    h.heartbeat(join("a", &["orders"])).unwrap();
    assert_eq!(
        h.heartbeat(join("b", &["orders"])),
        Err(GroupError::GroupMaxSizeReached)
    );
    // The member already in the group still rejoins.
    assert!(h.heartbeat(join("a", &["orders"])).is_ok());
}

#[test]
fn a_regex_subscription_picks_up_a_new_topic() {
    let mut h = ConsumerHarness::new();
    let mut request = join("a", &[]);
    request.subscribed_topic_regex = Some("or.*".to_owned());
    let response = h.heartbeat(request).unwrap();
    assert_eq!(
        response.assignment,
        Some(assignment(&[(ORDERS, &[0, 1, 2, 3])]))
    );
    let epoch = h.shard.consumer_groups[GROUP].group_epoch;

    // A topic the regex matches only in part, an internal topic, and one it matches.
    let ordinals = uuid::Uuid::from_u128(0x0c);
    h.set_topics(image(vec![
        topic(ORDERS, "orders", 4),
        topic(PAYMENTS, "xorders", 1),
        topic(uuid::Uuid::from_u128(0x0d), "__consumer_offsets", 1),
        topic(ordinals, "ordinals", 2),
    ]));
    let group = &h.shard.consumer_groups[GROUP];
    assert_eq!(group.group_epoch, epoch + 1);
    assert_eq!(
        group.regexes["or.*"].topics.iter().collect::<Vec<_>>(),
        ["orders", "ordinals"]
    );
    let response = h
        .heartbeat(beat("a", epoch, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    assert_eq!(response.member_epoch, epoch + 1);
    assert_eq!(
        response.assignment,
        Some(assignment(&[(ORDERS, &[0, 1, 2, 3]), (ordinals, &[0, 1])]))
    );
}

#[test]
fn partition_additions_and_topic_deletion_move_the_group_epoch() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders", "payments"])).unwrap();
    assert_eq!(h.shard.consumer_groups[GROUP].group_epoch, 2);
    // An unrelated topic changes nothing.
    let mark = h.log.len();
    h.set_topics(image(vec![
        topic(ORDERS, "orders", 4),
        topic(uuid::Uuid::from_u128(9), "other", 3),
    ]));
    assert!(h.records_since(mark).is_empty());
    // A subscribed topic is created.
    h.set_topics(image(vec![
        topic(ORDERS, "orders", 4),
        topic(PAYMENTS, "payments", 1),
    ]));
    assert_eq!(h.shard.consumer_groups[GROUP].group_epoch, 3);
    // Partitions are added.
    h.set_topics(image(vec![
        topic(ORDERS, "orders", 6),
        topic(PAYMENTS, "payments", 1),
    ]));
    assert_eq!(h.shard.consumer_groups[GROUP].group_epoch, 4);
    let response = h
        .heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    assert_eq!(response.member_epoch, 4);
    assert_eq!(
        response.assignment,
        Some(assignment(&[
            (ORDERS, &[0, 1, 2, 3, 4, 5]),
            (PAYMENTS, &[0])
        ]))
    );
    // A topic is deleted: its partitions are revoked.
    h.set_topics(image(vec![topic(ORDERS, "orders", 6)]));
    assert_eq!(h.shard.consumer_groups[GROUP].group_epoch, 5);
    let response = h
        .heartbeat(beat(
            "a",
            4,
            &[(ORDERS, &[0, 1, 2, 3, 4, 5]), (PAYMENTS, &[0])],
        ))
        .unwrap();
    assert_eq!(
        response.member_epoch, 4,
        "revokes the deleted topic's partition first"
    );
    assert_eq!(
        response.assignment,
        Some(assignment(&[(ORDERS, &[0, 1, 2, 3, 4, 5])]))
    );
    let response = h
        .heartbeat(beat("a", 4, &[(ORDERS, &[0, 1, 2, 3, 4, 5])]))
        .unwrap();
    assert_eq!(response.member_epoch, 5);
}

#[test]
fn a_subscription_change_gives_a_new_target() {
    let mut h = ConsumerHarness::new();
    h.set_topics(image(vec![
        topic(ORDERS, "orders", 2),
        topic(PAYMENTS, "payments", 2),
    ]));
    h.heartbeat(join("a", &["orders"])).unwrap();
    let mut request = beat("a", 2, &[(ORDERS, &[0, 1])]);
    request.subscribed_topic_names = Some(vec!["payments".to_owned()]);
    let response = h.heartbeat(request).unwrap();
    // orders must be revoked before payments is given.
    assert_eq!(response.member_epoch, 2);
    assert_eq!(response.assignment, Some(assignment(&[])));
    let response = h.heartbeat(beat("a", 2, &[])).unwrap();
    assert_eq!(response.member_epoch, 3);
    assert_eq!(
        response.assignment,
        Some(assignment(&[(PAYMENTS, &[0, 1])]))
    );
}

#[test]
fn regular_expressions_match_whole_topic_names_and_go_with_their_last_member() {
    let mut h = ConsumerHarness::new();
    h.set_topics(image(vec![
        topic(ORDERS, "orders", 1),
        topic(PAYMENTS, "payments", 1),
    ]));
    let mut request = join("a", &[]);
    // Each alternative must match a whole name: "pay" does not match "payments".
    request.subscribed_topic_regex = Some("orders|pay".to_owned());
    let response = h.heartbeat(request).unwrap();
    assert_eq!(response.assignment, Some(assignment(&[(ORDERS, &[0])])));

    let mut change = beat("a", 2, &[(ORDERS, &[0])]);
    change.subscribed_topic_regex = Some("pay.*".to_owned());
    h.heartbeat(change).unwrap();
    let group = &h.shard.consumer_groups[GROUP];
    assert!(
        !group.regexes.contains_key("orders|pay"),
        "no member uses it any more"
    );
    assert!(group.regexes["pay.*"].topics.contains("payments"));
    assert!(h.log.iter().any(|record| matches!(
        record,
        GroupRecord::Consumer(ConsumerRecord::RegularExpression { regex, value: None, .. })
            if regex == "orders|pay"
    )));
}

#[test]
fn a_member_subscribing_to_nothing_joins_the_current_epoch() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    let idle = h.heartbeat(join("idle", &[])).unwrap();
    assert_eq!(idle.member_epoch, 2);
    assert_eq!(idle.assignment, Some(assignment(&[])));
    assert_eq!(h.shard.consumer_groups[GROUP].group_epoch, 2);
    assert_eq!(
        h.shard.consumer_group_state(GROUP),
        Some(ConsumerGroupState::Stable)
    );
}

/// The same first join as one run against Apache Kafka 4.4 (member "f1" of a new group "fresh"
/// on a 4-partition topic): Shale writes the records Kafka wrote, in the same order, byte for
/// byte but for the metadata hash (Kafka's XXH3 value) and the assignment timestamp.
#[test]
fn a_first_join_writes_the_records_kafka_writes() {
    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|index| u8::from_str_radix(&text[index..index + 2], 16).unwrap())
            .collect()
    }
    let topic_id = uuid::Uuid::from_slice(&hex("cfdf2de850d04680a64d43f57457ec2a")).unwrap();
    let mut h = ConsumerHarness::new();
    h.set_topics(image(vec![topic(topic_id, "orders", 4)]));
    let mark = h.log.len();
    let mut request = join("f1", &["orders"]);
    request.group_id = "fresh".to_owned();
    request.client_id = "sasl-check".to_owned();
    h.heartbeat(request).unwrap();
    let written: Vec<(Vec<u8>, Option<Vec<u8>>)> = h
        .records_since(mark)
        .iter()
        .map(crate::records::encode_record)
        .collect();
    let expected_member = hex(concat!(
        "000000000b7361736c2d636865636b0b2f3132372e302e302e31",
        "02076f726465727301000075300001000100"
    ));
    let expected_target =
        hex("000002cfdf2de850d04680a64d43f57457ec2a05000000000000000100000002000000030000");
    let expected_current = hex(concat!(
        "000000000002000000000002cfdf2de850d04680a64d43f57457ec2a05",
        "00000000000000010000000200000003",
        "0100110500000002000000020000000200000002",
        "0100"
    ));
    assert_eq!(written.len(), 5);
    assert_eq!(
        written[0],
        (hex("00050005667265736800026631"), Some(expected_member))
    );
    assert_eq!(written[1].0, hex("000300056672657368"));
    assert_eq!(written[1].1.as_ref().unwrap()[..6], [0, 0, 0, 0, 0, 2]);
    assert_eq!(
        written[2],
        (hex("00070005667265736800026631"), Some(expected_target))
    );
    assert_eq!(written[3].0, hex("000600056672657368"));
    assert_eq!(written[3].1.as_ref().unwrap()[..6], [0, 0, 0, 0, 0, 2]);
    assert_eq!(
        written[4],
        (hex("00080005667265736800026631"), Some(expected_current))
    );
}

/// Kafka 4.4's default `group.consumer.assignment.interval.ms` (1 s), as seen on Kafka: a member
/// joining just after the last assignment joins the current target epoch with nothing; the
/// first heartbeat once the interval passed computes the new target.
#[test]
fn assignments_are_computed_at_most_once_per_assignment_interval() {
    let config = crate::config::GroupConfig {
        consumer_assignment_interval_ms: 1_000,
        ..test_config()
    };
    let mut h = ConsumerHarness::with(config, FixedOverrides::default());
    h.heartbeat(join("a", &["orders"])).unwrap();
    h.advance(14);
    let b = h.heartbeat(join("b", &["orders"])).unwrap();
    assert_eq!(b.member_epoch, 2);
    assert_eq!(b.assignment, Some(assignment(&[])));
    let group = &h.shard.consumer_groups[GROUP];
    assert_eq!((group.group_epoch, group.assignment_epoch), (3, 2));
    assert_eq!(
        h.shard.consumer_group_state(GROUP),
        Some(ConsumerGroupState::Assigning)
    );
    // Still within the interval: a's heartbeat changes nothing.
    h.advance(500);
    let a = h
        .heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    assert_eq!(a.assignment, None);
    // Past it: the target moves and a is asked to revoke.
    h.advance(500);
    let a = h
        .heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    assert_eq!(a.member_epoch, 2);
    assert_eq!(a.assignment, Some(assignment(&[(ORDERS, &[0, 2])])));
    assert_eq!(h.shard.consumer_groups[GROUP].assignment_epoch, 3);
}
