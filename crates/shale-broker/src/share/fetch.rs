//! ShareFetch (KIP-932): the share session part first (open, continue or close the member's
//! session), then the acknowledgements it carries, then records acquired for the member from
//! every share-partition of its session, waiting up to `max_wait_ms` while none is available.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_log::TopicPartition;
use shale_protocol::newer::share_fetch_request as wire;
use shale_protocol::newer::share_fetch_response as wire_response;
use shale_protocol::{NewerResponse, Response};
use shale_share::partition::{AckBatch, AcquireMode};
use shale_share::session::{ShareSessionKey, TopicIdPartition};
use shale_share::state::SharePartitionKey;
use uuid::Uuid;

use super::acknowledge::{acknowledge_named, Acknowledger};
use super::leader::now_ms_u64;
use super::log_read::read_partition;
use super::ShareService;
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::{
    authorization_failed_code, leader_error_code, log_error_code, replica_error_code,
    share_session_error_code,
};
use crate::handlers::leader_hints::LeaderHints;
use crate::request::RequestContext;

/// What a ShareFetch asks, whatever its version.
#[derive(Debug, Clone)]
pub struct ShareFetchInput {
    pub group_id: String,
    pub member_id: String,
    pub share_session_epoch: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub max_records: i32,
    pub batch_size: i32,
    pub acquire_mode: AcquireMode,
    /// The acknowledgements may RENEW locks (v2 with IsRenewAck, KIP-1222).
    pub renew_supported: bool,
    /// Partitions to fetch (those with a positive `partition_max_bytes`), with the
    /// acknowledgements each carries.
    pub partitions: Vec<(TopicIdPartition, i32, Vec<AckBatch>)>,
    pub forgotten: Vec<TopicIdPartition>,
}

/// One partition's part of the answer.
#[derive(Debug, Clone, Default)]
pub struct SharePartitionAnswer {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub acknowledge_error_code: i16,
    pub acknowledge_error_message: Option<String>,
    pub current_leader: Option<(i32, i32)>,
    pub records: Option<bytes::Bytes>,
    pub acquired: Vec<(i64, i64, i16)>,
}

/// The answer, whatever its version.
#[derive(Debug, Clone, Default)]
pub struct ShareFetchOutput {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub acquisition_lock_timeout_ms: i32,
    pub partitions: BTreeMap<TopicIdPartition, SharePartitionAnswer>,
    pub node_endpoints: Vec<(i32, String, i32, Option<String>)>,
}

/// ShareFetch (every version decodes into shale-protocol's codec types).
pub async fn share_fetch(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: wire::ShareFetchRequest,
) -> Response {
    // v2 (KIP-1206): the client chooses how strictly max_records holds.
    let acquire_mode = if ctx.version() >= 2 {
        match AcquireMode::from_wire(request.share_acquire_mode) {
            Some(mode) => mode,
            None => {
                return answer(refused(
                    ResponseError::InvalidRequest.code(),
                    Some(format!(
                        "Unknown share acquire mode {}.",
                        request.share_acquire_mode
                    )),
                ))
            }
        }
    } else {
        AcquireMode::BatchOptimized
    };
    let input = ShareFetchInput {
        group_id: request.group_id.map(|g| g.to_string()).unwrap_or_default(),
        member_id: request.member_id.map(|m| m.to_string()).unwrap_or_default(),
        share_session_epoch: request.share_session_epoch,
        max_wait_ms: request.max_wait_ms,
        min_bytes: request.min_bytes,
        max_bytes: request.max_bytes,
        max_records: request.max_records,
        batch_size: request.batch_size,
        acquire_mode,
        renew_supported: ctx.version() >= 2 && request.is_renew_ack,
        partitions: request
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    (
                        (t.topic_id, p.partition_index),
                        // v0's PartitionMaxBytes is gone from v1 on: every named partition
                        // is fetched, within the request's MaxBytes.
                        i32::MAX,
                        p.acknowledgement_batches
                            .iter()
                            .map(|b| AckBatch {
                                first_offset: b.first_offset,
                                last_offset: b.last_offset,
                                ack_types: b.acknowledge_types.clone(),
                            })
                            .collect(),
                    )
                })
            })
            .collect(),
        forgotten: request
            .forgotten_topics_data
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
            .collect(),
    };
    answer(handle(broker, ctx, input).await)
}

