//! Transaction markers: how the coordinator delivers them to partition leaders, and how a
//! leader writes them (the same code serves the coordinator on this broker and the
//! WriteTxnMarkers API, which other coordinators and `kafka-transactions.sh abort` send).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;
use shale_txn::coordinator::{MarkerRequest, TopicPartition as TxnTopicPartition};
use shale_txn::TransactionVersion;
use tracing::warn;

use super::control::ControlMarker;
use crate::errors::append_error_code;
use crate::groups::OFFSETS_TOPIC;
use crate::time::now_ms;
use crate::Broker;

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

/// Carries markers from the coordinator to a partition leader; one result list per entry.
pub trait MarkerTransport: Send + Sync + std::fmt::Debug {
    fn send<'a>(
        &'a self,
        broker: &'a Arc<Broker>,
        leader_id: i32,
        entries: Vec<TxnMarkerEntry>,
    ) -> MarkerFuture<'a>;
}

/// Writes markers for partitions this broker leads. A remote leader needs an inter-broker
/// client sending WriteTxnMarkers; until the cluster has one, its partitions answer
/// NOT_LEADER_OR_FOLLOWER and the coordinator keeps retrying.
#[derive(Debug, Default)]
pub struct LocalMarkerTransport;

impl MarkerTransport for LocalMarkerTransport {
    fn send<'a>(
        &'a self,
        broker: &'a Arc<Broker>,
        leader_id: i32,
        entries: Vec<TxnMarkerEntry>,
    ) -> MarkerFuture<'a> {
        Box::pin(async move {
            let mut results = Vec::with_capacity(entries.len());
            for entry in entries {
                if leader_id == broker.node_id() {
                    results.push(write_entry(broker, &entry).await);
                } else {
                    let code = ResponseError::NotLeaderOrFollower.code();
                    results.push(entry.partitions.into_iter().map(|tp| (tp, code)).collect());
                }
            }
            results
        })
    }
}

/// Writes one entry's marker to each of its partitions on this broker (WriteTxnMarkers).
pub async fn write_entry(broker: &Arc<Broker>, entry: &TxnMarkerEntry) -> MarkerResults {
    let mut results = Vec::with_capacity(entry.partitions.len());
    for tp in &entry.partitions {
        let code = match write_marker(broker, tp, &entry.marker).await {
            Ok(()) => 0,
            Err(code) => code,
        };
        results.push((tp.clone(), code));
    }
    broker.replicas.notify_appended();
    results
}

/// Writes one marker to a partition this broker leads; a group's offsets partition also
/// tells the group coordinator, which makes the transaction's offsets visible or drops them.
async fn write_marker(
    broker: &Arc<Broker>,
    tp: &TxnTopicPartition,
    marker: &ControlMarker,
) -> Result<(), i16> {
    let log_tp = shale_log::TopicPartition {
        topic: tp.topic.clone(),
        partition: tp.partition,
    };
    let Some(hosted) = broker.replicas.get(&log_tp) else {
        let known = broker
            .image()
            .topic(&tp.topic)
            .is_some_and(|t| t.partitions.contains_key(&tp.partition));
        return Err(if known {
            ResponseError::NotLeaderOrFollower.code()
        } else {
            ResponseError::UnknownTopicOrPartition.code()
        });
    };
    if hosted.leader_id() != broker.node_id() {
        return Err(ResponseError::NotLeaderOrFollower.code());
    }
    // Under the partition's transaction gate: a produce that verified its transaction with
    // the coordinator must not append after this marker (KIP-890 part 1).
    broker
        .txn
        .gate
        .write_marker(&log_tp, marker.producer_id, || {
            hosted.append_marker(marker, now_ms())
        })
        .map_err(|e| append_error_code(&e).0)?;
    if tp.topic == OFFSETS_TOPIC {
        if let Err(e) = broker
            .groups
            .coordinator
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
    broker: &Arc<Broker>,
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
    let mut shutdown = broker.shutdown_signal();
    loop {
        let image = broker.image();
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
            let results = transport.send(broker, leader_id, vec![entry]).await;
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
