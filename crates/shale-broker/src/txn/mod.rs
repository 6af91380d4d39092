//! The transaction coordinator wired into the broker (issue #7): `__transaction_state` as its
//! log, loading the partitions this broker leads, the transaction APIs, the markers written to
//! the partitions of a finished transaction, and the timer that aborts expired transactions.
//!
//! The decisions are `shale_txn::coordinator::TxnCoordinator`'s; this module gives it a clock,
//! a log and a marker sender. Markers are written to local partitions directly: every
//! partition leader is this broker in a single-node cluster.

pub mod control;
pub mod handlers;
mod state_log;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use shale_metadata::MetadataImage;
use shale_txn::coordinator::{
    MarkerRequest, TopicPartition as TxnTopicPartition, TxnAppend, TxnCoordinator,
    TxnCoordinatorConfig, TxnCoordinatorError, TxnDecision, TxnReply, TxnResult,
};
use tracing::{info, warn};
use uuid::Uuid;

use crate::config::BrokerConfig;
use crate::groups::OFFSETS_TOPIC;
use crate::handlers::topics::ensure_internal_topic;
use crate::partitions::led_partitions;
use crate::time::now_ms;
use crate::Broker;
use control::ControlMarker;

/// The internal topic holding transaction metadata.
pub const TXN_STATE_TOPIC: &str = "__transaction_state";

/// The transaction coordinators of the `__transaction_state` partitions this broker leads.
pub struct TxnService {
    broker: Weak<Broker>,
    config: TxnCoordinatorConfig,
    /// Fixed at start: placement must never change under a running cluster.
    num_partitions: i32,
    coordinators: Mutex<HashMap<i32, TxnCoordinator>>,
    /// The topic id and leader epoch each served partition was loaded for.
    served: Mutex<HashMap<i32, (Uuid, i32)>>,
    creating: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for TxnService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnService")
            .field("num_partitions", &self.num_partitions)
            .finish()
    }
}

impl TxnService {
    pub fn new(config: &BrokerConfig, image: &MetadataImage, broker: Weak<Broker>) -> Self {
        let num_partitions = image
            .topic(TXN_STATE_TOPIC)
            .map(|t| i32::try_from(t.partitions.len()).unwrap_or(i32::MAX))
            .filter(|n| *n > 0)
            .unwrap_or(config.transaction_state_log_num_partitions.max(1));
        TxnService {
            broker,
            config: TxnCoordinatorConfig {
                transaction_max_timeout_ms: i32::try_from(config.transaction_max_timeout_ms)
                    .unwrap_or(i32::MAX),
                transactional_id_expiration_ms: config.transactional_id_expiration_ms,
            },
            num_partitions,
            coordinators: Mutex::new(HashMap::new()),
            served: Mutex::new(HashMap::new()),
            creating: tokio::sync::Mutex::new(()),
        }
    }

