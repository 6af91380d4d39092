use super::harness::*;
use crate::core::{CoordinatorShard, GroupState, Response};
use crate::error::GroupError;
use crate::records::{GroupRecord, OffsetCommitValue};
use crate::types::*;

#[test]
fn simple_consumer_commits_to_a_group_with_no_members() {
    let mut harness = Harness::new(test_config(0));
    let response = harness
        .commit("simple", -1, "", &[("t", 0, 42, "m"), ("t", 1, 7, "")])
        .unwrap();
    assert!(response.topics[0]
        .partitions
        .iter()
        .all(|p| p.error.is_none()));
    assert_eq!(harness.fetch("simple", "t", 0), 42);
    assert_eq!(harness.fetch("simple", "t", 1), 7);
    assert_eq!(harness.fetch("simple", "t", 2), -1);
    assert_eq!(harness.fetch("other", "t", 0), -1);
    assert_eq!(harness.shard.group_state("simple"), Some(GroupState::Empty));
}

#[test]
fn member_commits_are_checked() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b"]);
    assert!(harness
        .commit(GROUP, generation, &members[0], &[("topic-a", 0, 10, "")])
        .is_ok());
    assert_eq!(
        harness.commit(
            GROUP,
            generation + 1,
            &members[0],
            &[("topic-a", 0, 11, "")]
        ),
        Err(GroupError::IllegalGeneration)
    );
    assert_eq!(
        harness.commit(GROUP, generation, "ghost", &[("topic-a", 0, 11, "")]),
        Err(GroupError::UnknownMemberId)
    );
    // No member id and no generation: only for groups with no members.
    assert_eq!(
        harness.commit(GROUP, -1, "", &[("topic-a", 0, 11, "")]),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(harness.fetch(GROUP, "topic-a", 0), 10);
    // Group gone: a member's commit fails.
    assert_eq!(
        harness.commit("missing", 3, "m", &[("topic-a", 0, 1, "")]),
        Err(GroupError::IllegalGeneration)
    );
    let token = harness.token();
    let request = OffsetCommitRequest {
        group_id: "missing".into(),
        generation_id: 3,
        member_id: "m".into(),
        group_instance_id: None,
        retention_time_ms: -1,
        reports_missing_group: true,
        topics: Vec::new(),
    };
    let effects = harness.shard.commit_offsets(token, request, harness.now_ms);
    assert_eq!(
        effects.replies[0].1,
        Response::OffsetCommit(Err(GroupError::GroupIdNotFound))
    );
}

#[test]
fn commit_during_completing_rebalance_is_refused() {
    let mut harness = Harness::new(test_config(3_000));
    let (a, a_id) = harness.join_new("a", &[("range", &["t"])]);
    harness.advance(3_000);
    let generation = harness.join_result(a).unwrap().unwrap().generation_id;
    assert_eq!(
        harness.shard.group_state(GROUP),
        Some(GroupState::CompletingRebalance)
    );
    assert_eq!(
        harness.commit(GROUP, generation, &a_id, &[("t", 0, 1, "")]),
        Err(GroupError::RebalanceInProgress)
    );
}

#[test]
fn oversized_metadata_is_refused_per_partition() {
    let mut harness = Harness::new(test_config(0));
    let big = "x".repeat(4_097);
    let response = harness
        .commit(
            "g",
            -1,
            "",
            &[("t", 0, 5, big.as_str()), ("t", 1, 6, "fine")],
        )
        .unwrap();
    let partitions = &response.topics[0].partitions;
    assert_eq!(
        partitions[0].error,
        Some(GroupError::OffsetMetadataTooLarge)
    );
    assert_eq!(partitions[1].error, None);
    assert_eq!(harness.fetch("g", "t", 0), -1);
    assert_eq!(harness.fetch("g", "t", 1), 6);
}

#[test]
fn fetch_all_lists_every_committed_partition() {
    let mut harness = Harness::new(test_config(0));
    harness
        .commit(
            "g",
            -1,
            "",
            &[("b", 1, 5, "meta"), ("a", 0, 3, ""), ("b", 0, 4, "")],
        )
        .unwrap();
    let response = harness
        .shard
        .fetch_offsets(&OffsetFetchRequest {
            group_id: "g".into(),
            topics: None,
            require_stable: true,
        })
        .unwrap();
    let flat: Vec<(String, i32, i64, String)> = response
        .topics
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(|p| {
                (
                    topic.name.clone(),
                    p.partition_index,
                    p.committed_offset,
                    p.metadata.clone(),
                )
            })
        })
        .collect();
    assert_eq!(
        flat,
        vec![
            ("a".into(), 0, 3, String::new()),
            ("b".into(), 0, 4, String::new()),
            ("b".into(), 1, 5, "meta".into())
        ]
    );
    let unknown = harness
        .shard
        .fetch_offsets(&OffsetFetchRequest {
            group_id: "unknown".into(),
            topics: None,
            require_stable: false,
        })
        .unwrap();
    assert!(unknown.topics.is_empty());
}

