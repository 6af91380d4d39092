//! AlterShareGroupOffsets and DeleteShareGroupOffsets on one shard.

use std::collections::{BTreeMap, BTreeSet};

use super::share_harness::*;
use crate::config::GroupConfig;
use crate::error::GroupError;
use crate::share_types::{AlteredSharePartition, ShareOffsetsTopic};

fn config() -> GroupConfig {
    GroupConfig {
        share_assignment_interval_ms: 0,
        ..GroupConfig::default()
    }
}

fn alter(topic: &str, partitions: &[(i32, i64)]) -> ShareOffsetsTopic {
    ShareOffsetsTopic {
        topic_name: topic.to_owned(),
        partitions: partitions.to_vec(),
    }
}

#[test]
fn altering_offsets_of_a_new_group_creates_it_with_the_partitions_initializing() {
    let mut h = ShareHarness::new(config());
    let (outcome, records) = h.shard.alter_share_group_offsets(
        GROUP,
        &[
            alter("orders", &[(0, 5), (7, 1)]),
            alter("missing", &[(0, 1)]),
        ],
        h.now_ms,
    );
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.topics[0].topic_id, Some(ORDERS));
    assert_eq!(
        outcome.topics[0].partitions,
        vec![
            AlteredSharePartition {
                partition_index: 0,
                error: None
            },
            AlteredSharePartition {
                partition_index: 7,
                error: Some(GroupError::UnknownTopicOrPartition)
            },
        ]
    );
    assert_eq!(outcome.topics[1].topic_id, None);
    let initialize = outcome.initialize.unwrap();
    assert_eq!(initialize.group_epoch, 1);
    assert_eq!(
        initialize.topics,
        BTreeMap::from([(ORDERS, BTreeMap::from([(0, 5)]))])
    );
    h.apply_records(records);
    let metadata = h.shard.share_groups[GROUP].state_metadata.clone().unwrap();
    assert_eq!(
        metadata.initializing[&ORDERS].partitions,
        BTreeSet::from([0])
    );
    // A member joining meanwhile does not initialize the partition again, only the other one.
    let joined = h.heartbeat(join("m1", &["orders"]));
    assert_eq!(
        joined.initialize.unwrap().topics,
        BTreeMap::from([(ORDERS, BTreeMap::from([(1, 0)]))])
    );
    // A group with members refuses.
    let (outcome, records) =
        h.shard
            .alter_share_group_offsets(GROUP, &[alter("orders", &[(0, 1)])], h.now_ms);
    assert_eq!(outcome.error, Some(GroupError::NonEmptyGroup));
    assert_eq!(
        outcome.error_message.as_deref(),
        Some("The group is not empty.")
    );
    assert!(records.is_empty());
}

#[test]
fn deleting_offsets_hands_over_initialized_partitions_and_forgets_them() {
    let mut h = ShareHarness::new(config());
    h.heartbeat_initialized(join("m1", &["orders", "payments"]));
    let (refused, _) =
        h.shard
            .prepare_share_group_offsets_deletion(GROUP, &["orders".to_owned()], h.now_ms);
    assert_eq!(refused.error, Some(GroupError::NonEmptyGroup));
    h.heartbeat(beat("m1", -1));

    let (prepared, records) = h.shard.prepare_share_group_offsets_deletion(
        GROUP,
        &["orders".to_owned(), "missing".to_owned()],
        h.now_ms,
    );
    assert_eq!(prepared.error, None);
    assert_eq!(
        prepared.to_delete,
        BTreeMap::from([(ORDERS, BTreeSet::from([0, 1]))])
    );
    assert_eq!(prepared.refused.len(), 1);
    assert_eq!(
        prepared.refused[0].error_message,
        "This server does not host this topic-partition."
    );
    h.apply_records(records);
    let metadata = h.shard.share_groups[GROUP].state_metadata.clone().unwrap();
    assert!(!metadata.initialized.contains_key(&ORDERS));
    assert!(metadata.deleting.contains_key(&ORDERS));
    assert!(metadata.initialized.contains_key(&PAYMENTS));

    // Nothing left to delete for orders until the deletion completes: it is retried whole.
    let (again, _) =
        h.shard
            .prepare_share_group_offsets_deletion(GROUP, &["orders".to_owned()], h.now_ms);
    assert_eq!(
        again.to_delete,
        BTreeMap::from([(ORDERS, BTreeSet::from([0, 1]))])
    );
    let records =
        h.shard
            .complete_share_group_offsets_deletion(GROUP, &BTreeSet::from([ORDERS]), h.now_ms);
    h.apply_records(records);
    let metadata = h.shard.share_groups[GROUP].state_metadata.clone().unwrap();
    assert!(metadata.deleting.is_empty());
    let (none, _) =
        h.shard
            .prepare_share_group_offsets_deletion(GROUP, &["orders".to_owned()], h.now_ms);
    assert_eq!(
        none.refused[0].error_message,
        "There is no offset information to delete."
    );
    let (unknown, _) =
        h.shard
            .prepare_share_group_offsets_deletion("nope", &["orders".to_owned()], h.now_ms);
    assert_eq!(unknown.error, Some(GroupError::GroupIdNotFound));
    assert_eq!(
        unknown.error_message.as_deref(),
        Some("Group nope not found.")
    );
}
