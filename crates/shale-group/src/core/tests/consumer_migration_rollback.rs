//! A protocol conversion whose records are not written is undone: the shard is again what its
//! log says (the group's type, members, epochs, assignments and timers), later requests are
//! served by that group, and the same conversion succeeds once its records are written.

use super::consumer_harness::{beat, join};
use super::harness::{Harness, GROUP, SESSION_MS};
use super::migration_harness::*;
use crate::config::{GroupConfig, MigrationPolicy};
use crate::core::timers::TimerKey;
use crate::core::{CoordinatorShard, GroupState, Response};
use crate::error::GroupError;

const APPEND_ERROR: GroupError = GroupError::NotCoordinator;

/// Upgrades the classic pair with consumer member "c" (group epoch 2); returns the classic ids.
fn upgraded(harness: &mut Harness) -> (String, String) {
    let (a, b) = classic_pair(harness);
    harness
        .commit(GROUP, 1, &a, &[("orders", 0, 42, "")])
        .unwrap();
    let response = consumer_beat(harness, join("c", &["orders"])).unwrap();
    assert_eq!(response.member_epoch, 2);
    (a, b)
}

/// The shard its log rebuilds.
fn rebuilt(harness: &Harness) -> CoordinatorShard {
    let mut shard = shard(migration_config(MigrationPolicy::Bidirectional));
    for record in &harness.log {
        shard.replay(record);
    }
    shard
}

/// A consumer heartbeat whose records fail to append; returns its reply.
fn failed_beat(
    harness: &mut Harness,
    mut request: crate::consumer_types::ConsumerGroupHeartbeatRequest,
) -> Response {
    request.group_id = GROUP.into();
    let token = harness.token();
    let effects = harness
        .shard
        .consumer_group_heartbeat(token, request, harness.now_ms);
    assert!(!effects.records.is_empty(), "{effects:?}");
    harness.apply_failed(effects, APPEND_ERROR);
    harness.take(token).expect("answered")
}

#[test]
fn a_downgrade_whose_records_fail_leaves_the_consumer_group_as_logged() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let (a, b) = upgraded(&mut harness);
    let group_before = harness.shard.consumer_groups[GROUP].clone();
    let snapshot_before = harness.shard.snapshot();
    let timers_before = harness.shard.timers.all();
    let mark = harness.log.len();

    // The last consumer member leaves: the group would become classic, but the append fails.
    let reply = failed_beat(&mut harness, beat("c", -1, &[]));
    assert_eq!(reply, Response::ConsumerHeartbeat(Err(APPEND_ERROR)));
    assert_eq!(harness.log.len(), mark);
    assert_eq!(harness.shard.consumer_groups[GROUP], group_before);
    assert_eq!(harness.shard.consumer_groups[GROUP].group_epoch, 2);
    assert_eq!(harness.shard.snapshot(), snapshot_before);
    assert_ne!(
        harness.shard.group_state(GROUP),
        Some(GroupState::PreparingRebalance)
    );
    assert_eq!(harness.shard.timers.all(), timers_before);
    assert!(harness.shard.conversions.is_empty());
    // Exactly what the log rebuilds.
    assert_eq!(rebuilt(&harness).consumer_groups[GROUP], group_before);

    // The restored group serves its members: the classic one heartbeats at its epoch, the
    // consumer one too, and its leave now downgrades as before.
    let epoch_a = harness.shard.consumer_groups[GROUP].members[&a].member_epoch;
    assert!(matches!(
        harness.heartbeat(&a, epoch_a),
        Ok(()) | Err(GroupError::RebalanceInProgress)
    ));
    let again = consumer_beat(&mut harness, beat("c", 2, &[])).unwrap();
    assert_eq!(again.member_epoch, 2);
    let left = consumer_beat(&mut harness, beat("c", -1, &[])).unwrap();
    assert_eq!(left.member_epoch, -1);
    assert!(harness.shard.consumer_group_state(GROUP).is_none());
    assert_eq!(
        harness.shard.group_state(GROUP),
        Some(GroupState::PreparingRebalance)
    );
    assert!(harness.shard.conversions.is_empty());
    let join_a = harness.join(classic_join(&a, &[0, 1]));
    let join_b = harness.join(classic_join(&b, &[2, 3]));
    assert_eq!(
        harness.join_result(join_a).unwrap().unwrap().generation_id,
        3
    );
    harness.join_result(join_b).unwrap().unwrap();
    assert_eq!(harness.fetch(GROUP, "orders", 0), 42);
}

