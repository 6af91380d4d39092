//! Online migration (KIP-848): a live classic group upgraded by a consumer member, its classic
//! members joining, syncing, heartbeating and leaving as Kafka 4.4 answers them, revocation
//! through REBALANCE_IN_PROGRESS, the downgrade when the last consumer member leaves, and the
//! records of both conversions replayed into the same state.

use super::consumer_harness::{beat, join, ORDERS};
use super::harness::{Harness, GROUP, SESSION_MS};
use super::migration_harness::*;
use crate::config::MigrationPolicy;
use crate::core::consumer::MemberState;
use crate::core::GroupState;
use crate::error::GroupError;
use crate::records::consumer_records::ConsumerRecord;
use crate::records::GroupRecord;
use crate::types::LeavingMember;

/// Upgrades the classic pair with consumer member "c"; returns the classic member ids.
fn upgraded(harness: &mut Harness) -> (String, String) {
    let (a, b) = classic_pair(harness);
    harness
        .commit(GROUP, 1, &a, &[("orders", 0, 42, "")])
        .unwrap();
    let response = consumer_beat(harness, join("c", &["orders"])).unwrap();
    // The classic generation 1 became the group epoch; c's join moved it to 2. Round robin
    // over c, classic-1, classic-2 gives c partitions 0 and 3, both still owned.
    assert_eq!(response.member_epoch, 2);
    assert_eq!(response.assignment, Some(Default::default()));
    (a, b)
}

fn member_state(harness: &Harness, member_id: &str) -> (i32, MemberState) {
    let member = &harness.shard.consumer_groups[GROUP].members[member_id];
    (member.member_epoch, member.state)
}

#[test]
fn a_consumer_heartbeat_upgrades_a_live_classic_group() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let (a, b) = classic_pair(&mut harness);
    let mark = harness.log.len();
    consumer_beat(&mut harness, join("c", &["orders"])).unwrap();
    let records = harness.log[mark..].to_vec();
    // Kafka's order: the classic group's tombstone, then each member's subscription, the
    // epoch, the targets, the target epoch and the current assignments.
    assert_eq!(
        records[0],
        GroupRecord::GroupMetadata {
            group_id: GROUP.into(),
            value: None
        }
    );
    let kinds: Vec<&str> = records[1..9]
        .iter()
        .map(|record| match record {
            GroupRecord::Consumer(ConsumerRecord::MemberMetadata { .. }) => "member",
            GroupRecord::Consumer(ConsumerRecord::GroupMetadata { .. }) => "epoch",
            GroupRecord::Consumer(ConsumerRecord::TargetAssignmentMember { .. }) => "target",
            GroupRecord::Consumer(ConsumerRecord::TargetAssignmentMetadata { .. }) => {
                "target-epoch"
            }
            GroupRecord::Consumer(ConsumerRecord::CurrentMemberAssignment { .. }) => "current",
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "member",
            "member",
            "epoch",
            "target",
            "target",
            "target-epoch",
            "current",
            "current"
        ]
    );
    let GroupRecord::Consumer(ConsumerRecord::MemberMetadata {
        value: Some(metadata),
        ..
    }) = &records[1]
    else {
        panic!()
    };
    let classic = metadata.classic_member_metadata.as_ref().unwrap();
    assert_eq!(classic.session_timeout_ms, SESSION_MS);
    assert_eq!(classic.supported_protocols[0].name, "range");
    assert_eq!(metadata.subscribed_topic_names, vec!["orders".to_string()]);
    let group = &harness.shard.consumer_groups[GROUP];
    assert_eq!(group.group_epoch, 2);
    let converted = &group.members[&a];
    assert_eq!(converted.member_epoch, 1);
    assert_eq!(
        converted.assigned_partitions(),
        super::consumer_harness::assignment(&[(ORDERS, &[0, 1])])
    );
    assert_eq!(
        group.members[&b].assigned_partitions(),
        super::consumer_harness::assignment(&[(ORDERS, &[2, 3])])
    );
    // Without committed offsets nothing of the classic group remains.
    assert_eq!(harness.shard.group_state(GROUP), None);
}

