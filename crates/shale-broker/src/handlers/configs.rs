//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, brokers and groups
//! (KIP-848's GROUP resource: described here from the image, checked by the controller).

use std::sync::Arc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_metadata::config_defs::resolve_topic_config_for_broker;
use shale_metadata::{
    AlterConfigOp, AlterConfigOpType, ConfigResource, ControllerRequest, ControllerResponse,
};

use super::broker_configs::{
    check_alter, describe_broker, describe_cluster_default, BrokerConfigEntry, BrokerConfigSources,
};
use super::group_configs::describe_group;
use crate::authorization::{AclOperation, ResourceType};
use crate::authorizer::Authz;
use crate::broker::Broker;
use crate::controller_calls::submit_and_apply;
use crate::errors::{authorization_failed_code, metadata_error_code};
use crate::request::RequestContext;

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;

fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

fn is_broker_resource(resource: &ConfigResource) -> bool {
    matches!(
        resource,
        ConfigResource::Broker(_) | ConfigResource::ClusterDefaultBroker
    )
}

/// Kafka's config resource types other than TOPIC and BROKER, each authorized on its own
/// resource (a BROKER_LOGGER or CLIENT_METRICS on the cluster, a GROUP on the group).
const RESOURCE_BROKER_LOGGER: i8 = 8;
const RESOURCE_CLIENT_METRICS: i8 = 16;
const RESOURCE_GROUP: i8 = 32;

/// Kafka's check of `op` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config resource, and its
/// code and default message when refused (ConfigHelper and KafkaApis). An unknown type is
/// not checked here: it is refused as unknown.
fn refused(
    authz: &Authz<'_>,
    op: AclOperation,
    resource_type: i8,
    name: &str,
) -> Option<(i16, &'static str)> {
    let (resource, message) = match resource_type {
        RESOURCE_TOPIC => (ResourceType::Topic, "Topic authorization failed."),
        RESOURCE_GROUP => (ResourceType::Group, "Group authorization failed."),
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER | RESOURCE_CLIENT_METRICS => {
            (ResourceType::Cluster, "Cluster authorization failed.")
        }
        _ => return None,
    };
    let allowed = match resource {
        ResourceType::Cluster => authz.allows_cluster(op),
        _ => authz.allows(op, resource, name),
    };
    (!allowed).then(|| (authorization_failed_code(resource), message))
}

/// Turns a wire resource into a domain one, or the error Kafka gives for it.
fn resource(
    broker: &Arc<Broker>,
    resource_type: i8,
    name: &str,
) -> Result<ConfigResource, (i16, String)> {
    match resource_type {
        RESOURCE_TOPIC => {
            if broker.image().topic(name).is_none() {
                return Err((
                    ResponseError::UnknownTopicOrPartition.code(),
                    format!("Topic {name} does not exist"),
                ));
            }
            Ok(ConfigResource::Topic(name.to_string()))
        }
        // Any group id, also one of a group that does not exist (as Kafka); the empty id is
        // refused by each API with Kafka's own text.
        RESOURCE_GROUP => Ok(ConfigResource::Group(name.to_string())),
        RESOURCE_BROKER if name.is_empty() => Ok(ConfigResource::ClusterDefaultBroker),
        RESOURCE_BROKER => match name.parse::<i32>() {
            Ok(id) if broker.image().broker(id).is_some() => Ok(ConfigResource::Broker(id)),
            Ok(id) => Err((
                ResponseError::InvalidRequest.code(),
                format!("Broker {id} is not registered"),
            )),
            Err(_) => Err((
                ResponseError::InvalidRequest.code(),
                format!("Invalid broker id {name}"),
            )),
        },
        other => Err((
            ResponseError::InvalidRequest.code(),
            format!("Unsupported resource type {other}"),
        )),
    }
}