#[test]
fn a_session_expiry_downgrade_whose_records_fail_fences_the_member_again_later() {
    // "c"'s session (group.consumer.session.timeout.ms) ends before the classic members'.
    let config = GroupConfig {
        consumer_session_timeout_ms: SESSION_MS / 2,
        ..migration_config(MigrationPolicy::Bidirectional)
    };
    let mut harness = Harness::new(config.clone());
    harness.shard = shard(config);
    harness.shard.on_loaded(harness.now_ms);
    let (a, _) = upgraded(&mut harness);
    let session_c = TimerKey::ConsumerSession {
        group_id: GROUP.into(),
        member_id: "c".into(),
    };
    let expiry_ms = harness.shard.timers.deadline_ms(&session_c).unwrap();
    let group_before = harness.shard.consumer_groups[GROUP].clone();
    let session_a = TimerKey::ConsumerSession {
        group_id: GROUP.into(),
        member_id: a.clone(),
    };
    let session_a_ms = harness.shard.timers.deadline_ms(&session_a).unwrap();
    assert!(session_a_ms > expiry_ms);
    harness.now_ms = expiry_ms;
    let effects = harness.shard.tick(harness.now_ms);
    assert!(!effects.records.is_empty());
    harness.apply_failed(effects, APPEND_ERROR);

    // The group is back; a's timer keeps its deadline, c's session starts again from now.
    assert_eq!(harness.shard.consumer_groups[GROUP], group_before);
    assert!(harness.shard.group_state(GROUP) != Some(GroupState::PreparingRebalance));
    assert_eq!(
        harness.shard.timers.deadline_ms(&session_a),
        Some(session_a_ms)
    );
    let retry_ms = harness.shard.timers.deadline_ms(&session_c).unwrap();
    assert!(retry_ms > expiry_ms);
    assert_eq!(
        harness.shard.timers.deadline_ms(&TimerKey::Heartbeat {
            group_id: GROUP.into(),
            member_id: a.clone(),
        }),
        None
    );
    // When it expires again the downgrade is written.
    harness.advance(retry_ms - harness.now_ms);
    assert!(harness.shard.consumer_group_state(GROUP).is_none());
    assert_eq!(
        harness.shard.group_state(GROUP),
        Some(GroupState::PreparingRebalance)
    );
}

#[test]
fn an_upgrade_whose_records_fail_leaves_the_classic_group_as_logged() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    let (a, b) = classic_pair(&mut harness);
    let snapshot_before = harness.shard.snapshot();
    let timers_before = harness.shard.timers.all();

    let reply = failed_beat(&mut harness, join("c", &["orders"]));
    assert_eq!(reply, Response::ConsumerHeartbeat(Err(APPEND_ERROR)));
    assert!(harness.shard.consumer_group_state(GROUP).is_none());
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Stable));
    assert_eq!(harness.shard.snapshot(), snapshot_before);
    assert_eq!(harness.shard.snapshot()[GROUP].generation_id, 1);
    // No session timer is left for members of a consumer group that was never written.
    assert_eq!(harness.shard.timers.all(), timers_before);
    assert_eq!(rebuilt(&harness).snapshot(), snapshot_before);

    // The classic group still serves its members, and the upgrade succeeds when written.
    assert_eq!(harness.heartbeat(&a, 1), Ok(()));
    assert_eq!(harness.heartbeat(&b, 1), Ok(()));
    let response = consumer_beat(&mut harness, join("c", &["orders"])).unwrap();
    assert_eq!(response.member_epoch, 2);
    assert!(harness.shard.consumer_group_state(GROUP).is_some());
    assert!(harness.shard.group_state(GROUP).is_none());
}

