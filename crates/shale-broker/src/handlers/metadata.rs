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
use crate::authorization::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::broker::Broker;
use crate::errors::authorization_failed_code;
use crate::request::RequestContext;
use crate::topic_creation::auto_create;

const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

enum Wanted {
    All,
    Some(Vec<(Option<String>, Uuid)>),
}

/// One topic of the answer, before it is written.
enum Entry {
    Found(String),
    Unknown(Option<String>, Uuid),
    /// Refused: TOPIC_AUTHORIZATION_FAILED with the name or the id the client gave.
    Refused(Option<String>, Uuid),
}

/// Authorization as Kafka's KafkaApis: a topic the principal may not DESCRIBE is left out of
/// an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when named (without its id
/// when named by name, without its name when named by id); a missing topic is auto-created
/// only with CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: MetadataRequest,
) -> MetadataResponse {
    let version = ctx.version();
    let wanted = match request.topics {
        None => Wanted::All,
        Some(ref t) if t.is_empty() && version == 0 => Wanted::All,
        // Named by id when any topic carries one (v10+): Kafka then answers by id only and
        // ignores the names, which the Java client leaves "" rather than null.
        Some(t) if t.iter().any(|t| !t.topic_id.is_nil()) => {
            // Kafka collects the ids into a set: each is answered once.
            let mut seen = std::collections::HashSet::new();
            Wanted::Some(
                t.into_iter()
                    .map(|t| t.topic_id)
                    .filter(|id| !id.is_nil() && seen.insert(*id))
                    .map(|id| (None, id))
                    .collect(),
            )
        }
        Some(t) => Wanted::Some(
            t.into_iter()
                .map(|t| (t.name.map(|n| n.0.to_string()), t.topic_id))
                .collect(),
        ),
    };
    let allow_auto_create = version < 4 || request.allow_auto_topic_creation;
    let authz = broker.authz(ctx);
    let described = |name: &str| authz.allows(AclOperation::Describe, ResourceType::Topic, name);
    let may_create_any = authz.allows_cluster(AclOperation::Create);
    let may_create = |name: &str| {
        may_create_any || authz.allows(AclOperation::Create, ResourceType::Topic, name)
    };

    // Auto-create unknown topics first so that the answer already shows their leaders.
    if let Wanted::Some(ref list) = wanted {
        if allow_auto_create && broker.config.auto_create_topics_enable {
            let image = broker.image();
            let missing: Vec<String> = list
                .iter()
                .filter_map(|(name, _)| name.clone())
                .filter(|n| image.topic(n).is_none() && described(n) && may_create(n))
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
    let auto_creating = allow_auto_create && broker.config.auto_create_topics_enable;
    let entries: Vec<Entry> = match wanted {
        Wanted::All => image
            .topics()
            .filter(|t| described(&t.name))
            .map(|t| Entry::Found(t.name.clone()))
            .collect(),
        Wanted::Some(list) => list
            .into_iter()
            .map(|(name, id)| match name {
                Some(n) if !described(&n) => Entry::Refused(Some(n), Uuid::nil()),
                Some(n) if image.topic(&n).is_some() => Entry::Found(n),
                Some(n) if auto_creating && !may_create(&n) => Entry::Refused(Some(n), Uuid::nil()),
                Some(n) => Entry::Unknown(Some(n), id),
                None => match image.topic_by_id(id) {
                    None => Entry::Unknown(None, id),
                    Some(t) if !described(&t.name) => Entry::Refused(None, id),
                    Some(t) => Entry::Found(t.name.clone()),
                },
            })
            .collect(),
    };
    let operations = |name: &str| {
        if include_ops {
            authz.authorized_operations(ResourceType::Topic, name)
        } else {
            OPERATIONS_NOT_REQUESTED
        }
    };
    let topics = entries
        .into_iter()
        .map(|entry| match entry {
            Entry::Found(name) => match image.topic(&name) {
                Some(t) => topic_entry(&image, t, operations(&name)),
                None => unknown_topic(Some(name), Uuid::nil()),
            },
            Entry::Unknown(name, id) => {
                let ops = name.as_deref().map_or(OPERATIONS_NOT_REQUESTED, operations);
                unknown_topic(name, id).with_topic_authorized_operations(ops)
            }
            Entry::Refused(name, id) => MetadataResponseTopic::default()
                .with_error_code(authorization_failed_code(ResourceType::Topic))
                .with_name(name.map(|n| TopicName(StrBytes::from_string(n))))
                .with_topic_id(id)
                .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED),
        })
        .collect();

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
            if authz.allows_cluster(AclOperation::Describe) {
                authz.authorized_operations(ResourceType::Cluster, CLUSTER_NAME)
            } else {
                0
            }
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

fn topic_entry(image: &MetadataImage, t: &TopicImage, operations: i32) -> MetadataResponseTopic {
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
        .with_topic_authorized_operations(operations)
}
