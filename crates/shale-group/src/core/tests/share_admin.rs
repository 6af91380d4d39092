//! Share groups in ShareGroupDescribe, ListGroups and DeleteGroups, after a reload, and beside
//! the other group types.

use std::collections::BTreeMap;

use super::share_harness::*;
use crate::config::GroupConfig;
use crate::consumer_types::ConsumerGroupHeartbeatRequest;
use crate::core::{RequestToken, Response, ShareGroupState};
use crate::error::GroupError;
use crate::share_types::{DescribedShareMember, DescribedShareTopic};
use crate::types::{
    HeartbeatRequest, JoinGroupRequest, OffsetCommitPartition, OffsetCommitRequest,
    OffsetCommitTopic, OffsetFetchRequest, OffsetFetchTopic,
};

fn config() -> GroupConfig {
    GroupConfig {
        share_assignment_interval_ms: 0,
        ..GroupConfig::default()
    }
}

fn stable_group() -> ShareHarness {
    let mut h = ShareHarness::new(config());
    h.heartbeat_initialized(join("m1", &["orders"]));
    h.heartbeat(beat("m1", 2));
    h
}

#[test]
fn describe_answers_members_epochs_and_assignments() {
    let h = stable_group();
    let described = h.shard.describe_share_group(GROUP);
    assert_eq!(described.error, None);
    assert_eq!(described.group_state, "Stable");
    assert_eq!((described.group_epoch, described.assignment_epoch), (3, 3));
    assert_eq!(described.assignor_name, "simple");
    assert_eq!(
        described.members,
        vec![DescribedShareMember {
            member_id: "m1".into(),
            rack_id: None,
            member_epoch: 3,
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            subscribed_topic_names: vec!["orders".into()],
            assignment: vec![DescribedShareTopic {
                topic_id: ORDERS,
                topic_name: "orders".into(),
                partitions: vec![0, 1],
            }],
        }]
    );
    let missing = h.shard.describe_share_group("nope");
    assert_eq!(missing.error, Some(GroupError::GroupIdNotFound));
    assert_eq!(
        missing.error_message.as_deref(),
        Some("Group nope not found.")
    );
    assert_eq!((missing.group_state.as_str(), missing.group_epoch), ("", 0));
    assert_eq!(
        h.shard.describe_share_group("").error,
        Some(GroupError::InvalidGroupId)
    );
}

#[test]
fn list_groups_filters_share_groups_by_type_and_state() {
    let mut h = stable_group();
    let listed = h.shard.list_groups_filtered(&[], &["SHARE".into()]);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].group_id.as_str(),
            listed[0].protocol_type.as_str(),
            listed[0].group_state.as_str(),
            listed[0].group_type.as_str()
        ),
        (GROUP, "share", "Stable", "share")
    );
    assert!(h
        .shard
        .list_groups_filtered(&[], &["consumer".into()])
        .is_empty());
    h.heartbeat(beat("m1", -1));
    assert!(h
        .shard
        .list_groups_filtered(&["stable".into()], &[])
        .is_empty());
    assert_eq!(
        h.shard.list_groups_filtered(&["Empty".into()], &[])[0].group_state,
        "Empty"
    );
}