#[test]
fn a_join_replacing_an_empty_consumer_group_whose_records_fail_leaves_it_as_logged() {
    let mut harness = harness(MigrationPolicy::Bidirectional);
    consumer_beat(&mut harness, join("c", &["orders"])).unwrap();
    consumer_beat(&mut harness, beat("c", -1, &[])).unwrap();
    let empty = harness.shard.consumer_groups[GROUP].clone();
    assert!(empty.members.is_empty());
    let timers_before = harness.shard.timers.all();

    // A classic member that needs no member id is parked in the new classic group.
    let mut request = classic_join("", &[]);
    request.require_known_member_id = false;
    let token = harness.token();
    let effects = harness.shard.join_group(token, request, harness.now_ms);
    assert!(!effects.records.is_empty());
    harness.apply_failed(effects, APPEND_ERROR);
    assert_eq!(harness.take(token), Some(Response::Join(Err(APPEND_ERROR))));
    assert_eq!(harness.shard.consumer_groups[GROUP], empty);
    assert!(harness.shard.group_state(GROUP).is_none());
    assert_eq!(harness.shard.timers.all(), timers_before);
    assert!(harness.unanswered().is_empty());

    // Written this time, the classic group replaces the consumer group.
    let mut request = classic_join("", &[]);
    request.require_known_member_id = false;
    let token = harness.join(request);
    harness.advance(1);
    let joined = harness.join_result(token).unwrap().unwrap();
    assert_eq!(joined.generation_id, 1);
    assert!(harness.shard.consumer_group_state(GROUP).is_none());
}

#[test]
fn a_static_replacement_downgrade_whose_records_fail_keeps_the_replaced_member() {
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
    let group_before = harness.shard.consumer_groups[GROUP].clone();
    let timers_before = harness.shard.timers.all();
    assert!(timers_before.iter().any(|(_, key)| *key
        == TimerKey::ConsumerSession {
            group_id: GROUP.into(),
            member_id: "s".into(),
        }));

    // The consumer member's instance restarts as a classic member: the downgrade fails.
    let mut restarted = classic_join("", &[]);
    restarted.group_instance_id = Some("instance".into());
    let token = harness.token();
    let effects = harness
        .shard
        .join_group(token, restarted.clone(), harness.now_ms);
    assert!(!effects.records.is_empty());
    harness.apply_failed(effects, APPEND_ERROR);
    assert_eq!(harness.take(token), Some(Response::Join(Err(APPEND_ERROR))));
    assert_eq!(harness.shard.consumer_groups[GROUP], group_before);
    assert!(harness.shard.consumer_groups[GROUP]
        .members
        .contains_key("s"));
    assert_eq!(harness.shard.timers.all(), timers_before);
    assert_eq!(rebuilt(&harness).consumer_groups[GROUP], group_before);

    // "s" still heartbeats (and reconciles to the group epoch), and the restart succeeds once
    // its records are written.
    let epoch_s = group_before.members["s"].member_epoch;
    let beaten = consumer_beat(&mut harness, beat("s", epoch_s, &[])).unwrap();
    assert_eq!(
        beaten.member_epoch,
        harness.shard.consumer_groups[GROUP].members["s"].member_epoch
    );
    assert!(beaten.member_epoch >= epoch_s);
    let joined = join_now(&mut harness, restarted).unwrap();
    assert!(harness.shard.consumer_group_state(GROUP).is_none());
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Stable));
    assert_eq!(
        harness.shard.groups[GROUP].static_members["instance"],
        joined.member_id
    );
}
