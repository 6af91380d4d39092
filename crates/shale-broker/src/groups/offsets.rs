//! OffsetCommit v2-v10, OffsetFetch v1-v10 (several groups from v8, topic ids from v10),
//! OffsetDelete v0.

use std::sync::Arc;

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    GroupId, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchRequest, OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shale_group::types as domain;
use shale_group::GroupError;

use super::topic_ids::{self, TOPIC_ID_MIN_VERSION};
use super::{code, code_of};
use crate::authorization::{AclOperation, ResourceType};
use crate::authorizer::Authz;
use crate::broker::Broker;
use crate::errors::authorization_failed_code;
use crate::request::RequestContext;

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

pub async fn offset_commit(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let version = ctx.version();
    let authz = broker.authz(ctx);
    // READ on the group first: refused, every partition answers GROUP_AUTHORIZATION_FAILED.
    if !authz.allows(
        AclOperation::Read,
        ResourceType::Group,
        request.group_id.0.as_str(),
    ) {
        let code = authorization_failed_code(ResourceType::Group);
        let topics = request
            .topics
            .into_iter()
            .map(|t| {
                OffsetCommitResponseTopic::default()
                    .with_name(t.name)
                    .with_topic_id(t.topic_id)
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(code)
                            })
                            .collect(),
                    )
            })
            .collect();
        return OffsetCommitResponse::default().with_topics(topics);
    }
    broker.groups.ensure_offsets_topic(broker).await;
    let image = broker.image();
    let (request_topics, unknown_ids) = if version >= TOPIC_ID_MIN_VERSION {
        topic_ids::resolve_commit_topics(&image, request.topics)
    } else {
        (request.topics, Vec::new())
    };
    // READ on each topic (TOPIC_AUTHORIZATION_FAILED), then its existence, are the broker's
    // checks; known topics go to the coordinator.
    let mut unknown: Vec<OffsetCommitResponseTopic> = Vec::new();
    let mut known: Vec<domain::OffsetCommitTopic> = Vec::new();
    for topic in request_topics {
        let name = topic.name.0.to_string();
        let refusal = if !authz.allows(AclOperation::Read, ResourceType::Topic, &name) {
            Some(authorization_failed_code(ResourceType::Topic))
        } else if image.topic(&name).is_none() {
            Some(code(&GroupError::UnknownTopicOrPartition))
        } else {
            None
        };
        if let Some(error_code) = refusal {
            unknown.push(
                OffsetCommitResponseTopic::default()
                    .with_name(topic_name(&name))
                    .with_partitions(
                        topic
                            .partitions
                            .iter()
                            .map(|p| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(error_code)
                            })
                            .collect(),
                    ),
            );
            continue;
        }
        known.push(domain::OffsetCommitTopic {
            name,
            partitions: topic
                .partitions
                .into_iter()
                .map(|p| domain::OffsetCommitPartition {
                    partition_index: p.partition_index,
                    committed_offset: p.committed_offset,
                    committed_leader_epoch: if version >= 6 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    committed_metadata: p.committed_metadata.map(|m| m.to_string()),
                })
                .collect(),
        });
    }
    let mut topics = Vec::new();
    if !known.is_empty() {
        let requested: Vec<(String, Vec<i32>)> = known
            .iter()
            .map(|t| {
                (
                    t.name.clone(),
                    t.partitions.iter().map(|p| p.partition_index).collect(),
                )
            })
            .collect();
        let domain_request = domain::OffsetCommitRequest {
            group_id: request.group_id.0.to_string(),
            generation_id: request.generation_id_or_member_epoch,
            member_id: request.member_id.to_string(),
            group_instance_id: if version >= 7 {
                request.group_instance_id.as_ref().map(|v| v.to_string())
            } else {
                None
            },
            retention_time_ms: if (2..=4).contains(&version) {
                request.retention_time_ms
            } else {
                -1
            },
            reports_missing_group: version >= 9,
            topics: known,
        };
        match broker
            .groups
            .coordinator
            .commit_offsets(domain_request)
            .await
        {
            Ok(committed) => {
                for t in committed.topics {
                    topics.push(
                        OffsetCommitResponseTopic::default()
                            .with_name(topic_name(&t.name))
                            .with_partitions(
                                t.partitions
                                    .into_iter()
                                    .map(|p| {
                                        OffsetCommitResponsePartition::default()
                                            .with_partition_index(p.partition_index)
                                            .with_error_code(code_of(&p.error))
                                    })
                                    .collect(),
                            ),
                    );
                }
            }
            Err(error) => {
                for (name, partitions) in requested {
                    topics.push(
                        OffsetCommitResponseTopic::default()
                            .with_name(topic_name(&name))
                            .with_partitions(
                                partitions
                                    .into_iter()
                                    .map(|p| {
                                        OffsetCommitResponsePartition::default()
                                            .with_partition_index(p)
                                            .with_error_code(code(&error))
                                    })
                                    .collect(),
                            ),
                    );
                }
            }
        }
    }
    topics.extend(unknown);
    if version >= TOPIC_ID_MIN_VERSION {
        topic_ids::commit_answer_ids(&image, &mut topics);
        topics.extend(unknown_ids);
    }
    OffsetCommitResponse::default().with_topics(topics)
}

