use super::harness::*;
use crate::core::GroupState;
use crate::error::GroupError;
use crate::records::GroupRecord;

const TOPICS: &[&str] = &["topic-a"];

#[test]
fn three_members_join_within_the_initial_delay() {
    let mut harness = Harness::new(test_config(3_000));
    let (a, a_id) = harness.join_new("client-a", &[("range", TOPICS), ("roundrobin", TOPICS)]);
    assert_eq!(
        harness.shard.group_state(GROUP),
        Some(GroupState::PreparingRebalance)
    );
    harness.advance(100);
    let (b, b_id) = harness.join_new("client-b", &[("roundrobin", TOPICS), ("range", TOPICS)]);
    let (c, c_id) = harness.join_new("client-c", &[("roundrobin", TOPICS)]);
    assert!(a_id.starts_with("client-a-"));
    // The initial delay is extended once because members arrived during it.
    harness.advance(2_900);
    assert!(harness.join_result(a).is_none());
    harness.advance(3_000);
    let a_response = harness.join_result(a).unwrap().unwrap();
    let b_response = harness.join_result(b).unwrap().unwrap();
    let c_response = harness.join_result(c).unwrap().unwrap();
    // The first member leads; the only protocol everyone supports wins.
    for response in [&a_response, &b_response, &c_response] {
        assert_eq!(response.generation_id, 1);
        assert_eq!(response.leader, a_id);
        assert_eq!(response.protocol_name.as_deref(), Some("roundrobin"));
        assert_eq!(response.protocol_type.as_deref(), Some("consumer"));
    }
    let leader_view: Vec<&str> = a_response
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert_eq!(
        leader_view,
        vec![a_id.as_str(), b_id.as_str(), c_id.as_str()]
    );
    assert!(b_response.members.is_empty());
    assert!(c_response.members.is_empty());
    assert_eq!(
        harness.shard.group_state(GROUP),
        Some(GroupState::CompletingRebalance)
    );
}

#[test]
fn protocol_selection_follows_votes() {
    let mut harness = Harness::new(test_config(3_000));
    let (a, _) = harness.join_new("a", &[("range", TOPICS), ("roundrobin", TOPICS)]);
    let (_b, _) = harness.join_new("b", &[("roundrobin", TOPICS), ("range", TOPICS)]);
    let (_c, _) = harness.join_new("c", &[("roundrobin", TOPICS), ("range", TOPICS)]);
    harness.advance(6_000);
    let response = harness.join_result(a).unwrap().unwrap();
    assert_eq!(response.protocol_name.as_deref(), Some("roundrobin"));
}

#[test]
fn single_member_with_no_delay_completes_on_the_next_tick() {
    let mut harness = Harness::new(test_config(0));
    let (token, member_id) = harness.join_new("solo", &[("range", TOPICS)]);
    // The zero delay still runs through the timer, which is due at once.
    assert!(harness.join_result(token).is_none());
    assert_eq!(harness.shard.next_deadline_ms(), Some(harness.now_ms));
    harness.advance(0);
    let response = harness.join_result(token).unwrap().unwrap();
    assert_eq!(response.generation_id, 1);
    assert_eq!(response.leader, member_id);
    assert_eq!(response.members.len(), 1);
}

#[test]
fn sync_delivers_the_leaders_assignment_and_stores_the_group() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b"]);
    let stored = harness
        .log
        .iter()
        .rev()
        .find_map(|record| match record {
            GroupRecord::GroupMetadata {
                value: Some(value), ..
            } => Some(value.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(stored.generation, generation);
    assert_eq!(stored.members.len(), 2);
    for member in &stored.members {
        assert_eq!(
            member.assignment.as_ref(),
            format!("assign-{}", member.member_id).as_bytes()
        );
    }
    // A member syncing again in Stable gets its assignment immediately.
    let token = harness.sync(&members[1], generation, &[]);
    let response = harness.sync_result(token).unwrap().unwrap();
    assert_eq!(
        response.assignment.as_ref(),
        format!("assign-{}", members[1]).as_bytes()
    );
    assert_eq!(response.protocol_name.as_deref(), Some("range"));
}

#[test]
fn follower_sync_waits_for_the_leader() {
    let mut harness = Harness::new(test_config(3_000));
    let (a, a_id) = harness.join_new("a", &[("range", TOPICS)]);
    let (b, b_id) = harness.join_new("b", &[("range", TOPICS)]);
    harness.advance(6_000);
    harness.join_result(a).unwrap().unwrap();
    harness.join_result(b).unwrap().unwrap();
    let follower = harness.sync(&b_id, 1, &[]);
    assert!(harness.sync_result(follower).is_none());
    let leader = harness.sync(&a_id, 1, &[(&b_id, b"for-b"), (&a_id, b"for-a")]);
    assert_eq!(
        harness
            .sync_result(follower)
            .unwrap()
            .unwrap()
            .assignment
            .as_ref(),
        b"for-b"
    );
    assert_eq!(
        harness
            .sync_result(leader)
            .unwrap()
            .unwrap()
            .assignment
            .as_ref(),
        b"for-a"
    );
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Stable));
}

