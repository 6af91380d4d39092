//! A follower's Fetch on the wire: topics resolved (by id from v13, by name before), the
//! replica layer serves the partitions (`shale_replica::serve_follower_fetch`), and its
//! answers are written back in the request's topic order.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    EpochEndOffset, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use shale_replica::{FollowerRead, FollowerReadPartition, ReplicaContext, ReplicaError};
use uuid::Uuid;

use crate::broker::Broker;
use crate::errors::{log_error_code, replica_error_code};

/// The follower's broker id when `request` comes from a replica (Fetch v15+ carries it in
/// `ReplicaState`, older versions in `ReplicaId`).
pub fn follower_id(request: &FetchRequest, version: i16) -> Option<i32> {
    let id = if version >= 15 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    };
    (id >= 0).then_some(id)
}

struct Topic {
    name: String,
    topic_id: Uuid,
    partitions: usize,
}

/// Answers a follower's Fetch.
pub async fn handle(
    broker: &Arc<Broker>,
    version: i16,
    follower: i32,
    request: FetchRequest,
) -> FetchResponse {
    let image = broker.image();
    let mut topics = Vec::with_capacity(request.topics.len());
    let mut partitions = Vec::new();
    for t in request.topics {
        let found = if version >= 13 {
            image.topic_by_id(t.topic_id)
        } else {
            image.topic(t.topic.0.as_str())
        };
        let topic = match found {
            Some(f) => Ok(Arc::<str>::from(f.name.as_str())),
            None if version >= 13 => Err(ReplicaError::UnknownTopicId),
            None => Err(ReplicaError::UnknownTopicOrPartition),
        };
        topics.push(Topic {
            name: found
                .map(|f| f.name.clone())
                .unwrap_or_else(|| t.topic.0.to_string()),
            topic_id: found.map_or(t.topic_id, |f| f.topic_id),
            partitions: t.partitions.len(),
        });
        for p in t.partitions {
            partitions.push(FollowerReadPartition {
                topic: topic.clone(),
                partition: p.partition,
                fetch_offset: p.fetch_offset,
                current_leader_epoch: p.current_leader_epoch,
                last_fetched_epoch: p.last_fetched_epoch,
                partition_max_bytes: p.partition_max_bytes,
            });
        }
    }
    let ctx: Arc<dyn ReplicaContext> = broker.core.clone();
    let served = shale_replica::serve_follower_fetch(
        &ctx,
        FollowerRead {
            follower,
            max_wait_ms: request.max_wait_ms,
            min_bytes: request.min_bytes,
            max_bytes: request.max_bytes,
            partitions,
        },
    )
    .await;
    let mut served = served.into_iter();
    let responses = topics
        .iter()
        .map(|t| {
            let partitions = served
                .by_ref()
                .take(t.partitions)
                .map(partition_data)
                .collect();
            let r = FetchableTopicResponse::default().with_partitions(partitions);
            if version >= 13 {
                r.with_topic_id(t.topic_id)
            } else {
                r.with_topic(TopicName(StrBytes::from_string(t.name.clone())))
            }
        })
        .collect();
    FetchResponse::default()
        .with_session_id(0)
        .with_responses(responses)
}

fn partition_data(served: shale_replica::ServedPartition) -> PartitionData {
    let base = PartitionData::default()
        .with_partition_index(served.partition)
        .with_high_watermark(-1)
        .with_last_stable_offset(-1)
        .with_log_start_offset(-1)
        .with_preferred_read_replica(BrokerId(-1))
        .with_records(Some(Bytes::new()));
    let data = match served.result {
        Ok(data) => data,
        Err(e) => return base.with_error_code(replica_error_code(&e)),
    };
    let base = base
        .with_high_watermark(data.high_watermark)
        .with_last_stable_offset(data.last_stable_offset)
        .with_log_start_offset(data.log_start_offset);
    if let Some((epoch, end_offset)) = data.diverging_epoch {
        return base.with_diverging_epoch(
            EpochEndOffset::default()
                .with_epoch(epoch)
                .with_end_offset(end_offset),
        );
    }
    match data.records {
        Ok(bytes) => base.with_records(Some(bytes)),
        Err(e) => base.with_error_code(log_error_code(&e).0),
    }
}
