//! A voter of the metadata quorum.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openraft::error::{ClientWriteError, RaftError as OpenRaftError};
use openraft::{BasicNode, RaftMetrics};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::RaftConfig;
use crate::error::RaftError;
use crate::log_store::LogStore;
use crate::network::{spawn_server, LinkFaults, NetworkFactory, ServerContext};
use crate::progress::{ProgressTracker, QuorumProgress, ReplicaProgress};
use crate::state_machine::{ReplicatedStateMachine, StateMachineStore};
use crate::types::{Batch, NodeId, Raft};

/// Largest total size of one proposal.
pub const MAX_PROPOSAL_BYTES: usize = 1024 * 1024;

/// A snapshot of a node's Raft state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    pub node_id: u64,
    pub leader_id: Option<u64>,
    pub current_term: u64,
    pub last_log_index: Option<u64>,
    pub last_applied_index: Option<u64>,
    pub snapshot_index: Option<u64>,
    pub purged_index: Option<u64>,
}

/// Who leads the quorum as far as this node knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LeaderInfo {
    /// `None` during an election.
    pub leader_id: Option<u64>,
    /// The Raft term; grows with every election, usable as the leader epoch.
    pub term: u64,
}

/// A running voter: replicates, votes and serves observers on its controller listener.
pub struct RaftNode {
    node_id: NodeId,
    raft: Raft,
    voters: Vec<(u64, SocketAddr)>,
    local_addr: SocketAddr,
    server: JoinHandle<()>,
    leader_watcher: JoinHandle<()>,
    leader_rx: watch::Receiver<LeaderInfo>,
    progress: Arc<ProgressTracker>,
}

/// On the leader, marks the followers whose matched log reaches the leader's end.
fn note_caught_up(progress: &ProgressTracker, m: &RaftMetrics<NodeId, BasicNode>) {
    let (Some(replication), Some(last)) = (&m.replication, m.last_log_index) else {
        return;
    };
    for (id, matched) in replication {
        if matched.is_some_and(|log_id| log_id.index >= last) {
            progress.voter_caught_up(*id);
        }
    }
}

impl std::fmt::Debug for RaftNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaftNode")
            .field("node_id", &self.node_id)
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

fn map_fatal(e: impl std::fmt::Display) -> RaftError {
    RaftError::Stopped(e.to_string())
}

impl RaftNode {
    /// Binds `config.listen_addr` and starts the node. On first start (empty data directory) the
    /// node initialises the cluster with `config.voters`; later starts load their state from files.
    pub async fn start(
        config: RaftConfig,
        state_machine: Arc<dyn ReplicatedStateMachine>,
    ) -> Result<Self, RaftError> {
        let listener = TcpListener::bind(config.listen_addr)
            .await
            .map_err(|e| RaftError::Network(format!("bind {}: {e}", config.listen_addr)))?;
        Self::start_with_listener(config, state_machine, listener, LinkFaults::new()).await
    }

    /// Starts the node on an already bound listener, with a fault switch shared with tests.
    pub async fn start_with_listener(
        config: RaftConfig,
        state_machine: Arc<dyn ReplicatedStateMachine>,
        listener: TcpListener,
        faults: Arc<LinkFaults>,
    ) -> Result<Self, RaftError> {
        config.validate()?;
        let openraft_config = Arc::new(config.openraft_config()?);
        let local_addr = listener
            .local_addr()
            .map_err(|e| RaftError::Network(e.to_string()))?;

        std::fs::create_dir_all(&config.data_dir)?;
        let log = LogStore::open(&config.data_dir.join("log"))?;
        let (sm, snapshots) = StateMachineStore::open(&config.data_dir, state_machine)?;
        let cluster_id: Arc<str> = Arc::from(config.cluster_id.as_str());
        let progress = Arc::new(ProgressTracker::default());
        let network = NetworkFactory {
            self_id: config.node_id,
            faults,
            cluster_id: cluster_id.clone(),
            security: config.security.clone(),
            progress: progress.clone(),
        };
        let raft = Raft::new(config.node_id, openraft_config, network, log.clone(), sm)
            .await
            .map_err(map_fatal)?;

        let server = spawn_server(
            listener,
            ServerContext {
                raft: raft.clone(),
                log,
                snapshots,
                cluster_id,
                controller_service: config.controller_service.clone(),
                security: config.security.clone(),
                progress: progress.clone(),
            },
        );

        if !raft.is_initialized().await.map_err(map_fatal)? {
            let members: BTreeMap<NodeId, BasicNode> = config
                .voters
                .iter()
                .map(|(id, addr)| (*id, BasicNode::new(addr.to_string())))
                .collect();
            match raft.initialize(members).await {
                Ok(()) => tracing::info!(node_id = config.node_id, "initialised the quorum"),
                // Another voter's entries may have arrived first; that is fine.
                Err(OpenRaftError::APIError(e)) => {
                    tracing::info!(node_id = config.node_id, reason = %e, "skipped initialisation")
                }
                Err(e) => {
                    server.abort();
                    let _ = raft.shutdown().await;
                    return Err(map_fatal(e));
                }
            }
        }

        let leader_info = |m: &RaftMetrics<NodeId, BasicNode>| LeaderInfo {
            leader_id: m.current_leader,
            term: m.current_term,
        };
        let (leader_tx, leader_rx) = watch::channel(leader_info(&raft.metrics().borrow()));
        let mut metrics = raft.metrics();
        let tracker = progress.clone();
        let leader_watcher = tokio::spawn(async move {
            while metrics.changed().await.is_ok() {
                let m = metrics.borrow_and_update().clone();
                note_caught_up(&tracker, &m);
                let leader = leader_info(&m);
                leader_tx.send_if_modified(|current| {
                    let changed = *current != leader;
                    *current = leader;
                    changed
                });
            }
        });

        Ok(Self {
            node_id: config.node_id,
            raft,
            voters: config.voters,
            local_addr,
            server,
            leader_watcher,
            leader_rx,
            progress,
        })
    }

