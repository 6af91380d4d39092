//! Runtime tests: paused tokio time and an in-memory log.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

use super::*;
use crate::records::consumer_protocol::encode_subscription;

#[derive(Default)]
pub(super) struct MemoryLog {
    records: Mutex<Vec<(i32, EncodedRecord)>>,
    failure: Mutex<Option<GroupLogError>>,
}

impl MemoryLog {
    pub(super) fn records_of(&self, partition: i32) -> Vec<EncodedRecord> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| *p == partition)
            .map(|(_, record)| record.clone())
            .collect()
    }

    pub(super) fn fail_with(&self, failure: Option<GroupLogError>) {
        *self.failure.lock().unwrap() = failure;
    }
}

impl GroupLog for MemoryLog {
    fn append(&self, partition: i32, records: Vec<EncodedRecord>) -> AppendFuture<'_> {
        Box::pin(async move {
            // Appends take a little while, like a replicated write.
            tokio::time::sleep(Duration::from_millis(2)).await;
            if let Some(failure) = self.failure.lock().unwrap().clone() {
                return Err(failure);
            }
            let mut stored = self.records.lock().unwrap();
            stored.extend(records.into_iter().map(|record| (partition, record)));
            Ok(())
        })
    }
}

const PARTITIONS: i32 = 4;
const GROUP: &str = "runtime-group";

fn config() -> GroupConfig {
    GroupConfig {
        session_timeout_ms_min: 1_000,
        initial_rebalance_delay_ms: 3_000,
        ..GroupConfig::default()
    }
}

fn setup() -> (GroupCoordinator, Arc<MemoryLog>) {
    let log = Arc::new(MemoryLog::default());
    let coordinator = GroupCoordinator::new(config(), PARTITIONS, log.clone());
    for partition in 0..PARTITIONS {
        coordinator.load_partition(partition, Vec::new());
    }
    (coordinator, log)
}

fn join_request(member_id: &str, client_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: GROUP.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupProtocol {
            name: "range".into(),
            metadata: Bytes::from(encode_subscription(&["topic"])),
        }],
        reason: None,
        client_id: client_id.into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: true,
        supports_skip_assignment: true,
    }
}

async fn join(coordinator: &GroupCoordinator, client_id: &str) -> JoinGroupResponse {
    let member_id = match coordinator.join_group(join_request("", client_id)).await {
        Err(GroupError::MemberIdRequired { member_id }) => member_id,
        other => panic!("expected MEMBER_ID_REQUIRED, got {other:?}"),
    };
    coordinator
        .join_group(join_request(&member_id, client_id))
        .await
        .unwrap()
}

fn sync_request(
    member_id: &str,
    generation_id: i32,
    assignments: Vec<SyncGroupAssignment>,
) -> SyncGroupRequest {
    SyncGroupRequest {
        group_id: GROUP.into(),
        generation_id,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments,
    }
}

fn heartbeat_request(member_id: &str, generation_id: i32) -> HeartbeatRequest {
    HeartbeatRequest {
        group_id: GROUP.into(),
        generation_id,
        member_id: member_id.into(),
        group_instance_id: None,
    }
}

fn commit_request(
    group_id: &str,
    generation_id: i32,
    member_id: &str,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: group_id.into(),
        generation_id,
        member_id: member_id.into(),
        group_instance_id: None,
        retention_time_ms: -1,
        reports_missing_group: false,
        topics: vec![OffsetCommitTopic {
            name: "topic".into(),
            partitions: vec![OffsetCommitPartition {
                partition_index: 0,
                committed_offset: offset,
                committed_leader_epoch: 3,
                committed_metadata: None,
            }],
        }],
    }
}

fn fetch_request(group_id: &str) -> OffsetFetchRequest {
    OffsetFetchRequest {
        group_id: group_id.into(),
        topics: Some(vec![OffsetFetchTopic {
            name: "topic".into(),
            partition_indexes: vec![0],
        }]),
        require_stable: false,
    }
}

async fn fetched_offset(coordinator: &GroupCoordinator, group_id: &str) -> i64 {
    coordinator
        .fetch_offsets(fetch_request(group_id))
        .await
        .unwrap()
        .topics[0]
        .partitions[0]
        .committed_offset
}

