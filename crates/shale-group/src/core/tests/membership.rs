use super::harness::*;
use crate::core::{CoordinatorShard, GroupState};
use crate::error::GroupError;
use crate::types::LeavingMember;

const TOPICS: &[&str] = &["topic-a"];

fn leaving(member_id: &str, group_instance_id: Option<&str>) -> LeavingMember {
    LeavingMember {
        member_id: member_id.into(),
        group_instance_id: group_instance_id.map(Into::into),
        reason: None,
    }
}

#[test]
fn heartbeat_checks_member_and_generation() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b"]);
    assert_eq!(harness.heartbeat(&members[0], generation), Ok(()));
    assert_eq!(
        harness.heartbeat(&members[0], generation - 1),
        Err(GroupError::IllegalGeneration)
    );
    assert_eq!(
        harness.heartbeat("unknown", generation),
        Err(GroupError::UnknownMemberId)
    );
    let token = harness.token();
    let effects = harness.shard.heartbeat(
        token,
        crate::types::HeartbeatRequest {
            group_id: "no-such-group".into(),
            generation_id: 1,
            member_id: "m".into(),
            group_instance_id: None,
        },
        harness.now_ms,
    );
    assert_eq!(
        effects.replies[0].1,
        crate::core::Response::Heartbeat(Err(GroupError::UnknownMemberId))
    );
}

#[test]
fn member_leaving_rebalances_the_rest() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b"]);
    let response = harness
        .leave(vec![leaving(&members[1], None), leaving("ghost", None)])
        .unwrap();
    assert_eq!(response.members[0].error, None);
    assert_eq!(response.members[1].error, Some(GroupError::UnknownMemberId));
    // a is alone and must rejoin; its rejoin completes the rebalance at once.
    assert_eq!(
        harness.heartbeat(&members[0], generation),
        Err(GroupError::RebalanceInProgress)
    );
    let a = harness.rejoin(&members[0], &[("range", TOPICS)]);
    let response = harness.join_result(a).unwrap().unwrap();
    assert_eq!(response.generation_id, generation + 1);
    assert_eq!(response.members.len(), 1);
}

#[test]
fn last_member_leaving_empties_the_group() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a"]);
    harness.leave(vec![leaving(&members[0], None)]).unwrap();
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Empty));
    let snapshot = harness.shard.snapshot();
    assert_eq!(snapshot[GROUP].generation_id, generation + 1);
    assert!(snapshot[GROUP].members.is_empty());
    assert_eq!(
        harness.heartbeat(&members[0], generation),
        Err(GroupError::UnknownMemberId)
    );
}

#[test]
fn session_timeout_evicts_a_silent_member() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b"]);
    for _ in 0..3 {
        harness.advance(3_000);
        assert_eq!(harness.heartbeat(&members[1], generation), Ok(()));
    }
    harness.advance(3_000);
    // a has been silent for 12s > 10s session timeout.
    assert_eq!(
        harness.heartbeat(&members[1], generation),
        Err(GroupError::RebalanceInProgress)
    );
    let b = harness.rejoin(&members[1], &[("range", TOPICS)]);
    let response = harness.join_result(b).unwrap().unwrap();
    assert_eq!(response.leader, members[1]);
    assert_eq!(response.members.len(), 1);
    assert_eq!(
        harness.heartbeat(&members[0], generation),
        Err(GroupError::UnknownMemberId)
    );
}

fn static_stable_group(harness: &mut Harness) -> (String, String, i32) {
    let a = harness.join(join_request(
        "",
        Some("instance-a"),
        "client-a",
        &[("range", TOPICS)],
    ));
    let (b, b_id) = harness.join_new("client-b", &[("range", TOPICS)]);
    harness.advance(6_000);
    let a_response = harness.join_result(a).unwrap().unwrap();
    harness.join_result(b).unwrap().unwrap();
    let a_id = a_response.member_id.clone();
    assert!(a_id.starts_with("instance-a-"));
    let generation = a_response.generation_id;
    let follower = harness.sync(&b_id, generation, &[]);
    let leader = harness.sync(&a_id, generation, &[(&a_id, b"for-a"), (&b_id, b"for-b")]);
    harness.sync_result(follower).unwrap().unwrap();
    harness.sync_result(leader).unwrap().unwrap();
    (a_id, b_id, generation)
}

