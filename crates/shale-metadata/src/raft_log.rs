//! `RaftQuorumLog`: the metadata log replicated by the Raft quorum of `shale-raft`.
//!
//! A voter runs a [`RaftNode`], a broker-only node a [`RaftObserver`]; both apply committed
//! batches to a [`CommittedLog`], which this type exposes as a [`QuorumLog`]. Every metadata
//! entry is proposed as its own Raft batch, so the Raft index is the entry's offset and every
//! node sees the same offsets. Raft batches without data (the barrier a new leader commits
//! before it acts) appear as metadata entries without records, so images advance past them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use shale_raft::{
    CommittedLog, CommittedRead as RaftRead, LinkFaults, ObserverConfig, RaftConfig, RaftError,
    RaftNode, RaftObserver,
};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::MetadataError;
use crate::quorum::{
    BoxFuture, CommittedRead, QuorumDescription, QuorumLeader, QuorumLog, ReplicaState,
};
use crate::records;

/// How long one append may wait for its commit before the caller is told to retry: a leader
/// cut off from the majority cannot commit, and the request is better retried elsewhere.
pub const APPEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How often an observer re-reads the leader its voter names (it has no leader stream).
const OBSERVER_LEADER_POLL: Duration = Duration::from_millis(100);

enum Role {
    Voter(Mutex<Option<Arc<RaftNode>>>),
    Observer(Arc<Mutex<Option<RaftObserver>>>),
}

pub struct RaftQuorumLog {
    node_id: i32,
    role: Role,
    committed: Arc<CommittedLog>,
    committed_rx: watch::Receiver<i64>,
    leader_rx: watch::Receiver<QuorumLeader>,
    pumps: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for RaftQuorumLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaftQuorumLog")
            .field("node_id", &self.node_id)
            .field("voter", &matches!(self.role, Role::Voter(_)))
            .finish_non_exhaustive()
    }
}

fn to_offset(index: Option<u64>) -> i64 {
    index.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX))
}

fn map_raft_error(err: RaftError) -> MetadataError {
    match err {
        // The caller retries these with the controller of the moment.
        RaftError::NotLeader { .. }
        | RaftError::Timeout(_)
        | RaftError::Network(_)
        | RaftError::Internal(_) => MetadataError::NotController,
        RaftError::Stopped(_) => MetadataError::ShutDown,
        RaftError::ProposalTooLarge { .. } | RaftError::Config(_) => {
            MetadataError::InvalidRequest(err.to_string())
        }
        RaftError::Storage(_) | RaftError::Corrupt { .. } => MetadataError::Io(err.to_string()),
    }
}

/// Follows `CommittedLog::committed_index` as metadata offsets.
fn pump_committed(committed: &CommittedLog) -> (watch::Receiver<i64>, JoinHandle<()>) {
    let mut source = committed.committed_index();
    let (tx, rx) = watch::channel(to_offset(*source.borrow_and_update()));
    let task = tokio::spawn(async move {
        while source.changed().await.is_ok() {
            let offset = to_offset(*source.borrow_and_update());
            tx.send_if_modified(|current| {
                let changed = *current != offset;
                *current = offset;
                changed
            });
        }
    });
    (rx, task)
}

impl RaftQuorumLog {
    /// Starts a voter. `listener` is the bound controller listener (`None`: bind
    /// `config.listen_addr`); `faults` cuts links in tests.
    pub async fn start_voter(
        config: RaftConfig,
        listener: Option<TcpListener>,
        faults: Arc<LinkFaults>,
    ) -> Result<RaftQuorumLog, MetadataError> {
        let node_id = i32::try_from(config.node_id)
            .map_err(|_| MetadataError::InvalidRequest("node id out of range".into()))?;
        let listener = match listener {
            Some(listener) => listener,
            None => TcpListener::bind(config.listen_addr)
                .await
                .map_err(|e| MetadataError::io(&format!("bind {}", config.listen_addr), e))?,
        };
        let committed = CommittedLog::new();
        let node = RaftNode::start_with_listener(config, committed.clone(), listener, faults)
            .await
            .map_err(map_raft_error)?;
        let mut source = node.subscribe_leader();
        let leader_of = |info: shale_raft::LeaderInfo| QuorumLeader {
            leader_id: info.leader_id.and_then(|id| i32::try_from(id).ok()),
            epoch: i64::try_from(info.term).unwrap_or(i64::MAX),
        };
        let (leader_tx, leader_rx) = watch::channel(leader_of(*source.borrow_and_update()));
        let leader_pump = tokio::spawn(async move {
            while source.changed().await.is_ok() {
                let leader = leader_of(*source.borrow_and_update());
                let previous = leader_tx.send_replace(leader);
                if previous.leader_id != leader.leader_id {
                    match leader.leader_id {
                        Some(id) => tracing::info!(
                            leader_id = id,
                            epoch = leader.epoch,
                            "the metadata quorum has a leader"
                        ),
                        None => {
                            tracing::info!(epoch = leader.epoch, "the metadata quorum is electing")
                        }
                    }
                }
            }
        });
        let (committed_rx, committed_pump) = pump_committed(&committed);
        Ok(RaftQuorumLog {
            node_id,
            role: Role::Voter(Mutex::new(Some(Arc::new(node)))),
            committed,
            committed_rx,
            leader_rx,
            pumps: vec![leader_pump, committed_pump],
        })
    }

