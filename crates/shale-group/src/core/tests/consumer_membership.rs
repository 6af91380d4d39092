//! Consumer group membership over time: session and rebalance timeouts, leaving, static
//! members, group config overrides, and the state rebuilt from the records.

use std::collections::BTreeMap;

use super::consumer_harness::*;
use crate::config::GroupOverrides;
use crate::core::{ConsumerGroupState, CoordinatorShard};
use crate::error::GroupError;

fn static_join(
    member_id: &str,
    instance_id: &str,
) -> crate::consumer_types::ConsumerGroupHeartbeatRequest {
    crate::consumer_types::ConsumerGroupHeartbeatRequest {
        instance_id: Some(instance_id.to_owned()),
        ..join(member_id, &["orders"])
    }
}

fn static_beat(
    member_id: &str,
    instance_id: &str,
    member_epoch: i32,
    owned: &[(uuid::Uuid, &[i32])],
) -> crate::consumer_types::ConsumerGroupHeartbeatRequest {
    crate::consumer_types::ConsumerGroupHeartbeatRequest {
        instance_id: Some(instance_id.to_owned()),
        ..beat(member_id, member_epoch, owned)
    }
}

#[test]
fn a_member_that_stops_heartbeating_is_removed_after_its_session() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    h.heartbeat(join("b", &["orders"])).unwrap();
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 2])])).unwrap();
    h.heartbeat(beat("b", 3, &[])).unwrap();
    // a keeps heartbeating; b goes silent.
    for _ in 0..8 {
        h.advance(5_000);
        h.heartbeat(beat("a", 3, &[(ORDERS, &[0, 2])])).unwrap();
    }
    h.advance(4_999);
    assert!(h.shard.consumer_groups[GROUP].members.contains_key("b"));
    h.advance(1);
    let group = &h.shard.consumer_groups[GROUP];
    assert!(!group.members.contains_key("b"), "45 s session expired");
    assert_eq!(group.group_epoch, 4);
    assert!(!group.target.contains_key("b"));
    // a gets b's partitions at the next heartbeat.
    let a = h.heartbeat(beat("a", 3, &[(ORDERS, &[0, 2])])).unwrap();
    assert_eq!(a.member_epoch, 4);
    assert_eq!(a.assignment, Some(assignment(&[(ORDERS, &[0, 1, 2, 3])])));
    assert_eq!(
        h.heartbeat(beat("b", 3, &[])),
        Err(GroupError::UnknownMemberId)
    );
}

#[test]
fn a_member_that_does_not_revoke_in_time_is_fenced() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    h.heartbeat(join("b", &["orders"])).unwrap();
    let a = h
        .heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    assert_eq!(a.assignment, Some(assignment(&[(ORDERS, &[0, 2])])));
    // a heartbeats but keeps owning 1 and 3 past its 30 s rebalance timeout.
    h.advance(20_000);
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    h.heartbeat(beat("b", 3, &[])).unwrap();
    h.advance(10_001);
    let group = &h.shard.consumer_groups[GROUP];
    assert!(
        !group.members.contains_key("a"),
        "fenced by its rebalance timeout"
    );
    assert_eq!(group.group_epoch, 4);
    assert_eq!(
        h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])])),
        Err(GroupError::UnknownMemberId)
    );
    let b = h.heartbeat(beat("b", 3, &[])).unwrap();
    assert_eq!(b.member_epoch, 4);
    assert_eq!(b.assignment, Some(assignment(&[(ORDERS, &[0, 1, 2, 3])])));
}

#[test]
fn a_member_that_revokes_in_time_is_not_fenced() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    h.heartbeat(join("b", &["orders"])).unwrap();
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    h.advance(10_000);
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 2])])).unwrap();
    h.heartbeat(beat("b", 3, &[])).unwrap();
    h.advance(25_000);
    assert!(h.shard.consumer_groups[GROUP].members.contains_key("a"));
}

#[test]
fn leaving_with_minus_one_removes_the_member_and_moves_the_epoch() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    let left = h.heartbeat(beat("a", -1, &[])).unwrap();
    assert_eq!(left.member_epoch, -1);
    assert_eq!(left.member_id, "a");
    let group = &h.shard.consumer_groups[GROUP];
    assert!(group.members.is_empty());
    assert_eq!(group.group_epoch, 3);
    assert_eq!(
        h.shard.consumer_group_state(GROUP),
        Some(ConsumerGroupState::Empty)
    );
    assert_eq!(
        h.heartbeat(beat("a", -1, &[])),
        Err(GroupError::UnknownMemberId)
    );
    // Its session timer went with it: nothing fires later.
    let mark = h.log.len();
    h.advance(60_000);
    assert!(h.records_since(mark).is_empty());
}