#[test]
fn static_member_restart_keeps_its_assignment_without_rebalance() {
    let mut harness = Harness::new(test_config(3_000));
    let (old_a, b_id, generation) = static_stable_group(&mut harness);
    // The static leader restarts: new member id, same instance id and metadata.
    let token = harness.join(join_request(
        "",
        Some("instance-a"),
        "client-a",
        &[("range", TOPICS)],
    ));
    let response = harness.join_result(token).unwrap().unwrap();
    assert_ne!(response.member_id, old_a);
    assert_eq!(response.generation_id, generation);
    assert_eq!(response.leader, response.member_id);
    assert!(response.skip_assignment);
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Stable));
    let sync = harness.sync(&response.member_id, generation, &[]);
    assert_eq!(
        harness
            .sync_result(sync)
            .unwrap()
            .unwrap()
            .assignment
            .as_ref(),
        b"for-a"
    );
    // The old id is fenced; b never noticed.
    assert_eq!(
        harness.heartbeat_static(&old_a, Some("instance-a"), generation),
        Err(GroupError::FencedInstanceId)
    );
    assert_eq!(harness.heartbeat(&b_id, generation), Ok(()));
}

#[test]
fn static_member_restart_with_other_protocols_keeps_the_selected_one() {
    let mut harness = Harness::new(test_config(3_000));
    let (_old_a, _b_id, _generation) = static_stable_group(&mut harness);
    let token = harness.join(join_request(
        "",
        Some("instance-a"),
        "client-a",
        &[("roundrobin", TOPICS)],
    ));
    // "roundrobin" is not supported by b: rejected before anything changes.
    assert_eq!(
        harness.join_result(token),
        Some(Err(GroupError::InconsistentGroupProtocol))
    );
    let token = harness.join(join_request(
        "",
        Some("instance-a"),
        "client-a",
        &[("roundrobin", TOPICS), ("range", TOPICS)],
    ));
    // b supports only "range", so the selected protocol does not change: no rebalance.
    let response = harness.join_result(token).unwrap().unwrap();
    assert_eq!(response.protocol_name.as_deref(), Some("range"));
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Stable));
}

#[test]
fn static_member_leaves_by_instance_id() {
    let mut harness = Harness::new(test_config(3_000));
    let (a_id, _b_id, _generation) = static_stable_group(&mut harness);
    let response = harness
        .leave(vec![leaving("wrong-id", Some("instance-a"))])
        .unwrap();
    assert_eq!(
        response.members[0].error,
        Some(GroupError::FencedInstanceId)
    );
    let response = harness
        .leave(vec![
            leaving("", Some("instance-a")),
            leaving("", Some("instance-x")),
        ])
        .unwrap();
    assert_eq!(response.members[0].error, None);
    assert_eq!(response.members[1].error, Some(GroupError::UnknownMemberId));
    assert!(harness
        .shard
        .describe_group(GROUP)
        .members
        .iter()
        .all(|member| member.member_id != a_id));
}

