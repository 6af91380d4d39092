//! Errors returned by the replicated log.

use std::net::SocketAddr;

/// Errors of [`crate::RaftNode`] and [`crate::RaftObserver`].
#[derive(Debug, thiserror::Error)]
pub enum RaftError {
    /// This node is not the leader. `leader_id`/`leader_addr` name the current leader when known.
    #[error("not the leader (leader: {leader_id:?} at {leader_addr:?})")]
    NotLeader {
        leader_id: Option<u64>,
        leader_addr: Option<SocketAddr>,
    },
    /// The configuration is unusable.
    #[error("invalid quorum configuration: {0}")]
    Config(String),
    /// A proposal larger than [`crate::MAX_PROPOSAL_BYTES`].
    #[error("proposal of {size_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    ProposalTooLarge {
        size_bytes: usize,
        limit_bytes: usize,
    },
    /// Reading or writing the files under the data directory failed.
    #[error("storage error: {0}")]
    Storage(String),
    /// The data directory holds data that fails its checksums somewhere other than a torn tail.
    #[error("corrupt data in {path}: {reason}")]
    Corrupt { path: String, reason: String },
    /// Binding or using the controller listener failed.
    #[error("network error: {0}")]
    Network(String),
    /// The node has shut down or a fatal Raft error stopped it.
    #[error("raft node stopped: {0}")]
    Stopped(String),
    /// The operation did not finish in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// Any other failure reported by the consensus engine.
    #[error("raft error: {0}")]
    Internal(String),
}

impl From<std::io::Error> for RaftError {
    fn from(e: std::io::Error) -> Self {
        RaftError::Storage(e.to_string())
    }
}
