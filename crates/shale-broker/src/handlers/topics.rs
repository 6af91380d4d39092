//! CreateTopics, DeleteTopics and CreatePartitions.
//!
//! Every change goes through the metadata controller; the handler answers only after the local
//! partitions reflect the new image, so a client never sees LEADER_NOT_AVAILABLE for a topic it
//! has just created.

use std::collections::HashSet;
use std::sync::Arc;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_metadata::config_defs::resolve_topic_config_for_broker;
use shale_metadata::{
    ControllerRequest, ControllerResponse, CreatableTopic, CreatePartitionsTopic, MetadataError,
};
use tracing::warn;

use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::controller_calls::{submit_and_apply, within_timeout_ms};
use crate::errors::{authorization_failed_code, metadata_error_code};
use crate::request::RequestContext;

use super::topic_quota::TopicMutations;

fn str_bytes(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// Authorization as Kafka's ControllerApis: CREATE on the cluster, or else on each topic
/// (TOPIC_AUTHORIZATION_FAILED "Authorization failed."); a created topic's configs are shown
/// only with DESCRIBE_CONFIGS on it (else its config error is TOPIC_AUTHORIZATION_FAILED).
pub async fn create_topics(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let version = ctx.version();
    let authz = broker.authz(ctx);
    let create_any = authz.allows_cluster(AclOperation::Create);
    let topic_refused = authorization_failed_code(ResourceType::Topic);
    let mut seen = HashSet::new();
    let mut duplicates = HashSet::new();
    for t in &request.topics {
        if !seen.insert(t.name.0.to_string()) {
            duplicates.insert(t.name.0.to_string());
        }
    }
    let mut results: Vec<CreatableTopicResult> = Vec::new();
    let mut to_create = Vec::new();
    let before = broker.image();
    let mut mutations = TopicMutations::new(broker, &before, ctx, 6);
    for t in request.topics {
        let name = t.name.0.to_string();
        if duplicates.contains(&name) {
            if !results.iter().any(|r| r.name.0.as_str() == name) {
                results.push(
                    CreatableTopicResult::default()
                        .with_name(TopicName(str_bytes(name.clone())))
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(str_bytes(format!(
                            "Create topics request from client contains duplicate topic {name}"
                        ))))
                        .with_num_partitions(-1)
                        .with_replication_factor(-1),
                );
            }
            continue;
        }
        if !create_any && !authz.allows(AclOperation::Create, ResourceType::Topic, &name) {
            results.push(
                CreatableTopicResult::default()
                    .with_name(TopicName(str_bytes(name)))
                    .with_error_code(topic_refused)
                    .with_error_message(Some(str_bytes("Authorization failed.")))
                    .with_num_partitions(-1)
                    .with_replication_factor(-1),
            );
            continue;
        }
        if !mutations.admit_creation(&before, &name, t.num_partitions, t.assignments.len()) {
            let (code, message) = TopicMutations::refusal();
            results.push(
                CreatableTopicResult::default()
                    .with_name(TopicName(str_bytes(name)))
                    .with_error_code(code)
                    .with_error_message(Some(str_bytes(message)))
                    .with_num_partitions(-1)
                    .with_replication_factor(-1),
            );
            continue;
        }
        to_create.push(CreatableTopic {
            name,
            num_partitions: t.num_partitions,
            replication_factor: t.replication_factor,
            assignments: t
                .assignments
                .into_iter()
                .map(|a| {
                    (
                        a.partition_index,
                        a.broker_ids.into_iter().map(|b| b.0).collect(),
                    )
                })
                .collect(),
            configs: t
                .configs
                .into_iter()
                .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string())))
                .collect(),
        });
    }
    if !to_create.is_empty() {
        let outcome = within_timeout_ms(
            request.timeout_ms,
            submit_and_apply(
                broker,
                ControllerRequest::CreateTopics {
                    topics: to_create.clone(),
                    validate_only: request.validate_only,
                },
            ),
        )
        .await;
        let image = broker.image();
        let static_props = broker.static_props();
        match outcome {
            Ok(ControllerResponse::CreateTopics(created)) => {
                for (name, r) in created {
                    let base = CreatableTopicResult::default()
                        .with_name(TopicName(str_bytes(name.clone())));
                    results.push(match r {
                        Ok(c) if version >= 5
                            && !authz.allows(
                                AclOperation::DescribeConfigs,
                                ResourceType::Topic,
                                &name,
                            ) =>
                        {
                            base.with_topic_id(c.topic_id)
                                .with_num_partitions(c.num_partitions)
                                .with_replication_factor(c.replication_factor)
                                .with_topic_config_error_code(topic_refused)
                        }
                        Ok(c) => {
                            let configs = (version >= 5).then(|| {
                                let mut resolved = resolve_topic_config_for_broker(
                                    &image,
                                    &name,
                                    Some(broker.node_id()),
                                    &static_props,
                                );
                                if request.validate_only {
                                    // Not in the image yet: overlay the requested values.
                                    if let Some(req) = to_create.iter().find(|t| t.name == name) {
                                        for (k, v) in &req.configs {
                                            if let Some(rc) = resolved.iter_mut().find(|rc| &rc.name == k) {
                                                rc.value = v.clone();
                                                rc.source = shale_metadata::config_defs::ConfigSource::DynamicTopicConfig;
                                            }
                                        }
                                    }
                                }
                                resolved
                                    .into_iter()
                                    .map(|rc| {
                                        CreatableTopicConfigs::default()
                                            .with_name(str_bytes(rc.name))
                                            .with_value(if rc.sensitive { None } else { rc.value.map(str_bytes) })
                                            .with_read_only(rc.read_only)
                                            .with_config_source(rc.source.id())
                                            .with_is_sensitive(rc.sensitive)
                                    })
                                    .collect()
                            });
                            base.with_topic_id(c.topic_id)
                                .with_num_partitions(c.num_partitions)
                                .with_replication_factor(c.replication_factor)
                                .with_configs(configs)
                        }
                        Err(e) => {
                            let (code, message) = metadata_error_code(&e);
                            base.with_error_code(code)
                                .with_error_message(Some(str_bytes(message)))
                                .with_num_partitions(-1)
                                .with_replication_factor(-1)
                        }
                    });
                }
            }
            Ok(other) => {
                warn!("unexpected controller answer: {other:?}");
                fail_all(
                    &mut results,
                    &to_create,
                    ResponseError::UnknownServerError.code(),
                    "unexpected controller answer",
                );
            }
            Err(e) => {
                let (code, message) = metadata_error_code(&e);
                fail_all(&mut results, &to_create, code, &message);
            }
        }
    }
    mutations.settle_answers(results.iter().map(|r| (r.name.0.as_str(), r.error_code)));
    CreateTopicsResponse::default()
        .with_throttle_time_ms(mutations.throttle_time_ms())
        .with_topics(results)
}