#[test]
fn transactional_offsets_stay_pending_until_the_marker() {
    let mut harness = Harness::new(test_config(0));
    let record = GroupRecord::OffsetCommit {
        group_id: "g".into(),
        topic: "t".into(),
        partition: 0,
        value: Some(OffsetCommitValue {
            offset: 99,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp_ms: harness.now_ms,
            expire_timestamp_ms: -1,
        }),
    };
    harness.shard.replay_transactional_offset(7, &record);
    let stable = |shard: &CoordinatorShard| {
        shard
            .fetch_offsets(&OffsetFetchRequest {
                group_id: "g".into(),
                topics: Some(vec![OffsetFetchTopic {
                    name: "t".into(),
                    partition_indexes: vec![0],
                }]),
                require_stable: true,
            })
            .unwrap()
            .topics[0]
            .partitions[0]
            .clone()
    };
    let pending = stable(&harness.shard);
    assert_eq!(pending.error, Some(GroupError::UnstableOffsetCommit));
    assert_eq!(pending.committed_offset, -1);
    harness.shard.replay_transaction_marker(7, true);
    let committed = stable(&harness.shard);
    assert_eq!(committed.error, None);
    assert_eq!(committed.committed_offset, 99);
    // A plain commit written after a transactional one wins when the marker arrives.
    harness.shard.replay_transactional_offset(9, &record);
    harness.commit("g", -1, "", &[("t", 0, 150, "")]).unwrap();
    harness.shard.replay_transaction_marker(9, true);
    assert_eq!(stable(&harness.shard).committed_offset, 150);
    // An aborted transaction leaves nothing behind.
    harness.shard.replay_transactional_offset(8, &record);
    harness.shard.replay_transaction_marker(8, false);
    assert_eq!(stable(&harness.shard).error, None);
}