/// Two consumers form a stable group; returns (leader, follower, generation).
async fn stable_pair(coordinator: &GroupCoordinator) -> (String, String, i32) {
    let first = tokio::spawn({
        let coordinator = coordinator.clone();
        async move { join(&coordinator, "a").await }
    });
    let second = tokio::spawn({
        let coordinator = coordinator.clone();
        async move { join(&coordinator, "b").await }
    });
    let first = first.await.unwrap();
    let second = second.await.unwrap();
    assert_eq!(first.generation_id, second.generation_id);
    let (leader, follower) = if first.leader == first.member_id {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(leader.members.len(), 2);
    let generation = leader.generation_id;
    let follower_sync = tokio::spawn({
        let coordinator = coordinator.clone();
        let member_id = follower.member_id.clone();
        async move {
            coordinator
                .sync_group(sync_request(&member_id, generation, Vec::new()))
                .await
        }
    });
    let assignments = vec![
        SyncGroupAssignment {
            member_id: leader.member_id.clone(),
            assignment: Bytes::from_static(b"L"),
        },
        SyncGroupAssignment {
            member_id: follower.member_id.clone(),
            assignment: Bytes::from_static(b"F"),
        },
    ];
    let leader_sync = coordinator
        .sync_group(sync_request(&leader.member_id, generation, assignments))
        .await
        .unwrap();
    assert_eq!(leader_sync.assignment.as_ref(), b"L");
    assert_eq!(
        follower_sync.await.unwrap().unwrap().assignment.as_ref(),
        b"F"
    );
    (leader.member_id, follower.member_id, generation)
}

#[tokio::test(start_paused = true)]
async fn partitions_not_loaded_or_loading_are_refused() {
    let log = Arc::new(MemoryLog::default());
    let coordinator = GroupCoordinator::new(config(), PARTITIONS, log);
    let partition = coordinator.partition_for(GROUP);
    assert_eq!(
        partition,
        crate::placement::partition_for(GROUP, PARTITIONS)
    );
    assert_eq!(
        coordinator.join_group(join_request("", "c")).await,
        Err(GroupError::NotCoordinator)
    );
    let loader = coordinator.start_loading(partition);
    assert_eq!(
        coordinator.join_group(join_request("", "c")).await,
        Err(GroupError::CoordinatorLoadInProgress)
    );
    assert_eq!(
        coordinator.list_groups(&[]).await,
        Err(GroupError::CoordinatorLoadInProgress)
    );
    assert!(loader.finish().activated);
    assert!(matches!(
        coordinator.join_group(join_request("", "c")).await,
        Err(GroupError::MemberIdRequired { .. })
    ));
    coordinator.unload_partition(partition);
    assert_eq!(
        coordinator.fetch_offsets(fetch_request(GROUP)).await,
        Err(GroupError::NotCoordinator)
    );
}

#[tokio::test(start_paused = true)]
async fn group_forms_commits_and_survives_a_reload() {
    let (coordinator, log) = setup();
    let (leader, _follower, generation) = stable_pair(&coordinator).await;
    coordinator
        .commit_offsets(commit_request(GROUP, generation, &leader, 42))
        .await
        .unwrap();
    assert_eq!(fetched_offset(&coordinator, GROUP).await, 42);
    coordinator
        .commit_offsets(commit_request("simple-group", -1, "", 7))
        .await
        .unwrap();

    // Another broker takes over: it rebuilds the state from the log.
    let partition = coordinator.partition_for(GROUP);
    let successor = GroupCoordinator::new(config(), PARTITIONS, log.clone());
    let summary = successor.load_partition(partition, log.records_of(partition));
    assert!(summary.records_replayed >= 2);
    assert_eq!(fetched_offset(&successor, GROUP).await, 42);
    let described = successor.describe_groups(vec![GROUP.into()]).await;
    assert_eq!(described[0].group_state, "Stable");
    assert_eq!(described[0].members.len(), 2);
    let simple_partition = successor.partition_for("simple-group");
    successor.load_partition(simple_partition, log.records_of(simple_partition));
    assert_eq!(fetched_offset(&successor, "simple-group").await, 7);
}

#[tokio::test(start_paused = true)]
async fn session_timeout_fires_on_tokio_time() {
    let (coordinator, _log) = setup();
    let (leader, follower, generation) = stable_pair(&coordinator).await;
    // Only the follower heartbeats; the leader's 10 s session runs out.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_secs(3)).await;
        coordinator
            .heartbeat(heartbeat_request(&follower, generation))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        coordinator
            .heartbeat(heartbeat_request(&follower, generation))
            .await,
        Err(GroupError::RebalanceInProgress)
    );
    let rejoined = coordinator
        .join_group(join_request(&follower, "b"))
        .await
        .unwrap();
    assert_eq!(rejoined.generation_id, generation + 1);
    assert_eq!(rejoined.leader, follower);
    assert_eq!(
        coordinator
            .heartbeat(heartbeat_request(&leader, generation))
            .await,
        Err(GroupError::UnknownMemberId)
    );
}

