//! ShareGroupHeartbeat on one shard: joins, share-state initialization, members sharing
//! partitions, subscription changes, leaving, session expiry and Kafka's refusals.

use std::collections::BTreeMap;

use super::share_harness::*;
use crate::config::{GroupConfig, ShareGroupOverrides};
use crate::error::GroupError;
use crate::share_types::ShareGroupHeartbeatInput;

fn config() -> GroupConfig {
    GroupConfig {
        share_assignment_interval_ms: 0,
        ..GroupConfig::default()
    }
}

#[test]
fn a_member_gets_partitions_once_their_state_is_initialized() {
    let mut h = ShareHarness::new(config());
    let first = h.heartbeat(join("m1", &["orders"]));
    // A new group is at epoch 1: the join moves it to 2; nothing is initialized yet.
    assert_eq!(first.response.error, None);
    assert_eq!(first.response.member_id.as_deref(), Some("m1"));
    assert_eq!(first.response.member_epoch, 2);
    assert_eq!(first.response.heartbeat_interval_ms, 5_000);
    assert_eq!(first.response.assignment, Some(BTreeMap::new()));
    let initialize = first.initialize.unwrap();
    assert_eq!(initialize.group_epoch, 2);
    // A topic new to the group starts where share.auto.offset.reset says (-1).
    assert_eq!(
        initialize.topics,
        BTreeMap::from([(ORDERS, BTreeMap::from([(0, -1), (1, -1)]))])
    );
    // Until the broker reports, the next heartbeat asks for nothing more.
    let again = h.heartbeat(beat("m1", 2));
    assert_eq!(again.initialize, None);
    assert_eq!(again.response.assignment, None);

    let topics = BTreeMap::from([(ORDERS, [0, 1].into_iter().collect())]);
    let records = h
        .shard
        .initialize_share_group_state("sg", &topics, h.now_ms)
        .unwrap();
    h.apply_records(records);
    // Initialized partitions not in the target move the group to a new epoch.
    let assigned = h.heartbeat(beat("m1", 2));
    assert_eq!(assigned.response.member_epoch, 3);
    assert_eq!(
        assigned.response.assignment,
        Some(parts(&[(ORDERS, &[0, 1])]))
    );
    assert_eq!(assigned.initialize, None);
}

#[test]
fn members_share_partitions_when_there_are_more_members_than_partitions() {
    let mut h = ShareHarness::new(config());
    h.heartbeat_initialized(join("m1", &["payments"]));
    h.heartbeat_initialized(join("m2", &["payments"]));
    let third = h.heartbeat_initialized(join("m3", &["payments"]));
    assert_eq!(third.assignment, Some(parts(&[(PAYMENTS, &[0])])));
    let epoch = third.member_epoch;
    for member in ["m1", "m2"] {
        let response = h.heartbeat(beat(member, h_epoch(&h, member))).response;
        assert_eq!(response.member_epoch, epoch);
        assert_eq!(h.assignment(member), parts(&[(PAYMENTS, &[0])]));
    }
}

fn h_epoch(h: &ShareHarness, member: &str) -> i32 {
    h.shard
        .describe_share_group(GROUP)
        .members
        .iter()
        .find(|described| described.member_id == member)
        .map(|described| described.member_epoch)
        .unwrap()
}

#[test]
fn two_members_split_two_partitions_and_a_leaver_returns_its_share() {
    let mut h = ShareHarness::new(config());
    h.heartbeat_initialized(join("m1", &["orders"]));
    h.heartbeat(beat("m1", 2));
    assert_eq!(h.assignment("m1"), parts(&[(ORDERS, &[0, 1])]));
    let joined = h.heartbeat(join("m2", &["orders"]));
    assert_eq!(joined.response.assignment, Some(parts(&[(ORDERS, &[0])])));
    let m1 = h.heartbeat(beat("m1", 3)).response;
    assert_eq!(m1.member_epoch, 4);
    assert_eq!(m1.assignment, Some(parts(&[(ORDERS, &[1])])));

    let left = h.heartbeat(beat("m2", -1)).response;
    assert_eq!(
        (left.member_id.as_deref(), left.member_epoch),
        (Some("m2"), -1)
    );
    let m1 = h.heartbeat(beat("m1", 4)).response;
    assert_eq!(m1.member_epoch, 5);
    assert_eq!(m1.assignment, Some(parts(&[(ORDERS, &[0, 1])])));
}