/// The requested topics split into those the principal may DESCRIBE and those it may not.
fn split_described(
    authz: &Authz<'_>,
    topics: Option<Vec<domain::OffsetFetchTopic>>,
) -> (
    Option<Vec<domain::OffsetFetchTopic>>,
    Vec<domain::OffsetFetchTopic>,
) {
    match topics {
        None => (None, Vec::new()),
        Some(topics) => {
            let (described, refused) = topics
                .into_iter()
                .partition(|t| authz.allows(AclOperation::Describe, ResourceType::Topic, &t.name));
            (Some(described), refused)
        }
    }
}

/// The committed offsets of `group_id` the principal may see, as Kafka filters them: DESCRIBE
/// on the group (else GROUP_AUTHORIZATION_FAILED); all-topics answers leave out topics without
/// DESCRIBE, and named topics without it are returned apart (answered
/// TOPIC_AUTHORIZATION_FAILED per partition by the caller). The error is a Kafka code.
async fn fetch_described(
    broker: &Arc<Broker>,
    authz: &Authz<'_>,
    group_id: String,
    topics: Option<Vec<domain::OffsetFetchTopic>>,
    require_stable: bool,
    member: Option<FetchingMember>,
) -> Result<(domain::OffsetFetchResponse, Vec<domain::OffsetFetchTopic>), i16> {
    if !authz.allows(AclOperation::Describe, ResourceType::Group, &group_id) {
        return Err(authorization_failed_code(ResourceType::Group));
    }
    let all_topics = topics.is_none();
    let (described, refused) = split_described(authz, topics);
    let mut fetched = fetch_group(broker, group_id, described, require_stable, member)
        .await
        .map_err(|e| code(&e))?;
    if all_topics {
        fetched
            .topics
            .retain(|t| authz.allows(AclOperation::Describe, ResourceType::Topic, &t.name));
    }
    Ok((fetched, refused))
}

/// One group's committed offsets, or the group-level error.
async fn fetch_group(
    broker: &Arc<Broker>,
    group_id: String,
    topics: Option<Vec<domain::OffsetFetchTopic>>,
    require_stable: bool,
    member: Option<FetchingMember>,
) -> Result<domain::OffsetFetchResponse, GroupError> {
    broker.groups.ensure_offsets_topic(broker).await;
    let request = domain::OffsetFetchRequest {
        group_id,
        topics,
        require_stable,
    };
    match member {
        Some(member) => {
            broker
                .groups
                .coordinator
                .fetch_offsets_for_member(request, member.member_id, member.member_epoch)
                .await
        }
        None => broker.groups.coordinator.fetch_offsets(request).await,
    }
}

/// OffsetFetch v9+: the member asking, checked against a consumer group's (KIP-848).
struct FetchingMember {
    member_id: Option<String>,
    member_epoch: i32,
}

