//! Share groups through the runtime: answers after the records are written, the broker's
//! share-state reports, session expiry in paused time, a failover load, and deletion.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::tests::MemoryLog;
use super::*;
use crate::assignor::TopicMetadata;
use crate::share_types::ShareGroupHeartbeatInput;

const PARTITIONS: i32 = 4;
const GROUP: &str = "runtime-share-group";
const ORDERS: Uuid = Uuid::from_u128(0x61);

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
    let config = GroupConfig {
        share_assignment_interval_ms: 0,
        ..GroupConfig::default()
    };
    let coordinator = GroupCoordinator::new(config, PARTITIONS, log);
    coordinator.on_topics_image(orders(2));
    coordinator
}

fn join(member_id: &str) -> ShareGroupHeartbeatInput {
    ShareGroupHeartbeatInput {
        group_id: GROUP.into(),
        member_id: member_id.into(),
        member_epoch: 0,
        rack_id: None,
        subscribed_topic_names: Some(vec!["orders".into()]),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
    }
}

fn beat(member_id: &str, member_epoch: i32) -> ShareGroupHeartbeatInput {
    ShareGroupHeartbeatInput {
        member_epoch,
        subscribed_topic_names: None,
        ..join(member_id)
    }
}

#[tokio::test(start_paused = true)]
async fn a_share_group_assigns_initialized_partitions_and_survives_a_failover() {
    let log = Arc::new(MemoryLog::default());
    let first = coordinator(log.clone());
    for partition in 0..PARTITIONS {
        first.load_partition(partition, Vec::new());
    }
    let joined = first.share_group_heartbeat(join("m1")).await.unwrap();
    assert_eq!(joined.response.member_epoch, 2);
    let initialize = joined.initialize.unwrap();
    let partition = first.partition_for(GROUP);
    assert!(
        !log.records_of(partition).is_empty(),
        "answered after writing"
    );

    let topics: BTreeMap<Uuid, BTreeSet<i32>> = initialize
        .topics
        .iter()
        .map(|(topic_id, partitions)| (*topic_id, partitions.keys().copied().collect()))
        .collect();
    first
        .initialize_share_group_state(GROUP, initialize.group_epoch, topics)
        .await
        .unwrap();
    assert_eq!(
        first.share_group_initialized_partitions(GROUP).await,
        Ok(BTreeMap::from([(ORDERS, BTreeSet::from([0, 1]))]))
    );
    assert_eq!(
        first.share_group_initialized_partitions("unknown").await,
        Ok(BTreeMap::new())
    );
    let assigned = first.share_group_heartbeat(beat("m1", 2)).await.unwrap();
    assert_eq!(assigned.response.member_epoch, 3);
    assert_eq!(
        assigned.response.assignment,
        Some(BTreeMap::from([(ORDERS, BTreeSet::from([0, 1]))]))
    );
    let listed = first
        .list_groups_filtered(&["stable".into()], &["share".into()])
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].protocol_type, "share");

    // Another coordinator loads the partition from the records.
    first.unload_partition(partition);
    let second = coordinator(log.clone());
    let summary = second.load_partition(partition, log.records_of(partition));
    assert_eq!(summary.records_skipped, 0);
    assert_eq!(summary.groups, 1);
    let described = second.share_group_describe(vec![GROUP.into()]).await;
    assert_eq!(described[0].error, None);
    assert_eq!(described[0].group_state, "Stable");
    assert_eq!(described[0].group_epoch, 3);
    assert_eq!(described[0].members[0].assignment[0].partitions, vec![0, 1]);
    let resumed = second.share_group_heartbeat(beat("m1", 3)).await.unwrap();
    assert_eq!(resumed.response.error, None);
    assert_eq!(resumed.initialize, None);

    // Nothing heard for group.share.session.timeout.ms: the member is fenced.
    tokio::time::sleep(Duration::from_millis(45_001)).await;
    let described = second.share_group_describe(vec![GROUP.into()]).await;
    assert_eq!(described[0].group_state, "Empty");

    // Deletion: the state to delete first, then the group.
    let prepared = second
        .prepare_share_groups_deletion(vec![GROUP.into()])
        .await;
    assert_eq!(
        prepared,
        BTreeMap::from([(
            GROUP.to_owned(),
            BTreeMap::from([(ORDERS, BTreeSet::from([0, 1]))])
        )])
    );
    let deleted = second.delete_groups(vec![GROUP.into()]).await;
    assert_eq!(deleted[0].error, None);
    let described = second.share_group_describe(vec![GROUP.into()]).await;
    assert_eq!(described[0].error, Some(GroupError::GroupIdNotFound));
    assert_eq!(
        described[0].error_message.as_deref(),
        Some(format!("Group {GROUP} not found.").as_str())
    );
}

