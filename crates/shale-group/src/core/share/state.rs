//! Which share-partitions of a group have state in `__share_group_state`: the ones a
//! heartbeat asks the broker to initialize, the broker's report of the outcome, topics deleted
//! from the cluster, and group deletion (Kafka 4.4's `ShareGroupStatePartitionMetadata` paths).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::group::{combine, StateMetadata, StateTopic};
use super::ShareDraft;
use crate::core::{CoordinatorShard, Effects};
use crate::error::GroupError;
use crate::records::share_records::ShareRecord;
use crate::records::GroupRecord;
use crate::share_types::{SharePartitions, ShareStateInitialization};

/// Kafka's name for a topic the image no longer knows.
const UNKNOWN_TOPIC_NAME: &str = "<UNKNOWN>";

fn state_record(group_id: &str, metadata: &StateMetadata) -> ShareRecord {
    ShareRecord::StatePartitionMetadata {
        group_id: group_id.to_owned(),
        value: Some(metadata.to_value()),
    }
}

impl CoordinatorShard {
    /// Kafka's `maybeCreateInitializeShareGroupStateRequest`: the subscribed partitions that
    /// have no state yet (or whose initialization is older than the retry interval) are
    /// recorded as initializing and handed to the broker.
    pub(crate) fn maybe_initialize_share_state(
        &self,
        draft: &mut ShareDraft,
        subscribed: &BTreeSet<String>,
        now_ms: i64,
    ) -> Option<ShareStateInitialization> {
        if subscribed.is_empty() || self.topics.topics.is_empty() {
            return None;
        }
        let current = draft.group.state_metadata.clone();
        let retry_ms = self.config().share_initialize_retry_interval_ms;
        let done: BTreeMap<Uuid, StateTopic> = match &current {
            None => BTreeMap::new(),
            Some(metadata) => {
                let recent: BTreeMap<Uuid, StateTopic> = metadata
                    .initializing
                    .iter()
                    .filter(|(_, topic)| now_ms - topic.since_ms < retry_ms)
                    .map(|(topic_id, topic)| (*topic_id, topic.clone()))
                    .collect();
                combine(&metadata.initialized, &recent)
            }
        };
        let mut changes: BTreeMap<Uuid, StateTopic> = BTreeMap::new();
        for name in subscribed {
            let Some(topic) = self.topics.by_name(name) else {
                continue;
            };
            let have = done
                .get(&topic.topic_id)
                .map(|topic| topic.partitions.clone())
                .unwrap_or_default();
            let missing: BTreeSet<i32> = (0..topic.partition_count())
                .filter(|partition| !have.contains(partition))
                .collect();
            if !missing.is_empty() {
                changes.insert(
                    topic.topic_id,
                    StateTopic {
                        name: topic.name.clone(),
                        partitions: missing,
                        since_ms: now_ms,
                    },
                );
            }
        }
        if changes.is_empty() {
            return None;
        }
        let known: BTreeSet<Uuid> = current
            .as_ref()
            .map(|metadata| {
                metadata
                    .initialized
                    .keys()
                    .chain(metadata.initializing.keys())
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        let mut metadata = current.unwrap_or_default();
        metadata.initializing = combine(&metadata.initializing, &changes);
        for topic_id in changes.keys() {
            // Initialized again: it is no longer being deleted.
            metadata.deleting.remove(topic_id);
        }
        draft.push(state_record(&draft.group.group_id.clone(), &metadata));
        let topics = changes
            .into_iter()
            .map(|(topic_id, topic)| {
                // A partition added to a topic the group already reads starts at its
                // beginning; a new topic starts where `share.auto.offset.reset` says.
                let start_offset = if known.contains(&topic_id) { 0 } else { -1 };
                let partitions = topic
                    .partitions
                    .into_iter()
                    .map(|partition| (partition, start_offset))
                    .collect();
                (topic_id, partitions)
            })
            .collect();
        Some(ShareStateInitialization {
            group_id: draft.group.group_id.clone(),
            group_epoch: draft.group.group_epoch,
            topics,
        })
    }

    /// Kafka's `initializedShareGroupPartitions`: the share-partitions of `group_id` that have
    /// state (what DescribeShareGroupOffsets reads for all topics); none for an unknown group.
    pub fn initialized_share_partitions(&self, group_id: &str) -> SharePartitions {
        self.share_groups
            .get(group_id)
            .and_then(|group| group.state_metadata.as_ref())
            .map(StateMetadata::initialized_partitions)
            .unwrap_or_default()
    }

    fn topic_name(&self, topic_id: &Uuid) -> String {
        self.topics
            .topics
            .get(topic_id)
            .map_or_else(|| UNKNOWN_TOPIC_NAME.to_owned(), |topic| topic.name.clone())
    }

    fn with_names(&self, partitions: &SharePartitions, now_ms: i64) -> BTreeMap<Uuid, StateTopic> {
        partitions
            .iter()
            .map(|(topic_id, partitions)| {
                (
                    *topic_id,
                    StateTopic {
                        name: self.topic_name(topic_id),
                        partitions: partitions.clone(),
                        since_ms: now_ms,
                    },
                )
            })
            .collect()
    }

    /// Kafka's `initializeShareGroupState`: the broker initialized these share-partitions, which
    /// become assignable (the members' next heartbeat moves the group to a new epoch).
    pub fn initialize_share_group_state(
        &mut self,
        group_id: &str,
        topics: &SharePartitions,
        now_ms: i64,
    ) -> Result<Vec<GroupRecord>, GroupError> {
        self.observe(now_ms);
        if topics.is_empty() {
            return Ok(Vec::new());
        }
        let group = self
            .share_groups
            .get(group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        let initialized = self.with_names(topics, now_ms);
        let mut metadata = group.state_metadata.clone().unwrap_or_default();
        metadata.initialized = combine(&metadata.initialized, &initialized);
        for (topic_id, partitions) in topics {
            if let Some(topic) = metadata.initializing.get_mut(topic_id) {
                topic
                    .partitions
                    .retain(|partition| !partitions.contains(partition));
                if topic.partitions.is_empty() {
                    metadata.initializing.remove(topic_id);
                }
            }
        }
        Ok(vec![GroupRecord::Share(state_record(group_id, &metadata))])
    }

    /// Kafka's `uninitializeShareGroupState`: initializing these share-partitions failed, so
    /// they are no longer initializing (the next heartbeat asks again).
    pub fn uninitialize_share_group_state(
        &mut self,
        group_id: &str,
        topics: &SharePartitions,
        now_ms: i64,
    ) -> Vec<GroupRecord> {
        self.observe(now_ms);
        let Some(metadata) = self
            .share_groups
            .get(group_id)
            .and_then(|group| group.state_metadata.as_ref())
        else {
            return Vec::new();
        };
        if metadata.initializing.is_empty() || topics.is_empty() {
            return Vec::new();
        }
        let mut metadata = metadata.clone();
        for (topic_id, partitions) in topics {
            if let Some(topic) = metadata.initializing.get_mut(topic_id) {
                topic
                    .partitions
                    .retain(|partition| !partitions.contains(partition));
                if topic.partitions.is_empty() {
                    metadata.initializing.remove(topic_id);
                }
            }
        }
        vec![GroupRecord::Share(state_record(group_id, &metadata))]
    }

    /// Kafka's `maybeCleanupShareGroupState`: topics gone from the cluster leave every share
    /// group's state metadata.
    pub(crate) fn cleanup_deleted_share_topics(&self, effects: &mut Effects) {
        if self.topics.topics.is_empty() {
            // No image yet: nothing can be told deleted.
            return;
        }
        for group in self.share_groups.values() {
            let Some(metadata) = &group.state_metadata else {
                continue;
            };
            let exists = |topic_id: &Uuid| self.topics.topics.contains_key(topic_id);
            let stale = metadata.initializing.keys().any(|id| !exists(id))
                || metadata.initialized.keys().any(|id| !exists(id))
                || metadata.deleting.keys().any(|id| !exists(id));
            if !stale {
                continue;
            }
            let mut cleaned = metadata.clone();
            cleaned.initializing.retain(|id, _| exists(id));
            cleaned.initialized.retain(|id, _| exists(id));
            cleaned.deleting.retain(|id, _| exists(id));
            effects
                .records
                .push(GroupRecord::Share(state_record(&group.group_id, &cleaned)));
        }
    }

    /// Kafka's `sharePartitionDeleteRequests`: for each empty share group, the share-partitions
    /// whose state the broker must delete (DeleteShareGroupState) before the group itself is
    /// deleted, and the record marking them deleting. Non-empty groups, groups of other types
    /// and unknown ids are left out: DeleteGroups answers them.
    pub fn prepare_share_groups_deletion(
        &mut self,
        group_ids: &[String],
        now_ms: i64,
    ) -> (BTreeMap<String, SharePartitions>, Vec<GroupRecord>) {
        self.observe(now_ms);
        let mut to_delete = BTreeMap::new();
        let mut records = Vec::new();
        for group_id in group_ids {
            let Some(group) = self.share_groups.get(group_id) else {
                continue;
            };
            if !group.members.is_empty() {
                continue;
            }
            let Some(metadata) = &group.state_metadata else {
                continue;
            };
            let mut candidates: BTreeMap<Uuid, (String, BTreeSet<i32>)> = BTreeMap::new();
            for (topic_id, topic) in combine(&metadata.initialized, &metadata.initializing) {
                candidates.insert(topic_id, (topic.name, topic.partitions));
            }
            // A deletion that did not finish is tried again for topics that still exist.
            for topic_id in metadata.deleting.keys() {
                if let Some(topic) = self.topics.topics.get(topic_id) {
                    let entry = candidates
                        .entry(*topic_id)
                        .or_insert_with(|| (topic.name.clone(), BTreeSet::new()));
                    entry.1.extend(0..topic.partition_count());
                }
            }
            let marked = StateMetadata {
                initializing: BTreeMap::new(),
                initialized: BTreeMap::new(),
                deleting: candidates
                    .iter()
                    .map(|(topic_id, (name, _))| (*topic_id, name.clone()))
                    .collect(),
            };
            records.push(GroupRecord::Share(state_record(group_id, &marked)));
            if !candidates.is_empty() {
                to_delete.insert(
                    group_id.clone(),
                    candidates
                        .into_iter()
                        .map(|(topic_id, (_, partitions))| (topic_id, partitions))
                        .collect(),
                );
            }
        }
        (to_delete, records)
    }
}
