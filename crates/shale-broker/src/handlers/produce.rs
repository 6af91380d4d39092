//! Produce: validate, check producer state, append, answer per partition.

use std::sync::Arc;

use bytes::BytesMut;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::{BrokerId, ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use shale_log::ValidatedBatches;
use shale_replica::delayed_produce::{self, PendingAck};

use super::leader_hints::LeaderHints;

use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::{
    ack_error_code, append_refusal, authorization_failed_code, replica_error_code,
};
use crate::request::RequestContext;
use crate::time::now_ms;

/// The first Produce version whose answers carry leader hints (KIP-951).
const LEADER_HINTS_MIN_VERSION: i16 = 10;

/// Whether a partition's records start with a transactional batch (Kafka's
/// `RequestUtils.hasTransactionalRecords` looks at each partition's first batch).
fn starts_transactional(records: Option<&bytes::Bytes>) -> bool {
    records.is_some_and(|r| shale_log::BatchHeader::decode(r).is_ok_and(|h| h.is_transactional()))
}

/// Kafka's answer when the transactional id is refused: every partition refused with it.
fn refused_whole(request: ProduceRequest, code: i16) -> ProduceResponse {
    let responses = request
        .topic_data
        .into_iter()
        .map(|t| {
            let partitions = t
                .partition_data
                .iter()
                .map(|p| {
                    PartitionProduceResponse::default()
                        .with_index(p.index)
                        .with_error_code(code)
                        .with_base_offset(-1)
                        .with_log_append_time_ms(-1)
                        .with_log_start_offset(-1)
                })
                .collect();
            TopicProduceResponse::default()
                .with_name(t.name)
                .with_topic_id(t.topic_id)
                .with_partition_responses(partitions)
        })
        .collect();
    ProduceResponse::default().with_responses(responses)
}

/// Returns `None` for acks=0: the client expects no response.
///
/// Authorization as Kafka's KafkaApis: transactional records need WRITE on the transactional
/// id (else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED); each topic needs WRITE
/// (else TOPIC_AUTHORIZATION_FAILED, before the topic is even looked up).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ProduceRequest,
) -> Option<ProduceResponse> {
    let version = ctx.version();
    let acks = request.acks;
    let transactional_id = request.transactional_id.as_ref().map(|t| t.0.to_string());
    let image = broker.image();
    let authz = broker.authz(ctx);
    let transactional = request
        .topic_data
        .iter()
        .flat_map(|t| &t.partition_data)
        .any(|p| starts_transactional(p.records.as_ref()));
    if transactional
        && !transactional_id
            .as_deref()
            .is_some_and(|id| authz.allows(AclOperation::Write, ResourceType::TransactionalId, id))
    {
        let code = authorization_failed_code(ResourceType::TransactionalId);
        return (acks != 0).then(|| refused_whole(request, code));
    }
    let now = now_ms();
    let mut responses = Vec::with_capacity(request.topic_data.len());
    let mut appended_any = false;
    // acks=all partitions waiting for replication: (topic index, partition index).
    let mut pending = Vec::new();
    let mut pending_acks = Vec::new();
    for topic in request.topic_data {
        let topic_image = if version >= 13 {
            image.topic_by_id(topic.topic_id)
        } else {
            image.topic(topic.name.0.as_str())
        };
        let name = topic_image
            .map(|t| t.name.clone())
            .unwrap_or_else(|| topic.name.0.to_string());
        // A topic id names no topic to authorize until it is known.
        let writable = (version < 13 || topic_image.is_some())
            && authz.allows(AclOperation::Write, ResourceType::Topic, &name);
        let mut partitions = Vec::with_capacity(topic.partition_data.len());
        for p in topic.partition_data {
            let base = PartitionProduceResponse::default()
                .with_index(p.index)
                .with_base_offset(-1)
                .with_log_append_time_ms(-1)
                .with_log_start_offset(-1);
            if (version < 13 || topic_image.is_some()) && !writable {
                partitions
                    .push(base.with_error_code(authorization_failed_code(ResourceType::Topic)));
                continue;
            }
            if !matches!(acks, -1..=1) {
                partitions.push(base.with_error_code(ResponseError::InvalidRequiredAcks.code()));
                continue;
            }
            let Some(t) = topic_image else {
                let code = if version >= 13 {
                    ResponseError::UnknownTopicId.code()
                } else {
                    ResponseError::UnknownTopicOrPartition.code()
                };
                partitions.push(base.with_error_code(code));
                continue;
            };
            let min_isr = (acks == -1).then(|| {
                broker
                    .topic_config_value(&image, &t.name, "min.insync.replicas")
                    .and_then(|v| v.parse::<i32>().ok())
                    .unwrap_or(broker.config.min_insync_replicas)
            });
            let partition = match broker
                .replicas
                .leader_for_append(&image, &t.name, p.index, min_isr)
            {
                Ok(partition) => partition,
                Err(e) => {
                    partitions.push(base.with_error_code(replica_error_code(&e)));
                    continue;
                }
            };
            let Some(records) = p.records else {
                partitions.push(base.with_error_code(ResponseError::CorruptMessage.code()));
                continue;
            };
            let mut owned = BytesMut::from(records.as_ref());
            // Framing and CRCs are checked here, once; the log appends without a second pass.
            let appended = match ValidatedBatches::parse(&mut owned) {
                // Transactional batches are checked with the coordinator first (KIP-890).
                Ok(batches) => {
                    crate::txn::produce::append_client(
                        broker,
                        &partition,
                        batches,
                        now,
                        transactional_id.as_deref(),
                        version,
                    )
                    .await
                }
                Err(e) => Err(append_refusal(&e.into())),
            };
            match appended {
                Ok(a) => {
                    appended_any = true;
                    if acks == -1 {
                        pending.push((responses.len(), partitions.len()));
                        pending_acks.push(PendingAck {
                            partition: partition.clone(),
                            required_offset: a.last_offset + 1,
                            min_insync_replicas: min_isr.unwrap_or(0),
                        });
                    }
                    partitions.push(
                        base.with_base_offset(a.base_offset)
                            .with_log_append_time_ms(a.log_append_time_ms)
                            .with_log_start_offset(a.log_start_offset),
                    );
                }
                Err(refusal) => {
                    let record_errors: Vec<BatchIndexAndErrorMessage> = refusal
                        .record_errors
                        .into_iter()
                        .map(|(index, message)| {
                            BatchIndexAndErrorMessage::default()
                                .with_batch_index(index)
                                .with_batch_index_error_message(Some(StrBytes::from_string(
                                    message,
                                )))
                        })
                        .collect();
                    // Kafka fills error_message only for per-record refusals (KIP-467);
                    // every other refusal is its code alone.
                    let message = if record_errors.is_empty() {
                        tracing::debug!(topic = %name, partition = p.index, code = refusal.code,
                            "produce refused: {}", refusal.message);
                        None
                    } else {
                        Some(StrBytes::from_string(refusal.message))
                    };
                    partitions.push(
                        base.with_error_code(refusal.code)
                            .with_error_message(message)
                            .with_record_errors(record_errors),
                    );
                }
            }
        }
        responses.push(
            TopicProduceResponse::default()
                .with_name(TopicName(StrBytes::from_string(name)))
                .with_topic_id(topic.topic_id)
                .with_partition_responses(partitions),
        );
    }
    if appended_any {
        broker.replicas.notify_appended();
    }
    if !pending_acks.is_empty() {
        let outcomes = delayed_produce::wait_all(pending_acks, request.timeout_ms).await;
        for ((topic, index), outcome) in pending.into_iter().zip(outcomes) {
            let code = ack_error_code(&outcome);
            if code != 0 {
                if let Some(p) = responses
                    .get_mut(topic)
                    .and_then(|t: &mut TopicProduceResponse| t.partition_responses.get_mut(index))
                {
                    p.error_code = code;
                }
            }
        }
    }
    if acks == 0 {
        return None;
    }
    let mut response = ProduceResponse::default();
    if version >= LEADER_HINTS_MIN_VERSION {
        let image = broker.image();
        let mut hints = LeaderHints::new(&image, ctx.listener_name.as_ref());
        for topic in &mut responses {
            let name = topic.name.0.to_string();
            for p in &mut topic.partition_responses {
                if let Some((leader_id, leader_epoch)) =
                    hints.current_leader(&name, p.index, p.error_code)
                {
                    p.current_leader = LeaderIdAndEpoch::default()
                        .with_leader_id(BrokerId(leader_id))
                        .with_leader_epoch(leader_epoch);
                }
            }
        }
        response.node_endpoints = hints
            .into_endpoints()
            .into_iter()
            .map(|e| {
                NodeEndpoint::default()
                    .with_node_id(BrokerId(e.node_id))
                    .with_host(StrBytes::from_string(e.host))
                    .with_port(e.port)
                    .with_rack(e.rack.map(StrBytes::from_string))
            })
            .collect();
    }
    Some(response.with_responses(responses))
}