pub fn describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let version = ctx.version();
    let include_synonyms = version >= 1 && request.include_synonyms;
    let image = broker.image();
    let static_props = broker.static_props();
    let authz = broker.authz(ctx);
    let results = request
        .resources
        .into_iter()
        .map(|r| {
            let name = r.resource_name.to_string();
            let base = DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone());
            let wanted = |key: &str| {
                r.configuration_keys
                    .as_ref()
                    .map(|keys| keys.iter().any(|k| k.as_str() == key))
                    .unwrap_or(true)
            };
            if let Some((code, message)) = refused(
                &authz,
                AclOperation::DescribeConfigs,
                r.resource_type,
                &name,
            ) {
                return base
                    .with_error_code(code)
                    .with_error_message(Some(s(message)));
            }
            let parsed = match resource(broker, r.resource_type, &name) {
                Ok(p) => p,
                Err((code, message)) => {
                    return base
                        .with_error_code(code)
                        .with_error_message(Some(s(message)))
                }
            };
            let configs: Vec<DescribeConfigsResourceResult> = match parsed {
                ConfigResource::Topic(topic) => resolve_topic_config_for_broker(
                    &image,
                    &topic,
                    Some(broker.node_id()),
                    &static_props,
                )
                .into_iter()
                .filter(|c| wanted(&c.name))
                .map(|c| {
                    let synonyms = if include_synonyms {
                        c.synonyms
                            .iter()
                            .map(|syn| {
                                DescribeConfigsSynonym::default()
                                    .with_name(s(syn.name.clone()))
                                    .with_value(if c.sensitive {
                                        None
                                    } else {
                                        Some(s(syn.value.clone()))
                                    })
                                    .with_source(syn.source.id())
                            })
                            .collect()
                    } else {
                        Vec::new()
                    };
                    DescribeConfigsResourceResult::default()
                        .with_name(s(c.name))
                        .with_value(if c.sensitive { None } else { c.value.map(s) })
                        .with_read_only(c.read_only)
                        .with_config_source(c.source.id())
                        .with_is_sensitive(c.sensitive)
                        .with_synonyms(synonyms)
                        .with_config_type(c.config_type.id())
                })
                .collect(),
                ConfigResource::Broker(id) if id != broker.node_id() => {
                    // As Kafka: a broker describes only itself (or the cluster defaults).
                    return base
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(s(format!(
                        "Unexpected broker id, expected {} or empty string, but received {name}",
                        broker.node_id()
                    ))));
                }
                ConfigResource::Broker(id) => describe_broker(&BrokerConfigSources {
                    per_broker: image.broker_configs(id),
                    cluster_default: image.cluster_default_broker_configs(),
                    static_props: &broker.config.properties,
                })
                .into_iter()
                .filter(|e| wanted(&e.name))
                .map(|e| broker_entry(e, include_synonyms))
                .collect(),
                ConfigResource::ClusterDefaultBroker => describe_cluster_default(&image)
                    .into_iter()
                    .filter(|e| wanted(&e.name))
                    .map(|e| broker_entry(e, include_synonyms))
                    .collect(),
                ConfigResource::Group(group_id) if group_id.is_empty() => {
                    return base
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(s("Group name must not be empty")));
                }
                ConfigResource::Group(group_id) => {
                    describe_group(image.group_configs(&group_id), &broker.config.properties)
                        .into_iter()
                        .filter(|e| wanted(&e.name))
                        .map(|e| broker_entry(e, include_synonyms))
                        .collect()
                }
            };
            base.with_configs(configs)
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

/// A broker config entry on the wire.
fn broker_entry(e: BrokerConfigEntry, include_synonyms: bool) -> DescribeConfigsResourceResult {
    let synonyms = if include_synonyms {
        e.synonyms
            .into_iter()
            .map(|(name, value, source)| {
                DescribeConfigsSynonym::default()
                    .with_name(s(name))
                    .with_value(value.map(s))
                    .with_source(source.id())
            })
            .collect()
    } else {
        Vec::new()
    };
    DescribeConfigsResourceResult::default()
        .with_name(s(e.name))
        .with_value(e.value.map(s))
        .with_read_only(e.read_only)
        .with_config_source(e.source.id())
        .with_is_sensitive(e.sensitive)
        .with_synonyms(synonyms)
        .with_config_type(e.config_type)
}

/// Runs an alter request on the controller and maps each resource's outcome.
async fn run_alter(
    broker: &Arc<Broker>,
    request: ControllerRequest,
    names: &[(i8, String)],
) -> Vec<(i8, String, i16, Option<String>)> {
    match submit_and_apply(broker, request).await {
        Ok(ControllerResponse::AlterConfigs(results)) => results
            .into_iter()
            .zip(names.iter())
            .map(|((_, r), (rt, name))| match r {
                Ok(()) => (*rt, name.clone(), 0, None),
                Err(e) => {
                    let (code, message) = metadata_error_code(&e);
                    (*rt, name.clone(), code, Some(message))
                }
            })
            .collect(),
        Ok(_) => names
            .iter()
            .map(|(rt, n)| {
                (
                    *rt,
                    n.clone(),
                    ResponseError::UnknownServerError.code(),
                    None,
                )
            })
            .collect(),
        Err(e) => {
            let (code, message) = metadata_error_code(&e);
            names
                .iter()
                .map(|(rt, n)| (*rt, n.clone(), code, Some(message.clone())))
                .collect()
        }
    }
}

