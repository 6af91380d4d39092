//! Committed offsets of consumer groups: Kafka's `ConsumerGroup.validateOffsetCommit` and
//! `validateOffsetFetch` (member epochs), OffsetDelete of unsubscribed topics, expiration.

use super::group::ConsumerGroup;
use crate::core::group::{Group, PartitionKey};
use crate::core::CoordinatorShard;
use crate::error::GroupError;
use crate::records::GroupRecord;
use crate::types::{
    OffsetCommitRequest, OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest,
    OffsetFetchResponse, PartitionResult, TopicPartitionResults,
};

impl CoordinatorShard {
    /// Kafka 4.4's `ConsumerGroup.validateOffsetCommit`. A commit at an older member epoch is
    /// accepted for partitions the member has held since that epoch (KIP-1251's assignment
    /// epochs), so a commit sent just before an epoch bump is not lost; any other partition
    /// fails the whole request with STALE_MEMBER_EPOCH.
    pub(crate) fn validate_consumer_commit(
        &self,
        group: &ConsumerGroup,
        request: &OffsetCommitRequest,
        transactional: bool,
    ) -> Result<(), GroupError> {
        if request.generation_id < 0 && group.members.is_empty() {
            return Ok(());
        }
        if transactional
            && request.generation_id == -1
            && request.member_id.is_empty()
            && request.group_instance_id.is_none()
        {
            return Ok(());
        }
        let member = group
            .members
            .get(&request.member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if member.uses_classic_protocol() {
            // A classic member commits with its generation, which is its member epoch, at
            // any OffsetCommit version.
            if request.generation_id != member.member_epoch {
                return Err(GroupError::IllegalGeneration);
            }
            return Ok(());
        }
        // `reports_missing_group` is set exactly for OffsetCommit v9+.
        if !transactional && !request.reports_missing_group {
            return Err(GroupError::UnsupportedVersion(
                "OffsetCommit version 9 or above must be used by members using the consumer group protocol"
                    .to_owned(),
            ));
        }
        let received = request.generation_id;
        if received == member.member_epoch {
            return Ok(());
        }
        if received > member.member_epoch {
            return Err(GroupError::StaleMemberEpoch);
        }
        for topic in &request.topics {
            let topic_id = self.topics.by_name(&topic.name).map(|topic| topic.topic_id);
            for partition in &topic.partitions {
                let epoch = topic_id.and_then(|topic_id| {
                    [&member.assigned, &member.pending_revocation]
                        .into_iter()
                        .find_map(|partitions| {
                            partitions
                                .get(&topic_id)
                                .and_then(|epochs| epochs.get(&partition.partition_index))
                                .copied()
                        })
                });
                match epoch {
                    Some(assigned_at) if received >= assigned_at => {}
                    _ => return Err(GroupError::StaleMemberEpoch),
                }
            }
        }
        Ok(())
    }

    /// OffsetFetch v9+ with the member id and epoch the consumer protocol sends; for a
    /// consumer group they are checked as Kafka's `validateOffsetFetch` does (no member id
    /// and a negative epoch: an admin fetch, accepted).
    pub fn fetch_offsets_as_member(
        &self,
        request: &OffsetFetchRequest,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<OffsetFetchResponse, GroupError> {
        if let Some(group) = self.consumer_groups.get(&request.group_id) {
            if member_id.is_some() || member_epoch >= 0 {
                let member = member_id
                    .and_then(|member_id| group.members.get(member_id))
                    .ok_or(GroupError::UnknownMemberId)?;
                if member.member_epoch != member_epoch {
                    return Err(GroupError::StaleMemberEpoch);
                }
            }
        }
        self.fetch_offsets(request)
    }

    /// OffsetDelete on a consumer group: offsets of topics it subscribes to stay.
    pub(crate) fn delete_consumer_offsets(
        &self,
        group: &ConsumerGroup,
        request: OffsetDeleteRequest,
        records: &mut Vec<GroupRecord>,
    ) -> OffsetDeleteResponse {
        let holder = self.groups.get(&request.group_id);
        let topics = request
            .topics
            .into_iter()
            .map(|topic| {
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
                        let stored = holder.is_some_and(|holder| {
                            holder
                                .offsets
                                .contains_key(&(topic.name.clone(), *partition))
                                || holder.has_pending_transactional_offset(&topic.name, *partition)
                        });
                        if stored {
                            records.push(GroupRecord::OffsetCommit {
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
                TopicPartitionResults {
                    name: topic.name,
                    partitions,
                }
            })
            .collect();
        OffsetDeleteResponse { topics }
    }

    /// Expired offsets of a consumer group's holder: retention runs from each commit, and the
    /// offsets of subscribed topics never expire (Kafka's OffsetMetadataManager).
    pub(crate) fn expired_consumer_offsets(
        &self,
        group: &ConsumerGroup,
        holder: &Group,
        now_ms: i64,
    ) -> Vec<PartitionKey> {
        let retention_ms = self.config().offsets_retention_ms;
        let subscribed = group.subscribed_topic_names();
        holder
            .offsets
            .iter()
            .filter(|((topic, partition), stored)| {
                if subscribed.contains(topic)
                    || holder.has_pending_transactional_offset(topic, *partition)
                {
                    return false;
                }
                if stored.value.expire_timestamp_ms >= 0 {
                    return now_ms >= stored.value.expire_timestamp_ms;
                }
                now_ms.saturating_sub(stored.value.commit_timestamp_ms) >= retention_ms
            })
            .map(|(key, _)| key.clone())
            .collect()
    }
}
