//! Observers: broker-only nodes that follow the committed log without voting.
//!
//! An observer long-polls a voter for committed entries (KRaft's observers fetch the same way)
//! and applies them to its state machine. It prefers the leader the voters name and moves to the
//! next voter when one fails or knows no leader. When the entries it needs were purged it receives
//! the voter's snapshot instead. Observers keep no files: a restarted observer replays from the
//! voters' newest snapshot.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::RaftError;
use crate::network::{LinkFaults, PeerConnection};
use crate::security::PeerSecurity;
use crate::state_machine::ReplicatedStateMachine;
use crate::wire::{FetchBody, FetchRequest, Request, Response};

/// How an observer reaches the quorum.
#[derive(Debug, Clone)]
pub struct ObserverConfig {
    /// The observer's own id (a broker id); used only to identify links in fault injection.
    pub observer_id: u64,
    pub voters: Vec<(u64, SocketAddr)>,
    /// How long a voter holds a fetch open when it has nothing new.
    pub fetch_max_wait_ms: u64,
    /// Soft limit of application bytes per fetch response.
    pub fetch_max_bytes: u64,
    /// Deadline of one fetch beyond `fetch_max_wait_ms`.
    pub rpc_timeout_ms: u64,
    /// Pause after a fetch failed at every voter.
    pub retry_backoff_ms: u64,
    /// The cluster the voters must belong to.
    pub cluster_id: String,
    /// Secures each connection to a voter (default: plain text).
    pub security: Arc<dyn PeerSecurity>,
}

impl ObserverConfig {
    pub fn new(observer_id: u64, voters: Vec<(u64, SocketAddr)>) -> Self {
        Self {
            observer_id,
            voters,
            fetch_max_wait_ms: 500,
            fetch_max_bytes: 8 * 1024 * 1024,
            rpc_timeout_ms: crate::config::DEFAULT_RPC_TIMEOUT_MS,
            retry_backoff_ms: 100,
            cluster_id: String::new(),
            security: crate::security::plaintext(),
        }
    }
}

/// A running observer.
#[derive(Debug)]
pub struct RaftObserver {
    task: JoinHandle<()>,
    applied_rx: watch::Receiver<Option<u64>>,
    leader_rx: watch::Receiver<Option<u64>>,
}

impl RaftObserver {
    pub fn start(
        config: ObserverConfig,
        state_machine: Arc<dyn ReplicatedStateMachine>,
    ) -> Result<Self, RaftError> {
        Self::start_with_faults(config, state_machine, LinkFaults::new())
    }

    /// Starts an observer whose links obey `faults` (tests).
    pub fn start_with_faults(
        config: ObserverConfig,
        state_machine: Arc<dyn ReplicatedStateMachine>,
        faults: Arc<LinkFaults>,
    ) -> Result<Self, RaftError> {
        if config.voters.is_empty() {
            return Err(RaftError::Config("observer has no voters to follow".into()));
        }
        let (applied_tx, applied_rx) = watch::channel(None);
        let (leader_tx, leader_rx) = watch::channel(None);
        let task = tokio::spawn(follow(config, state_machine, faults, applied_tx, leader_tx));
        Ok(Self {
            task,
            applied_rx,
            leader_rx,
        })
    }

    /// Log index up to which the state machine is caught up (including entries without
    /// application data).
    pub fn applied_index(&self) -> Option<u64> {
        *self.applied_rx.borrow()
    }

    pub fn subscribe_applied(&self) -> watch::Receiver<Option<u64>> {
        self.applied_rx.clone()
    }

    /// The leader named by the voter last fetched from.
    pub fn leader_id(&self) -> Option<u64> {
        *self.leader_rx.borrow()
    }

    pub async fn wait_applied(&self, index: u64, timeout: Duration) -> Result<(), RaftError> {
        let mut rx = self.applied_rx.clone();
        let reached = tokio::time::timeout(timeout, async {
            rx.wait_for(|applied| applied.is_some_and(|a| a >= index))
                .await
                .is_ok()
        })
        .await
        .map_err(|_| RaftError::Timeout(format!("observer did not reach index {index}")))?;
        if reached {
            Ok(())
        } else {
            Err(RaftError::Stopped("observer stopped".into()))
        }
    }

