//! One module per API family.

pub mod api_versions;
pub(crate) mod broker_configs;
pub mod cluster;
pub mod configs;
pub mod delete_records;
pub mod describe_quorum;
pub mod describe_topic_partitions;
pub mod fetch;
pub(crate) mod leader_hints;
pub mod list_offsets;
pub mod metadata;
pub mod produce;
pub mod producer_ids;
pub mod topics;

use std::sync::Arc;

use kafka_protocol::ResponseError;
use shale_log::TopicPartition;

use crate::partitions::Partition;
use crate::Broker;

/// Looks a partition up and checks the client's leader epoch, as every leader-only API does.
pub(crate) fn leader_partition(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
) -> Result<Arc<Partition>, i16> {
    let image = broker.image();
    let Some(t) = image.topic(topic) else {
        return Err(ResponseError::UnknownTopicOrPartition.code());
    };
    if !t.partitions.contains_key(&partition) {
        return Err(ResponseError::UnknownTopicOrPartition.code());
    }
    let tp = TopicPartition {
        topic: topic.to_string(),
        partition,
    };
    let Some(p) = broker.replicas.get(&tp) else {
        return Err(ResponseError::NotLeaderOrFollower.code());
    };
    if p.leader_id() != broker.node_id() {
        return Err(ResponseError::NotLeaderOrFollower.code());
    }
    let epoch = p.leader_epoch();
    if current_leader_epoch >= 0 && current_leader_epoch < epoch {
        return Err(ResponseError::FencedLeaderEpoch.code());
    }
    if current_leader_epoch > epoch {
        return Err(ResponseError::UnknownLeaderEpoch.code());
    }
    Ok(p)
}