fn fail_all(
    results: &mut Vec<CreatableTopicResult>,
    topics: &[CreatableTopic],
    code: i16,
    message: &str,
) {
    for t in topics {
        results.push(
            CreatableTopicResult::default()
                .with_name(TopicName(str_bytes(t.name.clone())))
                .with_error_code(code)
                .with_error_message(Some(str_bytes(message)))
                .with_num_partitions(-1)
                .with_replication_factor(-1),
        );
    }
}

/// Authorization as Kafka's ControllerApis: DELETE on the cluster allows every topic;
/// otherwise a topic named by name needs DESCRIBE (else TOPIC_AUTHORIZATION_FAILED, before
/// looking it up) and DELETE (else TOPIC_AUTHORIZATION_FAILED), and one named by id that the
/// principal may not delete is refused without its name unless it may DESCRIBE it.
pub async fn delete_topics(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let version = ctx.version();
    let (names, ids) = requested_deletions(version, request.topic_names, request.topics);
    let authz = broker.authz(ctx);
    let delete_any = authz.allows_cluster(AclOperation::Delete);
    let may = |op, name: &str| delete_any || authz.allows(op, ResourceType::Topic, name);
    let refused = authorization_failed_code(ResourceType::Topic);
    let image = broker.image();
    let mut responses = Vec::new();
    let mut mutations = TopicMutations::new(broker, &image, ctx, 5);
    let names: Vec<String> = names
        .into_iter()
        .filter(|name| {
            let describable = may(AclOperation::Describe, name);
            let allowed =
                describable && (image.topic(name).is_none() || may(AclOperation::Delete, name));
            if !allowed {
                responses.push(
                    DeletableTopicResult::default()
                        .with_name(Some(TopicName(str_bytes(name.clone()))))
                        .with_error_code(refused),
                );
            } else if !mutations.admit_deletion(&image, name) {
                let (code, message) = TopicMutations::refusal();
                responses.push(
                    DeletableTopicResult::default()
                        .with_name(Some(TopicName(str_bytes(name.clone()))))
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(message))),
                );
                return false;
            }
            allowed
        })
        .collect();
    let ids: Vec<uuid::Uuid> = ids
        .into_iter()
        .filter(|id| {
            let Some(topic) = image.topic_by_id(*id) else {
                return true;
            };
            let allowed = may(AclOperation::Delete, &topic.name);
            if !allowed {
                let shown = may(AclOperation::Describe, &topic.name)
                    .then(|| TopicName(str_bytes(topic.name.clone())));
                responses.push(
                    DeletableTopicResult::default()
                        .with_name(shown)
                        .with_topic_id(*id)
                        .with_error_code(refused),
                );
            } else if !mutations.admit_deletion(&image, &topic.name) {
                let (code, message) = TopicMutations::refusal();
                responses.push(
                    DeletableTopicResult::default()
                        .with_topic_id(*id)
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(message))),
                );
                return false;
            }
            allowed
        })
        .collect();
    if names.is_empty() && ids.is_empty() {
        return DeleteTopicsResponse::default()
            .with_throttle_time_ms(mutations.throttle_time_ms())
            .with_responses(responses);
    }
    let outcome = within_timeout_ms(
        request.timeout_ms,
        submit_and_apply(
            broker,
            ControllerRequest::DeleteTopics {
                names: names.clone(),
                ids: ids.clone(),
            },
        ),
    )
    .await;
    let answer = delete_answers(version, outcome, names, ids, responses);
    mutations.settle_answers(
        answer
            .responses
            .iter()
            .filter_map(|r| Some((r.name.as_ref()?.0.as_str(), r.error_code))),
    );
    answer.with_throttle_time_ms(mutations.throttle_time_ms())
}