    /// The `__transaction_state` partition of a transactional id: `abs(javaHash(id)) % n`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        shale_group::placement::partition_for(transactional_id, self.num_partitions)
    }

    /// Follows leadership of `__transaction_state`: loads partitions this broker now leads
    /// (replaying their records and resending the markers of transactions caught between
    /// prepare and complete), drops those it lost.
    pub fn reconcile(&self, broker: &Broker, image: &MetadataImage) {
        // A new leader epoch reloads: the log may have changed under another leader.
        let wanted = led_partitions(image, TXN_STATE_TOPIC, broker.node_id());
        let mut served = self.served.lock();
        let lost: Vec<i32> = served
            .iter()
            .filter(|(p, key)| wanted.get(p) != Some(key))
            .map(|(p, _)| *p)
            .collect();
        for partition in lost {
            served.remove(&partition);
            self.coordinators.lock().remove(&partition);
            info!(partition, "unloaded {TXN_STATE_TOPIC} partition");
        }
        let mut resend = Vec::new();
        for (partition, key) in wanted {
            if served.contains_key(&partition) {
                continue;
            }
            let tp = shale_log::TopicPartition {
                topic: TXN_STATE_TOPIC.to_owned(),
                partition,
            };
            let Some(hosted) = broker.replicas.get(&tp) else {
                warn!(
                    partition,
                    "leader of {TXN_STATE_TOPIC} partition without its log"
                );
                continue;
            };
            let mut coordinator = TxnCoordinator::new(self.config, key.1);
            match state_log::load(&hosted, &mut coordinator) {
                Ok(records) => info!(partition, records, "loaded transaction coordinator"),
                Err(e) => warn!(partition, "loading transaction state stopped early: {e}"),
            }
            resend.extend(
                coordinator
                    .markers_to_resend()
                    .into_iter()
                    .map(|m| (partition, m)),
            );
            self.coordinators.lock().insert(partition, coordinator);
            served.insert(partition, key);
        }
        drop(served);
        if resend.is_empty() {
            return;
        }
        let (Some(broker), Ok(runtime)) =
            (self.broker.upgrade(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        runtime.spawn(async move {
            for (partition, markers) in resend {
                broker
                    .txn
                    .complete_markers(&broker, partition, markers)
                    .await;
            }
        });
    }

    /// Creates `__transaction_state` if it does not exist yet (first transactional producer).
    pub async fn ensure_state_topic(&self, broker: &Arc<Broker>) {
        if broker.image().topic(TXN_STATE_TOPIC).is_some() {
            return;
        }
        let _creating = self.creating.lock().await;
        if broker.image().topic(TXN_STATE_TOPIC).is_some() {
            return;
        }
        let config = &broker.config;
        ensure_internal_topic(
            broker,
            TXN_STATE_TOPIC,
            self.num_partitions,
            "transaction.state.log.replication.factor",
            config.transaction_state_log_replication_factor,
            |replication_factor| {
                let min_isr = config
                    .transaction_state_log_min_isr
                    .min(i32::from(replication_factor));
                vec![
                    ("cleanup.policy".into(), Some("compact".into())),
                    (
                        "segment.bytes".into(),
                        Some(config.transaction_state_log_segment_bytes.to_string()),
                    ),
                    ("min.insync.replicas".into(), Some(min_isr.to_string())),
                    ("compression.type".into(), Some("uncompressed".into())),
                    (
                        "unclean.leader.election.enable".into(),
                        Some("false".into()),
                    ),
                ]
            },
        )
        .await;
    }

    /// The broker leading the coordinator partition of `transactional_id` (-1 when none).
    pub async fn coordinator_leader(&self, broker: &Arc<Broker>, transactional_id: &str) -> i32 {
        self.ensure_state_topic(broker).await;
        let partition = self.partition_for(transactional_id);
        broker
            .image()
            .topic(TXN_STATE_TOPIC)
            .and_then(|t| t.partition(partition))
            .map(|p| p.leader)
            .unwrap_or(-1)
    }

    /// Runs one coordinator decision for `transactional_id`: writes the record it asks for,
    /// then the markers the written record calls for, and returns the answer.
    pub async fn execute(
        &self,
        broker: &Arc<Broker>,
        transactional_id: &str,
        decide: impl FnOnce(&mut TxnCoordinator, i64) -> TxnDecision,
    ) -> TxnResult {
        let partition = self.partition_for(transactional_id);
        let outcome = {
            let mut coordinators = self.coordinators.lock();
            let Some(coordinator) = coordinators.get_mut(&partition) else {
                return Err(self.not_served_error(broker, partition));
            };
            match decide(coordinator, now_ms()) {
                TxnDecision::Reply(result) => return result,
                TxnDecision::Append(append) => {
                    let result = state_log::append(broker, partition, &append.record);
                    coordinator.complete_append(append, result)
                }
            }
        };
        if let Some(markers) = outcome.markers {
            self.complete_markers(broker, partition, markers).await;
        }
        outcome.reply.unwrap_or(Ok(TxnReply::Done))
    }

    /// Looks at the coordinator state of `transactional_id` without changing it.
    pub fn inspect<T>(
        &self,
        transactional_id: &str,
        look: impl FnOnce(&TxnCoordinator) -> T,
    ) -> Option<T> {
        let partition = self.partition_for(transactional_id);
        self.coordinators.lock().get(&partition).map(look)
    }

    fn not_served_error(&self, broker: &Broker, partition: i32) -> TxnCoordinatorError {
        let leader = broker
            .image()
            .topic(TXN_STATE_TOPIC)
            .and_then(|t| t.partition(partition))
            .map(|p| p.leader);
        match leader {
            Some(leader) if leader == broker.node_id() => {
                TxnCoordinatorError::CoordinatorLoadInProgress
            }
            Some(_) => TxnCoordinatorError::NotCoordinator,
            None => TxnCoordinatorError::CoordinatorNotAvailable,
        }
    }

    /// Writes the markers of a finished transaction to every partition, then logs the
    /// transaction complete.
    async fn complete_markers(&self, broker: &Arc<Broker>, partition: i32, markers: MarkerRequest) {
        write_markers(broker, &markers).await;
        let appends = {
            let mut coordinators = self.coordinators.lock();
            let Some(coordinator) = coordinators.get_mut(&partition) else {
                return;
            };
            let decision = coordinator.markers_written(
                &markers.transactional_id,
                markers.producer_id,
                markers.producer_epoch,
                now_ms(),
            );
            match decision {
                TxnDecision::Append(append) => {
                    let result = state_log::append(broker, partition, &append.record);
                    coordinator.complete_append(append, result)
                }
                TxnDecision::Reply(Err(e)) => {
                    warn!(
                        transactional_id = %markers.transactional_id,
                        "cannot complete the transaction: {e}"
                    );
                    return;
                }
                TxnDecision::Reply(Ok(_)) => return,
            }
        };
        if let Some(Err(e)) = appends.reply {
            warn!(
                transactional_id = %markers.transactional_id,
                "cannot log the transaction complete: {e}"
            );
        }
    }

    /// One pass of the timer: aborts transactions older than their timeout and expires idle
    /// transactional ids.
    async fn abort_timed_out(&self, broker: &Arc<Broker>) {
        let now = now_ms();
        let mut markers: Vec<(i32, MarkerRequest)> = Vec::new();
        {
            let mut coordinators = self.coordinators.lock();
            for (&partition, coordinator) in coordinators.iter_mut() {
                let mut appends: Vec<TxnAppend> = coordinator.abort_timed_out(now);
                appends.extend(coordinator.expire_transactional_ids(now));
                for append in appends {
                    let result = state_log::append(broker, partition, &append.record);
                    let outcome = coordinator.complete_append(append, result);
                    if let Some(m) = outcome.markers {
                        info!(
                            transactional_id = %m.transactional_id,
                            "aborting a transaction that outlived its timeout"
                        );
                        markers.push((partition, m));
                    }
                }
            }
        }
        for (partition, m) in markers {
            self.complete_markers(broker, partition, m).await;
        }
    }
}

/// Writes one COMMIT/ABORT marker to each partition of the transaction. Partitions that are
/// gone need no marker; a group's offsets partition also tells the group coordinator.
async fn write_markers(broker: &Arc<Broker>, markers: &MarkerRequest) {
    let marker = ControlMarker {
        producer_id: markers.producer_id,
        producer_epoch: markers.producer_epoch,
        coordinator_epoch: markers.coordinator_epoch,
        commit: markers.commit,
    };
    for tp in &markers.partitions {
        let log_tp = shale_log::TopicPartition {
            topic: tp.topic.clone(),
            partition: tp.partition,
        };
        let Some(hosted) = broker.replicas.get(&log_tp) else {
            continue;
        };
        if let Err(e) = hosted.append_marker(&marker, now_ms()) {
            warn!(tp = %log_tp, "cannot write the transaction marker: {e}");
            continue;
        }
        if tp.topic == OFFSETS_TOPIC {
            if let Err(e) = broker
                .groups
                .coordinator
                .complete_transaction(tp.partition, markers.producer_id, markers.commit)
                .await
            {
                warn!(tp = %log_tp, "group coordinator did not take the marker: {e}");
            }
        }
    }
    broker.replicas.notify_appended();
}

/// The partitions of a request as the coordinator's set.
pub fn partition_set<'a>(
    topics: impl IntoIterator<Item = (&'a str, &'a [i32])>,
) -> BTreeSet<TxnTopicPartition> {
    topics
        .into_iter()
        .flat_map(|(topic, partitions)| {
            partitions
                .iter()
                .map(move |&p| TxnTopicPartition::new(topic, p))
        })
        .collect()
}

/// Aborts timed-out transactions every
/// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
pub async fn timeout_loop(broker: Arc<Broker>) {
    let every = Duration::from_millis(
        broker
            .config
            .transaction_abort_timed_out_transaction_cleanup_interval_ms
            .max(10) as u64,
    );
    let mut ticks = tokio::time::interval(every);
    let mut shutdown = broker.shutdown_signal();
    loop {
        tokio::select! {
            _ = ticks.tick() => broker.txn.abort_timed_out(&broker).await,
            _ = shutdown.changed() => return,
        }
    }
}