#[test]
fn parked_classic_requests_are_told_to_rejoin_the_upgraded_group() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let (a, _) = classic_pair(&mut harness);
    // a rejoins: the classic group prepares a rebalance and parks the JoinGroup.
    let parked = harness.join(classic_join(&a, &[0, 1]));
    assert_eq!(
        harness.shard.group_state(GROUP),
        Some(GroupState::PreparingRebalance)
    );
    consumer_beat(&mut harness, join("c", &["orders"])).unwrap();
    assert_eq!(
        harness.join_result(parked),
        Some(Err(GroupError::RebalanceInProgress))
    );
    assert!(harness.unanswered().is_empty());
}

#[test]
fn offsets_survive_the_upgrade_and_classic_members_keep_committing() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let (a, _) = upgraded(&mut harness);
    assert_eq!(harness.fetch(GROUP, "orders", 0), 42);
    // A classic member commits with its generation (its member epoch), at any version.
    harness
        .commit(GROUP, 1, &a, &[("orders", 1, 7, "")])
        .unwrap();
    assert_eq!(
        harness.commit(GROUP, 2, &a, &[("orders", 1, 8, "")]),
        Err(GroupError::IllegalGeneration)
    );
}

#[test]
fn classic_members_revoke_through_rebalance_in_progress_and_rejoin() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let (a, b) = upgraded(&mut harness);
    // The epoch moved: the classic member must rejoin.
    assert_eq!(
        harness.heartbeat(&a, 1),
        Err(GroupError::RebalanceInProgress)
    );
    assert_eq!(harness.heartbeat(&a, 0), Err(GroupError::IllegalGeneration));
    // SyncGroup at the old generation: a rebalance is in progress.
    assert_eq!(
        sync_now(&mut harness, &a, 1),
        Err(GroupError::RebalanceInProgress)
    );
    // It rejoins owning 0 and 1; its target is 1 only: 0 must be revoked first.
    let joined = join_now(&mut harness, classic_join(&a, &[0, 1])).unwrap();
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert_eq!(joined.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(
        member_state(&harness, &a),
        (1, MemberState::UnrevokedPartitions)
    );
    let synced = sync_now(&mut harness, &a, 1).unwrap();
    assert_eq!(orders_of(&synced), vec![1]);
    assert_eq!(
        harness.heartbeat(&a, 1),
        Err(GroupError::RebalanceInProgress)
    );
    // Revoked: it rejoins owning 1 and reaches the group epoch.
    let joined = join_now(&mut harness, classic_join(&a, &[1])).unwrap();
    assert_eq!(joined.generation_id, 2);
    assert_eq!(orders_of(&sync_now(&mut harness, &a, 2).unwrap()), vec![1]);
    assert_eq!(harness.heartbeat(&a, 2), Ok(()));
    // The same for the other classic member, which gives up 3.
    assert_eq!(
        harness.heartbeat(&b, 1),
        Err(GroupError::RebalanceInProgress)
    );
    join_now(&mut harness, classic_join(&b, &[2, 3])).unwrap();
    assert_eq!(orders_of(&sync_now(&mut harness, &b, 1).unwrap()), vec![2]);
    let joined = join_now(&mut harness, classic_join(&b, &[2])).unwrap();
    assert_eq!(joined.generation_id, 2);
    assert_eq!(harness.heartbeat(&b, 2), Ok(()));
    // The consumer member now gets the released partitions; each partition has one owner.
    let response = consumer_beat(&mut harness, beat("c", 2, &[])).unwrap();
    assert_eq!(
        response.assignment,
        Some(super::consumer_harness::assignment(&[(ORDERS, &[0, 3])]))
    );
    assert_eq!(
        harness.shard.consumer_group_state(GROUP),
        Some(crate::core::ConsumerGroupState::Stable)
    );
}

