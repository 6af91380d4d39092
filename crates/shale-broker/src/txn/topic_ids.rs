//! TxnOffsetCommit v6 names topics by id instead of by name. The ids are resolved in the
//! metadata image and the request is then the version 5 one (the same transaction
//! semantics); the answer names each topic by the id it was asked with. An id this broker
//! does not know is answered UNKNOWN_TOPIC_ID for its partitions, as Kafka 4.4 answers.

use std::collections::HashMap;
use std::sync::Arc;

use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    GroupId, ProducerId, TopicName, TransactionalId, TxnOffsetCommitRequest,
};
use shale_protocol::newer::txn_offset_commit_request as v6;
use shale_protocol::newer::txn_offset_commit_response as v6_response;
use shale_protocol::{NewerResponse, Response};
use uuid::Uuid;

use super::handlers;
use crate::broker::Broker;
use crate::errors::unknown_topic_id_code;
use crate::request::RequestContext;

pub async fn txn_offset_commit(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: v6::TxnOffsetCommitRequest,
) -> Response {
    let image = broker.image();
    let mut ids_by_name: HashMap<String, Uuid> = HashMap::new();
    let mut unknown = Vec::new();
    let mut known = Vec::new();
    for topic in request.topics {
        let Some(found) = image.topic_by_id(topic.topic_id) else {
            unknown.push(failed_topic(topic.topic_id, &topic.partitions));
            continue;
        };
        ids_by_name.insert(found.name.clone(), topic.topic_id);
        known.push(
            TxnOffsetCommitRequestTopic::default()
                .with_name(TopicName(found.name.clone().into()))
                .with_partitions(
                    topic
                        .partitions
                        .into_iter()
                        .map(|p| {
                            TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(p.partition_index)
                                .with_committed_offset(p.committed_offset)
                                .with_committed_leader_epoch(p.committed_leader_epoch)
                                .with_committed_metadata(p.committed_metadata)
                        })
                        .collect(),
                ),
        );
    }
    let mut topics = Vec::new();
    if !known.is_empty() {
        let by_name = TxnOffsetCommitRequest::default()
            .with_transactional_id(TransactionalId(request.transactional_id))
            .with_group_id(GroupId(request.group_id))
            .with_producer_id(ProducerId(request.producer_id))
            .with_producer_epoch(request.producer_epoch)
            .with_generation_id(request.generation_id_or_member_epoch)
            .with_member_id(request.member_id)
            .with_group_instance_id(request.group_instance_id)
            .with_topics(known);
        let answered = handlers::txn_offset_commit(broker, ctx, by_name).await;
        topics.extend(answered.topics.into_iter().map(|t| {
            v6_response::TxnOffsetCommitResponseTopic {
                // Every answered topic was resolved from an id above.
                topic_id: ids_by_name
                    .get(t.name.0.as_str())
                    .copied()
                    .unwrap_or_default(),
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| v6_response::TxnOffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: p.error_code,
                    })
                    .collect(),
                ..Default::default()
            }
        }));
    }
    topics.extend(unknown);
    Response::Newer(NewerResponse::TxnOffsetCommit(
        v6_response::TxnOffsetCommitResponse {
            throttle_time_ms: 0,
            topics,
        },
    ))
}

fn failed_topic(
    topic_id: Uuid,
    partitions: &[v6::TxnOffsetCommitRequestPartition],
) -> v6_response::TxnOffsetCommitResponseTopic {
    v6_response::TxnOffsetCommitResponseTopic {
        topic_id,
        partitions: partitions
            .iter()
            .map(|p| v6_response::TxnOffsetCommitResponsePartition {
                partition_index: p.partition_index,
                error_code: unknown_topic_id_code(),
            })
            .collect(),
        ..Default::default()
    }
}
