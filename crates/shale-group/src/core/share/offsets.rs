//! AlterShareGroupOffsets and DeleteShareGroupOffsets on the coordinator (Kafka 4.4's
//! `alterShareGroupOffsets`, `sharePartitionsEligibleForOffsetDeletion` and
//! `completeDeleteShareGroupOffsets`): the share-state metadata they change, and what the
//! broker must initialize or delete in `__share_group_state`.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::group::{combine, ShareGroup, StateTopic};
use super::ShareDraft;
use crate::core::CoordinatorShard;
use crate::error::GroupError;
use crate::records::share_records::ShareRecord;
use crate::records::GroupRecord;
use crate::share_types::{
    AlterShareGroupOffsetsOutcome, AlteredSharePartition, AlteredShareTopic, RefusedShareTopic,
    ShareOffsetsDeletion, ShareOffsetsTopic, ShareStateInitialization,
};

/// Kafka's `Errors.NON_EMPTY_GROUP.message()`.
const NON_EMPTY_GROUP_MESSAGE: &str = "The group is not empty.";
/// Kafka's `Errors.UNKNOWN_TOPIC_OR_PARTITION.message()`.
const UNKNOWN_TOPIC_MESSAGE: &str = "This server does not host this topic-partition.";

impl CoordinatorShard {
    /// AlterShareGroupOffsets: an empty (or new) share group gets the given start offsets.
    /// The partitions are recorded as initializing; the broker initializes them and reports.
    pub fn alter_share_group_offsets(
        &mut self,
        group_id: &str,
        topics: &[ShareOffsetsTopic],
        now_ms: i64,
    ) -> (AlterShareGroupOffsetsOutcome, Vec<GroupRecord>) {
        self.observe(now_ms);
        let refused = |error: GroupError, message: String| AlterShareGroupOffsetsOutcome {
            error: Some(error),
            error_message: Some(message),
            topics: Vec::new(),
            initialize: None,
        };
        let group = match self.share_groups.get(group_id) {
            Some(group) => group.clone(),
            None if self.groups.contains_key(group_id)
                || self.consumer_groups.contains_key(group_id) =>
            {
                let message = format!("Group {group_id} is not a share group.");
                return (refused(GroupError::GroupIdNotFound, message), Vec::new());
            }
            None => ShareGroup::new(group_id),
        };
        if !group.members.is_empty() {
            let outcome = refused(GroupError::NonEmptyGroup, NON_EMPTY_GROUP_MESSAGE.into());
            return (outcome, Vec::new());
        }
        let mut answered = Vec::with_capacity(topics.len());
        let mut initializing: BTreeMap<Uuid, StateTopic> = BTreeMap::new();
        let mut offsets: BTreeMap<Uuid, BTreeMap<i32, i64>> = BTreeMap::new();
        for topic in topics {
            let Some(metadata) = self.topics.by_name(&topic.topic_name) else {
                answered.push(AlteredShareTopic {
                    topic_name: topic.topic_name.clone(),
                    topic_id: None,
                    partitions: topic
                        .partitions
                        .iter()
                        .map(|(partition, _)| AlteredSharePartition {
                            partition_index: *partition,
                            error: Some(GroupError::UnknownTopicOrPartition),
                        })
                        .collect(),
                });
                continue;
            };
            let count = metadata.partition_count();
            let mut partitions = Vec::with_capacity(topic.partitions.len());
            for (partition, start_offset) in &topic.partitions {
                let exists = (0..count).contains(partition);
                if exists {
                    offsets
                        .entry(metadata.topic_id)
                        .or_default()
                        .insert(*partition, *start_offset);
                }
                partitions.push(AlteredSharePartition {
                    partition_index: *partition,
                    error: (!exists).then_some(GroupError::UnknownTopicOrPartition),
                });
            }
            let valid: BTreeSet<i32> = topic
                .partitions
                .iter()
                .map(|(partition, _)| *partition)
                .filter(|partition| (0..count).contains(partition))
                .collect();
            initializing.insert(
                metadata.topic_id,
                StateTopic {
                    name: topic.topic_name.clone(),
                    partitions: valid,
                    since_ms: now_ms,
                },
            );
            answered.push(AlteredShareTopic {
                topic_name: topic.topic_name.clone(),
                topic_id: Some(metadata.topic_id),
                partitions,
            });
        }
        let mut draft = ShareDraft::new(group, now_ms);
        if !initializing.is_empty() {
            let mut metadata = draft.group.state_metadata.clone().unwrap_or_default();
            metadata.initializing = combine(&metadata.initializing, &initializing);
            for topic_id in initializing.keys() {
                metadata.deleting.remove(topic_id);
            }
            draft.push(ShareRecord::StatePartitionMetadata {
                group_id: group_id.to_owned(),
                value: Some(metadata.to_value()),
            });
        }
        let initialize = (!offsets.is_empty()).then(|| ShareStateInitialization {
            group_id: group_id.to_owned(),
            group_epoch: draft.group.group_epoch,
            topics: offsets,
        });
        let outcome = AlterShareGroupOffsetsOutcome {
            error: None,
            error_message: None,
            topics: answered,
            initialize,
        };
        (outcome, draft.records)
    }