    /// The leader's view of every replica (Kafka's DescribeQuorum); `None` when this node is
    /// not the leader.
    pub fn quorum_progress(&self) -> Option<QuorumProgress> {
        let m = self.raft.metrics().borrow().clone();
        if m.state != openraft::ServerState::Leader {
            return None;
        }
        let leader_end = m.last_log_index.map_or(0, |i| i + 1);
        let matched = m.replication.clone().unwrap_or_default();
        let now = crate::progress::wall_clock_ms();
        let voters = self
            .voters
            .iter()
            .map(|(id, _)| {
                if *id == self.node_id {
                    return ReplicaProgress {
                        node_id: *id,
                        log_end_index: leader_end,
                        last_fetch_ms: now,
                        last_caught_up_ms: now,
                    };
                }
                let (last_fetch_ms, last_caught_up_ms) = self.progress.voter_times(*id);
                ReplicaProgress {
                    node_id: *id,
                    log_end_index: matched
                        .get(id)
                        .copied()
                        .flatten()
                        .map_or(0, |log_id| log_id.index + 1),
                    last_fetch_ms,
                    last_caught_up_ms,
                }
            })
            .collect();
        Some(QuorumProgress {
            leader_id: self.node_id,
            term: m.current_term,
            high_watermark: m.last_applied.map_or(0, |id| id.index + 1),
            voters,
            observers: self.progress.observers(),
        })
    }

    pub fn node_id(&self) -> u64 {
        self.node_id
    }

    /// The address the controller listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Replicates `records` as one atomic batch and waits until it is committed and applied
    /// locally. Returns the batch's log index.
    pub async fn propose(&self, records: Vec<Bytes>) -> Result<u64, RaftError> {
        let size_bytes: usize = records.iter().map(Bytes::len).sum();
        if size_bytes > MAX_PROPOSAL_BYTES {
            return Err(RaftError::ProposalTooLarge {
                size_bytes,
                limit_bytes: MAX_PROPOSAL_BYTES,
            });
        }
        match self.raft.client_write(Batch(records)).await {
            Ok(response) => Ok(response.log_id.index),
            Err(OpenRaftError::APIError(ClientWriteError::ForwardToLeader(forward))) => {
                let leader_addr = forward
                    .leader_node
                    .as_ref()
                    .and_then(|node| node.addr.parse().ok())
                    .or_else(|| forward.leader_id.and_then(|id| self.voter_addr(id)));
                Err(RaftError::NotLeader {
                    leader_id: forward.leader_id,
                    leader_addr,
                })
            }
            Err(OpenRaftError::APIError(e)) => Err(RaftError::Internal(e.to_string())),
            Err(OpenRaftError::Fatal(e)) => Err(map_fatal(e)),
        }
    }