    /// Starts an observer (a broker-only node): it follows the committed log and never appends.
    pub fn start_observer(
        config: ObserverConfig,
        faults: Arc<LinkFaults>,
    ) -> Result<RaftQuorumLog, MetadataError> {
        let node_id = i32::try_from(config.observer_id)
            .map_err(|_| MetadataError::InvalidRequest("node id out of range".into()))?;
        let committed = CommittedLog::new();
        let observer = RaftObserver::start_with_faults(config, committed.clone(), faults)
            .map_err(map_raft_error)?;
        let mut applied = observer.subscribe_applied();
        let observer = Arc::new(Mutex::new(Some(observer)));
        let (leader_tx, leader_rx) = watch::channel(QuorumLeader {
            leader_id: None,
            epoch: 0,
        });
        // The observer exposes only the leader its voter last named, without a stream: read it
        // after every fetch that brought entries and periodically. Observers never act as
        // controller, so a local change counter stands in for the epoch.
        let polled = Arc::clone(&observer);
        let leader_pump = tokio::spawn(async move {
            let mut interval = tokio::time::interval(OBSERVER_LEADER_POLL);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    changed = applied.changed() => if changed.is_err() { return },
                    _ = interval.tick() => {}
                }
                let leader_id = {
                    let guard = polled.lock().unwrap_or_else(|p| p.into_inner());
                    match guard.as_ref() {
                        Some(observer) => observer.leader_id(),
                        None => return,
                    }
                };
                let leader_id = leader_id.and_then(|id| i32::try_from(id).ok());
                leader_tx.send_if_modified(|current| {
                    let changed = current.leader_id != leader_id;
                    if changed {
                        current.leader_id = leader_id;
                        current.epoch += 1;
                    }
                    changed
                });
            }
        });
        let (committed_rx, committed_pump) = pump_committed(&committed);
        Ok(RaftQuorumLog {
            node_id,
            role: Role::Observer(observer),
            committed,
            committed_rx,
            leader_rx,
            pumps: vec![leader_pump, committed_pump],
        })
    }

    fn voter(&self) -> Option<Arc<RaftNode>> {
        match &self.role {
            Role::Voter(node) => node.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            Role::Observer(_) => None,
        }
    }

    /// The Raft voter, for status and tests (`None` for an observer or after shutdown).
    pub fn raft_node(&self) -> Option<Arc<RaftNode>> {
        self.voter()
    }

    async fn propose(&self, entry: Vec<Bytes>) -> Result<i64, MetadataError> {
        let node = match &self.role {
            Role::Voter(_) => self.voter().ok_or(MetadataError::ShutDown)?,
            Role::Observer(_) => return Err(MetadataError::NotController),
        };
        match tokio::time::timeout(APPEND_TIMEOUT, node.propose(entry)).await {
            Ok(Ok(index)) => Ok(to_offset(Some(index))),
            Ok(Err(err)) => Err(map_raft_error(err)),
            Err(_) => Err(MetadataError::NotController),
        }
    }
}

impl Drop for RaftQuorumLog {
    fn drop(&mut self) {
        for pump in &self.pumps {
            pump.abort();
        }
    }
}

impl QuorumLog for RaftQuorumLog {
    fn node_id(&self) -> i32 {
        self.node_id
    }