fn answer(output: ShareFetchOutput) -> Response {
    Response::Newer(NewerResponse::ShareFetch(to_wire(output)))
}

fn to_wire(output: ShareFetchOutput) -> wire_response::ShareFetchResponse {
    let mut topics: BTreeMap<Uuid, Vec<wire_response::PartitionData>> = BTreeMap::new();
    for ((topic_id, partition), answer) in output.partitions {
        let (leader_id, leader_epoch) = answer.current_leader.unwrap_or((-1, -1));
        topics
            .entry(topic_id)
            .or_default()
            .push(wire_response::PartitionData {
                partition_index: partition,
                error_code: answer.error_code,
                error_message: answer.error_message.map(StrBytes::from_string),
                acknowledge_error_code: answer.acknowledge_error_code,
                acknowledge_error_message: answer
                    .acknowledge_error_message
                    .map(StrBytes::from_string),
                current_leader: wire_response::LeaderIdAndEpoch {
                    leader_id,
                    leader_epoch,
                },
                records: answer.records.unwrap_or_default(),
                acquired_records: answer
                    .acquired
                    .into_iter()
                    .map(|(first_offset, last_offset, delivery_count)| {
                        wire_response::AcquiredRecords {
                            first_offset,
                            last_offset,
                            delivery_count,
                        }
                    })
                    .collect(),
            });
    }
    wire_response::ShareFetchResponse {
        error_code: output.error_code,
        error_message: output.error_message.map(StrBytes::from_string),
        acquisition_lock_timeout_ms: output.acquisition_lock_timeout_ms,
        responses: topics
            .into_iter()
            .map(
                |(topic_id, partitions)| wire_response::ShareFetchableTopicResponse {
                    topic_id,
                    partitions,
                },
            )
            .collect(),
        node_endpoints: output
            .node_endpoints
            .into_iter()
            .map(|(node_id, host, port, rack)| wire_response::NodeEndpoint {
                node_id,
                host: StrBytes::from_string(host),
                port,
                rack: rack.map(StrBytes::from_string),
            })
            .collect(),
        ..Default::default()
    }
}

fn refused(code: i16, message: Option<String>) -> ShareFetchOutput {
    ShareFetchOutput {
        error_code: code,
        error_message: message,
        ..ShareFetchOutput::default()
    }
}

