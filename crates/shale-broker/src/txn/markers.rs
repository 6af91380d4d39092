//! Transaction markers: how the coordinator delivers them to partition leaders, and how a
//! leader writes them (the same code serves the coordinator on this broker and the
//! WriteTxnMarkers API, which other coordinators and `kafka-transactions.sh abort` send).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    ApiKey, ProducerId, RequestKind, ResponseKind, TopicName, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_protocol::newer::write_txn_markers_request as v2;
use shale_protocol::{NewerRequest, Request, Response};
use shale_txn::coordinator::{MarkerRequest, TopicPartition as TxnTopicPartition};
use shale_txn::TransactionVersion;
use tracing::warn;

use crate::core::BrokerCore;
use crate::errors::append_error_code;
use crate::groups::OFFSETS_TOPIC;
use crate::time::now_ms;
use shale_group::runtime::GroupCoordinator;

use super::gate::TxnGate;
use super::peers::PeerClients;
use shale_log::control::ControlMarker;
use shale_replica::delayed_produce::{self, PendingAck};

/// How long a marker may wait for its replicas (Kafka's `request.timeout.ms`).
const MARKER_REPLICATION_TIMEOUT_MS: i32 = 30_000;

/// One WriteTxnMarkers entry: the marker of one producer for some partitions of one leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMarkerEntry {
    pub marker: ControlMarker,
    pub transaction_version: TransactionVersion,
    pub partitions: Vec<TxnTopicPartition>,
}

/// The error code per partition of one entry (0: written).
pub type MarkerResults = Vec<(TxnTopicPartition, i16)>;

type MarkerFuture<'a> = Pin<Box<dyn Future<Output = Vec<MarkerResults>> + Send + 'a>>;

/// What writing and delivering markers uses: the broker's core, its connections to the other
/// brokers, the group coordinator (a marker on a group's offsets partition completes the
/// group's transactional offsets) and the transaction gate of the partitions.
#[derive(Clone, Copy)]
pub struct MarkerContext<'a> {
    pub core: &'a BrokerCore,
    pub peers: &'a PeerClients,
    pub groups: &'a GroupCoordinator,
    pub gate: &'a TxnGate,
}

/// Carries markers from the coordinator to a partition leader; one result list per entry.
pub trait MarkerTransport: Send + Sync + std::fmt::Debug {
    fn send<'a>(
        &'a self,
        ctx: MarkerContext<'a>,
        leader_id: i32,
        entries: Vec<TxnMarkerEntry>,
    ) -> MarkerFuture<'a>;
}

/// Writes markers itself for partitions this broker leads and sends WriteTxnMarkers (v2, or
/// v1 to a leader that does not serve v2) to the leaders of the others. A leader that cannot be reached answers REQUEST_TIMED_OUT for
/// all its partitions, which the coordinator retries.
#[derive(Debug, Default)]
pub struct BrokerMarkerTransport;

impl MarkerTransport for BrokerMarkerTransport {
    fn send<'a>(
        &'a self,
        ctx: MarkerContext<'a>,
        leader_id: i32,
        entries: Vec<TxnMarkerEntry>,
    ) -> MarkerFuture<'a> {
        Box::pin(async move {
            if leader_id == ctx.core.node_id() {
                let mut results = Vec::with_capacity(entries.len());
                for entry in &entries {
                    results.push(write_entry(ctx, entry).await);
                }
                return results;
            }
            send_remote(ctx, leader_id, entries).await
        })
    }
}

async fn send_remote(
    ctx: MarkerContext<'_>,
    leader_id: i32,
    entries: Vec<TxnMarkerEntry>,
) -> Vec<MarkerResults> {
    // Version 2 tells the leader each marker's transaction version (KIP-1228), so that it
    // checks the epoch with that version's rule; a leader that does not serve it gets v1.
    let answered = ctx
        .peers
        .call_negotiated(ctx.core, leader_id, ApiKey::WriteTxnMarkers, |max| {
            if max.is_some_and(|max| max >= WRITE_TXN_MARKERS_WITH_VERSION) {
                (
                    WRITE_TXN_MARKERS_WITH_VERSION,
                    Request::Newer(NewerRequest::WriteTxnMarkers(markers_v2(&entries))),
                )
            } else {
                (
                    1,
                    Request::Kafka(RequestKind::WriteTxnMarkers(markers_v1(&entries))),
                )
            }
        })
        .await;
    let response = match answered {
        Ok(Response::Kafka(ResponseKind::WriteTxnMarkers(response))) => Some(response),
        Ok(_) => None,
        Err(e) => {
            warn!(leader_id, "cannot send transaction markers: {e}");
            None
        }
    };
    entries
        .into_iter()
        .enumerate()
        .map(|(i, entry)| {
            // Results are matched by partition; anything missing is retried.
            let answered = response.as_ref().and_then(|r| r.markers.get(i));
            entry
                .partitions
                .into_iter()
                .map(|tp| {
                    let code = answered
                        .and_then(|m| m.topics.iter().find(|t| t.name.0.as_str() == tp.topic))
                        .and_then(|t| {
                            t.partitions
                                .iter()
                                .find(|p| p.partition_index == tp.partition)
                        })
                        .map_or(ResponseError::RequestTimedOut.code(), |p| p.error_code);
                    (tp, code)
                })
                .collect()
        })
        .collect()
}