    /// Replicates several batches in this order, pipelined: all are handed to Raft before the
    /// first commit is awaited, so they share appends, fsyncs and round trips. Returns each
    /// batch's log index once all are committed and applied locally. On an error, batches
    /// before the failed one may have committed.
    pub async fn propose_many(&self, batches: Vec<Vec<Bytes>>) -> Result<Vec<u64>, RaftError> {
        for records in &batches {
            let size_bytes: usize = records.iter().map(Bytes::len).sum();
            if size_bytes > MAX_PROPOSAL_BYTES {
                return Err(RaftError::ProposalTooLarge {
                    size_bytes,
                    limit_bytes: MAX_PROPOSAL_BYTES,
                });
            }
        }
        let mut pending = Vec::with_capacity(batches.len());
        for records in batches {
            // Sending in turn fixes the log order; only the waiting is concurrent.
            let receiver = self
                .raft
                .client_write_ff(Batch(records))
                .await
                .map_err(map_fatal)?;
            pending.push(receiver);
        }
        let mut indexes = Vec::with_capacity(pending.len());
        for receiver in pending {
            match receiver.await {
                Ok(Ok(response)) => indexes.push(response.log_id.index),
                Ok(Err(ClientWriteError::ForwardToLeader(forward))) => {
                    let leader_addr = forward
                        .leader_node
                        .as_ref()
                        .and_then(|node| node.addr.parse().ok())
                        .or_else(|| forward.leader_id.and_then(|id| self.voter_addr(id)));
                    return Err(RaftError::NotLeader {
                        leader_id: forward.leader_id,
                        leader_addr,
                    });
                }
                Ok(Err(e)) => return Err(RaftError::Internal(e.to_string())),
                Err(_) => return Err(RaftError::Stopped("the raft core stopped".into())),
            }
        }
        Ok(indexes)
    }

    fn voter_addr(&self, id: u64) -> Option<SocketAddr> {
        self.voters
            .iter()
            .find(|(voter, _)| *voter == id)
            .map(|(_, addr)| *addr)
    }

    /// The leader this node currently knows of.
    pub fn leader_id(&self) -> Option<u64> {
        self.leader_rx.borrow().leader_id
    }

    /// The controller listener address of the known leader.
    pub fn leader_addr(&self) -> Option<SocketAddr> {
        self.leader_id().and_then(|id| self.voter_addr(id))
    }

    pub fn is_leader(&self) -> bool {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        m.current_leader == Some(self.node_id) && m.state == openraft::ServerState::Leader
    }

    /// Follows leader and term changes.
    pub fn subscribe_leader(&self) -> watch::Receiver<LeaderInfo> {
        self.leader_rx.clone()
    }

    /// openraft's full metrics stream.
    pub fn metrics(&self) -> watch::Receiver<RaftMetrics<NodeId, BasicNode>> {
        self.raft.metrics()
    }

    pub fn status(&self) -> NodeStatus {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        NodeStatus {
            node_id: self.node_id,
            leader_id: m.current_leader,
            current_term: m.current_term,
            last_log_index: m.last_log_index,
            last_applied_index: m.last_applied.map(|id| id.index),
            snapshot_index: m.snapshot.map(|id| id.index),
            purged_index: m.purged.map(|id| id.index),
        }
    }

    /// Waits until entries up to `index` are applied to this node's state machine.
    pub async fn wait_applied(&self, index: u64, timeout: Duration) -> Result<(), RaftError> {
        self.raft
            .wait(Some(timeout))
            .applied_index_at_least(Some(index), "wait_applied")
            .await
            .map(|_| ())
            .map_err(|e| RaftError::Timeout(e.to_string()))
    }

    /// Asks this node to take a snapshot now (normally they are taken every
    /// `snapshot_every_entries`).
    pub async fn trigger_snapshot(&self) -> Result<(), RaftError> {
        self.raft.trigger().snapshot().await.map_err(map_fatal)
    }

    /// Stops the node: no more votes, replication or answers on the listener.
    /// When this returns the listener is closed, so the address can be bound again.
    pub async fn shutdown(mut self) -> Result<(), RaftError> {
        self.server.abort();
        self.leader_watcher.abort();
        let result = self
            .raft
            .shutdown()
            .await
            .map_err(|e| RaftError::Stopped(e.to_string()));
        // Waiting for the aborted task makes sure its listener and connections are dropped.
        let _ = (&mut self.server).await;
        result
    }
}

impl Drop for RaftNode {
    fn drop(&mut self) {
        // Dropping without shutdown() still stops answering peers at once and stops the core.
        self.server.abort();
        self.leader_watcher.abort();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let raft = self.raft.clone();
            runtime.spawn(async move {
                let _ = raft.shutdown().await;
            });
        }
    }
}