#[test]
fn static_member_survives_a_rebalance_without_rejoining_until_its_session_ends() {
    let mut harness = Harness::new(test_config(3_000));
    let (a_id, b_id, generation) = static_stable_group(&mut harness);
    // A new member forces a rebalance; the static a does not rejoin within the rebalance
    // timeout but keeps heartbeating: it stays a member.
    let (c, _) = harness.join_new("client-c", &[("range", TOPICS)]);
    let b = harness.rejoin(&b_id, &[("range", TOPICS)]);
    let mut elapsed = 0;
    while harness.join_result(c).is_none() {
        let _ = harness.heartbeat_static(&a_id, Some("instance-a"), generation);
        let _ = harness.heartbeat(&b_id, generation);
        harness.advance(5_000);
        elapsed += 5_000;
        assert!(elapsed <= 40_000);
    }
    let b_response = harness.join_result(b).unwrap().unwrap();
    assert_eq!(b_response.generation_id, generation + 1);
    assert_eq!(harness.shard.describe_group(GROUP).members.len(), 3);
}

#[test]
fn join_while_parked_displaces_the_older_request() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, _generation) = harness.stable_group(&["a", "b"]);
    let first = harness.rejoin(&members[0], &[("range", &["topic-a", "topic-z"])]);
    let second = harness.rejoin(&members[0], &[("range", &["topic-a", "topic-z"])]);
    assert_eq!(
        harness.join_result(first),
        Some(Err(GroupError::RebalanceInProgress))
    );
    assert!(harness.join_result(second).is_none());
}

#[test]
fn next_deadline_tracks_timers() {
    let mut shard = CoordinatorShard::new(3, test_config(3_000));
    assert_eq!(shard.next_deadline_ms(), None);
    shard.on_loaded(0);
    assert_eq!(
        shard.next_deadline_ms(),
        Some(shard.config().offsets_retention_check_interval_ms)
    );
    assert_eq!(shard.partition(), 3);
}

#[test]
fn empty_group_ids_are_invalid_everywhere() {
    let mut harness = Harness::new(test_config(0));
    let token = harness.token();
    let effects = harness.shard.heartbeat(
        token,
        crate::types::HeartbeatRequest {
            group_id: String::new(),
            generation_id: 1,
            member_id: "m".into(),
            group_instance_id: None,
        },
        harness.now_ms,
    );
    assert_eq!(
        effects.replies[0].1,
        crate::core::Response::Heartbeat(Err(GroupError::InvalidGroupId))
    );
    let token = harness.token();
    let effects = harness.shard.leave_group(
        token,
        crate::types::LeaveGroupRequest {
            group_id: String::new(),
            members: vec![leaving("m", None)],
        },
        harness.now_ms,
    );
    assert_eq!(
        effects.replies[0].1,
        crate::core::Response::Leave(Err(GroupError::InvalidGroupId))
    );
    let token = harness.token();
    let effects = harness.shard.sync_group(
        token,
        crate::types::SyncGroupRequest {
            group_id: String::new(),
            generation_id: 1,
            member_id: "m".into(),
            group_instance_id: None,
            protocol_type: None,
            protocol_name: None,
            assignments: Vec::new(),
        },
        harness.now_ms,
    );
    assert_eq!(
        effects.replies[0].1,
        crate::core::Response::Sync(Err(GroupError::InvalidGroupId))
    );
    assert_eq!(
        harness
            .shard
            .fetch_offsets(&crate::types::OffsetFetchRequest {
                group_id: String::new(),
                topics: None,
                require_stable: false,
            }),
        Err(GroupError::InvalidGroupId)
    );
    assert_eq!(
        harness.shard.describe_group("").error,
        Some(GroupError::InvalidGroupId)
    );
}

#[test]
fn static_leader_restart_before_kip_814_is_told_the_old_leader() {
    let mut harness = Harness::new(test_config(3_000));
    let (old_a, _b_id, generation) = static_stable_group(&mut harness);
    let mut request = join_request("", Some("instance-a"), "client-a", &[("range", TOPICS)]);
    request.supports_skip_assignment = false;
    let token = harness.join(request);
    let response = harness.join_result(token).unwrap().unwrap();
    assert_eq!(response.generation_id, generation);
    assert_eq!(response.leader, old_a);
    assert!(response.members.is_empty());
    assert!(!response.skip_assignment);
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Stable));
}