/// Each resource needs ALTER_CONFIGS (on the cluster for a broker, on the group for a group).
pub async fn alter(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let authz = broker.authz(ctx);
    let mut out = Vec::new();
    let mut resources = Vec::new();
    let mut names = Vec::new();
    for r in request.resources {
        let name = r.resource_name.to_string();
        if let Some((code, _)) = refused(&authz, AclOperation::AlterConfigs, r.resource_type, &name)
        {
            out.push((r.resource_type, name, code, None));
            continue;
        }
        match resource(broker, r.resource_type, &name) {
            Ok(res) => {
                let configs: Vec<(String, Option<String>)> = r
                    .configs
                    .into_iter()
                    .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string())))
                    .collect();
                if is_broker_resource(&res) {
                    if let Err(refused) = check_alter(&configs) {
                        out.push((r.resource_type, name, refused.code, Some(refused.message)));
                        continue;
                    }
                }
                resources.push((res, configs));
                names.push((r.resource_type, name));
            }
            Err((code, message)) => out.push((r.resource_type, name, code, Some(message))),
        }
    }
    if !resources.is_empty() {
        out.extend(
            run_alter(
                broker,
                ControllerRequest::AlterConfigs {
                    resources,
                    validate_only: request.validate_only,
                },
                &names,
            )
            .await,
        );
    }
    AlterConfigsResponse::default().with_responses(
        out.into_iter()
            .map(|(rt, name, code, message)| {
                alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_resource_type(rt)
                    .with_resource_name(s(name))
                    .with_error_code(code)
                    .with_error_message(message.map(s))
            })
            .collect(),
    )
}

/// Each resource needs ALTER_CONFIGS (on the cluster for a broker, on the group for a group).
pub async fn incremental_alter(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let authz = broker.authz(ctx);
    let mut out = Vec::new();
    let mut resources = Vec::new();
    let mut names = Vec::new();
    'resources: for r in request.resources {
        let name = r.resource_name.to_string();
        if let Some((code, _)) = refused(&authz, AclOperation::AlterConfigs, r.resource_type, &name)
        {
            out.push((r.resource_type, name, code, None));
            continue;
        }
        let parsed = match resource(broker, r.resource_type, &name) {
            Ok(res) => res,
            Err((code, message)) => {
                out.push((r.resource_type, name, code, Some(message)));
                continue;
            }
        };
        let mut ops = Vec::with_capacity(r.configs.len());
        for c in r.configs {
            let op = match c.config_operation {
                0 => AlterConfigOpType::Set,
                1 => AlterConfigOpType::Delete,
                2 => AlterConfigOpType::Append,
                3 => AlterConfigOpType::Subtract,
                other => {
                    out.push((
                        r.resource_type,
                        name,
                        ResponseError::InvalidRequest.code(),
                        Some(format!("Unknown config operation {other}")),
                    ));
                    continue 'resources;
                }
            };
            ops.push(AlterConfigOp {
                name: c.name.to_string(),
                op,
                value: c.value.map(|v| v.to_string()),
            });
        }
        if is_broker_resource(&parsed) {
            let changes: Vec<(String, Option<String>)> = ops
                .iter()
                .map(|o| {
                    let value = match o.op {
                        AlterConfigOpType::Delete => None,
                        _ => o.value.clone(),
                    };
                    (o.name.clone(), value)
                })
                .collect();
            if let Err(refused) = check_alter(&changes) {
                out.push((r.resource_type, name, refused.code, Some(refused.message)));
                continue;
            }
        }
        resources.push((parsed, ops));
        names.push((r.resource_type, name));
    }
    if !resources.is_empty() {
        out.extend(
            run_alter(
                broker,
                ControllerRequest::IncrementalAlterConfigs {
                    resources,
                    validate_only: request.validate_only,
                },
                &names,
            )
            .await,
        );
    }
    IncrementalAlterConfigsResponse::default().with_responses(
        out.into_iter()
            .map(|(rt, name, code, message)| {
                incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_resource_type(rt)
                    .with_resource_name(s(name))
                    .with_error_code(code)
                    .with_error_message(message.map(s))
            })
            .collect(),
    )
}

#[cfg(test)]
#[path = "configs_group_tests.rs"]
mod group_tests;