#[test]
fn a_subscription_change_reassigns_and_initializes_the_new_topic() {
    let mut h = ShareHarness::new(config());
    h.heartbeat_initialized(join("m1", &["orders"]));
    h.heartbeat(beat("m1", 2));
    let changed = h.heartbeat(ShareGroupHeartbeatInput {
        subscribed_topic_names: Some(vec!["payments".into()]),
        ..beat("m1", 3)
    });
    assert_eq!(changed.response.member_epoch, 4);
    // Orders is dropped at once; payments is assignable once initialized.
    assert_eq!(changed.response.assignment, Some(BTreeMap::new()));
    assert_eq!(
        changed.initialize.unwrap().topics,
        BTreeMap::from([(PAYMENTS, BTreeMap::from([(0, -1)]))])
    );
}

#[test]
fn a_failed_initialization_is_asked_for_again() {
    let mut h = ShareHarness::new(config());
    let first = h.heartbeat(join("m1", &["orders"]));
    assert!(first.initialize.is_some());
    let topics = BTreeMap::from([(ORDERS, [0, 1].into_iter().collect())]);
    let records = h
        .shard
        .uninitialize_share_group_state("sg", &topics, h.now_ms);
    h.apply_records(records);
    let again = h.heartbeat(beat("m1", 2));
    assert_eq!(
        again.initialize.unwrap().topics,
        BTreeMap::from([(ORDERS, BTreeMap::from([(0, -1), (1, -1)]))])
    );
}

#[test]
fn an_unreported_initialization_is_retried_after_the_retry_interval() {
    let mut h = ShareHarness::new(config());
    assert!(h.heartbeat(join("m1", &["orders"])).initialize.is_some());
    h.advance(29_999);
    assert!(h.heartbeat(beat("m1", 2)).initialize.is_none());
    h.advance(1);
    assert!(h.heartbeat(beat("m1", 2)).initialize.is_some());
}

#[test]
fn a_member_that_stops_heartbeating_is_fenced_after_its_session() {
    let mut h = ShareHarness::new(config());
    h.heartbeat_initialized(join("m1", &["orders"]));
    h.advance(44_999);
    assert_eq!(h.heartbeat(beat("m1", 2)).response.error, None);
    h.advance(44_999);
    assert!(h.shard.share_member_assignment(GROUP, "m1").is_some());
    h.advance(1);
    assert_eq!(h.shard.share_member_assignment(GROUP, "m1"), None);
    assert_eq!(
        h.shard.share_group_state(GROUP),
        Some(crate::core::ShareGroupState::Empty)
    );
    let refused = h.heartbeat(beat("m1", 3)).response;
    assert_eq!(refused.error, Some(GroupError::UnknownMemberId));
    assert_eq!(
        refused.error_message.as_deref(),
        Some("Member m1 is not a member of group sg.")
    );
}

#[test]
fn group_overrides_set_the_session_timeout_and_heartbeat_interval() {
    let overrides = ShareOverrides(BTreeMap::from([(
        GROUP.to_owned(),
        ShareGroupOverrides {
            share_session_timeout_ms: Some(10_000),
            share_heartbeat_interval_ms: Some(2_000),
            share_assignment_interval_ms: None,
        },
    )]));
    let mut h = ShareHarness::with_overrides(config(), overrides);
    let joined = h.heartbeat(join("m1", &["orders"])).response;
    assert_eq!(joined.heartbeat_interval_ms, 2_000);
    h.advance(10_000);
    assert_eq!(h.shard.share_member_assignment(GROUP, "m1"), None);
}

#[test]
fn the_assignment_interval_delays_a_new_target() {
    let mut h = ShareHarness::new(GroupConfig::default());
    h.advance(1_000);
    h.heartbeat_initialized(join("m1", &["orders"]));
    // The first target was computed at the join: the next one waits a second.
    assert_eq!(h.heartbeat(beat("m1", 2)).response.member_epoch, 2);
    h.advance(1_000);
    assert_eq!(h.heartbeat(beat("m1", 2)).response.member_epoch, 3);
    // The target was computed just now: m2's join waits for group.share.assignment.interval.ms.
    let m2 = h.heartbeat(join("m2", &["orders"])).response;
    assert_eq!(m2.member_epoch, 3);
    assert_eq!(m2.assignment, Some(BTreeMap::new()));
    h.advance(1_000);
    let m2 = h.heartbeat(beat("m2", 3)).response;
    assert_eq!(m2.member_epoch, 4);
    assert_eq!(m2.assignment, Some(parts(&[(ORDERS, &[0])])));
}

