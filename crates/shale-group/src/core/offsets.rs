//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, expiration after
//! `offsets.retention.minutes`, and the hook for transactional offset commits.

use std::collections::BTreeMap;

use super::group::{Group, GroupState, PartitionKey, StoredOffset};
use super::timers::TimerKey;
use super::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::consumer_protocol::CONSUMER_PROTOCOL_TYPE;
use crate::records::{GroupRecord, OffsetCommitValue};
use crate::types::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchPartition, OffsetFetchRequest, OffsetFetchResponse, OffsetFetchTopicResult,
    PartitionResult, TopicPartitionResults,
};

impl CoordinatorShard {
    pub fn commit_offsets(
        &mut self,
        token: RequestToken,
        request: OffsetCommitRequest,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        let result = self.commit_offsets_inner(request, now_ms, &mut effects);
        effects.reply(token, Response::OffsetCommit(result));
        effects
    }

    fn commit_offsets_inner(
        &mut self,
        request: OffsetCommitRequest,
        now_ms: i64,
        effects: &mut Effects,
    ) -> Result<OffsetCommitResponse, GroupError> {
        if request.group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        // "Group G is not a consumer group.": share groups have no committed offsets.
        if self.is_share_group(&request.group_id) {
            return Err(GroupError::GroupIdNotFound);
        }
        if let Some(group) = self.consumer_groups.get(&request.group_id) {
            self.validate_consumer_commit(group, &request, false)?;
            let (response, records) =
                commit_records(&request, now_ms, self.config().offset_metadata_bytes_max);
            effects.records.extend(records);
            return Ok(response);
        }
        match self.groups.get(&request.group_id) {
            Some(group) => {
                validate_offset_commit(group, &request)?;
                // Classic members keep their session alive by committing (as Kafka).
                let session_timeout_ms = group
                    .members
                    .get(&request.member_id)
                    .filter(|_| {
                        matches!(
                            group.state,
                            GroupState::Stable | GroupState::PreparingRebalance
                        )
                    })
                    .map(|member| i64::from(member.session_timeout_ms));
                if let Some(session_timeout_ms) = session_timeout_ms {
                    self.timers.schedule(
                        TimerKey::Heartbeat {
                            group_id: request.group_id.clone(),
                            member_id: request.member_id.clone(),
                        },
                        now_ms + session_timeout_ms,
                    );
                }
            }
            // Simple consumers and admin tools commit to groups that do not exist; replaying the
            // commit creates the (empty) group. A member of a group that is gone must rejoin.
            None if request.generation_id < 0 => {}
            None if request.reports_missing_group => return Err(GroupError::GroupIdNotFound),
            None => return Err(GroupError::IllegalGeneration),
        }
        let (response, records) =
            commit_records(&request, now_ms, self.config().offset_metadata_bytes_max);
        effects.records.extend(records);
        Ok(response)
    }

    /// Transactions hook for TxnOffsetCommit: validates the request against the group (member
    /// id, generation and instance id are optional for transactional commits) and returns the
    /// per-partition results with the records the transactions layer writes to this partition in
    /// the producer's transactional batch. Once written, hand them to
    /// [`CoordinatorShard::replay_transactional_offset`]. `retention_time_ms` and
    /// `reports_missing_group` are ignored.
    pub fn prepare_transactional_offsets(
        &self,
        request: &OffsetCommitRequest,
        now_ms: i64,
    ) -> Result<(OffsetCommitResponse, Vec<GroupRecord>), GroupError> {
        if request.group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        // "Group G is not a consumer group.": share groups have no committed offsets.
        if self.is_share_group(&request.group_id) {
            return Err(GroupError::GroupIdNotFound);
        }
        match (
            self.consumer_groups.get(&request.group_id),
            self.groups.get(&request.group_id),
        ) {
            (Some(group), _) => self.validate_consumer_commit(group, request, true)?,
            (None, Some(group)) => validate_transactional_offset_commit(group, request)?,
            (None, None) if request.generation_id < 0 => {}
            (None, None) => return Err(GroupError::IllegalGeneration),
        }
        let request = OffsetCommitRequest {
            retention_time_ms: -1,
            ..request.clone()
        };
        Ok(commit_records(
            &request,
            now_ms,
            self.config().offset_metadata_bytes_max,
        ))
    }