/// The names and ids a DeleteTopics request names (ids from v6).
fn requested_deletions(
    version: i16,
    topic_names: Vec<TopicName>,
    topics: Vec<kafka_protocol::messages::delete_topics_request::DeleteTopicState>,
) -> (Vec<String>, Vec<uuid::Uuid>) {
    if version >= 6 {
        let mut names = Vec::new();
        let mut ids = Vec::new();
        for t in topics {
            match t.name {
                Some(n) => names.push(n.0.to_string()),
                None => ids.push(t.topic_id),
            }
        }
        (names, ids)
    } else {
        (
            topic_names.into_iter().map(|n| n.0.to_string()).collect(),
            Vec::new(),
        )
    }
}

fn delete_answers(
    version: i16,
    outcome: Result<ControllerResponse, MetadataError>,
    names: Vec<String>,
    ids: Vec<uuid::Uuid>,
    mut responses: Vec<DeletableTopicResult>,
) -> DeleteTopicsResponse {
    match outcome {
        Ok(ControllerResponse::DeleteTopics { by_name, by_id }) => {
            for (name, r) in by_name {
                let base =
                    DeletableTopicResult::default().with_name(Some(TopicName(str_bytes(name))));
                responses.push(match r {
                    Ok(id) => base.with_topic_id(id),
                    Err(e) => {
                        let (mut code, message) = metadata_error_code(&e);
                        // Clients before v3 do not know TOPIC_DELETION_DISABLED.
                        if version < 3 && matches!(e, MetadataError::TopicDeletionDisabled) {
                            code = ResponseError::InvalidRequest.code();
                        }
                        base.with_error_code(code)
                            .with_error_message(Some(str_bytes(message)))
                    }
                });
            }
            for (id, r) in by_id {
                let base = DeletableTopicResult::default().with_topic_id(id);
                responses.push(match r {
                    Ok(name) => base.with_name(Some(TopicName(str_bytes(name)))),
                    Err(e) => {
                        let (code, message) = metadata_error_code(&e);
                        base.with_error_code(code)
                            .with_error_message(Some(str_bytes(message)))
                    }
                });
            }
        }
        other => {
            let (code, message) = match other {
                Err(e) => metadata_error_code(&e),
                Ok(_) => (
                    ResponseError::UnknownServerError.code(),
                    "unexpected controller answer".to_string(),
                ),
            };
            for n in names {
                responses.push(
                    DeletableTopicResult::default()
                        .with_name(Some(TopicName(str_bytes(n))))
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(message.clone()))),
                );
            }
            for id in ids {
                responses.push(
                    DeletableTopicResult::default()
                        .with_topic_id(id)
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(message.clone()))),
                );
            }
        }
    }
    DeleteTopicsResponse::default().with_responses(responses)
}