    fn append(&self, entries: Vec<Bytes>) -> BoxFuture<'_, Result<i64, MetadataError>> {
        Box::pin(async move {
            if entries.is_empty() {
                return Ok(*self.committed_rx.borrow());
            }
            // One batch per entry: the Raft index becomes the entry's offset. They are handed
            // to Raft in order and replicated together (one fsync and round trip for the group).
            let node = match &self.role {
                Role::Voter(_) => self.voter().ok_or(MetadataError::ShutDown)?,
                Role::Observer(_) => return Err(MetadataError::NotController),
            };
            let batches = entries.into_iter().map(|entry| vec![entry]).collect();
            match tokio::time::timeout(APPEND_TIMEOUT, node.propose_many(batches)).await {
                Ok(Ok(indexes)) => Ok(to_offset(indexes.last().copied())),
                Ok(Err(err)) => Err(map_raft_error(err)),
                Err(_) => Err(MetadataError::NotController),
            }
        })
    }

    fn barrier(&self) -> BoxFuture<'_, Result<i64, MetadataError>> {
        Box::pin(async move { self.propose(Vec::new()).await })
    }

    fn committed_offset(&self) -> watch::Receiver<i64> {
        self.committed_rx.clone()
    }

    fn read_committed(
        &self,
        after: i64,
        max: usize,
    ) -> BoxFuture<'_, Result<CommittedRead, MetadataError>> {
        Box::pin(async move {
            let after = u64::try_from(after).ok();
            match self.committed.read_committed(after, max) {
                RaftRead::SnapshotRequired => Ok(CommittedRead::SnapshotRequired),
                RaftRead::Entries(batches) => {
                    let mut entries = Vec::with_capacity(batches.len());
                    for (index, mut batch) in batches {
                        let entry = match batch.len() {
                            0 => Bytes::from(records::encode_entry(&[])),
                            1 => batch.remove(0),
                            n => {
                                return Err(MetadataError::Corrupt(format!(
                                    "raft batch {index} holds {n} metadata entries, expected one"
                                )))
                            }
                        };
                        entries.push((to_offset(Some(index)), entry));
                    }
                    Ok(CommittedRead::Entries(entries))
                }
            }
        })
    }

    fn latest_snapshot(&self) -> BoxFuture<'_, Result<Option<(i64, Bytes)>, MetadataError>> {
        Box::pin(async move {
            Ok(self
                .committed
                .latest_snapshot()
                .map(|(index, data)| (to_offset(Some(index)), data)))
        })
    }

    fn save_snapshot(&self, offset: i64, data: Bytes) -> BoxFuture<'_, Result<(), MetadataError>> {
        Box::pin(async move {
            let index = u64::try_from(offset).map_err(|_| {
                MetadataError::InvalidRequest(format!("snapshot at negative offset {offset}"))
            })?;
            self.committed.save_snapshot(index, data);
            Ok(())
        })
    }

    fn leader(&self) -> watch::Receiver<QuorumLeader> {
        self.leader_rx.clone()
    }

    fn describe(&self) -> Option<QuorumDescription> {
        let progress = self.voter()?.quorum_progress()?;
        let replica = |p: &shale_raft::ReplicaProgress| ReplicaState {
            replica_id: i32::try_from(p.node_id).unwrap_or(i32::MAX),
            log_end_offset: to_offset(Some(p.log_end_index)),
            last_fetch_timestamp_ms: p.last_fetch_ms,
            last_caught_up_timestamp_ms: p.last_caught_up_ms,
        };
        Some(QuorumDescription {
            leader_id: i32::try_from(progress.leader_id).unwrap_or(i32::MAX),
            leader_epoch: i32::try_from(progress.term).unwrap_or(i32::MAX),
            high_watermark: to_offset(Some(progress.high_watermark)),
            voters: progress.voters.iter().map(replica).collect(),
            observers: progress.observers.iter().map(replica).collect(),
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            match &self.role {
                Role::Voter(node) => {
                    let node = node.lock().unwrap_or_else(|p| p.into_inner()).take();
                    if let Some(node) = node {
                        // Proposals in flight hold a clone; dropping the last one stops the
                        // node as well, only without waiting for its listener to close.
                        if let Ok(node) = Arc::try_unwrap(node) {
                            if let Err(err) = node.shutdown().await {
                                tracing::warn!(%err, "stopping the raft voter failed");
                            }
                        }
                    }
                }
                Role::Observer(observer) => {
                    let observer = observer.lock().unwrap_or_else(|p| p.into_inner()).take();
                    if let Some(observer) = observer {
                        observer.shutdown();
                    }
                }
            }
            for pump in &self.pumps {
                pump.abort();
            }
        })
    }
}
