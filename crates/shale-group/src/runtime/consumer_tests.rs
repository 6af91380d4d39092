//! The consumer protocol through the runtime: answers after the records are written, a
//! restarted coordinator loading the group from them, topics images reaching every partition.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use uuid::Uuid;

use super::tests::MemoryLog;
use super::*;
use crate::assignor::{
    AssignmentSpec, AssignorError, MemberAssignment, PartitionAssignor, TopicMetadata,
};
use crate::config::NoGroupOverrides;
use crate::consumer_types::ConsumerGroupHeartbeatRequest;

const PARTITIONS: i32 = 4;
const GROUP: &str = "runtime-consumer-group";
const ORDERS: Uuid = Uuid::from_u128(0x51);

/// Test-only assignor: every subscribed partition to the member with the smallest id.
struct FirstMember;

impl PartitionAssignor for FirstMember {
    fn name(&self) -> &'static str {
        "uniform"
    }

    fn assign(
        &self,
        spec: &AssignmentSpec,
        topics: &TopicsImage,
    ) -> Result<BTreeMap<String, MemberAssignment>, AssignorError> {
        let mut result: BTreeMap<String, MemberAssignment> = spec
            .members
            .keys()
            .map(|member_id| (member_id.clone(), MemberAssignment::new()))
            .collect();
        if let Some((member_id, member)) = spec.members.iter().next() {
            for topic_id in &member.subscribed_topic_ids {
                if let Some(topic) = topics.topics.get(topic_id) {
                    result
                        .entry(member_id.clone())
                        .or_default()
                        .insert(*topic_id, (0..topic.partition_count()).collect());
                }
            }
        }
        Ok(result)
    }
}

static FIRST_MEMBER: FirstMember = FirstMember;

fn settings() -> ConsumerSettings {
    ConsumerSettings {
        assignors: Arc::new(|name| {
            (name == "uniform").then_some(&FIRST_MEMBER as &'static dyn PartitionAssignor)
        }),
        group_configs: Arc::new(NoGroupOverrides),
    }
}

fn orders(partitions: usize) -> Arc<TopicsImage> {
    Arc::new(TopicsImage {
        topics: BTreeMap::from([(
            ORDERS,
            TopicMetadata {
                topic_id: ORDERS,
                name: "orders".into(),
                partition_racks: vec![BTreeSet::new(); partitions],
            },
        )]),
    })
}

fn coordinator(log: Arc<MemoryLog>) -> GroupCoordinator {
    GroupCoordinator::with_consumer_settings(GroupConfig::default(), PARTITIONS, log, settings())
}

fn join(member_id: &str) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        api_version: 1,
        group_id: GROUP.into(),
        member_id: member_id.into(),
        member_epoch: 0,
        instance_id: None,
        rack_id: None,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["orders".into()]),
        subscribed_topic_regex: None,
        server_assignor: None,
        owned_partitions: Some(Vec::new()),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
    }
}

fn beat(member_id: &str, member_epoch: i32, owned: &[i32]) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        member_epoch,
        rebalance_timeout_ms: -1,
        subscribed_topic_names: None,
        owned_partitions: Some(vec![(ORDERS, owned.to_vec())]),
        ..join(member_id)
    }
}

