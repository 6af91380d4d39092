//! How the coordinator writes records: the broker appends them to `__consumer_offsets`.

use std::future::Future;
use std::pin::Pin;

use thiserror::Error;

use crate::error::GroupError;

/// An encoded record: key and value (`None` is a tombstone).
pub type EncodedRecord = (Vec<u8>, Option<Vec<u8>>);

/// The future an append returns.
pub type AppendFuture<'a> = Pin<Box<dyn Future<Output = Result<(), GroupLogError>> + Send + 'a>>;

/// Appends records to a `__consumer_offsets` partition. Implemented by the broker; the future
/// completes once the records are committed (what Kafka waits for before answering).
pub trait GroupLog: Send + Sync + 'static {
    fn append(&self, partition: i32, records: Vec<EncodedRecord>) -> AppendFuture<'_>;
}

/// Why an append failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GroupLogError {
    /// This broker no longer leads the partition (or its log directory failed).
    #[error("not the leader of the partition")]
    NotLeader,
    /// The write could not be replicated in time (too few in-sync replicas, timeout).
    #[error("the partition is unavailable")]
    Unavailable,
    /// The batch is larger than the partition accepts.
    #[error("the records are too large")]
    TooLarge,
    #[error("append failed: {0}")]
    Other(String),
}

impl GroupLogError {
    /// The error the client gets, mapped as Kafka's coordinator maps write errors.
    pub fn to_group_error(&self) -> GroupError {
        match self {
            GroupLogError::NotLeader => GroupError::NotCoordinator,
            GroupLogError::Unavailable => GroupError::CoordinatorNotAvailable,
            GroupLogError::TooLarge => GroupError::UnknownServerError("records too large".into()),
            GroupLogError::Other(reason) => GroupError::UnknownServerError(reason.clone()),
        }
    }
}