/// ShareFetch at any version.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    input: ShareFetchInput,
) -> ShareFetchOutput {
    let share = &broker.share;
    if input.group_id.is_empty() || input.member_id.is_empty() {
        return refused(
            ResponseError::InvalidRequest.code(),
            Some("A share fetch request needs a group id and a member id.".into()),
        );
    }
    let authz = broker.authz(ctx);
    if !authz.allows(AclOperation::Read, ResourceType::Group, &input.group_id) {
        return refused(authorization_failed_code(ResourceType::Group), None);
    }
    let session_key = ShareSessionKey {
        group_id: input.group_id.clone(),
        member_id: input.member_id.clone(),
    };
    let added: Vec<TopicIdPartition> = input
        .partitions
        .iter()
        .filter(|(_, max_bytes, _)| *max_bytes > 0)
        .map(|(tp, _, _)| *tp)
        .collect();
    let has_acks = input.partitions.iter().any(|(_, _, acks)| !acks.is_empty());
    let session = share.sessions.lock().fetch(
        &session_key,
        input.share_session_epoch,
        ctx.connection_id,
        &added,
        &input.forgotten,
        has_acks,
    );
    let session = match session {
        Ok(session) => session,
        Err(e) => {
            let (code, message) = share_session_error_code(&e);
            return refused(code, Some(message));
        }
    };
    let image = broker.image();
    let mut output = ShareFetchOutput {
        acquisition_lock_timeout_ms: share.record_lock_duration_ms(&broker.core, &input.group_id),
        ..ShareFetchOutput::default()
    };
    let mut hints = LeaderHints::new(&image, &ctx.listener_name);
    // Acknowledgements first: they may free records this fetch then acquires.
    let who = Acknowledger {
        group_id: &input.group_id,
        member_id: &input.member_id,
        renew_supported: input.renew_supported,
    };
    for ((topic_id, partition), _, acks) in &input.partitions {
        if acks.is_empty() {
            continue;
        }
        let answer = output
            .partitions
            .entry((*topic_id, *partition))
            .or_default();
        let (code, message, leader) =
            acknowledge_named(broker, ctx, &mut hints, &who, (*topic_id, *partition), acks).await;
        answer.acknowledge_error_code = code;
        answer.acknowledge_error_message = message;
        answer.current_leader = leader;
    }
    if session.closed {
        share
            .release_member(&broker.core, &session_key, &session.partitions)
            .await;
        output.node_endpoints = endpoints(hints);
        return output;
    }
    // KIP-1222: a request that renews locks acquires nothing.
    if input.renew_supported {
        output.node_endpoints = endpoints(hints);
        return output;
    }
    let mut fetchable: BTreeSet<TopicIdPartition> = session.partitions.iter().copied().collect();
    // A partition the client named that it may not read answers so and is not fetched.
    for &(topic_id, partition) in &session.partitions {
        let error = match image.topic_by_id(topic_id) {
            None => Some(ResponseError::UnknownTopicId.code()),
            Some(topic) if !authz.allows(AclOperation::Read, ResourceType::Topic, &topic.name) => {
                Some(authorization_failed_code(ResourceType::Topic))
            }
            Some(_) => None,
        };
        if let Some(code) = error {
            fetchable.remove(&(topic_id, partition));
            output
                .partitions
                .entry((topic_id, partition))
                .or_default()
                .error_code = code;
        }
    }
    let deadline = tokio::time::Instant::now()
        + Duration::from_millis(u64::try_from(input.max_wait_ms.max(0)).unwrap_or(0));
    let mut appends = broker.replicas.subscribe_appends();
    loop {
        let available = share.records_available.notified();
        tokio::pin!(available);
        available.as_mut().enable();
        appends.borrow_and_update();
        acquire_all(share, broker, &input, &fetchable, &mut output, &mut hints).await;
        // Kafka's DelayedShareFetch: done once min_bytes are acquired (one record at least).
        let acquired_bytes: usize = output
            .partitions
            .values()
            .filter_map(|a| a.records.as_ref().map(|r| r.len()))
            .sum();
        let enough = acquired_bytes > 0
            && acquired_bytes >= usize::try_from(input.min_bytes.max(1)).unwrap_or(1);
        if enough || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::select! {
            _ = available => {}
            _ = appends.changed() => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            // One last look: what became available while waiting is not left behind.
            acquire_all(share, broker, &input, &fetchable, &mut output, &mut hints).await;
            break;
        }
    }
    if input.share_session_epoch != 0 {
        let acknowledged: BTreeSet<TopicIdPartition> = input
            .partitions
            .iter()
            .filter(|(_, _, acks)| !acks.is_empty())
            .map(|(tp, _, _)| *tp)
            .collect();
        keep_partitions_with_news(&mut output.partitions, &acknowledged);
    }
    output.node_endpoints = endpoints(hints);
    output
}

/// An incremental fetch answers only partitions with something to say: an error, acquired
/// records, or the outcome of acknowledgements the request carried, success included (Kafka
/// adds those to the answer; the Java client completes piggybacked acknowledgements only for
/// partitions in it).
pub(crate) fn keep_partitions_with_news(
    partitions: &mut BTreeMap<TopicIdPartition, SharePartitionAnswer>,
    acknowledged: &BTreeSet<TopicIdPartition>,
) {
    partitions
        .retain(|tp, a| a.error_code != 0 || !a.acquired.is_empty() || acknowledged.contains(tp));
}

fn endpoints(hints: LeaderHints<'_>) -> Vec<(i32, String, i32, Option<String>)> {
    hints
        .into_endpoints()
        .into_iter()
        .map(|e| (e.node_id, e.host, e.port, e.rack))
        .collect()
}

