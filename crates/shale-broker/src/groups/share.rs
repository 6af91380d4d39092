//! The share group APIs of the group coordinator: ShareGroupHeartbeat (answered, then the
//! share-partitions it newly assigns get their state initialized on their share coordinator,
//! and the group coordinator is told which were) and ShareGroupDescribe.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::messages::share_group_describe_response::{
    Assignment as DescribedAssignment, DescribedGroup, Member, TopicPartitions as DescribedTopic,
};
use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ShareGroupDescribeRequest, ShareGroupDescribeResponse, ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shale_group::share_types::{ShareGroupHeartbeatInput, ShareStateInitialization};
use shale_group::GroupError;
use shale_share::state::SharePartitionKey;
use tracing::warn;
use uuid::Uuid;

use super::code;
use super::membership::client_host;
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::authorization_failed_code;
use crate::request::RequestContext;
use crate::share::persister::StateCall;

fn s(text: String) -> StrBytes {
    StrBytes::from_string(text)
}

fn failed(code: i16, message: Option<String>) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse::default()
        .with_error_code(code)
        .with_error_message(message.map(s))
}

pub async fn share_group_heartbeat(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    let group_id = request.group_id.0.to_string();
    let authz = broker.authz(ctx);
    if !authz.allows(AclOperation::Read, ResourceType::Group, &group_id) {
        return failed(authorization_failed_code(ResourceType::Group), None);
    }
    if let Some(names) = &request.subscribed_topic_names {
        let all_allowed = names
            .iter()
            .all(|name| authz.allows(AclOperation::Describe, ResourceType::Topic, name.0.as_str()));
        if !all_allowed {
            return failed(
                authorization_failed_code(ResourceType::Topic),
                Some("The group has subscribed topics which are not authorized.".to_string()),
            );
        }
    }
    broker.groups.ensure_offsets_topic(broker).await;
    let input = ShareGroupHeartbeatInput {
        group_id,
        member_id: request.member_id.to_string(),
        member_epoch: request.member_epoch,
        rack_id: request.rack_id.as_ref().map(|v| v.to_string()),
        subscribed_topic_names: request
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(|name| name.0.to_string()).collect()),
        client_id: ctx.header.client_id.clone().unwrap_or_default(),
        client_host: client_host(ctx),
    };
    let outcome = match broker.groups.coordinator.share_group_heartbeat(input).await {
        Ok(outcome) => outcome,
        Err(error) => return failed(code(&error), Some(error.to_string())),
    };
    if let Some(initialize) = outcome.initialize {
        let broker = broker.clone();
        tokio::spawn(async move {
            initialize_state(&broker, initialize).await;
        });
    }
    let answer = outcome.response;
    if let Some(error) = &answer.error {
        return failed(
            code(error),
            Some(answer.error_message.unwrap_or_else(|| error.to_string())),
        );
    }
    ShareGroupHeartbeatResponse::default()
        .with_member_id(answer.member_id.map(s))
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
        }))
}

/// Kafka's GroupCoordinatorService after a heartbeat that assigned new share-partitions:
/// InitializeShareGroupState for each on its share coordinator (the group epoch as the state
/// epoch), then the outcome reported to the group coordinator, which assigns those that
/// succeeded from the next heartbeat on and asks again for the others later.
pub(crate) async fn initialize_state(
    broker: &Arc<Broker>,
    initialize: ShareStateInitialization,
) -> BTreeMap<Uuid, (i16, String)> {
    let mut errors: BTreeMap<Uuid, (i16, String)> = BTreeMap::new();
    let share = &broker.share;
    share.coordinator.ensure_state_topic(&broker.core).await;
    let mut done: BTreeMap<Uuid, BTreeSet<i32>> = BTreeMap::new();
    let mut failed: BTreeMap<Uuid, BTreeSet<i32>> = BTreeMap::new();
    for (topic_id, partitions) in &initialize.topics {
        for (&partition, &start_offset) in partitions {
            let key = SharePartitionKey {
                group_id: initialize.group_id.clone(),
                topic_id: *topic_id,
                partition,
            };
            let call = StateCall::Initialize {
                state_epoch: initialize.group_epoch,
                start_offset,
            };
            match share
                .persister
                .call(&broker.core, &share.coordinator, &key, call)
                .await
            {
                Ok(_) => {
                    done.entry(*topic_id).or_default().insert(partition);
                }
                Err(e) => {
                    warn!(group = %initialize.group_id, %topic_id, partition, "share state not initialized: {e}");
                    failed.entry(*topic_id).or_default().insert(partition);
                    errors.insert(*topic_id, crate::errors::persister_error_code(&e));
                }
            }
        }
    }
    let coordinator = &broker.groups.coordinator;
    if !done.is_empty() {
        if let Err(e) = coordinator
            .initialize_share_group_state(&initialize.group_id, initialize.group_epoch, done)
            .await
        {
            warn!(group = %initialize.group_id, "share state initialization not recorded: {e}");
        }
    }
    if !failed.is_empty() {
        if let Err(e) = coordinator
            .uninitialize_share_group_state(&initialize.group_id, failed)
            .await
        {
            warn!(group = %initialize.group_id, "share state initialization failure not recorded: {e}");
        }
    }
    errors
}