    /// OffsetFetch for one group (the broker loops over the groups of v8+ requests).
    pub fn fetch_offsets(
        &self,
        request: &OffsetFetchRequest,
    ) -> Result<OffsetFetchResponse, GroupError> {
        if request.group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        // A share group has no committed offsets: Kafka answers it as a group without any.
        let group = self.groups.get(&request.group_id);
        let fetch = |topic: &str, partition: i32| -> OffsetFetchPartition {
            let unstable = request.require_stable
                && group
                    .is_some_and(|group| group.has_pending_transactional_offset(topic, partition));
            // With require_stable a pending transactional commit hides the committed offset.
            let committed = group
                .filter(|_| !unstable)
                .and_then(|group| group.offsets.get(&(topic.to_owned(), partition)))
                .map(|stored| &stored.value);
            OffsetFetchPartition {
                partition_index: partition,
                committed_offset: committed.map_or(-1, |value| value.offset),
                committed_leader_epoch: committed.map_or(-1, |value| value.leader_epoch),
                metadata: committed
                    .map(|value| value.metadata.clone())
                    .unwrap_or_default(),
                error: unstable.then_some(GroupError::UnstableOffsetCommit),
            }
        };
        let topics = match &request.topics {
            Some(topics) => topics
                .iter()
                .map(|topic| OffsetFetchTopicResult {
                    name: topic.name.clone(),
                    partitions: topic
                        .partition_indexes
                        .iter()
                        .map(|partition| fetch(&topic.name, *partition))
                        .collect(),
                })
                .collect(),
            None => {
                let mut by_topic: BTreeMap<&str, Vec<OffsetFetchPartition>> = BTreeMap::new();
                if let Some(group) = group {
                    for (topic, partition) in group.offsets.keys() {
                        by_topic
                            .entry(topic.as_str())
                            .or_default()
                            .push(fetch(topic, *partition));
                    }
                }
                by_topic
                    .into_iter()
                    .map(|(name, partitions)| OffsetFetchTopicResult {
                        name: name.to_owned(),
                        partitions,
                    })
                    .collect()
            }
        };
        Ok(OffsetFetchResponse { topics })
    }

    pub fn delete_offsets(
        &mut self,
        token: RequestToken,
        request: OffsetDeleteRequest,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        let result = self.delete_offsets_inner(request, &mut effects);
        effects.reply(token, Response::OffsetDelete(result));
        effects
    }

    fn delete_offsets_inner(
        &mut self,
        request: OffsetDeleteRequest,
        effects: &mut Effects,
    ) -> Result<OffsetDeleteResponse, GroupError> {
        if request.group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        // "Group G is not a consumer group.": share groups have no committed offsets.
        if self.is_share_group(&request.group_id) {
            return Err(GroupError::GroupIdNotFound);
        }
        if let Some(group) = self.consumer_groups.get(&request.group_id) {
            return Ok(self.delete_consumer_offsets(group, request, &mut effects.records));
        }
        let group = self
            .groups
            .get(&request.group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        if group.state == GroupState::Dead {
            return Err(GroupError::GroupIdNotFound);
        }
        if group.state != GroupState::Empty
            && group.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE)
        {
            return Err(GroupError::NonEmptyGroup);
        }
        let mut topics = Vec::with_capacity(request.topics.len());
        for topic in request.topics {
            let subscribed = group.is_subscribed_to_topic(&topic.name);
            let partitions = topic
                .partition_indexes
                .iter()
                .map(|partition| {
                    if subscribed {
                        return PartitionResult {
                            partition_index: *partition,
                            error: Some(GroupError::GroupSubscribedToTopic),
                        };
                    }
                    // Pending transactional offsets are deleted too, as Kafka does.
                    if group
                        .offsets
                        .contains_key(&(topic.name.clone(), *partition))
                        || group.has_pending_transactional_offset(&topic.name, *partition)
                    {
                        effects.records.push(GroupRecord::OffsetCommit {
                            group_id: request.group_id.clone(),
                            topic: topic.name.clone(),
                            partition: *partition,
                            value: None,
                        });
                    }
                    PartitionResult {
                        partition_index: *partition,
                        error: None,
                    }
                })
                .collect();
            topics.push(TopicPartitionResults {
                name: topic.name,
                partitions,
            });
        }
        Ok(OffsetDeleteResponse { topics })
    }

