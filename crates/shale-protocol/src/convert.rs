//! OffsetCommit and OffsetFetch requests decoded by Shale's codec, handed on as
//! kafka-protocol's types. kafka-protocol 0.18's structs already hold every field of
//! version 10 (Kafka 4.1 defined it as unstable, 4.4 made it stable unchanged), only its
//! decoder stops at version 9; its response encoders do handle version 10.

use kafka_protocol::messages::{
    offset_commit_request as kp_commit, offset_fetch_request as kp_fetch,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, OffsetFetchRequest, TopicName};

use crate::codec_generated::{offset_commit_request as commit, offset_fetch_request as fetch};

impl From<commit::OffsetCommitRequest> for OffsetCommitRequest {
    fn from(request: commit::OffsetCommitRequest) -> Self {
        OffsetCommitRequest::default()
            .with_group_id(GroupId(request.group_id))
            .with_generation_id_or_member_epoch(request.generation_id_or_member_epoch)
            .with_member_id(request.member_id)
            .with_group_instance_id(request.group_instance_id)
            .with_retention_time_ms(request.retention_time_ms)
            .with_topics(request.topics.into_iter().map(Into::into).collect())
    }
}

impl From<commit::OffsetCommitRequestTopic> for kp_commit::OffsetCommitRequestTopic {
    fn from(topic: commit::OffsetCommitRequestTopic) -> Self {
        kp_commit::OffsetCommitRequestTopic::default()
            .with_name(TopicName(topic.name))
            .with_topic_id(topic.topic_id)
            .with_partitions(
                topic
                    .partitions
                    .into_iter()
                    .map(|p| {
                        kp_commit::OffsetCommitRequestPartition::default()
                            .with_partition_index(p.partition_index)
                            .with_committed_offset(p.committed_offset)
                            .with_committed_leader_epoch(p.committed_leader_epoch)
                            .with_committed_metadata(p.committed_metadata)
                    })
                    .collect(),
            )
    }
}

impl From<fetch::OffsetFetchRequest> for OffsetFetchRequest {
    fn from(request: fetch::OffsetFetchRequest) -> Self {
        OffsetFetchRequest::default()
            .with_group_id(GroupId(request.group_id))
            .with_topics(request.topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|t| {
                        kp_fetch::OffsetFetchRequestTopic::default()
                            .with_name(TopicName(t.name))
                            .with_partition_indexes(t.partition_indexes)
                    })
                    .collect()
            }))
            .with_groups(request.groups.into_iter().map(Into::into).collect())
            .with_require_stable(request.require_stable)
    }
}

impl From<fetch::OffsetFetchRequestGroup> for kp_fetch::OffsetFetchRequestGroup {
    fn from(group: fetch::OffsetFetchRequestGroup) -> Self {
        kp_fetch::OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(group.group_id))
            .with_member_id(group.member_id)
            .with_member_epoch(group.member_epoch)
            .with_topics(group.topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|t| {
                        kp_fetch::OffsetFetchRequestTopics::default()
                            .with_name(TopicName(t.name))
                            .with_topic_id(t.topic_id)
                            .with_partition_indexes(t.partition_indexes)
                    })
                    .collect()
            }))
    }
}
