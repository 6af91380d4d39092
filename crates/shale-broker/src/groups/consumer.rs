//! ConsumerGroupHeartbeat v0-v1 and ConsumerGroupDescribe v0-v1 (KIP-848): converted to the
//! coordinator's types and back, with the authorization Kafka's KafkaApis applies.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment as DescribedAssignment, DescribedGroup, Member,
    TopicPartitions as DescribedTopicPartitions,
};
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_group::consumer_types as domain;
use shale_group::GroupError;

use super::membership::client_host;
use super::{code, code_of};
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::authorization_failed_code;
use crate::request::RequestContext;

const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

fn s(value: impl Into<String>) -> StrBytes {
    StrBytes::from_string(value.into())
}

fn failed_heartbeat(code: i16, message: Option<String>) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse::default()
        .with_error_code(code)
        .with_error_message(message.map(s))
}

pub async fn consumer_group_heartbeat(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    if !broker.core.config.consumer_protocol_enabled {
        // Kafka answers so when `consumer` is not in group.coordinator.rebalance.protocols.
        return failed_heartbeat(ResponseError::UnsupportedVersion.code(), None);
    }
    let group_id = request.group_id.0.to_string();
    let authz = broker.authz(ctx);
    if !authz.allows(AclOperation::Read, ResourceType::Group, &group_id) {
        return failed_heartbeat(authorization_failed_code(ResourceType::Group), None);
    }
    // DESCRIBE on every topic named in the subscription (a regex is resolved by the
    // coordinator among the topics that exist).
    if let Some(names) = &request.subscribed_topic_names {
        let all_allowed = names
            .iter()
            .all(|name| authz.allows(AclOperation::Describe, ResourceType::Topic, name.0.as_str()));
        if !all_allowed {
            return failed_heartbeat(
                authorization_failed_code(ResourceType::Topic),
                Some("The group has subscribed topics which are not authorized.".to_string()),
            );
        }
    }
    broker.groups.ensure_offsets_topic(broker).await;
    let requested_group_id = group_id.clone();
    let domain_request = domain::ConsumerGroupHeartbeatRequest {
        api_version: ctx.version(),
        group_id,
        member_id: request.member_id.to_string(),
        member_epoch: request.member_epoch,
        instance_id: request.instance_id.as_ref().map(|v| v.to_string()),
        rack_id: request.rack_id.as_ref().map(|v| v.to_string()),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        subscribed_topic_names: request
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(|name| name.0.to_string()).collect()),
        subscribed_topic_regex: request
            .subscribed_topic_regex
            .as_ref()
            .map(|v| v.to_string()),
        server_assignor: request.server_assignor.as_ref().map(|v| v.to_string()),
        owned_partitions: request.topic_partitions.as_ref().map(|topics| {
            topics
                .iter()
                .map(|topic| (topic.topic_id, topic.partitions.clone()))
                .collect()
        }),
        client_id: ctx.header.client_id.clone().unwrap_or_default(),
        client_host: client_host(ctx),
    };
    match broker
        .groups
        .coordinator
        .consumer_group_heartbeat(domain_request)
        .await
    {
        Ok(answer) => ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(s(answer.member_id)))
            .with_member_epoch(answer.member_epoch)
            .with_heartbeat_interval_ms(answer.heartbeat_interval_ms)
            .with_assignment(answer.assignment.map(|assignment| {
                Assignment::default().with_topic_partitions(
                    assignment
                        .into_iter()
                        .map(|(topic_id, partitions)| {
                            TopicPartitions::default()
                                .with_topic_id(topic_id)
                                .with_partitions(partitions.into_iter().collect())
                        })
                        .collect(),
                )
            })),
        Err(error) => failed_heartbeat(
            code(&error),
            Some(heartbeat_error_message(broker, &requested_group_id, &error)),
        ),
    }
}

/// Kafka's message where it says more than the error's own text.
fn heartbeat_error_message(broker: &Broker, group_id: &str, error: &GroupError) -> String {
    match error {
        GroupError::NotConsumerGroup => format!("Group {group_id} is not a consumer group."),
        GroupError::UnsupportedAssignor(name) => format!(
            "ServerAssignor {name} is not supported. Supported assignors: {}.",
            broker.core.config.consumer_groups.assignors.join(", ")
        ),
        other => other.to_string(),
    }
}