    /// Topics were deleted: their committed offsets, in every group, are tombstoned (Kafka's
    /// `onPartitionsDeleted`), so a recreated topic of the same name starts without them.
    pub fn delete_topic_offsets(&mut self, topics: &[String], now_ms: i64) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        for group in self.groups.values() {
            for (topic, partition) in group.offsets.keys() {
                if topics.iter().any(|deleted| deleted == topic) {
                    effects.records.push(GroupRecord::OffsetCommit {
                        group_id: group.group_id.clone(),
                        topic: topic.clone(),
                        partition: *partition,
                        value: None,
                    });
                }
            }
        }
        effects
    }

    /// Writes tombstones for expired offsets, and for groups left empty with no offsets.
    pub(crate) fn on_offset_expiration(&mut self, now_ms: i64, effects: &mut Effects) {
        let retention_ms = self.config().offsets_retention_ms;
        for group in self.groups.values() {
            if let Some(consumer_group) = self.consumer_groups.get(&group.group_id) {
                let expired = self.expired_consumer_offsets(consumer_group, group, now_ms);
                let all_gone = expired.len() == group.offsets.len()
                    && group.pending_transactional_offsets.is_empty();
                for (topic, partition) in expired {
                    effects.records.push(GroupRecord::OffsetCommit {
                        group_id: group.group_id.clone(),
                        topic,
                        partition,
                        value: None,
                    });
                }
                if all_gone && consumer_group.members.is_empty() {
                    effects.records.extend(
                        super::consumer::group_tombstones(consumer_group)
                            .into_iter()
                            .map(GroupRecord::Consumer),
                    );
                }
                continue;
            }
            let expired = expired_offsets(group, now_ms, retention_ms);
            let all_gone = expired.len() == group.offsets.len()
                && group.pending_transactional_offsets.is_empty();
            for (topic, partition) in expired {
                effects.records.push(GroupRecord::OffsetCommit {
                    group_id: group.group_id.clone(),
                    topic,
                    partition,
                    value: None,
                });
            }
            if all_gone && group.state == GroupState::Empty && group.pending_members.is_empty() {
                effects.records.push(GroupRecord::GroupMetadata {
                    group_id: group.group_id.clone(),
                    value: None,
                });
            }
        }
        // An empty consumer group that never had offsets goes too (Kafka's
        // `cleanupGroupMetadata` visits every group, not only those with offsets).
        for group in self.consumer_groups.values() {
            if group.members.is_empty() && !self.groups.contains_key(&group.group_id) {
                effects.records.extend(
                    super::consumer::group_tombstones(group)
                        .into_iter()
                        .map(GroupRecord::Consumer),
                );
            }
        }
        self.timers.schedule(
            TimerKey::OffsetExpiration,
            now_ms + self.config().offsets_retention_check_interval_ms,
        );
    }

    /// Transactions hook: a `TxnOffsetCommit` record written by `producer_id`, replayed from the
    /// log (live or at load). It stays pending, invisible to OffsetFetch and reported as
    /// UNSTABLE_OFFSET_COMMIT with `require_stable`, until the transaction's marker.
    pub fn replay_transactional_offset(&mut self, producer_id: i64, record: &GroupRecord) {
        if let GroupRecord::OffsetCommit {
            group_id,
            topic,
            partition,
            value: Some(value),
        } = record
        {
            let now_ms = self.last_now_ms;
            self.replay_sequence += 1;
            let sequence = self.replay_sequence;
            let group = self
                .groups
                .entry(group_id.clone())
                .or_insert_with(|| Group::new(group_id, now_ms));
            group
                .pending_transactional_offsets
                .entry(producer_id)
                .or_default()
                .insert(
                    (topic.clone(), *partition),
                    StoredOffset {
                        value: value.clone(),
                        sequence,
                    },
                );
        }
    }

    /// Transactions hook: the commit or abort marker of `producer_id` was written to this
    /// partition. A commit makes the pending offsets the committed ones, unless a plain commit
    /// of the same partition was written after them.
    pub fn replay_transaction_marker(&mut self, producer_id: i64, committed: bool) {
        for group in self.groups.values_mut() {
            let Some(pending) = group.pending_transactional_offsets.remove(&producer_id) else {
                continue;
            };
            if !committed {
                continue;
            }
            for (key, stored) in pending {
                materialize(&mut group.offsets, key, stored);
            }
        }
    }
}

fn materialize(
    offsets: &mut BTreeMap<PartitionKey, StoredOffset>,
    key: PartitionKey,
    stored: StoredOffset,
) {
    let newer = offsets
        .get(&key)
        .is_none_or(|existing| stored.sequence > existing.sequence);
    if newer {
        offsets.insert(key, stored);
    }
}