#[test]
fn new_member_triggers_a_rebalance() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b"]);
    let (c, c_id) = harness.join_new("c", &[("range", TOPICS)]);
    assert_eq!(
        harness.shard.group_state(GROUP),
        Some(GroupState::PreparingRebalance)
    );
    assert_eq!(
        harness.heartbeat(&members[0], generation),
        Err(GroupError::RebalanceInProgress)
    );
    let a = harness.rejoin(&members[0], &[("range", TOPICS)]);
    assert!(harness.join_result(a).is_none());
    let b = harness.rejoin(&members[1], &[("range", TOPICS)]);
    let a_response = harness.join_result(a).unwrap().unwrap();
    let c_response = harness.join_result(c).unwrap().unwrap();
    harness.join_result(b).unwrap().unwrap();
    assert_eq!(a_response.generation_id, generation + 1);
    assert_eq!(a_response.leader, members[0]);
    assert_eq!(a_response.members.len(), 3);
    assert_eq!(c_response.member_id, c_id);
    assert!(c_response.members.is_empty());
}

#[test]
fn rejoin_with_changed_metadata_rebalances_but_unchanged_follower_does_not() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b"]);
    let follower = harness.rejoin(&members[1], &[("range", TOPICS)]);
    let response = harness.join_result(follower).unwrap().unwrap();
    assert_eq!(response.generation_id, generation);
    assert_eq!(harness.shard.group_state(GROUP), Some(GroupState::Stable));
    let changed = harness.rejoin(&members[1], &[("range", &["topic-a", "topic-b"])]);
    assert!(harness.join_result(changed).is_none());
    assert_eq!(
        harness.shard.group_state(GROUP),
        Some(GroupState::PreparingRebalance)
    );
}

#[test]
fn rebalance_timeout_removes_members_that_do_not_rejoin() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b"]);
    let (c, _) = harness.join_new("c", &[("range", TOPICS)]);
    let a = harness.rejoin(&members[0], &[("range", TOPICS)]);
    // b keeps heartbeating (so its session never expires) but never rejoins.
    let mut elapsed = 0;
    while harness.join_result(a).is_none() {
        assert_eq!(
            harness.heartbeat(&members[1], generation),
            Err(GroupError::RebalanceInProgress)
        );
        harness.advance(5_000);
        elapsed += 5_000;
        assert!(
            elapsed <= i64::from(REBALANCE_MS),
            "join did not complete in time"
        );
    }
    assert!(elapsed >= i64::from(REBALANCE_MS));
    let c_response = harness.join_result(c).unwrap().unwrap();
    assert_eq!(c_response.generation_id, generation + 1);
    assert_eq!(
        harness.heartbeat(&members[1], generation),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(harness.shard.describe_group(GROUP).members.len(), 2);
}

#[test]
fn members_that_never_sync_are_removed() {
    let mut harness = Harness::new(test_config(3_000));
    let (a, a_id) = harness.join_new("a", &[("range", TOPICS)]);
    let (b, b_id) = harness.join_new("b", &[("range", TOPICS)]);
    harness.advance(6_000);
    harness.join_result(a).unwrap().unwrap();
    harness.join_result(b).unwrap().unwrap();
    let leader = harness.sync(&a_id, 1, &[(&a_id, b"x"), (&b_id, b"y")]);
    harness.sync_result(leader).unwrap().unwrap();
    // b heartbeats but never syncs: it is removed after the rebalance timeout.
    let mut b_result = Ok(());
    for _ in 0..7 {
        harness.advance(5_000);
        let _ = harness.heartbeat(&a_id, 1);
        b_result = harness.heartbeat(&b_id, 1);
    }
    assert_eq!(b_result, Err(GroupError::UnknownMemberId));
    let described = harness.shard.describe_group(GROUP);
    assert!(described
        .members
        .iter()
        .all(|member| member.member_id != b_id));
    assert_eq!(described.group_state, "PreparingRebalance");
}

