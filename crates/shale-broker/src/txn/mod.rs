//! The transaction coordinator wired into the broker (issue #7): `__transaction_state` as its
//! log, loading the partitions this broker leads, the transaction APIs, the markers written to
//! the partitions of a finished transaction, and the timer that aborts expired transactions.
//!
//! The decisions are `shale_txn::coordinator::TxnCoordinator`'s; this module gives it a clock,
//! a log and a marker transport (`markers.rs`: the same marker-writing code serves this
//! coordinator and the WriteTxnMarkers API). Partition leaders check transactional batches
//! with the coordinator before appending them (`produce.rs`, `gate.rs`; KIP-890).

pub mod admin;
pub mod gate;
pub mod handlers;
pub mod markers;
pub mod peers;
pub mod produce;
mod state_log;
pub mod topic_ids;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use shale_metadata::MetadataImage;
use shale_txn::coordinator::{
    AppendOutcome, AppendPurpose, MarkerRequest, PartitionVerification,
    TopicPartition as TxnTopicPartition, TxnAppend, TxnCoordinator, TxnCoordinatorConfig,
    TxnCoordinatorError, TxnDecision, TxnLogAppendError, TxnReply, TxnResult,
};
use shale_txn::TransactionVersion;
use tracing::{error, info, warn};
use uuid::Uuid;

use crate::coordinator_host::CoordinatorHost;
use crate::core::BrokerCore;
use crate::errors::{peer_verification_error, VerificationError};
use crate::time::now_ms;
use crate::topic_creation::ensure_internal_topic;
use gate::TxnGate;
use markers::{BrokerMarkerTransport, MarkerTransport};
use peers::PeerClients;
use shale_group::runtime::GroupCoordinator;

/// Fault injection for the crash test: when this environment variable names a transactional
/// id, the process aborts right after that id's PrepareCommit is logged and before any marker
/// is written, as a coordinator killed at that point would.
const CRASH_AFTER_PREPARE_COMMIT_ENV: &str = "SHALE_TEST_CRASH_AFTER_PREPARE_COMMIT";

pub use crate::internal_topics::TXN_STATE_TOPIC;

/// A partition's outcome of [`TxnService::verify_or_add`].
pub type Verified = (TxnTopicPartition, Result<(), VerificationError>);

/// The transaction coordinators of the `__transaction_state` partitions this broker leads.
pub struct TxnService {
    core: Arc<BrokerCore>,
    /// Markers on a group's offsets partition complete its transactional offsets there.
    groups: GroupCoordinator,
    config: TxnCoordinatorConfig,
    /// Fixed at start: placement must never change under a running cluster.
    num_partitions: i32,
    coordinators: Mutex<HashMap<i32, TxnCoordinator>>,
    /// The topic id and leader epoch each served partition was loaded for.
    host: CoordinatorHost<(Uuid, i32)>,
    /// Serialises transactional appends against marker writes on each partition.
    pub gate: TxnGate,
    transport: Arc<dyn MarkerTransport>,
    /// Connections to the other brokers (markers to their partitions, verifications with
    /// their coordinators).
    pub peers: PeerClients,
    crash_after_prepare_commit: Option<String>,
}

impl std::fmt::Debug for TxnService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnService")
            .field("num_partitions", &self.num_partitions)
            .finish()
    }
}

impl TxnService {
    pub fn new(core: Arc<BrokerCore>, image: &MetadataImage, groups: GroupCoordinator) -> Self {
        let config = &core.config;
        let num_partitions = image
            .topic(TXN_STATE_TOPIC)
            .map(|t| i32::try_from(t.partitions.len()).unwrap_or(i32::MAX))
            .filter(|n| *n > 0)
            .unwrap_or(config.transaction_state_log_num_partitions.max(1));
        TxnService {
            config: TxnCoordinatorConfig {
                transaction_max_timeout_ms: i32::try_from(config.transaction_max_timeout_ms)
                    .unwrap_or(i32::MAX),
                transactional_id_expiration_ms: config.transactional_id_expiration_ms,
            },
            num_partitions,
            coordinators: Mutex::new(HashMap::new()),
            host: CoordinatorHost::new(TXN_STATE_TOPIC),
            gate: TxnGate::default(),
            transport: Arc::new(BrokerMarkerTransport),
            peers: PeerClients::default(),
            crash_after_prepare_commit: std::env::var(CRASH_AFTER_PREPARE_COMMIT_ENV)
                .ok()
                .filter(|id| !id.is_empty()),
            groups,
            core,
        }
    }

