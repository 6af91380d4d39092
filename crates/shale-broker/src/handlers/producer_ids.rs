//! InitProducerId for idempotent producers, and DescribeProducers.
//!
//! Producer ids come from blocks the controller hands out (AllocateProducerIds), so ids stay
//! unique across restarts and, later, across brokers.

use std::sync::Arc;

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{
    DescribeProducersRequest, DescribeProducersResponse, InitProducerIdRequest,
    InitProducerIdResponse, ProducerId,
};

use super::leader_partition;
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::{authorization_failed_code, metadata_error_code};
use crate::request::RequestContext;

/// Authorization as Kafka's KafkaApis: a transactional producer needs WRITE on its
/// transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent one needs
/// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679; else
/// CLUSTER_AUTHORIZATION_FAILED). CVE-2018-17196: without this check anyone could obtain a
/// producer id and write with it.
pub async fn init_producer_id(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let base = InitProducerIdResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1)
        .with_ongoing_txn_producer_id(ProducerId(-1))
        .with_ongoing_txn_producer_epoch(-1);
    let authz = broker.authz(ctx);
    if let Some(id) = &request.transactional_id {
        if !authz.allows(
            AclOperation::Write,
            ResourceType::TransactionalId,
            id.0.as_str(),
        ) {
            return base.with_error_code(authorization_failed_code(ResourceType::TransactionalId));
        }
        return crate::txn::handlers::init_producer_id(broker, ctx, request, base).await;
    }
    if !authz.allows_cluster(AclOperation::IdempotentWrite)
        && !authz.allows_some(AclOperation::Write, ResourceType::Topic)
    {
        return base.with_error_code(authorization_failed_code(ResourceType::Cluster));
    }
    // Kafka hands a non-transactional producer a fresh id on every call.
    match broker.producer_ids.next(broker).await {
        Ok(id) => base.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Err(e) => base.with_error_code(metadata_error_code(&e).0),
    }
}

/// Each topic needs READ (else TOPIC_AUTHORIZATION_FAILED).
pub fn describe_producers(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let authz = broker.authz(ctx);
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let name = t.name.0.to_string();
            let readable = authz.allows(AclOperation::Read, ResourceType::Topic, &name);
            let partitions = t
                .partition_indexes
                .into_iter()
                .map(|index| {
                    let base = PartitionResponse::default().with_partition_index(index);
                    if !readable {
                        return base
                            .with_error_code(authorization_failed_code(ResourceType::Topic));
                    }
                    match leader_partition(broker, &name, index, -1) {
                        Ok(p) => base.with_active_producers(
                            p.producer_entries()
                                .into_iter()
                                .map(|e| {
                                    ProducerState::default()
                                        .with_producer_id(ProducerId(e.producer_id))
                                        .with_producer_epoch(e.producer_epoch as i32)
                                        .with_last_sequence(e.last_sequence)
                                        .with_last_timestamp(e.last_timestamp_ms)
                                        .with_coordinator_epoch(e.coordinator_epoch)
                                        .with_current_txn_start_offset(
                                            e.current_txn_start_offset.unwrap_or(-1),
                                        )
                                })
                                .collect(),
                        ),
                        Err(code) => base.with_error_code(code),
                    }
                })
                .collect();
            TopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect();
    DescribeProducersResponse::default().with_topics(topics)
}