#[test]
fn join_errors() {
    let mut harness = Harness::new(test_config(0));
    let mut bad = join_request("", None, "c", &[("range", TOPICS)]);
    bad.session_timeout_ms = 500;
    let token = harness.join(bad.clone());
    assert_eq!(
        harness.join_result(token),
        Some(Err(GroupError::InvalidSessionTimeout))
    );
    bad.session_timeout_ms = 1_800_001;
    let token = harness.join(bad);
    assert_eq!(
        harness.join_result(token),
        Some(Err(GroupError::InvalidSessionTimeout))
    );

    let mut no_group = join_request("", None, "c", &[("range", TOPICS)]);
    no_group.group_id = String::new();
    let token = harness.join(no_group);
    assert_eq!(
        harness.join_result(token),
        Some(Err(GroupError::InvalidGroupId))
    );

    let token = harness.join(join_request("ghost", None, "c", &[("range", TOPICS)]));
    assert_eq!(
        harness.join_result(token),
        Some(Err(GroupError::UnknownMemberId))
    );
    assert_eq!(harness.shard.group_state(GROUP), None);

    let (token, _) = harness.join_new("a", &[("range", TOPICS)]);
    harness.advance(0);
    harness.join_result(token).unwrap().unwrap();
    let mut other_type = join_request("", None, "c", &[("range", TOPICS)]);
    other_type.protocol_type = "connect".into();
    let token = harness.join(other_type);
    assert_eq!(
        harness.join_result(token),
        Some(Err(GroupError::InconsistentGroupProtocol))
    );
    let token = harness.join(join_request("", None, "c", &[("sticky", TOPICS)]));
    assert_eq!(
        harness.join_result(token),
        Some(Err(GroupError::InconsistentGroupProtocol))
    );

    // Old clients (v0-v3) join without MEMBER_ID_REQUIRED.
    let mut old = join_request("", None, "old", &[("range", TOPICS)]);
    old.require_known_member_id = false;
    let token = harness.join(old);
    assert!(
        harness.join_result(token).is_none(),
        "parked in the rebalance"
    );
}

#[test]
fn group_max_size_is_enforced() {
    let mut config = test_config(3_000);
    config.group_size_max = 2;
    let mut harness = Harness::new(config);
    harness.stable_group(&["a", "b"]);
    let token = harness.join(join_request("", None, "c", &[("range", TOPICS)]));
    assert_eq!(
        harness.join_result(token),
        Some(Err(GroupError::GroupMaxSizeReached))
    );
}

#[test]
fn sync_errors() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b"]);
    let token = harness.sync(&members[0], generation + 1, &[]);
    assert_eq!(
        harness.sync_result(token),
        Some(Err(GroupError::IllegalGeneration))
    );
    let token = harness.sync("nobody", generation, &[]);
    assert_eq!(
        harness.sync_result(token),
        Some(Err(GroupError::UnknownMemberId))
    );
    let mut request = crate::types::SyncGroupRequest {
        group_id: GROUP.into(),
        generation_id: generation,
        member_id: members[0].clone(),
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("roundrobin".into()),
        assignments: Vec::new(),
    };
    let token = harness.token();
    let effects = harness
        .shard
        .sync_group(token, request.clone(), harness.now_ms);
    harness.apply(effects);
    assert_eq!(
        harness.sync_result(token),
        Some(Err(GroupError::InconsistentGroupProtocol))
    );
    request.protocol_name = Some("range".into());
    request.protocol_type = Some("connect".into());
    let token = harness.token();
    let effects = harness.shard.sync_group(token, request, harness.now_ms);
    harness.apply(effects);
    assert_eq!(
        harness.sync_result(token),
        Some(Err(GroupError::InconsistentGroupProtocol))
    );
    // During a rebalance SyncGroup answers REBALANCE_IN_PROGRESS.
    harness.join_new("c", &[("range", TOPICS)]);
    let token = harness.sync(&members[0], generation, &[]);
    assert_eq!(
        harness.sync_result(token),
        Some(Err(GroupError::RebalanceInProgress))
    );
}

#[test]
fn pending_member_that_never_rejoins_expires() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a"]);
    let token = harness.join(join_request("", None, "late", &[("range", TOPICS)]));
    assert!(matches!(
        harness.join_result(token),
        Some(Err(GroupError::MemberIdRequired { .. }))
    ));
    // a rebalances alone: the pending member does not block forever.
    let (_c, _) = harness.join_new("c", &[("range", TOPICS)]);
    let a = harness.rejoin(&members[0], &[("range", TOPICS)]);
    // Still waiting for "late" until its session timeout.
    let mut waited = 0;
    while harness.join_result(a).is_none() {
        harness.advance(1_000);
        waited += 1_000;
        assert!(waited <= i64::from(SESSION_MS));
    }
    assert_eq!(harness.shard.describe_group(GROUP).members.len(), 2);
    let _ = generation;
}