#[tokio::test(start_paused = true)]
async fn unloading_answers_parked_requests_with_not_coordinator() {
    let (coordinator, _log) = setup();
    let member_id = match coordinator.join_group(join_request("", "a")).await {
        Err(GroupError::MemberIdRequired { member_id }) => member_id,
        other => panic!("unexpected {other:?}"),
    };
    let parked = tokio::spawn({
        let coordinator = coordinator.clone();
        async move { coordinator.join_group(join_request(&member_id, "a")).await }
    });
    // Let the join park (the initial rebalance delay is 3 s).
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!parked.is_finished());
    coordinator.unload_partition(coordinator.partition_for(GROUP));
    assert_eq!(parked.await.unwrap(), Err(GroupError::NotCoordinator));
}

#[tokio::test(start_paused = true)]
async fn failed_appends_are_reported_and_not_applied() {
    let (coordinator, log) = setup();
    log.fail_with(Some(GroupLogError::Unavailable));
    assert_eq!(
        coordinator
            .commit_offsets(commit_request("g", -1, "", 5))
            .await,
        Err(GroupError::CoordinatorNotAvailable)
    );
    log.fail_with(Some(GroupLogError::NotLeader));
    assert_eq!(
        coordinator
            .commit_offsets(commit_request("g", -1, "", 5))
            .await,
        Err(GroupError::NotCoordinator)
    );
    log.fail_with(None);
    assert_eq!(fetched_offset(&coordinator, "g").await, -1);
    coordinator
        .commit_offsets(commit_request("g", -1, "", 6))
        .await
        .unwrap();
    assert_eq!(fetched_offset(&coordinator, "g").await, 6);
}

#[tokio::test(start_paused = true)]
async fn failed_assignment_write_makes_the_group_rebalance() {
    let (coordinator, log) = setup();
    let first = tokio::spawn({
        let coordinator = coordinator.clone();
        async move { join(&coordinator, "solo").await }
    });
    let joined = first.await.unwrap();
    log.fail_with(Some(GroupLogError::Unavailable));
    let assignments = vec![SyncGroupAssignment {
        member_id: joined.member_id.clone(),
        assignment: Bytes::from_static(b"x"),
    }];
    assert_eq!(
        coordinator
            .sync_group(sync_request(
                &joined.member_id,
                joined.generation_id,
                assignments
            ))
            .await,
        Err(GroupError::CoordinatorNotAvailable)
    );
    log.fail_with(None);
    assert_eq!(
        coordinator
            .heartbeat(heartbeat_request(&joined.member_id, joined.generation_id))
            .await,
        Err(GroupError::RebalanceInProgress)
    );
}

#[tokio::test(start_paused = true)]
async fn admin_calls_span_partitions() {
    let (coordinator, _log) = setup();
    let groups: Vec<String> = (0..8).map(|index| format!("admin-{index}")).collect();
    for group in &groups {
        coordinator
            .commit_offsets(commit_request(group, -1, "", 1))
            .await
            .unwrap();
    }
    stable_pair(&coordinator).await;
    let listed = coordinator.list_groups(&[]).await.unwrap();
    assert_eq!(listed.len(), 9);
    let stable = coordinator
        .list_groups(&[GroupState::Stable])
        .await
        .unwrap();
    assert_eq!(stable.len(), 1);
    assert_eq!(stable[0].group_id, GROUP);

    let mut to_delete = groups.clone();
    to_delete.push(GROUP.into());
    to_delete.push("never-existed".into());
    let results = coordinator.delete_groups(to_delete.clone()).await;
    let ids: Vec<&str> = results
        .iter()
        .map(|result| result.group_id.as_str())
        .collect();
    assert_eq!(
        ids,
        to_delete.iter().map(String::as_str).collect::<Vec<_>>()
    );
    for result in &results[..8] {
        assert_eq!(result.error, None);
    }
    assert_eq!(results[8].error, Some(GroupError::NonEmptyGroup));
    assert_eq!(results[9].error, Some(GroupError::GroupIdNotFound));
    assert_eq!(coordinator.list_groups(&[]).await.unwrap().len(), 1);

    let described = coordinator
        .describe_groups(vec![GROUP.into(), "admin-0".into()])
        .await;
    assert_eq!(described[0].group_state, "Stable");
    assert_eq!(described[1].error, Some(GroupError::GroupIdNotFound));

    coordinator.unload_partition(coordinator.partition_for("admin-1"));
    let described = coordinator.describe_groups(vec!["admin-1".into()]).await;
    assert_eq!(described[0].error, Some(GroupError::NotCoordinator));
}

