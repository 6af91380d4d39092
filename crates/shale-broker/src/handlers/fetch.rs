//! Fetch: reads up to the high watermark (read_uncommitted) or the last stable offset
//! (read_committed), long-polls until `min_bytes` or `max_wait_ms`, and answers sessionless
//! (KIP-227 allows a broker to decline sessions by answering session id 0).
//!
//! Consumer fetches are answered by [`handle_frame`]: record sets stay ranges of segment
//! files that the connection sends with `sendfile` (see `encode`).

pub mod encode;
mod follower;

use std::sync::Arc;

use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, ProducerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_log::TopicPartition;
use shale_protocol::{FetchFrame, ProtocolError, RecordSet};
use uuid::Uuid;

use shale_replica::delayed_fetch::{wait_for_data, FetchPass};
use shale_replica::ReadRequest;

use self::encode::{FetchAnswer, FileRecords};
use super::leader_hints::LeaderHints;

use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::{authorization_failed_code, log_error_code, replica_error_code};
use crate::request::RequestContext;

const READ_COMMITTED: i8 = 1;

struct WantedPartition {
    topic_index: usize,
    tp: Option<TopicPartition>,
    partition: i32,
    fetch_offset: i64,
    current_leader_epoch: i32,
    partition_max_bytes: usize,
}

struct WantedTopic {
    name: String,
    topic_id: Uuid,
    /// The answer of its partitions when none is read: the topic is unknown or refused.
    unread_code: i16,
}

pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: FetchRequest,
) -> FetchResponse {
    let version = ctx.version();
    if let Some(refusal) = session_refusal(&request, version) {
        return refusal;
    }
    if let Some(follower) = follower::follower_id(&request, version) {
        // A follower needs CLUSTER_ACTION; without it Kafka refuses every partition
        // (CVE-2018-1288: a client posing as a replica must not read uncommitted data).
        if !broker
            .authz(ctx)
            .allows_cluster(AclOperation::ClusterAction)
        {
            return refused_follower(request, version);
        }
        return follower::handle(broker, version, follower, request).await;
    }
    fetch(broker, ctx, request).await.into_response()
}

/// A follower's fetch without CLUSTER_ACTION: TOPIC_AUTHORIZATION_FAILED for every partition,
/// as Kafka answers it.
fn refused_follower(request: FetchRequest, version: i16) -> FetchResponse {
    let code = authorization_failed_code(ResourceType::Topic);
    let responses = request
        .topics
        .into_iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    PartitionData::default()
                        .with_partition_index(p.partition)
                        .with_error_code(code)
                        .with_high_watermark(-1)
                        .with_last_stable_offset(-1)
                        .with_log_start_offset(-1)
                        .with_preferred_read_replica(BrokerId(-1))
                        .with_records(Some(bytes::Bytes::new()))
                })
                .collect();
            let r = FetchableTopicResponse::default().with_partitions(partitions);
            if version >= 13 {
                r.with_topic_id(t.topic_id)
            } else {
                r.with_topic(t.topic)
            }
        })
        .collect();
    FetchResponse::default()
        .with_session_id(0)
        .with_responses(responses)
}

/// Whether [`handle_frame`] answers this request: fetches of consumers, not of followers
/// (a replica id, before v15, or a replica state, from v15, names a follower).
pub fn served_as_frame(request: &FetchRequest) -> bool {
    request.replica_id.0 < 0 && request.replica_state.replica_id.0 < 0
}

/// A consumer's fetch answered as a frame chain whose record sets the connection sends
/// straight from the segment files.
pub async fn handle_frame(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: FetchRequest,
) -> Result<FetchFrame<FileRecords>, ProtocolError> {
    let version = ctx.version();
    let answer = match session_refusal(&request, version) {
        Some(refusal) => FetchAnswer::without_partitions(refusal),
        None => fetch(broker, ctx, request).await,
    };
    answer.encode(ctx.header.correlation_id, version)
}

/// KIP-227: sessions are declined; a client that names one is told to start over.
fn session_refusal(request: &FetchRequest, version: i16) -> Option<FetchResponse> {
    let code = if version >= 7 && request.session_id != 0 {
        ResponseError::FetchSessionIdNotFound
    } else if version >= 7 && request.session_epoch > 0 {
        ResponseError::InvalidFetchSessionEpoch
    } else {
        return None;
    };
    Some(
        FetchResponse::default()
            .with_error_code(code.code())
            .with_session_id(0),
    )
}

/// A consumer's fetch. Each topic needs READ (Kafka answers TOPIC_AUTHORIZATION_FAILED
/// before looking the topic up; a topic id it does not know is UNKNOWN_TOPIC_ID first).
async fn fetch(broker: &Arc<Broker>, ctx: &RequestContext, request: FetchRequest) -> FetchAnswer {
    let version = ctx.version();
    let listener = ctx.listener_name.as_ref();
    let image = broker.image();
    let authz = broker.authz(ctx);
    let mut topics = Vec::new();
    let mut wanted = Vec::new();
    for t in request.topics {
        let found = if version >= 13 {
            image.topic_by_id(t.topic_id)
        } else {
            image.topic(t.topic.0.as_str())
        };
        let name = found
            .map(|f| f.name.clone())
            .unwrap_or_else(|| t.topic.0.to_string());
        let refused = (version < 13 || found.is_some())
            && !authz.allows(AclOperation::Read, ResourceType::Topic, &name);
        let unread_code = if refused {
            authorization_failed_code(ResourceType::Topic)
        } else if version >= 13 {
            ResponseError::UnknownTopicId.code()
        } else {
            ResponseError::UnknownTopicOrPartition.code()
        };
        let readable = found.filter(|_| !refused);
        let topic_index = topics.len();
        topics.push(WantedTopic {
            name: name.clone(),
            topic_id: found.map(|f| f.topic_id).unwrap_or(t.topic_id),
            unread_code,
        });
        for p in t.partitions {
            wanted.push(WantedPartition {
                topic_index,
                tp: readable.map(|_| TopicPartition {
                    topic: name.clone(),
                    partition: p.partition,
                }),
                partition: p.partition,
                fetch_offset: p.fetch_offset,
                current_leader_epoch: p.current_leader_epoch,
                partition_max_bytes: p.partition_max_bytes.max(0) as usize,
            });
        }
    }
    let read_committed = version >= 4 && request.isolation_level == READ_COMMITTED;
    let response_max_bytes = if version >= 3 {
        request.max_bytes.max(0) as usize
    } else {
        usize::MAX
    };
    let results = wait_for_data(
        &broker.replicas,
        broker.shutdown_signal(),
        request.max_wait_ms,
        request.min_bytes.max(0) as usize,
        || read_all(broker, &wanted, &topics, read_committed, response_max_bytes),
    )
    .await;
    assemble(broker, listener, &topics, results, version)
}

