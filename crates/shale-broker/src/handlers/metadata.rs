//! Metadata: brokers, controller, topics and partitions, with auto-creation.

use std::sync::Arc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_metadata::image::is_internal_topic;
use shale_metadata::{MetadataImage, PartitionImage, TopicImage};
use uuid::Uuid;

use super::leader_hints::listener_endpoint;
use crate::broker::Broker;
use crate::request::RequestContext;
use crate::topic_creation::auto_create;

/// Authorized-operation bits of a topic with no authorizer (READ..ALTER_CONFIGS).
pub const TOPIC_ALL_OPERATIONS: i32 =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
/// Cluster operations with no authorizer.
pub const CLUSTER_ALL_OPERATIONS: i32 =
    (1 << 4) | (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

enum Wanted {
    All,
    Some(Vec<(Option<String>, Uuid)>),
}

pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: MetadataRequest,
) -> MetadataResponse {
    let version = ctx.version();
    let wanted = match request.topics {
        None => Wanted::All,
        Some(ref t) if t.is_empty() && version == 0 => Wanted::All,
        Some(t) => Wanted::Some(
            t.into_iter()
                .map(|t| (t.name.map(|n| n.0.to_string()), t.topic_id))
                .collect(),
        ),
    };
    let allow_auto_create = version < 4 || request.allow_auto_topic_creation;

    // Auto-create unknown topics first so that the answer already shows their leaders.
    if let Wanted::Some(ref list) = wanted {
        if allow_auto_create && broker.config.auto_create_topics_enable {
            let image = broker.image();
            let missing: Vec<String> = list
                .iter()
                .filter_map(|(name, _)| name.clone())
                .filter(|n| image.topic(n).is_none())
                .collect();
            // Internal topics are created by their coordinators, with their own settings.
            if missing.iter().any(|n| n == crate::groups::OFFSETS_TOPIC) {
                broker.groups.ensure_offsets_topic(broker).await;
            }
            let missing: Vec<String> = missing
                .into_iter()
                .filter(|n| !is_internal_topic(n))
                .collect();
            if !missing.is_empty() {
                auto_create(broker, missing).await;
            }
        }
    }

    let image = broker.image();
    let include_ops = version >= 8 && request.include_topic_authorized_operations;
    let topics = match wanted {
        Wanted::All => image
            .topics()
            .map(|t| topic_entry(&image, t, include_ops))
            .collect(),
        Wanted::Some(list) => list
            .into_iter()
            .map(|(name, id)| {
                let found = match &name {
                    Some(n) => image.topic(n),
                    None => image.topic_by_id(id),
                };
                match found {
                    Some(t) => topic_entry(&image, t, include_ops),
                    None => unknown_topic(name, id),
                }
            })
            .collect(),
    };

    let listener = ctx.listener_name.as_ref();
    let brokers = image
        .brokers()
        .filter(|b| !b.fenced)
        .filter_map(|b| {
            let ep = listener_endpoint(b, listener)?;
            Some(
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(b.broker_id))
                    .with_host(StrBytes::from_string(ep.host.clone()))
                    .with_port(ep.port as i32)
                    .with_rack(b.rack.clone().map(StrBytes::from_string)),
            )
        })
        .collect();
    let cluster_ops =
        if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
            CLUSTER_ALL_OPERATIONS
        } else {
            OPERATIONS_NOT_REQUESTED
        };
    MetadataResponse::default()
        .with_brokers(brokers)
        .with_cluster_id(Some(StrBytes::from_string(image.cluster_id.clone())))
        .with_controller_id(BrokerId(
            broker.metadata.active_controller_id().unwrap_or(-1),
        ))
        .with_topics(topics)
        .with_cluster_authorized_operations(cluster_ops)
}

fn unknown_topic(name: Option<String>, id: Uuid) -> MetadataResponseTopic {
    let code = if name.is_none() {
        ResponseError::UnknownTopicId.code()
    } else if name
        .as_deref()
        .is_some_and(|n| shale_metadata::validate_topic_name(n).is_ok())
    {
        ResponseError::UnknownTopicOrPartition.code()
    } else {
        ResponseError::InvalidTopicException.code()
    };
    MetadataResponseTopic::default()
        .with_error_code(code)
        .with_name(name.map(|n| TopicName(StrBytes::from_string(n))))
        .with_topic_id(id)
        .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
}

/// A partition's replicas whose broker is fenced or gone, as Metadata and
/// DescribeTopicPartitions report them.
pub(super) fn offline_replicas(image: &MetadataImage, p: &PartitionImage) -> Vec<i32> {
    p.replicas
        .iter()
        .copied()
        .filter(|r| image.broker(*r).is_none_or(|b| b.fenced))
        .collect()
}

/// LEADER_NOT_AVAILABLE for a leaderless partition, else none.
pub(super) fn partition_error_code(p: &PartitionImage) -> i16 {
    if p.leader < 0 {
        ResponseError::LeaderNotAvailable.code()
    } else {
        0
    }
}

fn topic_entry(image: &MetadataImage, t: &TopicImage, include_ops: bool) -> MetadataResponseTopic {
    let partitions = t
        .partitions
        .iter()
        .map(|(&index, p)| {
            let offline: Vec<BrokerId> = offline_replicas(image, p)
                .into_iter()
                .map(BrokerId)
                .collect();
            MetadataResponsePartition::default()
                .with_error_code(partition_error_code(p))
                .with_partition_index(index)
                .with_leader_id(BrokerId(p.leader))
                .with_leader_epoch(p.leader_epoch)
                .with_replica_nodes(p.replicas.iter().map(|r| BrokerId(*r)).collect())
                .with_isr_nodes(p.isr.iter().map(|r| BrokerId(*r)).collect())
                .with_offline_replicas(offline)
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(t.name.clone()))))
        .with_topic_id(t.topic_id)
        .with_is_internal(is_internal_topic(&t.name))
        .with_partitions(partitions)
        .with_topic_authorized_operations(if include_ops {
            TOPIC_ALL_OPERATIONS
        } else {
            OPERATIONS_NOT_REQUESTED
        })
}