/// Acquires for the member from every fetchable partition that has acquired nothing yet in
/// this request.
async fn acquire_all(
    share: &Arc<ShareService>,
    broker: &Arc<Broker>,
    input: &ShareFetchInput,
    fetchable: &BTreeSet<TopicIdPartition>,
    output: &mut ShareFetchOutput,
    hints: &mut LeaderHints<'_>,
) {
    let image = broker.image();
    let mut records_left = usize::try_from(input.max_records.max(1)).unwrap_or(1);
    let mut bytes_left = usize::try_from(input.max_bytes.max(1)).unwrap_or(1);
    let batch_size = usize::try_from(input.batch_size.max(1)).unwrap_or(1);
    for &(topic_id, partition) in fetchable {
        if records_left == 0 || bytes_left == 0 {
            break;
        }
        let answer = output.partitions.entry((topic_id, partition)).or_default();
        if !answer.acquired.is_empty() {
            continue;
        }
        let Some(topic) = image.topic_by_id(topic_id) else {
            answer.error_code = ResponseError::UnknownTopicId.code();
            continue;
        };
        let key = SharePartitionKey {
            group_id: input.group_id.clone(),
            topic_id,
            partition,
        };
        let tp = TopicPartition {
            topic: topic.name.clone(),
            partition,
        };
        let partition_max_bytes = input
            .partitions
            .iter()
            .find(|(tp, _, _)| *tp == (topic_id, partition))
            .map(|(_, max, _)| usize::try_from(*max).unwrap_or(0))
            .filter(|max| *max > 0)
            .unwrap_or(bytes_left);
        let handle = share.partitions.slot(&key, &tp);
        let mut slot = handle.lock().await;
        let configs = match share.initialize(&broker.core, &key, &tp, &mut slot).await {
            Ok(configs) => configs,
            Err(e) => {
                let (code, message) = leader_error_code(&e);
                answer.error_code = code;
                answer.error_message = Some(message);
                answer.current_leader = hints.current_leader(&tp.topic, partition, code);
                continue;
            }
        };
        let Some(state) = slot.partition.as_mut() else {
            continue;
        };
        if !state.can_acquire_records() {
            continue;
        }
        let read = read_partition(
            &broker.replicas,
            &image,
            &tp.topic,
            partition,
            state.next_fetch_offset(),
            partition_max_bytes.min(bytes_left),
            configs.read_committed,
            records_left,
        );
        let read = match read {
            Ok(read) => read,
            Err(super::log_read::ShareReadError::Log(shale_log::LogError::OffsetOutOfRange {
                log_start,
                ..
            })) => {
                state.update_log_start_offset(log_start);
                continue;
            }
            Err(super::log_read::ShareReadError::Replica(e)) => {
                let code = replica_error_code(&e);
                answer.error_code = code;
                answer.current_leader = hints.current_leader(&tp.topic, partition, code);
                continue;
            }
            Err(super::log_read::ShareReadError::Log(e)) => {
                let (code, message) = log_error_code(&e);
                answer.error_code = code;
                answer.error_message = Some(message);
                continue;
            }
        };
        if read.read.batches.is_empty() {
            continue;
        }
        let acquired = state.acquire(
            &input.member_id,
            input.acquire_mode,
            batch_size,
            records_left,
            &read.read,
            now_ms_u64(),
        );
        if acquired.acquired.is_empty() {
            continue;
        }
        let records = match read.batches_for(&acquired.acquired) {
            Ok(records) => records,
            Err(e) => {
                // The records stay acquired and come back when their locks expire.
                let (code, message) = log_error_code(&e);
                answer.error_code = code;
                answer.error_message = Some(message);
                continue;
            }
        };
        bytes_left = bytes_left.saturating_sub(records.len());
        records_left = records_left.saturating_sub(acquired.count);
        answer.acquired = acquired
            .acquired
            .iter()
            .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
            .collect();
        answer.records = Some(records);
        share.schedule_expiry(&broker.core, &key, &handle, &mut slot);
    }
}

#[cfg(test)]
#[path = "fetch_tests.rs"]
mod tests;
