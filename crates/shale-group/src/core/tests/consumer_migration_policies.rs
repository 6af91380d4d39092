//! `group.consumer.migration.policy`, honoured as Kafka 4.4: `upgrade` and `bidirectional`
//! allow the upgrade, `downgrade` and `bidirectional` the downgrade; classic members join a
//! live consumer group under every policy but `disabled`. The upgrade's other refusals: a group over
//! `group.consumer.max.size`, another protocol type, an assignment from a custom assignor.

use bytes::Bytes;

use super::consumer_harness::{beat, join};
use super::harness::{Harness, GROUP};
use super::migration_harness::*;
use crate::config::MigrationPolicy;
use crate::core::GroupState;
use crate::error::GroupError;
use crate::records::consumer_protocol::encode_assignment;

/// Whether a consumer heartbeat upgrades the classic pair under `policy`.
fn upgrades(policy: MigrationPolicy) -> bool {
    let mut harness = harness(policy);
    classic_pair(&mut harness);
    match consumer_beat(&mut harness, join("c", &["orders"])) {
        Ok(_) => true,
        Err(error) => {
            assert_eq!(error, GroupError::GroupIdNotFound);
            // The classic group is untouched.
            assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Stable));
            false
        }
    }
}

/// Whether the last consumer member leaving a converted group downgrades it under `policy`
/// (the group is made by a classic member joining a consumer group, which every policy but
/// `disabled` allows: there nothing can downgrade).
fn downgrades(policy: MigrationPolicy) -> bool {
    let mut harness = harness(policy);
    consumer_beat(&mut harness, join("c", &["orders"])).unwrap();
    if policy == MigrationPolicy::Disabled {
        // "Cannot join the consumer group G with the classic protocol because the group
        // migration is disabled."
        assert_eq!(
            join_now(&mut harness, classic_join("", &[])),
            Err(GroupError::InconsistentGroupProtocol)
        );
        return false;
    }
    let Err(GroupError::MemberIdRequired { member_id }) =
        join_now(&mut harness, classic_join("", &[]))
    else {
        panic!()
    };
    join_now(&mut harness, classic_join(&member_id, &[])).unwrap();
    consumer_beat(&mut harness, beat("c", -1, &[])).unwrap();
    let downgraded = harness.shard.consumer_group_state(GROUP).is_none();
    if !downgraded {
        // The classic member stays in the consumer group, which moved its epoch.
        let group = &harness.shard.consumer_groups[GROUP];
        assert_eq!(group.members.len(), 1);
        assert_eq!(group.group_epoch, 4);
    }
    downgraded
}

#[test]
fn every_policy_allows_exactly_its_conversions() {
    use MigrationPolicy::*;
    for (policy, upgrade, downgrade) in [
        (Disabled, false, false),
        (Upgrade, true, false),
        (Downgrade, false, true),
        (Bidirectional, true, true),
    ] {
        assert_eq!(upgrades(policy), upgrade, "{policy:?} upgrade");
        assert_eq!(downgrades(policy), downgrade, "{policy:?} downgrade");
    }
}

#[test]
fn a_member_leaving_an_all_classic_group_of_one_does_not_downgrade_it_empty() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    consumer_beat(&mut harness, join("c", &["orders"])).unwrap();
    consumer_beat(&mut harness, beat("c", -1, &[])).unwrap();
    // Nobody remains: the group stays an (empty) consumer group.
    assert!(harness.shard.consumer_group_state(GROUP).is_some());
    // A classic member joining an empty consumer group replaces it with a classic group.
    let Err(GroupError::MemberIdRequired { .. }) = join_now(&mut harness, classic_join("", &[]))
    else {
        panic!()
    };
    assert!(harness.shard.consumer_group_state(GROUP).is_none());
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Empty));
}

#[test]
fn the_upgrade_is_refused_over_the_consumer_group_size() {
    let mut config = migration_config(MigrationPolicy::Bidirectional);
    config.consumer_group_size_max = 1;
    let mut harness = Harness::new(config.clone());
    harness.shard = shard(config);
    harness.shard.on_loaded(harness.now_ms);
    classic_pair(&mut harness);
    assert_eq!(
        consumer_beat(&mut harness, join("c", &["orders"])),
        Err(GroupError::GroupIdNotFound)
    );
}

#[test]
fn the_upgrade_is_refused_for_a_custom_assignors_user_data() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let (a, b) = classic_pair(&mut harness);
    // A rebalance whose leader hands out an assignment with user data.
    let join_a = harness.join(classic_join(&a, &[]));
    let join_b = harness.join(classic_join(&b, &[]));
    let leader = harness.join_result(join_a).unwrap().unwrap();
    harness.join_result(join_b).unwrap().unwrap();
    let mut with_user_data = encode_assignment(&[("orders".to_string(), vec![0])], 1);
    with_user_data.truncate(with_user_data.len() - 4);
    with_user_data.extend_from_slice(&[0, 0, 0, 1, 7]);
    let leader_id = leader.leader.clone();
    let follower = if leader_id == a { b.clone() } else { a.clone() };
    let generation = leader.generation_id;
    let follower_sync = harness.sync(&follower, generation, &[]);
    let leader_sync = harness.sync(
        &leader_id,
        generation,
        &[(&leader_id, &with_user_data), (&follower, &[])],
    );
    harness.sync_result(follower_sync).unwrap().unwrap();
    harness.sync_result(leader_sync).unwrap().unwrap();
    assert_eq!(
        consumer_beat(&mut harness, join("c", &["orders"])),
        Err(GroupError::GroupIdNotFound)
    );
}

#[test]
fn the_upgrade_is_refused_for_another_protocol_type() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let mut request = classic_join("", &[]);
    request.protocol_type = "connect".into();
    request.protocols[0].metadata = Bytes::from_static(b"worker");
    let Err(GroupError::MemberIdRequired { member_id }) = join_now(&mut harness, request.clone())
    else {
        panic!()
    };
    request.member_id = member_id;
    harness.join(request);
    harness.advance(1);
    assert_eq!(
        consumer_beat(&mut harness, join("c", &["orders"])),
        Err(GroupError::GroupIdNotFound)
    );
}