#[test]
fn a_static_member_restarting_within_its_session_keeps_its_assignment() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(static_join("a1", "instance-a")).unwrap();
    h.heartbeat(join("b", &["orders"])).unwrap();
    h.heartbeat(static_beat(
        "a1",
        "instance-a",
        2,
        &[(ORDERS, &[0, 1, 2, 3])],
    ))
    .unwrap();
    h.heartbeat(static_beat("a1", "instance-a", 2, &[(ORDERS, &[0, 2])]))
        .unwrap();
    h.heartbeat(beat("b", 3, &[])).unwrap();
    let epoch = h.shard.consumer_groups[GROUP].group_epoch;

    // -2: a temporary leave; the member keeps its partitions.
    let left = h
        .heartbeat(static_beat("a1", "instance-a", -2, &[(ORDERS, &[0, 2])]))
        .unwrap();
    assert_eq!(left.member_epoch, -2);
    let group = &h.shard.consumer_groups[GROUP];
    assert_eq!(group.group_epoch, epoch, "no rebalance for a static leave");
    assert_eq!(group.members["a1"].member_epoch, -2);
    assert_eq!(
        group.members["a1"].assigned_partitions(),
        assignment(&[(ORDERS, &[0, 2])])
    );

    // The restarted instance joins with a new member id and takes over.
    h.advance(10_000);
    let back = h.heartbeat(static_join("a2", "instance-a")).unwrap();
    assert_eq!(back.member_id, "a2");
    assert_eq!(back.member_epoch, epoch);
    assert_eq!(back.assignment, Some(assignment(&[(ORDERS, &[0, 2])])));
    let group = &h.shard.consumer_groups[GROUP];
    assert_eq!(group.group_epoch, epoch);
    assert!(!group.members.contains_key("a1"));
    assert_eq!(group.static_members["instance-a"], "a2");
    assert_eq!(
        h.shard.consumer_group_state(GROUP),
        Some(ConsumerGroupState::Stable)
    );

    // A second live instance with the same id is refused; the old member id is fenced.
    assert_eq!(
        h.heartbeat(static_join("a3", "instance-a")),
        Err(GroupError::UnreleasedInstanceId)
    );
    assert_eq!(
        h.heartbeat(static_beat("a1", "instance-a", epoch, &[])),
        Err(GroupError::FencedInstanceId)
    );
    assert_eq!(
        h.heartbeat(static_beat("a9", "instance-z", 2, &[])),
        Err(GroupError::UnknownMemberId)
    );
}

#[test]
fn a_static_member_that_does_not_come_back_is_removed_after_its_session() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(static_join("a1", "instance-a")).unwrap();
    h.heartbeat(static_beat(
        "a1",
        "instance-a",
        -2,
        &[(ORDERS, &[0, 1, 2, 3])],
    ))
    .unwrap();
    h.advance(44_000);
    assert!(h.shard.consumer_groups[GROUP].members.contains_key("a1"));
    h.advance(2_000);
    let group = &h.shard.consumer_groups[GROUP];
    assert!(group.members.is_empty());
    assert!(group.static_members.is_empty());
    // Its instance id is free again: a new member joins as a new static member.
    let fresh = h.heartbeat(static_join("a2", "instance-a")).unwrap();
    assert_eq!(
        fresh.assignment,
        Some(assignment(&[(ORDERS, &[0, 1, 2, 3])]))
    );
}

#[test]
fn group_configs_override_the_session_timeout_and_heartbeat_interval() {
    let overrides = FixedOverrides(BTreeMap::from([(
        GROUP.to_owned(),
        GroupOverrides {
            consumer_session_timeout_ms: Some(50_000),
            consumer_heartbeat_interval_ms: Some(7_000),
            consumer_assignment_interval_ms: None,
        },
    )]));
    let mut h = ConsumerHarness::with(test_config(), overrides);
    let response = h.heartbeat(join("a", &["orders"])).unwrap();
    assert_eq!(response.heartbeat_interval_ms, 7_000);
    h.advance(49_000);
    assert!(h.shard.consumer_groups[GROUP].members.contains_key("a"));
    h.advance(1_000);
    assert!(!h.shard.consumer_groups[GROUP].members.contains_key("a"));
}