    pub fn shutdown(self) {
        self.task.abort();
    }
}

impl Drop for RaftObserver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn follow(
    config: ObserverConfig,
    state_machine: Arc<dyn ReplicatedStateMachine>,
    faults: Arc<LinkFaults>,
    applied_tx: watch::Sender<Option<u64>>,
    leader_tx: watch::Sender<Option<u64>>,
) {
    let cluster_id: Arc<str> = Arc::from(config.cluster_id.as_str());
    let mut connections: Vec<PeerConnection> = config
        .voters
        .iter()
        .map(|(id, addr)| {
            PeerConnection::new(
                config.observer_id,
                *id,
                Some(*addr),
                faults.clone(),
                cluster_id.clone(),
                config.security.clone(),
            )
        })
        .collect();
    let timeout = Duration::from_millis(config.rpc_timeout_ms + config.fetch_max_wait_ms);
    let mut current = 0usize;
    let mut failures_in_a_row = 0usize;
    let mut next_index = 0u64;
    loop {
        let request = Request::Fetch(FetchRequest {
            observer_id: config.observer_id,
            from_index: next_index,
            max_wait_ms: config.fetch_max_wait_ms,
            max_bytes: config.fetch_max_bytes,
        });
        let Some(connection) = connections.get_mut(current) else {
            current = 0;
            continue;
        };
        let serving_id = connection.target();
        let response = match connection.call(&request, timeout).await {
            Ok(Response::Fetch(response)) => response,
            Ok(other) => {
                tracing::debug!(voter = serving_id, ?other, "unexpected fetch response");
                current = (current + 1) % connections.len();
                failures_in_a_row += 1;
                backoff_after_round(&config, &mut failures_in_a_row, connections.len()).await;
                continue;
            }
            Err(e) => {
                tracing::debug!(voter = serving_id, error = %e, "fetch failed");
                current = (current + 1) % connections.len();
                failures_in_a_row += 1;
                backoff_after_round(&config, &mut failures_in_a_row, connections.len()).await;
                continue;
            }
        };
        failures_in_a_row = 0;
        leader_tx.send_if_modified(|leader| {
            let changed = *leader != response.leader_id;
            *leader = response.leader_id;
            changed
        });
        let before = next_index;
        match response.body {
            FetchBody::Entries {
                batches,
                next_index: next,
            } => {
                for (index, records) in batches {
                    if index >= next_index {
                        state_machine.apply(index, &records);
                    }
                }
                next_index = next_index.max(next);
            }
            FetchBody::Snapshot { last_index, data } => {
                if last_index + 1 > next_index {
                    if let Err(e) = state_machine.restore(&data, last_index) {
                        tracing::warn!(voter = serving_id, error = %e, "observer could not restore snapshot");
                        tokio::time::sleep(Duration::from_millis(config.retry_backoff_ms)).await;
                        continue;
                    }
                    next_index = last_index + 1;
                }
            }
        }
        if next_index > before {
            let _ = applied_tx.send(Some(next_index - 1));
        }
        match response.leader_id {
            Some(leader) if leader != serving_id => {
                if let Some(position) = config.voters.iter().position(|(id, _)| *id == leader) {
                    current = position;
                }
            }
            Some(_) => {}
            None => {
                // This voter knows no leader and may be cut off: try another one.
                current = (current + 1) % connections.len();
                if next_index == before {
                    tokio::time::sleep(Duration::from_millis(config.retry_backoff_ms)).await;
                }
            }
        }
    }
}

async fn backoff_after_round(
    config: &ObserverConfig,
    failures_in_a_row: &mut usize,
    voters: usize,
) {
    if *failures_in_a_row >= voters {
        *failures_in_a_row = 0;
        tokio::time::sleep(Duration::from_millis(config.retry_backoff_ms)).await;
    }
}
