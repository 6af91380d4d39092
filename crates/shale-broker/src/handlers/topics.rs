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

use crate::broker::Broker;
use crate::controller_calls::{submit_and_apply, within_timeout_ms};
use crate::errors::metadata_error_code;
use crate::request::RequestContext;

use super::topic_quota::TopicMutations;

fn str_bytes(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

pub async fn create_topics(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let version = ctx.version();
    let mut seen = HashSet::new();
    let mut duplicates = HashSet::new();
    for t in &request.topics {
        if !seen.insert(t.name.0.to_string()) {
            duplicates.insert(t.name.0.to_string());
        }
    }
    let mut results: Vec<CreatableTopicResult> = Vec::new();
    let mut to_create = Vec::new();
    let image = broker.image();
    let mut mutations = TopicMutations::new(broker, &image, ctx, 6);
    for t in request.topics {
        let name = t.name.0.to_string();
        let partitions = match (t.num_partitions, t.assignments.len()) {
            (n @ 1.., _) => n as usize,
            (_, 0) => broker.config.num_partitions.max(0) as usize,
            (_, assigned) => assigned,
        };
        let chargeable = !duplicates.contains(&name)
            && image.topic(&name).is_none()
            && shale_metadata::validate_topic_name(&name).is_ok();
        if chargeable && !mutations.admit(&name, partitions) {
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
                    mutations.settle(&name, r.is_ok());
                    let base = CreatableTopicResult::default()
                        .with_name(TopicName(str_bytes(name.clone())));
                    results.push(match r {
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
                mutations.settle_all_failed();
                fail_all(
                    &mut results,
                    &to_create,
                    ResponseError::UnknownServerError.code(),
                    "unexpected controller answer",
                );
            }
            Err(e) => {
                mutations.settle_all_failed();
                let (code, message) = metadata_error_code(&e);
                fail_all(&mut results, &to_create, code, &message);
            }
        }
    }
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

pub async fn delete_topics(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let version = ctx.version();
    let (mut names, mut ids): (Vec<String>, Vec<uuid::Uuid>) = if version >= 6 {
        let mut names = Vec::new();
        let mut ids = Vec::new();
        for t in request.topics {
            match t.name {
                Some(n) => names.push(n.0.to_string()),
                None => ids.push(t.topic_id),
            }
        }
        (names, ids)
    } else {
        (
            request
                .topic_names
                .into_iter()
                .map(|n| n.0.to_string())
                .collect(),
            Vec::new(),
        )
    };
    let image = broker.image();
    let mut mutations = TopicMutations::new(broker, &image, ctx, 5);
    let mut responses = Vec::new();
    let (code, message) = TopicMutations::refusal();
    let throttled = |r: DeletableTopicResult| {
        r.with_error_code(code)
            .with_error_message(Some(str_bytes(message.clone())))
    };
    names.retain(|n| {
        let Some(t) = image.topic(n) else { return true };
        let admitted = mutations.admit(n, t.partitions.len());
        if !admitted {
            responses.push(throttled(
                DeletableTopicResult::default().with_name(Some(TopicName(str_bytes(n.clone())))),
            ));
        }
        admitted
    });
    ids.retain(|id| {
        let Some(t) = image.topic_by_id(*id) else {
            return true;
        };
        let admitted = mutations.admit(&t.name, t.partitions.len());
        if !admitted {
            responses.push(throttled(
                DeletableTopicResult::default().with_topic_id(*id),
            ));
        }
        admitted
    });
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
    match outcome {
        Ok(ControllerResponse::DeleteTopics { by_name, by_id }) => {
            for (name, r) in by_name {
                mutations.settle(&name, r.is_ok());
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
                if let Ok(name) = &r {
                    mutations.settle(name, true);
                } else if let Some(t) = image.topic_by_id(id) {
                    mutations.settle(&t.name, false);
                }
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
            mutations.settle_all_failed();
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
    DeleteTopicsResponse::default()
        .with_throttle_time_ms(mutations.throttle_time_ms())
        .with_responses(responses)
}

pub async fn create_partitions(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let image = broker.image();
    let mut mutations = TopicMutations::new(broker, &image, ctx, 3);
    let mut throttled = Vec::new();
    let topics: Vec<CreatePartitionsTopic> = request
        .topics
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
        .filter(|t| {
            let current = image.topic(&t.name).map_or(0, |i| i.partitions.len());
            let Some(added @ 1..) = usize::try_from(t.count)
                .ok()
                .map(|c| c.saturating_sub(current))
            else {
                return true;
            };
            if current == 0 || mutations.admit(&t.name, added) {
                return true;
            }
            let (code, message) = TopicMutations::refusal();
            throttled.push(
                CreatePartitionsTopicResult::default()
                    .with_name(TopicName(str_bytes(t.name.clone())))
                    .with_error_code(code)
                    .with_error_message(Some(str_bytes(message))),
            );
            false
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
    let results: Vec<CreatePartitionsTopicResult> = match outcome {
        Ok(ControllerResponse::CreatePartitions(results)) => results
            .into_iter()
            .map(|(name, r)| {
                mutations.settle(&name, r.is_ok());
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
            mutations.settle_all_failed();
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
    CreatePartitionsResponse::default()
        .with_throttle_time_ms(mutations.throttle_time_ms())
        .with_results(throttled.into_iter().chain(results).collect())
}