#[test]
fn delete_first_hands_over_the_state_to_delete_then_removes_the_group() {
    let mut h = stable_group();
    // Not empty: nothing to prepare, and DeleteGroups refuses it.
    let (prepared, records) = h
        .shard
        .prepare_share_groups_deletion(&[GROUP.to_owned()], h.now_ms);
    assert!(prepared.is_empty() && records.is_empty());
    let effects = h
        .shard
        .delete_groups(RequestToken(1), vec![GROUP.to_owned()], h.now_ms);
    match &h.apply(effects)[..] {
        [(_, Response::DeleteGroups(results))] => {
            assert_eq!(results[0].error, Some(GroupError::NonEmptyGroup))
        }
        other => panic!("unexpected {other:?}"),
    }

    h.heartbeat(beat("m1", -1));
    let (prepared, records) = h
        .shard
        .prepare_share_groups_deletion(&[GROUP.to_owned(), "other".to_owned()], h.now_ms);
    assert_eq!(
        prepared,
        BTreeMap::from([(
            GROUP.to_owned(),
            BTreeMap::from([(ORDERS, [0, 1].into_iter().collect())])
        )])
    );
    h.apply_records(records);
    let metadata = h.shard.share_groups[GROUP].state_metadata.clone().unwrap();
    assert!(metadata.initialized.is_empty());
    assert_eq!(
        metadata.deleting.get(&ORDERS).map(String::as_str),
        Some("orders")
    );

    let effects = h
        .shard
        .delete_groups(RequestToken(2), vec![GROUP.to_owned()], h.now_ms);
    match &h.apply(effects)[..] {
        [(_, Response::DeleteGroups(results))] => assert_eq!(results[0].error, None),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(h.shard.share_group_state(GROUP), None);
    // The tombstones are what a reload reads: the group stays gone.
    assert_eq!(h.reloaded(config()).shard.share_group_state(GROUP), None);
}

#[test]
fn a_reload_rebuilds_members_assignments_and_state_and_restarts_sessions() {
    let mut h = stable_group();
    h.advance(10_000);
    let mut reloaded = h.reloaded(config());
    assert_eq!(
        reloaded.shard.describe_share_group(GROUP),
        h.shard.describe_share_group(GROUP)
    );
    assert_eq!(
        reloaded.shard.share_groups[GROUP].state_metadata,
        h.shard.share_groups[GROUP].state_metadata
    );
    assert_eq!(reloaded.assignment("m1"), parts(&[(ORDERS, &[0, 1])]));
    // The member heartbeats on with its epoch, and nothing is initialized again.
    let outcome = reloaded.heartbeat(beat("m1", 3));
    assert_eq!(outcome.response.error, None);
    assert_eq!(outcome.initialize, None);
    // The session counts from the load.
    reloaded.advance(45_000);
    assert_eq!(
        reloaded.shard.share_group_state(GROUP),
        Some(ShareGroupState::Empty)
    );
}

#[test]
fn other_protocols_refuse_a_share_groups_id_and_it_refuses_theirs() {
    let mut h = stable_group();
    let join = JoinGroupRequest {
        group_id: GROUP.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: String::new(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: Vec::new(),
        reason: None,
        client_id: "c".into(),
        client_host: "/h".into(),
        require_known_member_id: true,
        supports_skip_assignment: true,
    };
    let effects = h.shard.join_group(RequestToken(7), join, h.now_ms);
    match &h.apply(effects)[..] {
        [(_, Response::Join(result))] => {
            assert_eq!(result, &Err(GroupError::InconsistentGroupProtocol))
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(h.shard.group_state(GROUP), None);
    let fetch = OffsetFetchRequest {
        group_id: GROUP.into(),
        topics: None,
        require_stable: false,
    };
    // OffsetFetch answers a share group as one without offsets, as Kafka does.
    assert_eq!(h.shard.fetch_offsets(&fetch).unwrap().topics, Vec::new());
    let fetch = OffsetFetchRequest {
        topics: Some(vec![OffsetFetchTopic {
            name: "orders".into(),
            partition_indexes: vec![0],
        }]),
        ..fetch
    };
    let fetched = h.shard.fetch_offsets(&fetch).unwrap();
    assert_eq!(fetched.topics[0].partitions[0].committed_offset, -1);
    assert_eq!(fetched.topics[0].partitions[0].error, None);
    let commit = OffsetCommitRequest {
        group_id: GROUP.into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: -1,
        reports_missing_group: true,
        topics: vec![OffsetCommitTopic {
            name: "orders".into(),
            partitions: vec![OffsetCommitPartition {
                partition_index: 0,
                committed_offset: 5,
                committed_leader_epoch: -1,
                committed_metadata: None,
            }],
        }],
    };
    let effects = h.shard.commit_offsets(RequestToken(10), commit, h.now_ms);
    match &h.apply(effects)[..] {
        [(_, Response::OffsetCommit(result))] => {
            assert_eq!(result, &Err(GroupError::GroupIdNotFound))
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(h.shard.group_state(GROUP), None);

    let heartbeat = HeartbeatRequest {
        group_id: GROUP.into(),
        generation_id: 1,
        member_id: "m1".into(),
        group_instance_id: None,
    };
    let effects = h.shard.heartbeat(RequestToken(8), heartbeat, h.now_ms);
    match &h.apply(effects)[..] {
        [(_, Response::Heartbeat(result))] => {
            assert_eq!(result, &Err(GroupError::UnknownMemberId))
        }
        other => panic!("unexpected {other:?}"),
    }
    let consumer = ConsumerGroupHeartbeatRequest {
        api_version: 1,
        group_id: GROUP.into(),
        member_id: "c1".into(),
        member_epoch: 0,
        instance_id: None,
        rack_id: None,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["orders".into()]),
        subscribed_topic_regex: None,
        server_assignor: None,
        owned_partitions: Some(Vec::new()),
        client_id: "c".into(),
        client_host: "/h".into(),
    };
    let effects = h
        .shard
        .consumer_group_heartbeat(RequestToken(9), consumer, h.now_ms);
    match &h.apply(effects)[..] {
        // GROUP_ID_NOT_FOUND, "Group G is not a consumer group." as Kafka 4.4 answers.
        [(_, Response::ConsumerHeartbeat(result))] => {
            assert_eq!(result, &Err(GroupError::NotConsumerGroup))
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        h.shard.describe_group(GROUP).error,
        Some(GroupError::GroupIdNotFound)
    );
    assert_eq!(
        h.shard.describe_consumer_group(GROUP).error,
        Some(GroupError::NotConsumerGroup)
    );
    assert_eq!(
        h.shard.share_group_state(GROUP),
        Some(ShareGroupState::Stable)
    );

    // A classic group's id is not a share group's.
    let mut classic = ShareHarness::new(config());
    classic.apply_records(vec![crate::records::GroupRecord::OffsetCommit {
        group_id: GROUP.into(),
        topic: "orders".into(),
        partition: 0,
        value: Some(crate::records::OffsetCommitValue {
            offset: 1,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp_ms: 0,
            expire_timestamp_ms: -1,
        }),
    }]);
    let response = classic.heartbeat(join_member("m1")).response;
    assert_eq!(response.error, Some(GroupError::GroupIdNotFound));
    assert_eq!(
        response.error_message.as_deref(),
        Some("Group sg is not a share group.")
    );
}

fn join_member(member_id: &str) -> crate::share_types::ShareGroupHeartbeatInput {
    join(member_id, &["orders"])
}