#[tokio::test(start_paused = true)]
async fn share_calls_to_an_unserved_partition_answer_not_coordinator() {
    let log = Arc::new(MemoryLog::default());
    let coordinator = coordinator(log);
    assert_eq!(
        coordinator.share_group_heartbeat(join("m1")).await,
        Err(GroupError::NotCoordinator)
    );
    let described = coordinator.share_group_describe(vec![GROUP.into()]).await;
    assert_eq!(described[0].error, Some(GroupError::NotCoordinator));
    assert!(coordinator
        .prepare_share_groups_deletion(vec![GROUP.into()])
        .await
        .is_empty());
    assert_eq!(
        coordinator
            .uninitialize_share_group_state(GROUP, BTreeMap::new())
            .await,
        Err(GroupError::NotCoordinator)
    );
}

#[tokio::test(start_paused = true)]
async fn share_offsets_are_altered_and_deleted_through_the_runtime() {
    let log = Arc::new(MemoryLog::default());
    let coordinator = coordinator(log.clone());
    for partition in 0..PARTITIONS {
        coordinator.load_partition(partition, Vec::new());
    }
    let altered = coordinator
        .alter_share_group_offsets(
            GROUP,
            vec![crate::share_types::ShareOffsetsTopic {
                topic_name: "orders".into(),
                partitions: vec![(0, 10), (1, 20)],
            }],
        )
        .await
        .unwrap();
    assert_eq!(altered.error, None);
    let initialize = altered.initialize.unwrap();
    assert_eq!(
        initialize.topics,
        BTreeMap::from([(ORDERS, BTreeMap::from([(0, 10), (1, 20)]))])
    );
    coordinator
        .initialize_share_group_state(
            GROUP,
            initialize.group_epoch,
            BTreeMap::from([(ORDERS, BTreeSet::from([0, 1]))]),
        )
        .await
        .unwrap();
    let listed = coordinator
        .list_groups_filtered(&["empty".into()], &["share".into()])
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);

    let deletion = coordinator
        .prepare_share_group_offsets_deletion(GROUP, vec!["orders".into()])
        .await
        .unwrap();
    assert_eq!(
        deletion.to_delete,
        BTreeMap::from([(ORDERS, BTreeSet::from([0, 1]))])
    );
    coordinator
        .complete_share_group_offsets_deletion(GROUP, BTreeSet::from([ORDERS]))
        .await
        .unwrap();
    assert_eq!(
        coordinator.share_group_initialized_partitions(GROUP).await,
        Ok(BTreeMap::new())
    );
    // What was written is what another coordinator loads.
    let partition = coordinator.partition_for(GROUP);
    coordinator.unload_partition(partition);
    let second = self::coordinator(log.clone());
    let summary = second.load_partition(partition, log.records_of(partition));
    assert_eq!((summary.records_skipped, summary.groups), (0, 1));
    let described = second.share_group_describe(vec![GROUP.into()]).await;
    assert_eq!(described[0].group_state, "Empty");
}
