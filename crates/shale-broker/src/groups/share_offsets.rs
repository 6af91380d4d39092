//! The share group offset APIs (what `kafka-share-groups --describe --offsets`,
//! `--reset-offsets` and `--delete-offsets` send): DescribeShareGroupOffsets reads each
//! share-partition's start offset from its share coordinator; AlterShareGroupOffsets
//! re-initializes the share state of an empty group at the given offsets; and
//! DeleteShareGroupOffsets deletes the share state of topics of an empty group.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_group::share_types::ShareOffsetsTopic;
use shale_share::state::SharePartitionKey;
use tracing::warn;
use uuid::Uuid;

use super::code;
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::{authorization_failed_code, persister_error_code};
use crate::request::RequestContext;
use crate::share::persister::{StateCall, StateReply};

fn s(text: impl Into<String>) -> StrBytes {
    StrBytes::from_string(text.into())
}

pub async fn describe_share_group_offsets(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeShareGroupOffsetsRequest,
) -> DescribeShareGroupOffsetsResponse {
    let authz = broker.authz(ctx);
    let image = broker.image();
    let share = &broker.share;
    let mut groups = Vec::new();
    for group in request.groups {
        let group_id = group.group_id.0.to_string();
        let mut answer = DescribeShareGroupOffsetsResponseGroup::default()
            .with_group_id(GroupId(s(group_id.clone())));
        if !authz.allows(AclOperation::Describe, ResourceType::Group, &group_id) {
            groups.push(answer.with_error_code(authorization_failed_code(ResourceType::Group)));
            continue;
        }
        // Named topics, or every share-partition of the group that has state.
        let wanted: Vec<(String, Option<Uuid>, Vec<i32>)> = match group.topics {
            Some(topics) => topics
                .into_iter()
                .map(|t| {
                    let name = t.topic_name.0.to_string();
                    let id = image.topic(&name).map(|topic| topic.topic_id);
                    (name, id, t.partitions)
                })
                .collect(),
            None => match broker
                .groups
                .coordinator
                .share_group_initialized_partitions(&group_id)
                .await
            {
                Ok(initialized) => initialized
                    .into_iter()
                    .filter_map(|(topic_id, partitions)| {
                        image.topic_by_id(topic_id).map(|t| {
                            (t.name.clone(), Some(topic_id), partitions.into_iter().collect())
                        })
                    })
                    .collect(),
                Err(error) => {
                    groups.push(
                        answer
                            .with_error_code(code(&error))
                            .with_error_message(Some(s(error.to_string()))),
                    );
                    continue;
                }
            },
        };
        let mut topics = Vec::new();
        for (name, topic_id, partitions) in wanted {
            if !authz.allows(AclOperation::Describe, ResourceType::Topic, &name) {
                let refused = partitions
                    .iter()
                    .map(|p| {
                        DescribeShareGroupOffsetsResponsePartition::default()
                            .with_partition_index(*p)
                            .with_start_offset(-1)
                            .with_leader_epoch(-1)
                            .with_error_code(authorization_failed_code(ResourceType::Topic))
                    })
                    .collect();
                topics.push(
                    DescribeShareGroupOffsetsResponseTopic::default()
                        .with_topic_name(TopicName(s(name)))
                        .with_partitions(refused),
                );
                continue;
            }
            let Some(topic_id) = topic_id else {
                let unknown = partitions
                    .iter()
                    .map(|p| {
                        DescribeShareGroupOffsetsResponsePartition::default()
                            .with_partition_index(*p)
                            .with_start_offset(-1)
                            .with_leader_epoch(-1)
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                            .with_error_message(Some(s(
                                "This server does not host this topic-partition.",
                            )))
                    })
                    .collect();
                topics.push(
                    DescribeShareGroupOffsetsResponseTopic::default()
                        .with_topic_name(TopicName(s(name)))
                        .with_partitions(unknown),
                );
                continue;
            };
            let mut answers = Vec::new();
            for partition in partitions {
                let key = SharePartitionKey {
                    group_id: group_id.clone(),
                    topic_id,
                    partition,
                };
                let mut p = DescribeShareGroupOffsetsResponsePartition::default()
                    .with_partition_index(partition)
                    .with_start_offset(-1)
                    .with_leader_epoch(-1);
                match share
                    .persister
                    .call(&broker.core, &share.coordinator, &key, StateCall::Summary)
                    .await
                {
                    Ok(StateReply::Summary(summary)) => {
                        p = p
                            .with_start_offset(summary.start_offset)
                            .with_leader_epoch(summary.leader_epoch);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let (code, message) = persister_error_code(&e);
                        p = p.with_error_code(code).with_error_message(Some(s(message)));
                    }
                }
                answers.push(p);
            }
            topics.push(
                DescribeShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(TopicName(s(name)))
                    .with_topic_id(topic_id)
                    .with_partitions(answers),
            );
        }
        answer = answer.with_topics(topics);
        groups.push(answer);
    }
    DescribeShareGroupOffsetsResponse::default().with_groups(groups)
}