fn delete_offsets(
    harness: &mut Harness,
    group_id: &str,
    topic: &str,
) -> Result<OffsetDeleteResponse, GroupError> {
    let token = harness.token();
    let effects = harness.shard.delete_offsets(
        token,
        OffsetDeleteRequest {
            group_id: group_id.into(),
            topics: vec![OffsetDeleteTopic {
                name: topic.into(),
                partition_indexes: vec![0],
            }],
        },
        harness.now_ms,
    );
    harness.apply(effects);
    match harness.take(token) {
        Some(Response::OffsetDelete(result)) => result,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn offset_delete_refuses_subscribed_topics() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a"]);
    harness
        .commit(
            GROUP,
            generation,
            &members[0],
            &[("topic-a", 0, 1, ""), ("old-topic", 0, 2, "")],
        )
        .unwrap();
    let subscribed = delete_offsets(&mut harness, GROUP, "topic-a").unwrap();
    assert_eq!(
        subscribed.topics[0].partitions[0].error,
        Some(GroupError::GroupSubscribedToTopic)
    );
    assert_eq!(harness.fetch(GROUP, "topic-a", 0), 1);
    let other = delete_offsets(&mut harness, GROUP, "old-topic").unwrap();
    assert_eq!(other.topics[0].partitions[0].error, None);
    assert_eq!(harness.fetch(GROUP, "old-topic", 0), -1);
    assert_eq!(
        delete_offsets(&mut harness, "nope", "t"),
        Err(GroupError::GroupIdNotFound)
    );
}

fn delete_groups(harness: &mut Harness, ids: &[&str]) -> Vec<DeleteGroupResult> {
    let token = harness.token();
    let effects = harness.shard.delete_groups(
        token,
        ids.iter().map(|id| (*id).to_owned()).collect(),
        harness.now_ms,
    );
    harness.apply(effects);
    match harness.take(token) {
        Some(Response::DeleteGroups(results)) => results,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn describe_list_and_delete_groups() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, _generation) = harness.stable_group(&["a", "b"]);
    harness
        .commit("simple", -1, "", &[("t", 0, 1, "")])
        .unwrap();

    let described = harness.shard.describe_group(GROUP);
    assert_eq!(described.group_state, "Stable");
    assert_eq!(described.protocol_type, "consumer");
    assert_eq!(described.protocol_data, "range");
    assert_eq!(described.members.len(), 2);
    assert_eq!(described.members[0].member_id, members[0]);
    assert_eq!(
        described.members[0].member_assignment.as_ref(),
        format!("assign-{}", members[0]).as_bytes()
    );
    let missing = harness.shard.describe_group("missing");
    assert_eq!(missing.error, Some(GroupError::GroupIdNotFound));
    assert_eq!(missing.group_state, "Dead");

    let all = harness.shard.list_groups(&[]);
    assert_eq!(all.len(), 2);
    let stable = harness.shard.list_groups(&[GroupState::Stable]);
    assert_eq!(stable.len(), 1);
    assert_eq!(stable[0].group_id, GROUP);
    assert_eq!(stable[0].group_type, "classic");
    let empty = harness
        .shard
        .list_groups(&[GroupState::parse("empty").unwrap()]);
    assert_eq!(empty[0].group_id, "simple");

    let results = delete_groups(&mut harness, &[GROUP, "simple", "missing", ""]);
    assert_eq!(results[0].error, Some(GroupError::NonEmptyGroup));
    assert_eq!(results[1].error, None);
    assert_eq!(results[2].error, Some(GroupError::GroupIdNotFound));
    assert_eq!(results[3].error, Some(GroupError::InvalidGroupId));
    assert_eq!(harness.shard.group_state("simple"), None);
    assert_eq!(harness.fetch("simple", "t", 0), -1);
    let tail: Vec<&GroupRecord> = harness.log.iter().rev().take(2).collect();
    assert!(matches!(
        tail[0],
        GroupRecord::GroupMetadata { value: None, .. }
    ));
    assert!(matches!(
        tail[1],
        GroupRecord::OffsetCommit { value: None, .. }
    ));
}

#[test]
fn offsets_expire_after_retention_once_the_group_is_empty() {
    let mut config = test_config(3_000);
    config.offsets_retention_ms = 60_000;
    config.offsets_retention_check_interval_ms = 10_000;
    let mut harness = Harness::new(config);
    harness
        .commit("simple", -1, "", &[("t", 0, 1, "")])
        .unwrap();
    let (members, generation) = harness.stable_group(&["a"]);
    harness
        .commit(GROUP, generation, &members[0], &[("topic-a", 0, 5, "")])
        .unwrap();
    // A stable group keeps offsets of subscribed topics however old.
    for _ in 0..16 {
        harness.advance(5_000);
        harness.heartbeat(&members[0], generation).unwrap();
    }
    assert_eq!(harness.fetch(GROUP, "topic-a", 0), 5);
    // The simple group's offset expired 60s after its commit, and the group with it.
    assert_eq!(harness.fetch("simple", "t", 0), -1);
    assert_eq!(harness.shard.group_state("simple"), None);
    // Once empty, the consumer group's offsets expire 60s after it became empty.
    harness
        .leave(vec![LeavingMember {
            member_id: members[0].clone(),
            group_instance_id: None,
            reason: None,
        }])
        .unwrap();
    harness.advance(50_000);
    assert_eq!(harness.fetch(GROUP, "topic-a", 0), 5);
    harness.advance(20_000);
    assert_eq!(harness.fetch(GROUP, "topic-a", 0), -1);
    assert_eq!(harness.shard.group_state(GROUP), None);
}

#[test]
fn replaying_the_records_rebuilds_the_same_state() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a", "b", "c"]);
    harness
        .commit(
            GROUP,
            generation,
            &members[0],
            &[("topic-a", 0, 10, "x"), ("topic-a", 1, 11, "")],
        )
        .unwrap();
    harness
        .commit("simple", -1, "", &[("t", 0, 1, "")])
        .unwrap();
    harness.commit("gone", -1, "", &[("t", 0, 1, "")]).unwrap();
    delete_groups(&mut harness, &["gone"]);
    let static_member = harness.join(join_request(
        "",
        Some("static-1"),
        "s",
        &[("range", &["topic-a"])],
    ));
    assert!(harness.join_result(static_member).is_none());
    // Finish that rebalance: everybody rejoins and syncs.
    let mut tokens = Vec::new();
    for member in &members {
        tokens.push(harness.rejoin(member, &[("range", &["topic-a"])]));
    }
    let responses: Vec<_> = tokens
        .iter()
        .chain(std::iter::once(&static_member))
        .map(|token| harness.join_result(*token).unwrap().unwrap())
        .collect();
    let generation = responses[0].generation_id;
    let leader = responses[0].leader.clone();
    let static_id = responses[3].member_id.clone();
    let mut syncs = Vec::new();
    for member in members.iter().chain(std::iter::once(&static_id)) {
        if *member != leader {
            syncs.push(harness.sync(member, generation, &[]));
        }
    }
    let assignments: Vec<(&str, &[u8])> = vec![(&static_id, b"s"), (&members[1], b"one")];
    syncs.push(harness.sync(&leader, generation, &assignments));
    for token in syncs {
        harness.sync_result(token).unwrap().unwrap();
    }
    // The static member restarts without a rebalance (a metadata record with the new id).
    let restart = harness.join(join_request(
        "",
        Some("static-1"),
        "s",
        &[("range", &["topic-a"])],
    ));
    harness.join_result(restart).unwrap().unwrap();

    let mut rebuilt = CoordinatorShard::new(0, test_config(3_000));
    for record in &harness.log {
        let (key, value) = crate::records::encode_record(record);
        let decoded = crate::records::decode_record(&key, value.as_deref()).unwrap();
        rebuilt.replay(&decoded);
    }
    rebuilt.on_loaded(harness.now_ms);
    assert_eq!(rebuilt.snapshot(), harness.shard.snapshot());
    assert_eq!(rebuilt.group_state(GROUP), Some(GroupState::Stable));
    assert_eq!(rebuilt.group_state("gone"), None);

    // Loaded members must heartbeat within their session timeout: when none does, the group
    // ends up empty and a new generation is stored.
    let effects = rebuilt.tick(harness.now_ms + i64::from(SESSION_MS) + 1);
    assert_eq!(rebuilt.group_state(GROUP), Some(GroupState::Empty));
    assert!(matches!(
        effects.records.as_slice(),
        [GroupRecord::GroupMetadata { value: Some(value), .. }] if value.members.is_empty()
    ));
}