#[test]
fn a_new_classic_member_joins_a_consumer_group_as_kafka_answers() {
    let mut harness = harness(MigrationPolicy::Upgrade);
    consumer_beat(&mut harness, join("c", &["orders"])).unwrap();
    // MEMBER_ID_REQUIRED first.
    let Err(GroupError::MemberIdRequired { member_id }) =
        join_now(&mut harness, classic_join("", &[]))
    else {
        panic!("expected MEMBER_ID_REQUIRED")
    };
    let joined = join_now(&mut harness, classic_join(&member_id, &[])).unwrap();
    // It joined epoch 3 (its subscription bumped it) with nothing yet: c must release first.
    assert_eq!(joined.generation_id, 3);
    assert_eq!(joined.member_id, member_id);
    assert!(joined.leader.is_empty() && joined.members.is_empty());
    assert!(orders_of(&sync_now(&mut harness, &member_id, 3).unwrap()).is_empty());
    // Another protocol type, or no shared protocol, is inconsistent.
    let mut other = classic_join("", &[]);
    other.protocol_type = "connect".into();
    assert_eq!(
        join_now(&mut harness, other),
        Err(GroupError::InconsistentGroupProtocol)
    );
    let mut other = classic_join("", &[]);
    other.protocols[0].name = "roundrobin".into();
    assert_eq!(
        join_now(&mut harness, other),
        Err(GroupError::InconsistentGroupProtocol)
    );
    // A consumer member is not a classic one.
    assert_eq!(harness.heartbeat("c", 2), Err(GroupError::UnknownMemberId));
    assert_eq!(
        harness.heartbeat("nobody", 2),
        Err(GroupError::UnknownMemberId)
    );
    // The classic member's session is its own: without heartbeats it is fenced.
    harness.advance(i64::from(SESSION_MS) + 1);
    assert!(!harness.shard.consumer_groups[GROUP]
        .members
        .contains_key(&member_id));
}

#[test]
fn a_classic_member_that_does_not_sync_is_fenced() {
    let mut harness = harness(MigrationPolicy::Downgrade);
    consumer_beat(&mut harness, join("c", &["orders"])).unwrap();
    let Err(GroupError::MemberIdRequired { member_id }) =
        join_now(&mut harness, classic_join("", &[]))
    else {
        panic!()
    };
    join_now(&mut harness, classic_join(&member_id, &[])).unwrap();
    // It keeps heartbeating but never syncs: the sync timeout (its rebalance timeout) fences it.
    for _ in 0..4 {
        harness.advance(i64::from(SESSION_MS) - 1_000);
        let _ = harness.heartbeat(&member_id, 3);
    }
    assert!(!harness.shard.consumer_groups[GROUP]
        .members
        .contains_key(&member_id));
}

#[test]
fn classic_leave_group_fences_members_of_a_consumer_group() {
    let mut harness = harness(MigrationPolicy::Upgrade);
    let (a, b) = upgraded(&mut harness);
    let response = harness
        .leave(vec![
            LeavingMember {
                member_id: a.clone(),
                group_instance_id: None,
                reason: None,
            },
            LeavingMember {
                member_id: "nobody".into(),
                group_instance_id: None,
                reason: None,
            },
        ])
        .unwrap();
    assert_eq!(response.members[0].error, None);
    assert_eq!(response.members[1].error, Some(GroupError::UnknownMemberId));
    let group = &harness.shard.consumer_groups[GROUP];
    assert!(!group.members.contains_key(&a) && group.members.contains_key(&b));
    // One bump for the leave.
    assert_eq!(group.group_epoch, 3);
}