pub async fn offset_fetch(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let version = ctx.version();
    let require_stable = version >= 7 && request.require_stable;
    let authz = broker.authz(ctx);
    let refused_topic = authorization_failed_code(ResourceType::Topic);
    if version >= 8 {
        let image = broker.image();
        let mut groups = Vec::with_capacity(request.groups.len());
        for group in request.groups {
            let group_id = group.group_id.0.to_string();
            let (requested, unknown_ids) = match group.topics {
                Some(topics) if version >= TOPIC_ID_MIN_VERSION => {
                    let (named, unknown) = topic_ids::resolve_fetch_topics(&image, topics);
                    (Some(named), unknown)
                }
                other => (other, Vec::new()),
            };
            let topics = requested.map(|topics| {
                topics
                    .into_iter()
                    .map(|t| domain::OffsetFetchTopic {
                        name: t.name.0.to_string(),
                        partition_indexes: t.partition_indexes,
                    })
                    .collect()
            });
            let member = (version >= 9).then(|| FetchingMember {
                member_id: group.member_id.as_ref().map(|id| id.to_string()),
                member_epoch: group.member_epoch,
            });
            let entry = OffsetFetchResponseGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(group_id.clone())));
            groups.push(
                match fetch_described(broker, &authz, group_id, topics, require_stable, member)
                    .await
                {
                    Ok((fetched, refused)) => entry.with_topics(with_topic_ids(
                        &image,
                        version,
                        unknown_ids,
                        fetched
                            .topics
                            .into_iter()
                            .map(|t| {
                                OffsetFetchResponseTopics::default()
                                    .with_name(topic_name(&t.name))
                                    .with_partitions(
                                        t.partitions
                                            .into_iter()
                                            .map(|p| {
                                                OffsetFetchResponsePartitions::default()
                                                    .with_partition_index(p.partition_index)
                                                    .with_committed_offset(p.committed_offset)
                                                    .with_committed_leader_epoch(
                                                        p.committed_leader_epoch,
                                                    )
                                                    .with_metadata(Some(StrBytes::from_string(
                                                        p.metadata,
                                                    )))
                                                    .with_error_code(code_of(&p.error))
                                            })
                                            .collect(),
                                    )
                            })
                            .chain(refused.into_iter().map(|t| {
                                OffsetFetchResponseTopics::default()
                                    .with_name(topic_name(&t.name))
                                    .with_partitions(
                                        t.partition_indexes
                                            .into_iter()
                                            .map(|p| {
                                                OffsetFetchResponsePartitions::default()
                                                    .with_partition_index(p)
                                                    .with_committed_offset(-1)
                                                    .with_committed_leader_epoch(-1)
                                                    .with_error_code(refused_topic)
                                            })
                                            .collect(),
                                    )
                            }))
                            .collect(),
                    )),
                    Err(error_code) => entry.with_error_code(error_code),
                },
            );
        }
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let topics = if version < 2 {
        // v0-v1 have no "all topics" null.
        Some(request.topics.unwrap_or_default())
    } else {
        request.topics
    };
    let requested: Option<Vec<domain::OffsetFetchTopic>> = topics.map(|topics| {
        topics
            .into_iter()
            .map(|t| domain::OffsetFetchTopic {
                name: t.name.0.to_string(),
                partition_indexes: t.partition_indexes,
            })
            .collect()
    });
    let group_id = request.group_id.0.to_string();
    match fetch_described(
        broker,
        &authz,
        group_id,
        requested.clone(),
        require_stable,
        None,
    )
    .await
    {
        Ok((fetched, refused)) => OffsetFetchResponse::default().with_topics(
            fetched
                .topics
                .into_iter()
                .map(|t| {
                    OffsetFetchResponseTopic::default()
                        .with_name(topic_name(&t.name))
                        .with_partitions(
                            t.partitions
                                .into_iter()
                                .map(|p| {
                                    OffsetFetchResponsePartition::default()
                                        .with_partition_index(p.partition_index)
                                        .with_committed_offset(p.committed_offset)
                                        .with_committed_leader_epoch(if version >= 5 {
                                            p.committed_leader_epoch
                                        } else {
                                            -1
                                        })
                                        .with_metadata(Some(StrBytes::from_string(p.metadata)))
                                        .with_error_code(code_of(&p.error))
                                })
                                .collect(),
                        )
                })
                .chain(refused.into_iter().map(|t| {
                    OffsetFetchResponseTopic::default()
                        .with_name(topic_name(&t.name))
                        .with_partitions(
                            t.partition_indexes
                                .into_iter()
                                .map(|p| {
                                    OffsetFetchResponsePartition::default()
                                        .with_partition_index(p)
                                        .with_committed_offset(-1)
                                        .with_committed_leader_epoch(-1)
                                        .with_metadata(Some(StrBytes::from_static_str("")))
                                        .with_error_code(refused_topic)
                                })
                                .collect(),
                        )
                }))
                .collect(),
        ),
        Err(error_code) if version >= 2 => {
            OffsetFetchResponse::default().with_error_code(error_code)
        }
        // v1 has no top-level error: every requested partition carries it.
        Err(error_code) => OffsetFetchResponse::default().with_topics(
            requested
                .unwrap_or_default()
                .into_iter()
                .map(|t| {
                    OffsetFetchResponseTopic::default()
                        .with_name(topic_name(&t.name))
                        .with_partitions(
                            t.partition_indexes
                                .into_iter()
                                .map(|p| {
                                    OffsetFetchResponsePartition::default()
                                        .with_partition_index(p)
                                        .with_committed_offset(-1)
                                        .with_metadata(Some(StrBytes::from_static_str("")))
                                        .with_error_code(error_code)
                                })
                                .collect(),
                        )
                })
                .collect(),
        ),
    }
}

