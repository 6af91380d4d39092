//! Errors of the metadata layer. One variant per Kafka error it stands for, so the broker can map
//! each to its wire code without parsing messages; the message is what Kafka would put in the
//! response's error message.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MetadataError {
    #[error("{0}")]
    TopicAlreadyExists(String),
    #[error("{0}")]
    InvalidTopic(String),
    #[error("{0}")]
    InvalidPartitions(String),
    #[error("{0}")]
    InvalidReplicationFactor(String),
    #[error("{0}")]
    InvalidReplicaAssignment(String),
    #[error("{0}")]
    InvalidConfig(String),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    PolicyViolation(String),
    #[error("This server does not host this topic-partition.")]
    UnknownTopicOrPartition,
    #[error("This server does not host this topic ID.")]
    UnknownTopicId,
    #[error("Topic deletion is disabled.")]
    TopicDeletionDisabled,
    #[error("{0}")]
    StaleBrokerEpoch(String),
    #[error("{0}")]
    BrokerIdNotRegistered(String),
    #[error("{0}")]
    DuplicateBrokerRegistration(String),
    #[error("{0}")]
    InconsistentClusterId(String),
    #[error("{0}")]
    FencedLeaderEpoch(String),
    #[error("{0}")]
    InvalidUpdateVersion(String),
    #[error("{0}")]
    IneligibleReplica(String),
    #[error("{0}")]
    NotLeaderOrFollower(String),
    #[error("{0}")]
    ElectionNotNeeded(String),
    #[error("{0}")]
    PreferredLeaderNotAvailable(String),
    #[error("{0}")]
    EligibleLeadersNotAvailable(String),
    #[error("{0}")]
    NoReassignmentInProgress(String),
    #[error("{0}")]
    UnsupportedSaslMechanism(String),
    #[error("{0}")]
    UnacceptableCredential(String),
    #[error("{0}")]
    ResourceNotFound(String),
    #[error("{0}")]
    DuplicateResource(String),
    /// A SCRAM upsertion whose salted password was empty, so no keys could be derived from
    /// it (Kafka's controller fails it with an unexpected error).
    #[error("the salted password of a SCRAM credential must not be empty")]
    EmptySaltedPassword,
    #[error("This is not the correct controller for this cluster.")]
    NotController,
    /// The request's own `timeout_ms` passed before its outcome was applied; like Kafka's
    /// controller, the change may still complete afterwards.
    #[error("Timed out waiting for the controller to apply the request.")]
    RequestTimedOut,
    /// The metadata node is shutting down or its driver task has stopped.
    #[error("the metadata node is shut down")]
    ShutDown,
    /// A log directory or metadata log holds data this node must not use (other cluster/node).
    #[error("{0}")]
    InconsistentStorage(String),
    /// Undecodable bytes in the metadata log, a snapshot or meta.properties.
    #[error("corrupt metadata: {0}")]
    Corrupt(String),
    #[error("metadata storage error: {0}")]
    Io(String),
}

impl MetadataError {
    pub(crate) fn io(context: &str, err: std::io::Error) -> Self {
        MetadataError::Io(format!("{context}: {err}"))
    }
}
