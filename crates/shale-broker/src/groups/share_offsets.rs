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
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_group::share_types::ShareOffsetsTopic;
use shale_protocol::newer::{
    describe_share_group_offsets_request as describe_request,
    describe_share_group_offsets_response as describe_response,
};
use shale_protocol::{NewerResponse, Response};
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

/// One partition's answer, before its wire form.
struct DescribedOffset {
    partition: i32,
    start_offset: i64,
    leader_epoch: i32,
    lag: i64,
    error: Option<(i16, String)>,
}

fn described(partition: i32, error: Option<(i16, String)>) -> DescribedOffset {
    DescribedOffset {
        partition,
        start_offset: -1,
        leader_epoch: -1,
        lag: -1,
        error,
    }
}

pub async fn describe_share_group_offsets(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: describe_request::DescribeShareGroupOffsetsRequest,
) -> Response {
    let authz = broker.authz(ctx);
    let image = broker.image();
    let share = &broker.share;
    let mut groups = Vec::new();
    for group in request.groups {
        let group_id = group.group_id.to_string();
        let mut answer = describe_response::DescribeShareGroupOffsetsResponseGroup {
            group_id: s(group_id.clone()),
            ..Default::default()
        };
        if !authz.allows(AclOperation::Describe, ResourceType::Group, &group_id) {
            answer.error_code = authorization_failed_code(ResourceType::Group);
            groups.push(answer);
            continue;
        }
        // Named topics, or every share-partition of the group that has state.
        let wanted: Vec<(String, Option<Uuid>, Vec<i32>)> = match group.topics {
            Some(topics) => topics
                .into_iter()
                .map(|t| {
                    let name = t.topic_name.to_string();
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
                            (
                                t.name.clone(),
                                Some(topic_id),
                                partitions.into_iter().collect(),
                            )
                        })
                    })
                    .collect(),
                Err(error) => {
                    answer.error_code = code(&error);
                    answer.error_message = Some(s(error.to_string()));
                    groups.push(answer);
                    continue;
                }
            },
        };
        for (name, topic_id, partitions) in wanted {
            let mut offsets = Vec::new();
            if !authz.allows(AclOperation::Describe, ResourceType::Topic, &name) {
                let refused = (
                    authorization_failed_code(ResourceType::Topic),
                    String::new(),
                );
                offsets.extend(
                    partitions
                        .iter()
                        .map(|p| described(*p, Some(refused.clone()))),
                );
            } else if let Some(topic_id) = topic_id {
                for partition in partitions {
                    offsets.push(
                        describe_partition(broker, share, &group_id, &name, topic_id, partition)
                            .await,
                    );
                }
            } else {
                let unknown = (
                    ResponseError::UnknownTopicOrPartition.code(),
                    "This server does not host this topic-partition.".to_string(),
                );
                offsets.extend(
                    partitions
                        .iter()
                        .map(|p| described(*p, Some(unknown.clone()))),
                );
            }
            answer
                .topics
                .push(describe_response::DescribeShareGroupOffsetsResponseTopic {
                    topic_name: s(name),
                    topic_id: topic_id.unwrap_or_default(),
                    partitions: offsets
                        .into_iter()
                        .map(|o| {
                            let (error_code, error_message) = match o.error {
                                Some((code, message)) if message.is_empty() => (code, None),
                                Some((code, message)) => (code, Some(s(message))),
                                None => (0, None),
                            };
                            describe_response::DescribeShareGroupOffsetsResponsePartition {
                                partition_index: o.partition,
                                start_offset: o.start_offset,
                                leader_epoch: o.leader_epoch,
                                lag: o.lag,
                                error_code,
                                error_message,
                            }
                        })
                        .collect(),
                });
        }
        groups.push(answer);
    }
    Response::Newer(NewerResponse::DescribeShareGroupOffsets(
        describe_response::DescribeShareGroupOffsetsResponse {
            groups,
            ..Default::default()
        },
    ))
}

/// One share-partition's start offset from its share coordinator, and its lag (KIP-1226:
/// the high watermark less the start offset and the records delivered past it) when this
/// broker leads the partition and the count is known; -1 otherwise.
async fn describe_partition(
    broker: &Arc<Broker>,
    share: &crate::share::ShareService,
    group_id: &str,
    topic: &str,
    topic_id: Uuid,
    partition: i32,
) -> DescribedOffset {
    let key = SharePartitionKey {
        group_id: group_id.to_string(),
        topic_id,
        partition,
    };
    match share
        .persister
        .call(&broker.core, &share.coordinator, &key, StateCall::Summary)
        .await
    {
        Ok(StateReply::Summary(summary)) => {
            let tp = shale_log::TopicPartition {
                topic: topic.to_string(),
                partition,
            };
            let lag = broker
                .replicas
                .get(&tp)
                .filter(|p| p.leader_id() == broker.node_id())
                .filter(|_| summary.start_offset >= 0 && summary.delivery_complete_count >= 0)
                .map(|p| {
                    (p.high_watermark()
                        - summary.start_offset
                        - i64::from(summary.delivery_complete_count))
                    .max(0)
                })
                .unwrap_or(-1);
            DescribedOffset {
                partition,
                start_offset: summary.start_offset,
                leader_epoch: summary.leader_epoch,
                lag,
                error: None,
            }
        }
        Ok(_) => described(partition, None),
        Err(e) => described(partition, Some(persister_error_code(&e))),
    }
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
                                    .with_error_code(authorization_failed_code(ResourceType::Topic))
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
            Some(
                outcome
                    .error_message
                    .clone()
                    .unwrap_or_else(|| error.to_string()),
            ),
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
            Some(
                prepared
                    .error_message
                    .clone()
                    .unwrap_or_else(|| error.to_string()),
            ),
        );
    }
    let mut deleted = BTreeSet::new();
    for (topic_id, partitions) in &prepared.to_delete {
        let failure =
            super::share::delete_topic_state(broker, &group_id, *topic_id, partitions).await;
        let name = prepared
            .topic_names
            .get(topic_id)
            .cloned()
            .unwrap_or_default();
        let mut answer = DeleteShareGroupOffsetsResponseTopic::default()
            .with_topic_name(TopicName(s(name)))
            .with_topic_id(*topic_id);
        match failure {
            Some((code, message)) => {
                answer = answer
                    .with_error_code(code)
                    .with_error_message(Some(s(message)));
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
