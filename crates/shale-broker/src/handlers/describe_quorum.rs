//! DescribeQuorum (API 55): the metadata quorum as its leader sees it, for
//! `kafka-metadata-quorum.sh describe --status / --replication`. Any node answers: it asks the
//! leader, as Kafka's brokers forward the request to the active controller.

use std::sync::Arc;

use kafka_protocol::messages::describe_quorum_response::{
    Listener as QuorumListener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{
    BrokerId, DescribeQuorumRequest, DescribeQuorumResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_metadata::MetadataError;

use crate::broker::Broker;
use crate::request::RequestContext;

/// The one partition of the metadata log, named as Kafka names it.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

fn replica(state: &shale_metadata::ReplicaState) -> ReplicaState {
    ReplicaState::default()
        .with_replica_id(BrokerId(state.replica_id))
        .with_log_end_offset(state.log_end_offset)
        .with_last_fetch_timestamp(state.last_fetch_timestamp_ms)
        .with_last_caught_up_timestamp(state.last_caught_up_timestamp_ms)
}

pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let asks_metadata_log = request.topics.len() == 1
        && request.topics[0].topic_name.0.as_str() == METADATA_TOPIC
        && request.topics[0].partitions.len() == 1
        && request.topics[0].partitions[0].partition_index == 0;
    if !asks_metadata_log {
        let topics = request
            .topics
            .into_iter()
            .map(|t| {
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        PartitionData::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                    })
                    .collect();
                TopicData::default()
                    .with_topic_name(t.topic_name)
                    .with_partitions(partitions)
            })
            .collect();
        return DescribeQuorumResponse::default().with_topics(topics);
    }
    let partition = match broker.metadata.describe_quorum().await {
        Ok(quorum) => PartitionData::default()
            .with_leader_id(BrokerId(quorum.leader_id))
            .with_leader_epoch(quorum.leader_epoch)
            .with_high_watermark(quorum.high_watermark)
            .with_current_voters(quorum.voters.iter().map(replica).collect())
            .with_observers(quorum.observers.iter().map(replica).collect()),
        Err(err) => {
            let code = match err {
                MetadataError::NotController | MetadataError::ShutDown => {
                    ResponseError::NotLeaderOrFollower.code()
                }
                _ => ResponseError::UnknownServerError.code(),
            };
            let message = (ctx.version() >= 2).then(|| StrBytes::from_string(err.to_string()));
            PartitionData::default()
                .with_error_code(code)
                .with_error_message(message)
                .with_leader_id(BrokerId(-1))
                .with_leader_epoch(-1)
                .with_high_watermark(-1)
        }
    };
    DescribeQuorumResponse::default()
        .with_topics(vec![TopicData::default()
            .with_topic_name(TopicName(StrBytes::from_static_str(METADATA_TOPIC)))
            .with_partitions(vec![partition.with_partition_index(0)])])
        .with_nodes(voter_nodes(broker))
}

/// The voters' controller endpoints (version 2); a single node has no controller listener
/// and reports none.
fn voter_nodes(broker: &Broker) -> Vec<Node> {
    let Some(listener_name) = broker.config.controller_listener_names.first() else {
        return Vec::new();
    };
    broker
        .config
        .controller_quorum_voters
        .iter()
        .map(|voter| {
            Node::default()
                .with_node_id(BrokerId(voter.node_id))
                .with_listeners(vec![QuorumListener::default()
                    .with_name(StrBytes::from_string(listener_name.clone()))
                    .with_host(StrBytes::from_string(voter.host.clone()))
                    .with_port(voter.port)])
        })
        .collect()
}