/// One partition's answer: its topic's index, the partition fields, its record set.
type PartitionAnswer = (usize, PartitionData, FileRecords);

fn read_all(
    broker: &Arc<Broker>,
    wanted: &[WantedPartition],
    topics: &[WantedTopic],
    read_committed: bool,
    response_max_bytes: usize,
) -> FetchPass<Vec<PartitionAnswer>> {
    let mut out = Vec::with_capacity(wanted.len());
    let mut total = 0usize;
    let mut any_error = false;
    // Each pass sees the newest image, as a long poll may outlive the one it started with.
    let image = broker.image();
    for w in wanted {
        let base = PartitionData::default()
            .with_partition_index(w.partition)
            .with_high_watermark(-1)
            .with_last_stable_offset(-1)
            .with_log_start_offset(-1)
            .with_preferred_read_replica(kafka_protocol::messages::BrokerId(-1))
            .with_records(None);
        let Some(tp) = &w.tp else {
            any_error = true;
            out.push((
                w.topic_index,
                base.with_error_code(topics[w.topic_index].unread_code),
                FileRecords::default(),
            ));
            continue;
        };
        let budget = w
            .partition_max_bytes
            .min(response_max_bytes.saturating_sub(total));
        let min_one = total == 0;
        let read = broker.replicas.read(
            &image,
            &ReadRequest {
                topic: &tp.topic,
                partition: tp.partition,
                fetch_offset: w.fetch_offset,
                current_leader_epoch: w.current_leader_epoch,
                read_committed,
                max_bytes: budget,
                min_one,
            },
        );
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                any_error = true;
                out.push((
                    w.topic_index,
                    base.with_error_code(replica_error_code(&e)),
                    FileRecords::default(),
                ));
                continue;
            }
        };
        let base = base
            .with_high_watermark(read.high_watermark)
            .with_last_stable_offset(read.last_stable_offset)
            .with_log_start_offset(read.log_start_offset)
            .with_aborted_transactions(read.aborted.map(|aborted| {
                aborted
                    .into_iter()
                    .map(|t| {
                        AbortedTransaction::default()
                            .with_producer_id(ProducerId(t.producer_id))
                            .with_first_offset(t.first_offset)
                    })
                    .collect()
            }));
        match read.records {
            Ok(slices) => {
                let records = FileRecords::new(slices);
                total += records.len_bytes();
                out.push((w.topic_index, base, records));
            }
            Err(e) => {
                any_error = true;
                let (code, _) = log_error_code(&e);
                out.push((
                    w.topic_index,
                    base.with_error_code(code),
                    FileRecords::default(),
                ));
            }
        }
    }
    FetchPass {
        answer: out,
        bytes: total,
        any_error,
    }
}

/// The first Fetch version whose answers carry leader hints (KIP-951).
const LEADER_HINTS_MIN_VERSION: i16 = 16;

/// Groups the partition answers by topic (the record sets follow in the same order) and, from
/// v16, tells where the partitions answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH are
/// led now.
fn assemble(
    broker: &Arc<Broker>,
    listener: &str,
    topics: &[WantedTopic],
    results: Vec<PartitionAnswer>,
    version: i16,
) -> FetchAnswer {
    let image = broker.image();
    let mut hints = LeaderHints::new(&image, listener);
    let mut per_topic: Vec<Vec<(PartitionData, FileRecords)>> =
        topics.iter().map(|_| Vec::new()).collect();
    for (i, mut p, r) in results {
        if version >= LEADER_HINTS_MIN_VERSION {
            if let Some((leader_id, leader_epoch)) =
                hints.current_leader(&topics[i].name, p.partition_index, p.error_code)
            {
                p.current_leader = LeaderIdAndEpoch::default()
                    .with_leader_id(BrokerId(leader_id))
                    .with_leader_epoch(leader_epoch);
            }
        }
        per_topic[i].push((p, r));
    }
    let mut records = Vec::new();
    let responses = topics
        .iter()
        .zip(per_topic)
        .map(|(t, answers)| {
            let mut partitions = Vec::with_capacity(answers.len());
            for (p, r) in answers {
                partitions.push(p);
                records.push(r);
            }
            let r = FetchableTopicResponse::default().with_partitions(partitions);
            if version >= 13 {
                r.with_topic_id(t.topic_id)
            } else {
                r.with_topic(TopicName(StrBytes::from_string(t.name.clone())))
            }
        })
        .collect();
    let node_endpoints = hints
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
    FetchAnswer {
        response: FetchResponse::default()
            .with_session_id(0)
            .with_responses(responses)
            .with_node_endpoints(node_endpoints),
        records,
    }
}
