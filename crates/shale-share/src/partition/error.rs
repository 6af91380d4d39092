//! The refusals of a share-partition, one kind per Kafka error code the broker answers with.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SharePartitionError {
    /// INVALID_REQUEST. Kafka answers the checks of `validate_acknowledgement_batches` with the
    /// code alone; the text here is for logs.
    #[error("{0}")]
    InvalidRequest(String),
    /// INVALID_RECORD_STATE.
    #[error("{0}")]
    InvalidRecordState(String),
    /// The persisted state cannot be loaded (Kafka fails the share-partition's initialization
    /// with an IllegalStateException, which the broker answers as UNKNOWN_SERVER_ERROR).
    #[error("{0}")]
    InvalidPersistedState(String),
    /// The persisted start offset is -1: the broker resolves `share.auto.offset.reset` against
    /// the log and loads the state with that start offset.
    #[error("the share-partition start offset is not initialized")]
    StartOffsetUnknown,
}