/// Kafka's message for a described group's error.
fn describe_error_message(group_id: &str, error: &GroupError) -> String {
    match error {
        GroupError::GroupIdNotFound => format!("Group {group_id} not found."),
        GroupError::NotConsumerGroup => format!("Group {group_id} is not a consumer group."),
        other => other.to_string(),
    }
}

fn described_assignment(topics: Vec<domain::DescribedTopicPartitions>) -> DescribedAssignment {
    DescribedAssignment::default().with_topic_partitions(
        topics
            .into_iter()
            .map(|topic| {
                DescribedTopicPartitions::default()
                    .with_topic_id(topic.topic_id)
                    .with_topic_name(TopicName(s(topic.topic_name)))
                    .with_partitions(topic.partitions.into_iter().collect())
            })
            .collect(),
    )
}

/// The topics a described group uses: its members' subscriptions and assignments.
fn topics_used(group: &domain::DescribedConsumerGroup) -> BTreeSet<&str> {
    let mut topics = BTreeSet::new();
    for member in &group.members {
        topics.extend(member.subscribed_topic_names.iter().map(String::as_str));
        for topic in member.assignment.iter().chain(&member.target_assignment) {
            topics.insert(topic.topic_name.as_str());
        }
    }
    topics
}

pub async fn consumer_group_describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let authz = broker.authz(ctx);
    let (ids, refused): (Vec<String>, Vec<String>) = request
        .group_ids
        .iter()
        .map(|group| group.0.to_string())
        .partition(|group| authz.allows(AclOperation::Describe, ResourceType::Group, group));
    let described = if ids.is_empty() {
        Vec::new()
    } else {
        broker.groups.coordinator.consumer_group_describe(ids).await
    };
    let refused = refused.into_iter().map(|group_id| {
        DescribedGroup::default()
            .with_group_id(GroupId(s(group_id)))
            .with_error_code(authorization_failed_code(ResourceType::Group))
            .with_authorized_operations(OPERATIONS_NOT_REQUESTED)
    });
    let groups = described
        .into_iter()
        .map(|group| {
            // A group whose topics the principal may not describe is answered as an error,
            // so that its members' topics are not disclosed (as Kafka).
            let hidden_topic = group.error.is_none()
                && topics_used(&group)
                    .iter()
                    .any(|topic| !authz.allows(AclOperation::Describe, ResourceType::Topic, topic));
            if hidden_topic {
                return DescribedGroup::default()
                    .with_group_id(GroupId(s(group.group_id)))
                    .with_error_code(authorization_failed_code(ResourceType::Topic))
                    .with_error_message(Some(s(
                        "The described group uses topics that the client is not authorized to describe.",
                    )))
                    .with_authorized_operations(OPERATIONS_NOT_REQUESTED);
            }
            let operations = if request.include_authorized_operations && group.error.is_none() {
                authz.authorized_operations(ResourceType::Group, &group.group_id)
            } else {
                OPERATIONS_NOT_REQUESTED
            };
            DescribedGroup::default()
                .with_error_code(code_of(&group.error))
                .with_error_message(
                    group
                        .error
                        .as_ref()
                        .map(|error| s(describe_error_message(&group.group_id, error))),
                )
                .with_group_id(GroupId(s(group.group_id)))
                .with_group_state(s(group.group_state))
                .with_group_epoch(group.group_epoch)
                .with_assignment_epoch(group.assignment_epoch)
                .with_assignor_name(s(group.assignor_name))
                .with_members(
                    group
                        .members
                        .into_iter()
                        .map(|member| {
                            Member::default()
                                .with_member_id(s(member.member_id))
                                .with_instance_id(member.instance_id.map(s))
                                .with_rack_id(member.rack_id.map(s))
                                .with_member_epoch(member.member_epoch)
                                .with_client_id(s(member.client_id))
                                .with_client_host(s(member.client_host))
                                .with_subscribed_topic_names(
                                    member
                                        .subscribed_topic_names
                                        .into_iter()
                                        .map(|name| TopicName(s(name)))
                                        .collect(),
                                )
                                .with_subscribed_topic_regex(member.subscribed_topic_regex.map(s))
                                .with_assignment(described_assignment(member.assignment))
                                .with_target_assignment(described_assignment(
                                    member.target_assignment,
                                ))
                                .with_member_type(member.member_type)
                        })
                        .collect(),
                )
                .with_authorized_operations(operations)
        })
        .chain(refused)
        .collect();
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}
