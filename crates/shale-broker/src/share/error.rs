//! Why share-group work failed in the broker: the share coordinator, the persister that
//! reaches it, and a share-partition's leader. A leaf module, so that the error codes
//! (`errors/share.rs`) can name these without naming what raises them.

use shale_share::coordinator::ShareStateError;

/// Why the share coordinator could not run a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareCoordinatorError {
    #[error("This is not the correct coordinator.")]
    NotCoordinator,
    #[error("The coordinator is loading and hence can't process requests.")]
    LoadInProgress,
    /// The records could not be written or replicated.
    #[error("Unable to write share group state: {0}")]
    WriteFailed(String),
}

/// Why a share state request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PersisterError {
    #[error(transparent)]
    State(#[from] ShareStateError),
    #[error(transparent)]
    Coordinator(#[from] ShareCoordinatorError),
    /// No node leads the state partition (the topic does not exist yet, or has no leader).
    #[error("Share coordinator is not available.")]
    Unavailable,
    /// The peer answered with a code this broker does not turn into a share state error.
    #[error("share coordinator on node {node_id} answered {code}: {message}")]
    Peer {
        node_id: i32,
        code: i16,
        message: String,
    },
}

impl PersisterError {
    /// Whether asking again may succeed (the coordinator moved, is loading or has no leader).
    pub fn is_retriable(&self) -> bool {
        matches!(
            self,
            PersisterError::Coordinator(
                ShareCoordinatorError::NotCoordinator | ShareCoordinatorError::LoadInProgress
            ) | PersisterError::Unavailable
                | PersisterError::State(ShareStateError::CoordinatorNotAvailable)
        )
    }
}

/// Why a share-partition cannot be served here now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaderError {
    #[error("This server is not the leader for that topic-partition.")]
    NotLeader,
    #[error("This server does not host this topic-partition.")]
    UnknownTopicOrPartition,
    #[error(transparent)]
    State(#[from] PersisterError),
    #[error("{0}")]
    InvalidState(String),
}