#[tokio::test(start_paused = true)]
async fn transactional_offsets_hook() {
    let (coordinator, _log) = setup();
    let partition = coordinator.partition_for("txn-group");
    let (response, records) = coordinator
        .prepare_transactional_offsets(commit_request("txn-group", -1, "", 11))
        .await
        .unwrap();
    assert_eq!(response.topics[0].partitions[0].error, None);
    assert_eq!(records.len(), 1);
    // The transactions layer writes the records in the producer's batch, then:
    coordinator
        .add_transactional_offsets(partition, 9, records)
        .await
        .unwrap();
    let mut request = fetch_request("txn-group");
    request.require_stable = true;
    let pending = coordinator.fetch_offsets(request.clone()).await.unwrap();
    assert_eq!(
        pending.topics[0].partitions[0].error,
        Some(GroupError::UnstableOffsetCommit)
    );
    coordinator
        .complete_transaction(partition, 9, true)
        .await
        .unwrap();
    let committed = coordinator.fetch_offsets(request).await.unwrap();
    assert_eq!(committed.topics[0].partitions[0].committed_offset, 11);
}

#[tokio::test(start_paused = true)]
async fn stale_loads_do_not_activate_and_loaders_stream_transactions() {
    let log = Arc::new(MemoryLog::default());
    let coordinator = GroupCoordinator::new(config(), PARTITIONS, log);
    let partition = coordinator.partition_for("txn-load");
    let stale = coordinator.start_loading(partition);
    coordinator.unload_partition(partition);
    let summary = stale.finish();
    assert!(!summary.activated);
    assert_eq!(
        coordinator.fetch_offsets(fetch_request("txn-load")).await,
        Err(GroupError::NotCoordinator)
    );

    let offset = |value: i64| {
        crate::records::encode_record(&GroupRecord::OffsetCommit {
            group_id: "txn-load".into(),
            topic: "topic".into(),
            partition: 0,
            value: Some(crate::records::OffsetCommitValue {
                offset: value,
                leader_epoch: -1,
                metadata: String::new(),
                commit_timestamp_ms: 0,
                expire_timestamp_ms: -1,
            }),
        })
    };
    let mut loader = coordinator.start_loading(partition);
    let (key, value) = offset(5);
    loader.replay(&key, value.as_deref());
    let (key, value) = offset(6);
    loader.replay_transactional(77, &key, value.as_deref());
    loader.replay_transaction_marker(77, true);
    let (key, value) = offset(7);
    loader.replay_transactional(78, &key, value.as_deref());
    loader.replay(&[0, 42], None);
    let summary = loader.finish();
    assert!(summary.activated);
    assert_eq!(summary.records_replayed, 3);
    assert_eq!(summary.records_skipped, 1);
    assert_eq!(summary.groups, 1);
    assert_eq!(fetched_offset(&coordinator, "txn-load").await, 6);
    let mut stable = fetch_request("txn-load");
    stable.require_stable = true;
    let pending = coordinator.fetch_offsets(stable).await.unwrap();
    assert_eq!(
        pending.topics[0].partitions[0].error,
        Some(GroupError::UnstableOffsetCommit)
    );
}

#[tokio::test(start_paused = true)]
async fn zero_initial_delay_completes_the_first_join_at_once() {
    let log = Arc::new(MemoryLog::default());
    let config = GroupConfig {
        initial_rebalance_delay_ms: 0,
        ..config()
    };
    let coordinator = GroupCoordinator::new(config, PARTITIONS, log);
    coordinator.load_partition(coordinator.partition_for(GROUP), Vec::new());
    let started = tokio::time::Instant::now();
    let joined = join(&coordinator, "solo").await;
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader, joined.member_id);
    // Only the log appends took time.
    assert!(started.elapsed() < Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn deleted_topics_lose_their_committed_offsets_everywhere() {
    let (coordinator, log) = setup();
    coordinator
        .commit_offsets(commit_request("simple-a", -1, "", 5))
        .await
        .unwrap();
    coordinator
        .commit_offsets(commit_request("simple-b", -1, "", 6))
        .await
        .unwrap();
    coordinator.on_topics_deleted(vec!["other".into()]).await;
    assert_eq!(fetched_offset(&coordinator, "simple-a").await, 5);
    coordinator.on_topics_deleted(vec!["topic".into()]).await;
    assert_eq!(fetched_offset(&coordinator, "simple-a").await, -1);
    assert_eq!(fetched_offset(&coordinator, "simple-b").await, -1);
    // The tombstones are in the log: a reload does not bring the offsets back.
    let partition = coordinator.partition_for("simple-a");
    let successor = GroupCoordinator::new(config(), PARTITIONS, log.clone());
    successor.load_partition(partition, log.records_of(partition));
    assert_eq!(fetched_offset(&successor, "simple-a").await, -1);
}