    /// What marker writing and delivery use of the broker.
    pub fn marker_context(&self) -> markers::MarkerContext<'_> {
        markers::MarkerContext {
            core: &self.core,
            peers: &self.peers,
            groups: &self.groups,
            gate: &self.gate,
        }
    }

    /// The `__transaction_state` partition of a transactional id: `abs(javaHash(id)) % n`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        shale_group::placement::partition_for(transactional_id, self.num_partitions)
    }

    /// Follows leadership of `__transaction_state`: loads partitions this broker now leads
    /// (replaying their records and resending the markers of transactions caught between
    /// prepare and complete), drops those it lost.
    pub fn reconcile(self: &Arc<Self>, broker: &BrokerCore, image: &MetadataImage) {
        let mut resend = Vec::new();
        self.host.follow_leadership(
            &broker.replicas,
            image,
            // A new leader epoch reloads: the log may have changed under another leader.
            |topic_id, leader_epoch| (topic_id, leader_epoch),
            |partition| {
                self.coordinators.lock().remove(&partition);
                info!(partition, "unloaded {TXN_STATE_TOPIC} partition");
            },
            |partition, &(_, leader_epoch), hosted| {
                let mut coordinator = TxnCoordinator::new(self.config, leader_epoch);
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
            },
        );
        if resend.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let txn = self.clone();
        runtime.spawn(async move {
            for (partition, markers) in resend {
                txn.complete_markers(&txn.core, partition, markers).await;
            }
        });
    }

    /// Creates `__transaction_state` if it does not exist yet (first transactional producer).
    pub async fn ensure_state_topic(&self, broker: &BrokerCore) {
        let config = &broker.config;
        let create = || {
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
        };
        let exists = || broker.image().topic(TXN_STATE_TOPIC).is_some();
        self.host.ensure_topic(exists, create).await;
    }

    /// The broker leading the coordinator partition of `transactional_id` (-1 when none).
    pub async fn coordinator_leader(&self, broker: &BrokerCore, transactional_id: &str) -> i32 {
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
        broker: &BrokerCore,
        transactional_id: &str,
        decide: impl FnOnce(&mut TxnCoordinator, i64) -> TxnDecision,
    ) -> TxnResult {
        let partition = self.partition_for(transactional_id);
        let (append, appended) = {
            let mut coordinators = self.coordinators.lock();
            let Some(coordinator) = coordinators.get_mut(&partition) else {
                return Err(self.not_served_error(broker, partition));
            };
            match decide(coordinator, now_ms()) {
                TxnDecision::Reply(result) => return result,
                TxnDecision::Append(append) => {
                    let appended = state_log::append(broker, partition, &append.record);
                    (append, appended)
                }
            }
        };
        let outcome = self.complete_append(partition, append, appended).await;
        if let Some(markers) = outcome.markers {
            self.complete_markers(broker, partition, markers).await;
        }
        outcome.reply.unwrap_or(Ok(TxnReply::Done))
    }

    /// Waits until the record of `append` is replicated (the transition is committed only
    /// then, as with Kafka's acks=all appends to the transaction log; the pending state keeps
    /// other transitions of the id out meanwhile), then applies it.
    async fn complete_append(
        &self,
        partition: i32,
        append: TxnAppend,
        appended: Result<state_log::LogAppended, TxnLogAppendError>,
    ) -> AppendOutcome {
        let result = match appended {
            Ok(appended) => state_log::await_replication(appended).await,
            Err(e) => Err(e),
        };
        self.maybe_crash_after(&append, &result);
        let mut coordinators = self.coordinators.lock();
        match coordinators.get_mut(&partition) {
            Some(coordinator) => coordinator.complete_append(append, result),
            None => AppendOutcome {
                reply: Some(Err(TxnCoordinatorError::NotCoordinator)),
                markers: None,
            },
        }
    }

    fn maybe_crash_after<E>(&self, append: &TxnAppend, result: &Result<(), E>) {
        let Some(crash_id) = &self.crash_after_prepare_commit else {
            return;
        };
        if result.is_ok()
            && append.purpose == (AppendPurpose::EndTxn { commit: true })
            && &append.record.transactional_id == crash_id
        {
            error!(transactional_id = %crash_id, "{CRASH_AFTER_PREPARE_COMMIT_ENV}: aborting");
            std::process::abort();
        }
    }

    /// KIP-890 on the partition leader: whether `partitions` are part of the producer's
    /// ongoing transaction (transaction version 1), or adds them to it (version 2). The
    /// coordinator is asked directly when it is this broker, with AddPartitionsToTxn v5
    /// (`verify_only` for version 1) when it is another.
    pub async fn verify_or_add(
        &self,
        broker: &BrokerCore,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TxnTopicPartition>,
        version: TransactionVersion,
    ) -> Result<Vec<Verified>, VerificationError> {
        let partition = self.partition_for(transactional_id);
        let leader = broker
            .image()
            .topic(TXN_STATE_TOPIC)
            .and_then(|t| t.partition(partition))
            .map(|p| p.leader);
        if let Some(leader) = leader.filter(|&l| l >= 0 && l != broker.node_id()) {
            return self
                .verify_remotely(
                    broker,
                    leader,
                    transactional_id,
                    (producer_id, producer_epoch),
                    partitions,
                    version,
                )
                .await;
        }
        let verified = self
            .verify_or_add_here(
                broker,
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                version,
            )
            .await?;
        Ok(verified
            .into_iter()
            .map(|(tp, result)| (tp, result.map_err(VerificationError::from)))
            .collect())
    }

    /// [`Self::verify_or_add`] by the coordinator on this broker, never forwarded (the
    /// AddPartitionsToTxn v4+ API: NOT_COORDINATOR when this broker is not it).
    pub async fn verify_or_add_here(
        &self,
        broker: &BrokerCore,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TxnTopicPartition>,
        version: TransactionVersion,
    ) -> Result<Vec<PartitionVerification>, TxnCoordinatorError> {
        let partition = self.partition_for(transactional_id);
        if version == TransactionVersion::V2 {
            return self
                .execute(broker, transactional_id, |c, now| {
                    c.add_partitions_with_version(
                        transactional_id,
                        producer_id,
                        producer_epoch,
                        partitions,
                        version,
                        now,
                    )
                })
                .await
                .map(|_| partitions.iter().map(|tp| (tp.clone(), Ok(()))).collect());
        }
        let verified = self.coordinators.lock().get(&partition).map(|c| {
            c.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
        });
        verified.unwrap_or_else(|| Err(self.not_served_error(broker, partition)))
    }

    /// AddPartitionsToTxn v5 to the coordinator on broker `leader`.
    async fn verify_remotely(
        &self,
        broker: &BrokerCore,
        leader: i32,
        transactional_id: &str,
        (producer_id, producer_epoch): (i64, i16),
        partitions: &BTreeSet<TxnTopicPartition>,
        version: TransactionVersion,
    ) -> Result<Vec<Verified>, VerificationError> {
        use kafka_protocol::messages::add_partitions_to_txn_request::{
            AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
        };
        use kafka_protocol::messages::{
            AddPartitionsToTxnRequest, ApiKey, ProducerId, RequestKind, ResponseKind, TopicName,
            TransactionalId,
        };
        use kafka_protocol::protocol::StrBytes;
        let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
        for tp in partitions {
            match topics.last_mut() {
                Some(t) if t.name.0.as_str() == tp.topic => t.partitions.push(tp.partition),
                _ => topics.push(
                    AddPartitionsToTxnTopic::default()
                        .with_name(TopicName(StrBytes::from_string(tp.topic.clone())))
                        .with_partitions(vec![tp.partition]),
                ),
            }
        }
        let request = AddPartitionsToTxnRequest::default().with_transactions(vec![
            AddPartitionsToTxnTransaction::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(
                    transactional_id.to_owned(),
                )))
                .with_producer_id(ProducerId(producer_id))
                .with_producer_epoch(producer_epoch)
                .with_verify_only(version != TransactionVersion::V2)
                .with_topics(topics),
        ]);
        let response = self
            .peers
            .call(
                broker,
                leader,
                ApiKey::AddPartitionsToTxn,
                5,
                RequestKind::AddPartitionsToTxn(request),
            )
            .await;
        let response = match response {
            Ok(ResponseKind::AddPartitionsToTxn(r)) => r,
            Ok(_) => return Err(TxnCoordinatorError::CoordinatorNotAvailable.into()),
            Err(e) => {
                warn!(leader, "cannot reach the transaction coordinator: {e}");
                return Err(TxnCoordinatorError::CoordinatorNotAvailable.into());
            }
        };
        if response.error_code != 0 {
            return Err(peer_verification_error(response.error_code));
        }
        let results = response.results_by_transaction.first();
        Ok(partitions
            .iter()
            .map(|tp| {
                let code = results
                    .and_then(|r| {
                        r.topic_results
                            .iter()
                            .find(|t| t.name.0.as_str() == tp.topic)
                    })
                    .and_then(|t| {
                        t.results_by_partition
                            .iter()
                            .find(|p| p.partition_index == tp.partition)
                    })
                    .map_or(-1, |p| p.partition_error_code);
                let result = if code == 0 {
                    Ok(())
                } else {
                    Err(peer_verification_error(code))
                };
                (tp.clone(), result)
            })
            .collect())
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

    /// DescribeTransactions for one id: its metadata, or why it cannot be described here.
    pub fn describe(
        &self,
        broker: &BrokerCore,
        transactional_id: &str,
    ) -> Result<shale_txn::coordinator::TxnMetadata, TxnCoordinatorError> {
        let partition = self.partition_for(transactional_id);
        let coordinators = self.coordinators.lock();
        match coordinators.get(&partition) {
            Some(c) => c.describe(transactional_id).cloned(),
            None => Err(self.not_served_error(broker, partition)),
        }
    }

    /// ListTransactions over every partition this broker coordinates.
    pub fn list(
        &self,
        states: &[shale_txn::coordinator::TxnState],
        producer_ids: &[i64],
        duration_ms: i64,
        pattern: Option<&shale_txn::coordinator::TransactionalIdPattern>,
        now_ms: i64,
    ) -> Vec<shale_txn::coordinator::TxnMetadata> {
        let coordinators = self.coordinators.lock();
        coordinators
            .values()
            .flat_map(|c| c.list_running_longer_than(states, producer_ids, duration_ms, now_ms))
            .filter(|m| pattern.is_none_or(|p| p.matches(&m.transactional_id)))
            .cloned()
            .collect()
    }

    fn not_served_error(&self, broker: &BrokerCore, partition: i32) -> TxnCoordinatorError {
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
    async fn complete_markers(&self, broker: &BrokerCore, partition: i32, markers: MarkerRequest) {
        let still_coordinator = || {
            self.coordinators
                .lock()
                .get(&partition)
                .is_some_and(|c| c.coordinator_epoch() == markers.coordinator_epoch)
        };
        let delivered = markers::deliver(
            self.marker_context(),
            self.transport.as_ref(),
            &markers,
            still_coordinator,
        )
        .await;
        if !delivered {
            // Another coordinator (or this one after a restart) resends them from its log.
            warn!(
                transactional_id = %markers.transactional_id,
                "transaction markers not delivered before the coordinator moved"
            );
            return;
        }
        let (append, appended) = {
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
                    let appended = state_log::append(broker, partition, &append.record);
                    (append, appended)
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
        let outcome = self.complete_append(partition, append, appended).await;
        if let Some(Err(e)) = outcome.reply {
            warn!(
                transactional_id = %markers.transactional_id,
                "cannot log the transaction complete: {e}"
            );
        }
    }

    /// One pass of a timer: aborts transactions older than their timeout, or expires idle
    /// transactional ids.
    async fn sweep(self: &Arc<Self>, sweep: Sweep) {
        let broker = &self.core;
        let now = now_ms();
        let mut written = Vec::new();
        {
            let mut coordinators = self.coordinators.lock();
            for (&partition, coordinator) in coordinators.iter_mut() {
                let appends: Vec<TxnAppend> = match sweep {
                    Sweep::AbortTimedOut => coordinator.abort_timed_out(now),
                    Sweep::ExpireIds => coordinator.expire_transactional_ids(now),
                };
                for append in appends {
                    let appended = state_log::append(broker, partition, &append.record);
                    written.push((partition, append, appended));
                }
            }
        }
        let mut markers: Vec<(i32, MarkerRequest)> = Vec::new();
        for (partition, append, appended) in written {
            let outcome = self.complete_append(partition, append, appended).await;
            if let Some(m) = outcome.markers {
                info!(
                    transactional_id = %m.transactional_id,
                    "aborting a transaction that outlived its timeout"
                );
                markers.push((partition, m));
            }
        }
        // Each delivery on its own task: a partition leader that cannot be reached must not
        // hold up the next sweep of the other transactions.
        for (partition, m) in markers {
            let txn = self.clone();
            tokio::spawn(async move {
                txn.complete_markers(&txn.core, partition, m).await;
            });
        }
    }
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

/// What one timer pass of the coordinator does.
#[derive(Clone, Copy, Debug)]
enum Sweep {
    AbortTimedOut,
    ExpireIds,
}

/// Aborts timed-out transactions every
/// `transaction.abort.timed.out.transaction.cleanup.interval.ms` and removes expired
/// transactional ids every `transaction.remove.expired.transaction.cleanup.interval.ms`.
pub async fn timeout_loop(txn: Arc<TxnService>) {
    let broker = &txn.core;
    let interval = |ms: i64| tokio::time::interval(Duration::from_millis(ms.max(10) as u64));
    let mut abort_ticks = interval(
        broker
            .config
            .transaction_abort_timed_out_transaction_cleanup_interval_ms,
    );
    let mut expire_ticks = interval(
        broker
            .config
            .transaction_remove_expired_transaction_cleanup_interval_ms,
    );
    let mut shutdown = broker.shutdown_signal();
    loop {
        tokio::select! {
            _ = abort_ticks.tick() => txn.sweep(Sweep::AbortTimedOut).await,
            _ = expire_ticks.tick() => txn.sweep(Sweep::ExpireIds).await,
            _ = shutdown.changed() => return,
        }
    }
}