/// One record per partition whose metadata fits, and the per-partition results.
fn commit_records(
    request: &OffsetCommitRequest,
    now_ms: i64,
    metadata_length_max: usize,
) -> (OffsetCommitResponse, Vec<GroupRecord>) {
    let expire_timestamp_ms = if request.retention_time_ms >= 0 {
        now_ms.saturating_add(request.retention_time_ms)
    } else {
        -1
    };
    let mut records = Vec::new();
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for partition in &topic.partitions {
            let metadata = partition.committed_metadata.clone().unwrap_or_default();
            // Kafka compares the Java string length (UTF-16 units).
            let error = if metadata.encode_utf16().count() > metadata_length_max {
                Some(GroupError::OffsetMetadataTooLarge)
            } else {
                records.push(GroupRecord::OffsetCommit {
                    group_id: request.group_id.clone(),
                    topic: topic.name.clone(),
                    partition: partition.partition_index,
                    value: Some(OffsetCommitValue {
                        offset: partition.committed_offset,
                        leader_epoch: partition.committed_leader_epoch,
                        metadata,
                        commit_timestamp_ms: now_ms,
                        expire_timestamp_ms,
                    }),
                });
                None
            };
            partitions.push(PartitionResult {
                partition_index: partition.partition_index,
                error,
            });
        }
        topics.push(TopicPartitionResults {
            name: topic.name.clone(),
            partitions,
        });
    }
    (OffsetCommitResponse { topics }, records)
}

/// Kafka's `ClassicGroup.validateOffsetCommit`.
fn validate_offset_commit(group: &Group, request: &OffsetCommitRequest) -> Result<(), GroupError> {
    validate_commit(group, request, false)
}

/// Kafka's `ClassicGroup.validateOffsetCommit` for TxnOffsetCommit.
fn validate_transactional_offset_commit(
    group: &Group,
    request: &OffsetCommitRequest,
) -> Result<(), GroupError> {
    validate_commit(group, request, true)
}

fn validate_commit(
    group: &Group,
    request: &OffsetCommitRequest,
    transactional: bool,
) -> Result<(), GroupError> {
    if group.state == GroupState::Dead {
        return Err(GroupError::CoordinatorNotAvailable);
    }
    if request.generation_id < 0 && group.state == GroupState::Empty {
        return Ok(());
    }
    if request.generation_id >= 0
        || !request.member_id.is_empty()
        || request.group_instance_id.is_some()
    {
        group.validate_member(&request.member_id, request.group_instance_id.as_deref())?;
        if request.generation_id != group.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
    } else if !transactional && group.state != GroupState::Empty {
        // Commits without member id and generation are only accepted from simple consumers of
        // groups with no members (transactional commits need not name the member).
        return Err(GroupError::UnknownMemberId);
    }
    if group.state == GroupState::CompletingRebalance {
        return Err(GroupError::RebalanceInProgress);
    }
    Ok(())
}

/// Kafka's offset expiration condition for a classic group.
fn expired_offsets(group: &Group, now_ms: i64, retention_ms: i64) -> Vec<(String, i32)> {
    let has_protocol_type = group
        .protocol_type
        .as_deref()
        .is_some_and(|kind| !kind.is_empty());
    let (use_state_timestamp, only_unsubscribed) = if !has_protocol_type {
        // Simple consumers: retention runs from each commit.
        (false, false)
    } else if group.state == GroupState::Empty {
        (group.state_timestamp_ms >= 0, false)
    } else if group.state == GroupState::Stable
        && group.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
        && group.subscribed_topics.is_some()
    {
        (false, true)
    } else {
        return Vec::new();
    };
    group
        .offsets
        .iter()
        .filter(|((topic, partition), stored)| {
            if only_unsubscribed && group.is_subscribed_to_topic(topic) {
                return false;
            }
            if group.has_pending_transactional_offset(topic, *partition) {
                return false;
            }
            if stored.value.expire_timestamp_ms >= 0 {
                return now_ms >= stored.value.expire_timestamp_ms;
            }
            let base_ms = if use_state_timestamp {
                group.state_timestamp_ms
            } else {
                stored.value.commit_timestamp_ms
            };
            now_ms.saturating_sub(base_ms) >= retention_ms
        })
        .map(|((topic, partition), _)| (topic.clone(), *partition))
        .collect()
}
