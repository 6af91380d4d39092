//! FindCoordinator v0-v6: the leader of the group's `__consumer_offsets` partition, or of the
//! transactional id's `__transaction_state` partition.

use std::sync::Arc;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::OFFSETS_TOPIC;
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::authorization_failed_code;
use crate::request::RequestContext;

/// Key type of a consumer group; 1 is a transactional id.
const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;
/// KIP-932: the share coordinator of `groupId:topicId:partition` (brokers ask it, v6+).
const KEY_TYPE_SHARE: i8 = 2;

pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let version = ctx.version();
    let keys: Vec<String> = if version >= 4 {
        request
            .coordinator_keys
            .iter()
            .map(|k| k.to_string())
            .collect()
    } else {
        vec![request.key.to_string()]
    };
    let mut coordinators = Vec::with_capacity(keys.len());
    for key in keys {
        coordinators.push(find(broker, ctx, request.key_type, key).await);
    }
    if version >= 4 {
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let Some(c) = coordinators.pop() else {
        return FindCoordinatorResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code())
            .with_node_id(BrokerId(-1))
            .with_port(-1);
    };
    FindCoordinatorResponse::default()
        .with_error_code(c.error_code)
        .with_error_message(if version >= 1 { c.error_message } else { None })
        .with_node_id(c.node_id)
        .with_host(c.host)
        .with_port(c.port)
}

async fn find(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    key_type: i8,
    key: String,
) -> Coordinator {
    let failed = |error: ResponseError, message: &str| {
        Coordinator::default()
            .with_key(StrBytes::from_string(key.clone()))
            .with_node_id(BrokerId(-1))
            .with_host(StrBytes::from_static_str(""))
            .with_port(-1)
            .with_error_code(error.code())
            .with_error_message(Some(StrBytes::from_string(message.to_owned())))
    };
    // DESCRIBE on the group or the transactional id, checked first as in Kafka.
    let checked = match key_type {
        KEY_TYPE_GROUP => Some(ResourceType::Group),
        KEY_TYPE_TRANSACTION => Some(ResourceType::TransactionalId),
        _ => None,
    };
    if key_type == KEY_TYPE_SHARE {
        if ctx.version() < 6 {
            return failed(
                ResponseError::InvalidRequest,
                "Share coordinator lookup requires FindCoordinator version 6 or above.",
            );
        }
        if !broker
            .authz(ctx)
            .allows_cluster(AclOperation::ClusterAction)
        {
            return Coordinator::default()
                .with_key(StrBytes::from_string(key))
                .with_node_id(BrokerId(-1))
                .with_host(StrBytes::from_static_str(""))
                .with_port(-1)
                .with_error_code(crate::errors::cluster_authorization_failed_code());
        }
    }
    if let Some(resource) = checked {
        if !broker
            .authz(ctx)
            .allows(AclOperation::Describe, resource, &key)
        {
            return Coordinator::default()
                .with_key(StrBytes::from_string(key))
                .with_node_id(BrokerId(-1))
                .with_host(StrBytes::from_static_str(""))
                .with_port(-1)
                .with_error_code(authorization_failed_code(resource));
        }
    }
    let leader = match key_type {
        KEY_TYPE_GROUP => {
            if key.is_empty() {
                return failed(ResponseError::InvalidRequest, "the group id is empty");
            }
            broker.groups.ensure_offsets_topic(broker).await;
            let image = broker.image();
            let partition = broker.groups.coordinator.partition_for(&key);
            image
                .topic(OFFSETS_TOPIC)
                .and_then(|t| t.partition(partition))
                .map(|p| p.leader)
                .unwrap_or(-1)
        }
        KEY_TYPE_TRANSACTION => {
            if key.is_empty() {
                return failed(
                    ResponseError::InvalidRequest,
                    "the transactional id is empty",
                );
            }
            broker.txn.coordinator_leader(broker, &key).await
        }
        KEY_TYPE_SHARE => {
            let Some(share_key) = shale_share::coordinator::parse_coordinator_key(&key) else {
                return failed(
                    ResponseError::InvalidRequest,
                    "Invalid coordinator key for share coordinator.",
                );
            };
            broker.share.coordinator.ensure_state_topic(broker).await;
            broker
                .share
                .coordinator
                .leader_of(&broker.image(), &share_key)
                .unwrap_or(-1)
        }
        _ => {
            return failed(
                ResponseError::InvalidRequest,
                "unknown coordinator key type",
            )
        }
    };
    let image = broker.image();
    if leader < 0 {
        return failed(
            ResponseError::CoordinatorNotAvailable,
            "the coordinator is not available",
        );
    }
    let endpoint = if leader == broker.node_id() {
        broker
            .advertised(&ctx.listener_name)
            .map(|l| (l.host.clone(), l.port))
    } else {
        image.broker(leader).and_then(|b| {
            b.listener(&ctx.listener_name)
                .map(|e| (e.host.clone(), e.port))
        })
    };
    let Some((host, port)) = endpoint else {
        return failed(
            ResponseError::CoordinatorNotAvailable,
            "the coordinator has no endpoint on this listener",
        );
    };
    Coordinator::default()
        .with_key(StrBytes::from_string(key))
        .with_node_id(BrokerId(leader))
        .with_host(StrBytes::from_string(host))
        .with_port(i32::from(port))
        .with_error_code(0)
        .with_error_message(None)
}