    /// DeleteShareGroupOffsets, first step: for an empty share group, the initialized
    /// share-partitions of the named topics (all partitions of a topic whose deletion did not
    /// finish) are marked deleting and handed to the broker.
    pub fn prepare_share_group_offsets_deletion(
        &mut self,
        group_id: &str,
        topic_names: &[String],
        now_ms: i64,
    ) -> (ShareOffsetsDeletion, Vec<GroupRecord>) {
        self.observe(now_ms);
        let group = match self.existing_share_group(group_id) {
            Ok(group) => group,
            Err((error, message)) => {
                let outcome = ShareOffsetsDeletion {
                    error: Some(error),
                    error_message: Some(message),
                    ..ShareOffsetsDeletion::default()
                };
                return (outcome, Vec::new());
            }
        };
        if !group.members.is_empty() {
            let outcome = ShareOffsetsDeletion {
                error: Some(GroupError::NonEmptyGroup),
                error_message: Some(NON_EMPTY_GROUP_MESSAGE.into()),
                ..ShareOffsetsDeletion::default()
            };
            return (outcome, Vec::new());
        }
        let Some(current) = &group.state_metadata else {
            return (ShareOffsetsDeletion::default(), Vec::new());
        };
        let mut metadata = current.clone();
        let mut outcome = ShareOffsetsDeletion::default();
        for name in topic_names {
            let Some(topic) = self.topics.by_name(name) else {
                outcome.refused.push(RefusedShareTopic {
                    topic_name: name.clone(),
                    error: GroupError::UnknownTopicOrPartition,
                    error_message: UNKNOWN_TOPIC_MESSAGE.into(),
                });
                continue;
            };
            let partitions = if let Some(initialized) = metadata.initialized.remove(&topic.topic_id)
            {
                metadata
                    .deleting
                    .insert(topic.topic_id, initialized.name.clone());
                initialized.partitions
            } else if metadata.deleting.contains_key(&topic.topic_id) {
                (0..topic.partition_count()).collect()
            } else {
                outcome.refused.push(RefusedShareTopic {
                    topic_name: name.clone(),
                    error: GroupError::UnknownTopicOrPartition,
                    error_message: "There is no offset information to delete.".into(),
                });
                continue;
            };
            outcome
                .to_delete
                .entry(topic.topic_id)
                .or_default()
                .extend(partitions);
            outcome
                .topic_names
                .insert(topic.topic_id, topic.name.clone());
        }
        let record = GroupRecord::Share(ShareRecord::StatePartitionMetadata {
            group_id: group_id.to_owned(),
            value: Some(metadata.to_value()),
        });
        (outcome, vec![record])
    }

    /// DeleteShareGroupOffsets, last step: the broker deleted the state of these topics, which
    /// leave the group's deleting topics.
    pub fn complete_share_group_offsets_deletion(
        &mut self,
        group_id: &str,
        topic_ids: &BTreeSet<Uuid>,
        now_ms: i64,
    ) -> Vec<GroupRecord> {
        self.observe(now_ms);
        let Some(current) = self
            .share_groups
            .get(group_id)
            .and_then(|group| group.state_metadata.as_ref())
        else {
            return Vec::new();
        };
        let mut metadata = current.clone();
        metadata
            .deleting
            .retain(|topic_id, _| !topic_ids.contains(topic_id));
        vec![GroupRecord::Share(ShareRecord::StatePartitionMetadata {
            group_id: group_id.to_owned(),
            value: Some(metadata.to_value()),
        })]
    }
}