pub async fn share_group_describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ShareGroupDescribeRequest,
) -> ShareGroupDescribeResponse {
    let authz = broker.authz(ctx);
    let ids: Vec<String> = request.group_ids.iter().map(|g| g.0.to_string()).collect();
    let (allowed, refused): (Vec<String>, Vec<String>) = ids
        .iter()
        .cloned()
        .partition(|g| authz.allows(AclOperation::Describe, ResourceType::Group, g));
    let described = broker
        .groups
        .coordinator
        .share_group_describe(allowed)
        .await;
    let mut by_id: BTreeMap<String, DescribedGroup> = BTreeMap::new();
    for group in described {
        let topics_allowed = group.members.iter().all(|m| {
            m.assignment
                .iter()
                .all(|t| authz.allows(AclOperation::Describe, ResourceType::Topic, &t.topic_name))
        });
        let mut answer = DescribedGroup::default()
            .with_group_id(s(group.group_id.clone()).into())
            .with_error_code(group.error.as_ref().map(code).unwrap_or(0))
            .with_error_message(group.error_message.clone().map(s));
        if group.error.is_none() && !topics_allowed {
            answer = answer
                .with_error_code(authorization_failed_code(ResourceType::Topic))
                .with_error_message(Some(s(
                    "The described group uses topics that the client is not authorized to describe."
                        .to_string(),
                )));
        } else if group.error.is_none() {
            answer = answer
                .with_group_state(s(group.group_state))
                .with_group_epoch(group.group_epoch)
                .with_assignment_epoch(group.assignment_epoch)
                .with_assignor_name(s(group.assignor_name))
                .with_members(
                    group
                        .members
                        .into_iter()
                        .map(|m| {
                            Member::default()
                                .with_member_id(s(m.member_id))
                                .with_rack_id(m.rack_id.map(s))
                                .with_member_epoch(m.member_epoch)
                                .with_client_id(s(m.client_id))
                                .with_client_host(s(m.client_host))
                                .with_subscribed_topic_names(
                                    m.subscribed_topic_names
                                        .into_iter()
                                        .map(|n| TopicName(s(n)))
                                        .collect(),
                                )
                                .with_assignment(
                                    DescribedAssignment::default().with_topic_partitions(
                                        m.assignment
                                            .into_iter()
                                            .map(|t| {
                                                DescribedTopic::default()
                                                    .with_topic_id(t.topic_id)
                                                    .with_topic_name(TopicName(s(t.topic_name)))
                                                    .with_partitions(t.partitions)
                                            })
                                            .collect(),
                                    ),
                                )
                        })
                        .collect(),
                );
            if request.include_authorized_operations {
                answer = answer.with_authorized_operations(
                    authz.authorized_operations(ResourceType::Group, &group.group_id),
                );
            }
        }
        by_id.insert(group.group_id, answer);
    }
    let groups = ids
        .into_iter()
        .map(|id| {
            if refused.contains(&id) {
                return DescribedGroup::default()
                    .with_group_id(s(id).into())
                    .with_error_code(authorization_failed_code(ResourceType::Group));
            }
            by_id.remove(&id).unwrap_or_else(|| {
                DescribedGroup::default()
                    .with_group_id(s(id).into())
                    .with_error_code(kafka_protocol::ResponseError::NotCoordinator.code())
            })
        })
        .collect();
    ShareGroupDescribeResponse::default().with_groups(groups)
}

/// DeleteGroups' first step for share groups: the state of every share-partition of the empty
/// share groups among `group_ids`, deleted on its share coordinator. Returns the groups whose
/// state could not be deleted, with the error their DeleteGroups result carries.
pub async fn delete_share_state(
    broker: &Arc<Broker>,
    group_ids: &[String],
) -> Vec<(String, GroupError)> {
    let prepared = broker
        .groups
        .coordinator
        .prepare_share_groups_deletion(group_ids.to_vec())
        .await;
    let mut failed = Vec::new();
    for (group_id, topics) in prepared {
        let mut deleted = true;
        for (topic_id, partitions) in topics {
            deleted &= delete_topic_state(broker, &group_id, topic_id, &partitions)
                .await
                .is_none();
        }
        if !deleted {
            failed.push((group_id, GroupError::CoordinatorNotAvailable));
        }
    }
    failed
}

/// DeleteShareGroupState for `partitions` of one topic of `group_id`, each on its share
/// coordinator; the last failure's error code and message, if any failed.
pub(crate) async fn delete_topic_state(
    broker: &Arc<Broker>,
    group_id: &str,
    topic_id: Uuid,
    partitions: &BTreeSet<i32>,
) -> Option<(i16, String)> {
    let share = &broker.share;
    let mut failure = None;
    for &partition in partitions {
        let key = SharePartitionKey {
            group_id: group_id.to_string(),
            topic_id,
            partition,
        };
        if let Err(e) = share
            .persister
            .call(&broker.core, &share.coordinator, &key, StateCall::Delete)
            .await
        {
            warn!(group = %group_id, %topic_id, partition, "share state not deleted: {e}");
            failure = Some(crate::errors::persister_error_code(&e));
        }
    }
    failure
}