#[tokio::test(start_paused = true)]
async fn a_consumer_group_survives_a_coordinator_restart() {
    let log = Arc::new(MemoryLog::default());
    let first = coordinator(log.clone());
    first.on_topics_image(orders(2));
    for partition in 0..PARTITIONS {
        first.load_partition(partition, Vec::new());
    }
    let joined = first.consumer_group_heartbeat(join("m1")).await.unwrap();
    assert_eq!(joined.member_epoch, 2);
    assert_eq!(
        joined.assignment,
        Some(BTreeMap::from([(ORDERS, BTreeSet::from([0, 1]))]))
    );
    let partition = first.partition_for(GROUP);
    assert!(
        !log.records_of(partition).is_empty(),
        "answered after writing"
    );

    // Partitions are added: every partition served hears of it and the group moves on, once
    // group.consumer.assignment.interval.ms (1 s, paused time) since the last assignment passed.
    first.on_topics_image(orders(3));
    tokio::time::sleep(std::time::Duration::from_millis(1_000)).await;
    let moved = first
        .consumer_group_heartbeat(beat("m1", 2, &[0, 1]))
        .await
        .unwrap();
    assert_eq!(moved.member_epoch, 3);
    assert_eq!(
        moved.assignment,
        Some(BTreeMap::from([(ORDERS, BTreeSet::from([0, 1, 2]))]))
    );
    let listed = first
        .list_groups_filtered(&["stable".into()], &["consumer".into()])
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].group_type, "consumer");

    // Another coordinator loads the partition from the records (failover).
    first.unload_partition(partition);
    let second = coordinator(log.clone());
    second.on_topics_image(orders(3));
    let summary = second.load_partition(partition, log.records_of(partition));
    assert_eq!(summary.records_skipped, 0);
    assert_eq!(summary.groups, 1);
    let described = second.consumer_group_describe(vec![GROUP.into()]).await;
    assert_eq!(described[0].error, None);
    assert_eq!(described[0].group_state, "Stable");
    assert_eq!(described[0].group_epoch, 3);
    assert_eq!(described[0].members[0].member_epoch, 3);
    assert_eq!(
        described[0].members[0].assignment[0].partitions,
        BTreeSet::from([0, 1, 2])
    );
    // The member carries on with its epoch.
    let resumed = second
        .consumer_group_heartbeat(beat("m1", 3, &[0, 1, 2]))
        .await
        .unwrap();
    assert_eq!(resumed.member_epoch, 3);
    // And its session runs again from the load: silent for 45 s, it is removed.
    tokio::time::sleep(std::time::Duration::from_millis(45_100)).await;
    let described = second.consumer_group_describe(vec![GROUP.into()]).await;
    assert_eq!(described[0].group_state, "Empty");
    assert_eq!(
        second.consumer_group_heartbeat(beat("m1", 3, &[])).await,
        Err(GroupError::UnknownMemberId)
    );
}

#[tokio::test(start_paused = true)]
async fn a_group_on_a_partition_not_served_here_is_not_coordinated() {
    let coordinator = coordinator(Arc::new(MemoryLog::default()));
    assert_eq!(
        coordinator.consumer_group_heartbeat(join("m1")).await,
        Err(GroupError::NotCoordinator)
    );
    let described = coordinator
        .consumer_group_describe(vec![GROUP.into()])
        .await;
    assert_eq!(described[0].error, Some(GroupError::NotCoordinator));
    // Kafka 4.4 answers an error with no state and zero epochs.
    assert_eq!(described[0].group_state, "");
    assert_eq!(
        (described[0].group_epoch, described[0].assignment_epoch),
        (0, 0)
    );
}

/// A heartbeat whose records cannot be written (a full disk, a lost leadership) is answered
/// with the append's error and changes nothing: the group does not exist afterwards, and the
/// next join starts the group as if the failed one never happened.
#[tokio::test(start_paused = true)]
async fn a_heartbeat_whose_records_fail_to_be_written_changes_nothing() {
    let log = Arc::new(MemoryLog::default());
    let coordinator = coordinator(log.clone());
    coordinator.on_topics_image(orders(2));
    for partition in 0..PARTITIONS {
        coordinator.load_partition(partition, Vec::new());
    }
    log.fail_with(Some(GroupLogError::Unavailable));
    assert_eq!(
        coordinator.consumer_group_heartbeat(join("m1")).await,
        Err(GroupError::CoordinatorNotAvailable)
    );
    log.fail_with(Some(GroupLogError::NotLeader));
    assert_eq!(
        coordinator.consumer_group_heartbeat(join("m1")).await,
        Err(GroupError::NotCoordinator)
    );
    log.fail_with(None);
    let partition = coordinator.partition_for(GROUP);
    assert!(log.records_of(partition).is_empty(), "nothing was written");
    let described = coordinator
        .consumer_group_describe(vec![GROUP.into()])
        .await;
    assert_eq!(described[0].error, Some(GroupError::GroupIdNotFound));
    // The group was never created: a member's heartbeat finds no group, as on Kafka.
    assert_eq!(
        coordinator
            .consumer_group_heartbeat(beat("m1", 2, &[]))
            .await,
        Err(GroupError::GroupIdNotFound)
    );
    let joined = coordinator
        .consumer_group_heartbeat(join("m1"))
        .await
        .unwrap();
    assert_eq!(joined.member_epoch, 2, "as a first join");
    assert_eq!(
        joined.assignment,
        Some(BTreeMap::from([(ORDERS, BTreeSet::from([0, 1]))]))
    );
}