#[test]
fn transactional_commits_are_validated_like_kafka() {
    let mut harness = Harness::new(test_config(3_000));
    let (members, generation) = harness.stable_group(&["a"]);
    let mut request = OffsetCommitRequest {
        group_id: GROUP.into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: 5_000,
        reports_missing_group: true,
        topics: vec![OffsetCommitTopic {
            name: "topic-a".into(),
            partitions: vec![
                OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: 8,
                    committed_leader_epoch: -1,
                    committed_metadata: None,
                },
                OffsetCommitPartition {
                    partition_index: 1,
                    committed_offset: 9,
                    committed_leader_epoch: -1,
                    committed_metadata: Some("y".repeat(5_000)),
                },
            ],
        }],
    };
    // Without member information a transactional commit is accepted even by a non-empty group.
    let (response, records) = harness
        .shard
        .prepare_transactional_offsets(&request, harness.now_ms)
        .unwrap();
    assert_eq!(response.topics[0].partitions[0].error, None);
    assert_eq!(
        response.topics[0].partitions[1].error,
        Some(GroupError::OffsetMetadataTooLarge)
    );
    assert!(matches!(
        records.as_slice(),
        [GroupRecord::OffsetCommit { value: Some(value), .. }] if value.expire_timestamp_ms == -1
    ));
    request.member_id = members[0].clone();
    request.generation_id = generation + 5;
    assert_eq!(
        harness
            .shard
            .prepare_transactional_offsets(&request, harness.now_ms),
        Err(GroupError::IllegalGeneration)
    );
    request.group_id = "absent".into();
    assert_eq!(
        harness
            .shard
            .prepare_transactional_offsets(&request, harness.now_ms),
        Err(GroupError::IllegalGeneration)
    );
}

#[test]
fn offset_delete_needs_an_empty_group_unless_it_is_a_consumer_group() {
    let mut harness = Harness::new(test_config(0));
    let mut request = join_request("", None, "worker", &[("default", &["ignored"])]);
    request.protocol_type = "connect".into();
    request.require_known_member_id = false;
    let token = harness.join(request);
    harness.advance(0);
    let joined = harness.join_result(token).unwrap().unwrap();
    let sync_token = harness.token();
    let effects = harness.shard.sync_group(
        sync_token,
        SyncGroupRequest {
            group_id: GROUP.into(),
            generation_id: joined.generation_id,
            member_id: joined.member_id.clone(),
            group_instance_id: None,
            protocol_type: Some("connect".into()),
            protocol_name: Some("default".into()),
            assignments: Vec::new(),
        },
        harness.now_ms,
    );
    harness.apply(effects);
    harness.sync_result(sync_token).unwrap().unwrap();
    assert_eq!(
        delete_offsets(&mut harness, GROUP, "any-topic"),
        Err(GroupError::NonEmptyGroup)
    );
}