#[test]
fn the_group_rebuilt_from_its_records_is_the_same() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(static_join("a", "instance-a")).unwrap();
    let mut regex = join("b", &[]);
    regex.subscribed_topic_regex = Some("ord.*".to_owned());
    regex.server_assignor = Some("uniform".to_owned());
    regex.rack_id = Some("rack-1".to_owned());
    h.heartbeat(regex).unwrap();
    // Mid-reconciliation: a must still revoke, b waits for its partitions.
    h.heartbeat(static_beat(
        "a",
        "instance-a",
        2,
        &[(ORDERS, &[0, 1, 2, 3])],
    ))
    .unwrap();
    h.heartbeat(join("c", &["orders"])).unwrap();
    h.heartbeat(beat("c", -1, &[])).unwrap();

    let mut loaded = CoordinatorShard::new(0, test_config())
        .with_consumer_settings(settings(FixedOverrides::default()))
        .with_topics_image(h.shard.topics_image().clone());
    for record in &h.log {
        // Through the bytes, as a loading partition reads them.
        let (key, value) = crate::records::encode_record(record);
        let decoded = crate::records::decode_record(&key, value.as_deref()).unwrap();
        assert_eq!(&decoded, record);
        loaded.replay(&decoded);
    }
    loaded.on_loaded(h.now_ms);
    assert_eq!(loaded.consumer_groups, h.shard.consumer_groups);
    // c's leave moved the epoch: the next heartbeat computes the new target.
    assert_eq!(
        loaded.consumer_group_state(GROUP),
        Some(ConsumerGroupState::Assigning)
    );

    // The loaded coordinator carries on where the old one stopped, and its timers run.
    let mut h2 = ConsumerHarness::new();
    h2.shard = loaded;
    h2.now_ms = h.now_ms;
    let a = h2
        .heartbeat(static_beat("a", "instance-a", 2, &[(ORDERS, &[0, 2])]))
        .unwrap();
    assert_eq!(
        a.member_epoch,
        h2.shard.consumer_groups[GROUP].assignment_epoch
    );
    h2.advance(46_000);
    assert!(h2.shard.consumer_groups[GROUP].members.is_empty());
}

#[test]
fn a_member_loaded_in_an_unknown_state_must_rejoin_owning_nothing() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    let mut value = h.shard.consumer_groups[GROUP].members["a"].assignment_value();
    value.state = 127;
    h.shard.replay(&crate::records::GroupRecord::Consumer(
        crate::records::consumer_records::ConsumerRecord::CurrentMemberAssignment {
            group_id: GROUP.to_owned(),
            member_id: "a".to_owned(),
            value: Some(value),
        },
    ));
    assert_eq!(
        h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])])),
        Err(GroupError::FencedMemberEpoch)
    );
    let back = h.heartbeat(beat("a", 2, &[])).unwrap();
    assert_eq!(back.member_epoch, 2);
    assert_eq!(
        h.shard.consumer_groups[GROUP].members["a"].state,
        crate::core::MemberState::Stable
    );
}

#[test]
fn a_group_written_before_kafka_4_1_moves_to_the_metadata_hash() {
    use crate::records::consumer_records::{
        ConsumerGroupMetadataValue, ConsumerRecord, PartitionMetadataTopic,
    };
    use crate::records::GroupRecord;
    let mut h = ConsumerHarness::new();
    // As Kafka 4.0 left it: an epoch without a hash, and the subscribed topics' metadata.
    for record in [
        ConsumerRecord::GroupMetadata {
            group_id: GROUP.to_owned(),
            value: Some(ConsumerGroupMetadataValue {
                epoch: 4,
                metadata_hash: 0,
            }),
        },
        ConsumerRecord::PartitionMetadata {
            group_id: GROUP.to_owned(),
            value: Some(vec![PartitionMetadataTopic {
                topic_id: ORDERS,
                topic_name: "orders".to_owned(),
                num_partitions: 4,
                partition_racks: Vec::new(),
            }]),
        },
    ] {
        h.shard.replay(&GroupRecord::Consumer(record));
    }
    let mark = h.log.len();
    let joined = h.heartbeat(join("a", &["orders"])).unwrap();
    assert_eq!(joined.member_epoch, 5);
    assert!(h.records_since(mark).iter().any(|record| matches!(
        record,
        GroupRecord::Consumer(ConsumerRecord::PartitionMetadata { value: None, .. })
    )));
    assert!(!h.shard.consumer_groups[GROUP].has_partition_metadata_record);
    assert_ne!(h.shard.consumer_groups[GROUP].metadata_hash, 0);
}