#[test]
fn the_last_consumer_member_leaving_downgrades_to_a_classic_group() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let (a, b) = upgraded(&mut harness);
    let mark = harness.log.len();
    let left = consumer_beat(&mut harness, beat("c", -1, &[])).unwrap();
    assert_eq!(left.member_epoch, -1);
    let records = harness.log[mark..].to_vec();
    // The consumer group's tombstones, then the classic group at the group epoch (3 after
    // the leave would have bumped it is not written: the downgrade keeps epoch 2).
    let Some(GroupRecord::GroupMetadata {
        value: Some(classic),
        ..
    }) = records.last()
    else {
        panic!("{records:?}")
    };
    assert!(records[..records.len() - 1]
        .iter()
        .all(|record| matches!(record, GroupRecord::Consumer(_))));
    assert!(
        records.contains(&GroupRecord::Consumer(ConsumerRecord::GroupMetadata {
            group_id: GROUP.into(),
            value: None
        }))
    );
    assert_eq!(classic.generation, 2);
    assert_eq!(classic.protocol_type, "consumer");
    assert_eq!(classic.protocol.as_deref(), Some("range"));
    assert_eq!(classic.members.len(), 2);
    assert!(harness.shard.consumer_group_state(GROUP).is_none());
    // The classic group rebalances: both members rejoin and form generation 3.
    assert_eq!(
        harness.shard.group_state(GROUP),
        Some(GroupState::PreparingRebalance)
    );
    assert_eq!(
        harness.heartbeat(&a, 2),
        Err(GroupError::RebalanceInProgress)
    );
    let join_a = harness.join(classic_join(&a, &[0, 1]));
    let join_b = harness.join(classic_join(&b, &[2, 3]));
    let joined = harness.join_result(join_a).unwrap().unwrap();
    harness.join_result(join_b).unwrap().unwrap();
    assert_eq!(joined.generation_id, 3);
    assert_eq!(harness.fetch(GROUP, "orders", 0), 42);
}

#[test]
fn a_rebuilt_shard_replays_both_conversions_into_the_same_state() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let (a, _) = upgraded(&mut harness);
    join_now(&mut harness, classic_join(&a, &[0, 1])).unwrap();
    let mut rebuilt = shard(migration_config(MigrationPolicy::Bidirectional));
    for record in &harness.log {
        rebuilt.replay(record);
    }
    assert_eq!(
        rebuilt.consumer_groups[GROUP],
        harness.shard.consumer_groups[GROUP]
    );
    assert_eq!(rebuilt.snapshot(), harness.shard.snapshot());
    consumer_beat(&mut harness, beat("c", -1, &[])).unwrap();
    let mut rebuilt = shard(migration_config(MigrationPolicy::Bidirectional));
    for record in &harness.log {
        rebuilt.replay(record);
    }
    assert!(rebuilt.consumer_groups.is_empty());
    let live = harness.shard.snapshot();
    let loaded = rebuilt.snapshot();
    assert_eq!(loaded[GROUP].members, live[GROUP].members);
    assert_eq!(loaded[GROUP].generation_id, live[GROUP].generation_id);
    assert_eq!(loaded[GROUP].offsets, live[GROUP].offsets);
    // A loaded group is Stable with the members of its last stored generation.
    assert_eq!(loaded[GROUP].state, GroupState::Stable);
}

#[test]
fn a_classic_static_member_replacing_the_last_consumer_member_downgrades_without_a_rebalance() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let mut first = join("s", &["orders"]);
    first.instance_id = Some("instance".into());
    consumer_beat(&mut harness, first).unwrap();
    let Err(GroupError::MemberIdRequired { member_id: classic }) =
        join_now(&mut harness, classic_join("", &[]))
    else {
        panic!()
    };
    join_now(&mut harness, classic_join(&classic, &[])).unwrap();
    // The consumer member's instance restarts as a classic member with the same subscription.
    let mut restarted = classic_join("", &[]);
    restarted.group_instance_id = Some("instance".into());
    let joined = join_now(&mut harness, restarted).unwrap();
    assert!(harness.shard.consumer_group_state(GROUP).is_none());
    // No rebalance: the classic group is Stable with the new instance and the classic member.
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Stable));
    let group = &harness.shard.groups[GROUP];
    assert_eq!(group.static_members["instance"], joined.member_id);
    assert!(group.members.contains_key(&classic) && !group.members.contains_key("s"));
    assert_eq!(group.members.len(), 2);
    // The classic group stored is what a load rebuilds.
    let mut rebuilt = shard(migration_config(MigrationPolicy::Bidirectional));
    for record in &harness.log {
        rebuilt.replay(record);
    }
    assert!(rebuilt.consumer_groups.is_empty());
    assert_eq!(
        rebuilt.snapshot()[GROUP].members,
        harness.shard.snapshot()[GROUP].members
    );
}