/// Each topic needs ALTER (else TOPIC_AUTHORIZATION_FAILED).
pub async fn create_partitions(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let authz = broker.authz(ctx);
    let (allowed, refused): (Vec<_>, Vec<_>) = request
        .topics
        .into_iter()
        .partition(|t| authz.allows(AclOperation::Alter, ResourceType::Topic, t.name.0.as_str()));
    let refused: Vec<CreatePartitionsTopicResult> = refused
        .into_iter()
        .map(|t| {
            CreatePartitionsTopicResult::default()
                .with_name(t.name)
                .with_error_code(authorization_failed_code(ResourceType::Topic))
        })
        .collect();
    let image = broker.image();
    let mut mutations = TopicMutations::new(broker, &image, ctx, 3);
    let (allowed, throttled): (Vec<_>, Vec<_>) = allowed
        .into_iter()
        .partition(|t| mutations.admit_partitions(&image, t.name.0.as_str(), t.count));
    let (code, message) = TopicMutations::refusal();
    let mut refused = refused;
    refused.extend(throttled.into_iter().map(|t| {
        CreatePartitionsTopicResult::default()
            .with_name(t.name)
            .with_error_code(code)
            .with_error_message(Some(str_bytes(message.clone())))
    }));
    if allowed.is_empty() {
        return CreatePartitionsResponse::default()
            .with_throttle_time_ms(mutations.throttle_time_ms())
            .with_results(refused);
    }
    let topics: Vec<CreatePartitionsTopic> = allowed
        .into_iter()
        .map(|t| CreatePartitionsTopic {
            name: t.name.0.to_string(),
            count: t.count,
            assignments: t.assignments.map(|a| {
                a.into_iter()
                    .map(|x| x.broker_ids.into_iter().map(|b| b.0).collect())
                    .collect()
            }),
        })
        .collect();
    let names: Vec<String> = topics.iter().map(|t| t.name.clone()).collect();
    let outcome = within_timeout_ms(
        request.timeout_ms,
        submit_and_apply(
            broker,
            ControllerRequest::CreatePartitions {
                topics,
                validate_only: request.validate_only,
            },
        ),
    )
    .await;
    let results = match outcome {
        Ok(ControllerResponse::CreatePartitions(results)) => results
            .into_iter()
            .map(|(name, r)| {
                let base =
                    CreatePartitionsTopicResult::default().with_name(TopicName(str_bytes(name)));
                match r {
                    Ok(()) => base,
                    Err(e) => {
                        let (code, message) = metadata_error_code(&e);
                        base.with_error_code(code)
                            .with_error_message(Some(str_bytes(message)))
                    }
                }
            })
            .collect(),
        other => {
            let (code, message) = match other {
                Err(e) => metadata_error_code(&e),
                Ok(_) => (
                    ResponseError::UnknownServerError.code(),
                    "unexpected controller answer".to_string(),
                ),
            };
            names
                .into_iter()
                .map(|n| {
                    CreatePartitionsTopicResult::default()
                        .with_name(TopicName(str_bytes(n)))
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(message.clone())))
                })
                .collect()
        }
    };
    let mut results: Vec<CreatePartitionsTopicResult> = results;
    mutations.settle_answers(results.iter().map(|r| (r.name.0.as_str(), r.error_code)));
    results.extend(refused);
    CreatePartitionsResponse::default()
        .with_throttle_time_ms(mutations.throttle_time_ms())
        .with_results(results)
}