/// The first WriteTxnMarkers version that says each marker's transaction version.
const WRITE_TXN_MARKERS_WITH_VERSION: i16 = 2;

/// Consecutive partitions of one topic, as a request lists them.
fn topics_of(partitions: &[TxnTopicPartition]) -> Vec<(&str, Vec<i32>)> {
    let mut topics: Vec<(&str, Vec<i32>)> = Vec::new();
    for tp in partitions {
        match topics.last_mut() {
            Some((name, indexes)) if *name == tp.topic => indexes.push(tp.partition),
            _ => topics.push((tp.topic.as_str(), vec![tp.partition])),
        }
    }
    topics
}

fn markers_v1(entries: &[TxnMarkerEntry]) -> WriteTxnMarkersRequest {
    WriteTxnMarkersRequest::default().with_markers(
        entries
            .iter()
            .map(|entry| {
                WritableTxnMarker::default()
                    .with_producer_id(ProducerId(entry.marker.producer_id))
                    .with_producer_epoch(entry.marker.producer_epoch)
                    .with_transaction_result(entry.marker.commit)
                    .with_coordinator_epoch(entry.marker.coordinator_epoch)
                    .with_topics(
                        topics_of(&entry.partitions)
                            .into_iter()
                            .map(|(name, partitions)| {
                                WritableTxnMarkerTopic::default()
                                    .with_name(TopicName(StrBytes::from_string(name.to_owned())))
                                    .with_partition_indexes(partitions)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

fn markers_v2(entries: &[TxnMarkerEntry]) -> v2::WriteTxnMarkersRequest {
    v2::WriteTxnMarkersRequest {
        markers: entries
            .iter()
            .map(|entry| v2::WritableTxnMarker {
                producer_id: entry.marker.producer_id,
                producer_epoch: entry.marker.producer_epoch,
                transaction_result: entry.marker.commit,
                topics: topics_of(&entry.partitions)
                    .into_iter()
                    .map(|(name, partition_indexes)| v2::WritableTxnMarkerTopic {
                        name: StrBytes::from_string(name.to_owned()),
                        partition_indexes,
                    })
                    .collect(),
                coordinator_epoch: entry.marker.coordinator_epoch,
                transaction_version: transaction_version_level(entry.transaction_version),
            })
            .collect(),
    }
}

/// The `transaction.version` level a marker is sent with: 2 for KIP-890's epoch bump, 0
/// otherwise (levels below 2 share the legacy rule).
fn transaction_version_level(version: TransactionVersion) -> i8 {
    match version {
        TransactionVersion::V2 => 2,
        TransactionVersion::Legacy => 0,
    }
}

/// Writes one entry's marker to each of its partitions on this broker (WriteTxnMarkers).
pub async fn write_entry(ctx: MarkerContext<'_>, entry: &TxnMarkerEntry) -> MarkerResults {
    let mut results = Vec::with_capacity(entry.partitions.len());
    for tp in &entry.partitions {
        let code = match write_marker(ctx, tp, &entry.marker, entry.transaction_version).await {
            Ok(()) => 0,
            Err(code) => code,
        };
        results.push((tp.clone(), code));
    }
    ctx.core.replicas.notify_appended();
    results
}

/// Writes one marker to a partition this broker leads; a group's offsets partition also
/// tells the group coordinator, which makes the transaction's offsets visible or drops them.
async fn write_marker(
    ctx: MarkerContext<'_>,
    tp: &TxnTopicPartition,
    marker: &ControlMarker,
    transaction_version: TransactionVersion,
) -> Result<(), i16> {
    let log_tp = shale_log::TopicPartition {
        topic: tp.topic.clone(),
        partition: tp.partition,
    };
    let Some(hosted) = ctx.core.replicas.get(&log_tp) else {
        let known = ctx
            .core
            .image()
            .topic(&tp.topic)
            .is_some_and(|t| t.partitions.contains_key(&tp.partition));
        return Err(if known {
            ResponseError::NotLeaderOrFollower.code()
        } else {
            ResponseError::UnknownTopicOrPartition.code()
        });
    };
    if hosted.leader_id() != ctx.core.node_id() {
        return Err(ResponseError::NotLeaderOrFollower.code());
    }
    // Under the partition's transaction gate: a produce that verified its transaction with
    // the coordinator must not append after this marker (KIP-890 part 1).
    let required_offset = ctx
        .gate
        .write_marker(&log_tp, marker.producer_id, || {
            hosted
                .append_marker(marker, transaction_version, now_ms())
                .map(|()| hosted.log.log_end_offset())
        })
        .map_err(|e| append_error_code(&e).0)?;
    // Followers waiting in a fetch take the marker at once.
    ctx.core.replicas.notify_appended();
    // Like Kafka's marker appends (acks=all): written only once the in-sync replicas have
    // it, or a new leader could miss it and keep the transaction open there.
    let min_insync_replicas = ctx
        .core
        .topic_config_value(&ctx.core.image(), &tp.topic, "min.insync.replicas")
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(ctx.core.config.min_insync_replicas);
    let pending = PendingAck {
        partition: hosted.clone(),
        required_offset,
        min_insync_replicas,
    };
    let replicated = delayed_produce::wait_all(vec![pending], MARKER_REPLICATION_TIMEOUT_MS)
        .await
        .first()
        .copied()
        .unwrap_or(Ok(()));
    let code = crate::errors::ack_error_code(&replicated);
    if code != 0 {
        return Err(code);
    }
    if tp.topic == OFFSETS_TOPIC {
        if let Err(e) = ctx
            .groups
            .complete_transaction(tp.partition, marker.producer_id, marker.commit)
            .await
        {
            warn!(tp = %log_tp, "group coordinator did not take the marker: {e}");
        }
    }
    Ok(())
}

/// Whether the coordinator should try a partition's marker again.
fn is_retriable(code: i16) -> bool {
    [
        ResponseError::NotLeaderOrFollower,
        ResponseError::LeaderNotAvailable,
        ResponseError::NotEnoughReplicas,
        ResponseError::NotEnoughReplicasAfterAppend,
        ResponseError::RequestTimedOut,
        ResponseError::KafkaStorageError,
        ResponseError::UnknownServerError,
    ]
    .iter()
    .any(|e| e.code() == code)
}

const RETRY_BACKOFF_MIN: Duration = Duration::from_millis(50);
const RETRY_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Delivers the markers of a finished transaction to the leaders of all its partitions,
/// retrying what failed for a retriable reason while `still_coordinator` holds (Kafka's
/// coordinator retries until its epoch ends). Partitions that were deleted need no marker;
/// a marker a partition refuses for good (a newer producer epoch or coordinator epoch wrote
/// there already) is logged and dropped, as Kafka does. Returns whether it finished.
pub async fn deliver(
    ctx: MarkerContext<'_>,
    transport: &dyn MarkerTransport,
    markers: &MarkerRequest,
    still_coordinator: impl Fn() -> bool,
) -> bool {
    let marker = ControlMarker {
        producer_id: markers.producer_id,
        producer_epoch: markers.producer_epoch,
        coordinator_epoch: markers.coordinator_epoch,
        commit: markers.commit,
    };
    let mut pending = markers.partitions.clone();
    let mut backoff = RETRY_BACKOFF_MIN;
    let mut shutdown = ctx.core.shutdown_signal();
    loop {
        let image = ctx.core.image();
        let mut by_leader: BTreeMap<i32, Vec<TxnTopicPartition>> = BTreeMap::new();
        for tp in pending.drain(..) {
            match image
                .topic(&tp.topic)
                .and_then(|t| t.partition(tp.partition))
            {
                Some(p) => by_leader.entry(p.leader).or_default().push(tp),
                // Deleted with its topic: nothing left to mark.
                None => continue,
            }
        }
        for (leader_id, partitions) in by_leader {
            let entry = TxnMarkerEntry {
                marker,
                transaction_version: markers.transaction_version,
                partitions,
            };
            let results = transport.send(ctx, leader_id, vec![entry]).await;
            for (tp, code) in results.into_iter().flatten() {
                if code == 0 {
                    continue;
                }
                if is_retriable(code) {
                    pending.push(tp);
                } else if code != ResponseError::UnknownTopicOrPartition.code() {
                    warn!(
                        transactional_id = %markers.transactional_id,
                        topic = %tp.topic,
                        partition = tp.partition,
                        code,
                        "transaction marker refused; not retried"
                    );
                }
            }
        }
        if pending.is_empty() {
            return true;
        }
        if !still_coordinator() {
            return false;
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = shutdown.changed() => return false,
        }
        backoff = (backoff * 2).min(RETRY_BACKOFF_MAX);
    }
}