#[test]
fn refusals_carry_kafkas_errors_and_messages() {
    let mut h = ShareHarness::new(config());
    let refused = |h: &mut ShareHarness, request| {
        let response = h.heartbeat(request).response;
        assert_eq!(response.member_id, None);
        (response.error.unwrap(), response.error_message.unwrap())
    };
    let invalid = |message: &str| {
        (
            GroupError::InvalidRequest(message.to_owned()),
            message.to_owned(),
        )
    };
    assert_eq!(
        refused(&mut h, join("", &["orders"])),
        invalid("MemberId can't be empty.")
    );
    let mut no_group = join("m1", &["orders"]);
    no_group.group_id.clear();
    assert_eq!(
        refused(&mut h, no_group),
        invalid("GroupId can't be empty.")
    );
    let mut rack = join("m1", &["orders"]);
    rack.rack_id = Some(String::new());
    assert_eq!(refused(&mut h, rack), invalid("RackId can't be empty."));
    assert_eq!(
        refused(&mut h, join("m1", &[])),
        invalid("SubscribedTopicNames must be set in first request.")
    );
    assert_eq!(
        refused(&mut h, beat("m1", -2)),
        invalid("MemberEpoch is invalid.")
    );
    assert_eq!(
        refused(&mut h, beat("m1", 1)),
        (
            GroupError::GroupIdNotFound,
            "Share group sg not found.".to_owned()
        )
    );
    assert_eq!(
        refused(&mut h, beat("m1", -1)),
        (
            GroupError::GroupIdNotFound,
            "Group sg not found.".to_owned()
        )
    );

    h.heartbeat(join("m1", &["orders"]));
    assert_eq!(
        refused(&mut h, beat("m1", 3)),
        (
            GroupError::FencedMemberEpoch,
            "The share group member has a greater member epoch (3) than the one known by the \
             group coordinator (2). The member must abandon all its partitions and rejoin."
                .to_owned()
        )
    );
    assert_eq!(
        refused(&mut h, beat("m1", 1)),
        (
            GroupError::FencedMemberEpoch,
            "The share group member has a smaller member epoch (1) than the one known by the \
             group coordinator (2), and it does not match the previous member epoch (0). The \
             member must abandon all its partitions and rejoin."
                .to_owned()
        )
    );
    // Epoch 0 rejoins.
    assert_eq!(h.heartbeat(join("m1", &["orders"])).response.error, None);
    assert_eq!(
        refused(&mut h, beat("m9", 2)),
        (
            GroupError::UnknownMemberId,
            "Member m9 is not a member of group sg.".to_owned()
        )
    );
}

#[test]
fn the_group_size_is_capped_by_group_share_max_size() {
    let mut h = ShareHarness::new(GroupConfig {
        share_group_size_max: 1,
        ..config()
    });
    h.heartbeat(join("m1", &["orders"]));
    let response = h.heartbeat(join("m2", &["orders"])).response;
    assert_eq!(response.error, Some(GroupError::GroupMaxSizeReached));
    assert_eq!(
        response.error_message.as_deref(),
        Some("The share group has reached its maximum capacity of 1 members.")
    );
    // A member already in the group still heartbeats.
    assert_eq!(h.heartbeat(beat("m1", 2)).response.error, None);
}

#[test]
fn a_deleted_topic_leaves_the_state_metadata_and_the_assignment() {
    let mut h = ShareHarness::new(config());
    h.heartbeat_initialized(join("m1", &["orders", "payments"]));
    h.heartbeat(beat("m1", 2));
    assert_eq!(
        h.assignment("m1"),
        parts(&[(ORDERS, &[0, 1]), (PAYMENTS, &[0])])
    );
    h.image(topics(&[(PAYMENTS, "payments", 1)]));
    let metadata = h.shard.share_groups[GROUP].state_metadata.clone().unwrap();
    assert!(!metadata.initialized.contains_key(&ORDERS));
    let response = h.heartbeat(beat("m1", 3)).response;
    assert_eq!(response.member_epoch, 4);
    assert_eq!(response.assignment, Some(parts(&[(PAYMENTS, &[0])])));
}

#[test]
fn a_partition_added_to_a_known_topic_is_initialized_from_its_start() {
    let mut h = ShareHarness::new(config());
    h.heartbeat_initialized(join("m1", &["orders"]));
    h.image(topics(&[(ORDERS, "orders", 3), (PAYMENTS, "payments", 1)]));
    let outcome = h.heartbeat(beat("m1", 2));
    assert_eq!(
        outcome.initialize.unwrap().topics,
        BTreeMap::from([(ORDERS, BTreeMap::from([(2, 0)]))])
    );
}