/// From v10 the answered topics are named by id, and the requested ids this broker does not
/// know are answered too.
fn with_topic_ids(
    image: &shale_metadata::MetadataImage,
    version: i16,
    unknown_ids: Vec<OffsetFetchResponseTopics>,
    topics: Vec<OffsetFetchResponseTopics>,
) -> Vec<OffsetFetchResponseTopics> {
    if version < TOPIC_ID_MIN_VERSION {
        return topics;
    }
    let mut topics = topic_ids::fetch_answer_ids(image, topics);
    topics.extend(unknown_ids);
    topics
}

/// DELETE on the group (else GROUP_AUTHORIZATION_FAILED), then READ on each topic (else
/// TOPIC_AUTHORIZATION_FAILED per partition), as Kafka checks.
pub async fn offset_delete(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    let authz = broker.authz(ctx);
    if !authz.allows(
        AclOperation::Delete,
        ResourceType::Group,
        request.group_id.0.as_str(),
    ) {
        return OffsetDeleteResponse::default()
            .with_error_code(authorization_failed_code(ResourceType::Group));
    }
    let image = broker.image();
    let mut unknown = Vec::new();
    let mut known = Vec::new();
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let partition_indexes: Vec<i32> =
            topic.partitions.iter().map(|p| p.partition_index).collect();
        let readable = authz.allows(AclOperation::Read, ResourceType::Topic, &name);
        if !readable || image.topic(&name).is_none() {
            let error_code = if readable {
                code(&GroupError::UnknownTopicOrPartition)
            } else {
                authorization_failed_code(ResourceType::Topic)
            };
            unknown.push(
                OffsetDeleteResponseTopic::default()
                    .with_name(topic_name(&name))
                    .with_partitions(
                        partition_indexes
                            .into_iter()
                            .map(|p| {
                                OffsetDeleteResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_error_code(error_code)
                            })
                            .collect(),
                    ),
            );
        } else {
            known.push(domain::OffsetDeleteTopic {
                name,
                partition_indexes,
            });
        }
    }
    let domain_request = domain::OffsetDeleteRequest {
        group_id: request.group_id.0.to_string(),
        topics: known,
    };
    match broker
        .groups
        .coordinator
        .delete_offsets(domain_request)
        .await
    {
        Ok(deleted) => {
            let mut topics: Vec<OffsetDeleteResponseTopic> = deleted
                .topics
                .into_iter()
                .map(|t| {
                    OffsetDeleteResponseTopic::default()
                        .with_name(topic_name(&t.name))
                        .with_partitions(
                            t.partitions
                                .into_iter()
                                .map(|p| {
                                    OffsetDeleteResponsePartition::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(code_of(&p.error))
                                })
                                .collect(),
                        )
                })
                .collect();
            topics.extend(unknown);
            OffsetDeleteResponse::default().with_topics(topics)
        }
        Err(error) => OffsetDeleteResponse::default().with_error_code(code(&error)),
    }
}