pub async fn alter_share_group_offsets(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: AlterShareGroupOffsetsRequest,
) -> AlterShareGroupOffsetsResponse {
    let group_id = request.group_id.0.to_string();
    let authz = broker.authz(ctx);
    let refuse = |code: i16, message: Option<String>| {
        AlterShareGroupOffsetsResponse::default()
            .with_error_code(code)
            .with_error_message(message.map(s))
    };
    if !authz.allows(AclOperation::Read, ResourceType::Group, &group_id) {
        return refuse(authorization_failed_code(ResourceType::Group), None);
    }
    let mut refused_topics = Vec::new();
    let mut topics = Vec::new();
    for t in request.topics {
        let name = t.topic_name.0.to_string();
        if !authz.allows(AclOperation::Read, ResourceType::Topic, &name) {
            refused_topics.push(
                AlterShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(TopicName(s(name)))
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                AlterShareGroupOffsetsResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(authorization_failed_code(
                                        ResourceType::Topic,
                                    ))
                            })
                            .collect(),
                    ),
            );
            continue;
        }
        topics.push(ShareOffsetsTopic {
            topic_name: name,
            partitions: t
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.start_offset))
                .collect(),
        });
    }
    broker.groups.ensure_offsets_topic(broker).await;
    let outcome = match broker
        .groups
        .coordinator
        .alter_share_group_offsets(&group_id, topics)
        .await
    {
        Ok(outcome) => outcome,
        Err(error) => return refuse(code(&error), Some(error.to_string())),
    };
    if let Some(error) = &outcome.error {
        return refuse(
            code(error),
            Some(outcome.error_message.clone().unwrap_or_else(|| error.to_string())),
        );
    }
    // The share-partitions led here re-read their state at the new offsets.
    for (key, _) in broker.share.partitions.of_group(&group_id) {
        broker.share.partitions.remove(&key);
    }
    let mut failed: BTreeMap<Uuid, (i16, String)> = BTreeMap::new();
    if let Some(initialize) = outcome.initialize {
        failed = super::share::initialize_state(broker, initialize).await;
    }
    let responses = outcome
        .topics
        .into_iter()
        .map(|t| {
            let topic_failure = t.topic_id.and_then(|id| failed.get(&id).cloned());
            AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(s(t.topic_name)))
                .with_topic_id(t.topic_id.unwrap_or_default())
                .with_partitions(
                    t.partitions
                        .into_iter()
                        .map(|p| {
                            let (error_code, message) = match (&p.error, &topic_failure) {
                                (Some(e), _) => (code(e), Some(e.to_string())),
                                (None, Some((c, m))) => (*c, Some(m.clone())),
                                (None, None) => (0, None),
                            };
                            AlterShareGroupOffsetsResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(error_code)
                                .with_error_message(message.map(s))
                        })
                        .collect(),
                )
        })
        .chain(refused_topics)
        .collect();
    AlterShareGroupOffsetsResponse::default().with_responses(responses)
}

pub async fn delete_share_group_offsets(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DeleteShareGroupOffsetsRequest,
) -> DeleteShareGroupOffsetsResponse {
    let group_id = request.group_id.0.to_string();
    let authz = broker.authz(ctx);
    let refuse = |code: i16, message: Option<String>| {
        DeleteShareGroupOffsetsResponse::default()
            .with_error_code(code)
            .with_error_message(message.map(s))
    };
    if !authz.allows(AclOperation::Delete, ResourceType::Group, &group_id) {
        return refuse(authorization_failed_code(ResourceType::Group), None);
    }
    let mut responses = Vec::new();
    let mut names = Vec::new();
    for t in request.topics {
        let name = t.topic_name.0.to_string();
        if authz.allows(AclOperation::Read, ResourceType::Topic, &name) {
            names.push(name);
        } else {
            responses.push(
                DeleteShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(TopicName(s(name)))
                    .with_error_code(authorization_failed_code(ResourceType::Topic)),
            );
        }
    }
    let prepared = match broker
        .groups
        .coordinator
        .prepare_share_group_offsets_deletion(&group_id, names)
        .await
    {
        Ok(prepared) => prepared,
        Err(error) => return refuse(code(&error), Some(error.to_string())),
    };
    if let Some(error) = &prepared.error {
        return refuse(
            code(error),
            Some(prepared.error_message.clone().unwrap_or_else(|| error.to_string())),
        );
    }
    let share = &broker.share;
    let mut deleted = BTreeSet::new();
    for (topic_id, partitions) in &prepared.to_delete {
        let mut failure = None;
        for &partition in partitions {
            let key = SharePartitionKey {
                group_id: group_id.clone(),
                topic_id: *topic_id,
                partition,
            };
            if let Err(e) = share
                .persister
                .call(&broker.core, &share.coordinator, &key, StateCall::Delete)
                .await
            {
                warn!(group = %group_id, %topic_id, partition, "share state not deleted: {e}");
                failure = Some(persister_error_code(&e));
            }
        }
        let name = prepared.topic_names.get(topic_id).cloned().unwrap_or_default();
        let mut answer = DeleteShareGroupOffsetsResponseTopic::default()
            .with_topic_name(TopicName(s(name)))
            .with_topic_id(*topic_id);
        match failure {
            Some((code, message)) => {
                answer = answer.with_error_code(code).with_error_message(Some(s(message)));
            }
            None => {
                deleted.insert(*topic_id);
            }
        }
        responses.push(answer);
    }
    for refused in prepared.refused {
        responses.push(
            DeleteShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(s(refused.topic_name)))
                .with_error_code(code(&refused.error))
                .with_error_message(Some(s(refused.error_message))),
        );
    }
    if !deleted.is_empty() {
        if let Err(e) = broker
            .groups
            .coordinator
            .complete_share_group_offsets_deletion(&group_id, deleted)
            .await
        {
            warn!(group = %group_id, "share offsets deletion not recorded: {e}");
        }
    }
    DeleteShareGroupOffsetsResponse::default().with_responses(responses)
}
