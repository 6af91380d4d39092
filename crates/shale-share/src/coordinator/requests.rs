//! What the share coordinator is asked and answers, one share-partition at a time: the
//! fields of WriteShareGroupState, ReadShareGroupState, ReadShareGroupStateSummary,
//! InitializeShareGroupState and DeleteShareGroupState without their wire types.

use uuid::Uuid;

use super::records::ShareRecord;
use crate::state::{PersistedState, SharePartitionKey, StateBatch};

/// A handler's answer together with the records that make it true. The records are
/// appended first; the answer holds once they are durable (and replayed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome<T> {
    pub records: Vec<ShareRecord>,
    pub answer: T,
}

impl<T> Outcome<T> {
    pub(crate) fn answer(answer: T) -> Self {
        Outcome {
            records: Vec::new(),
            answer,
        }
    }
}

/// One partition of WriteShareGroupState. The start offset only moves forward, so -1 (or
/// any offset behind the current one) leaves it as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteStateRequest {
    pub group_id: String,
    pub topic_id: Uuid,
    pub partition: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    /// KIP-1226 (WriteShareGroupState v1); -1 when the writer does not know it (v0).
    pub delivery_complete_count: i32,
    pub batches: Vec<StateBatch>,
}

impl WriteStateRequest {
    pub fn key(&self) -> SharePartitionKey {
        SharePartitionKey {
            group_id: self.group_id.clone(),
            topic_id: self.topic_id,
            partition: self.partition,
        }
    }
}

/// ReadShareGroupStateSummary's answer for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateSummary {
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
}

pub type WriteStateAnswer = Result<(), ShareStateError>;
/// The persisted state; its `leader_epoch` is the one in force once the outcome's records
/// (a leader-epoch update, if any) are replayed.
pub type ReadStateAnswer = Result<PersistedState, ShareStateError>;
pub type ReadStateSummaryAnswer = Result<StateSummary, ShareStateError>;
pub type InitializeStateAnswer = Result<(), ShareStateError>;
pub type DeleteStateAnswer = Result<(), ShareStateError>;

/// Why the share coordinator refuses one share-partition's request. `message()` is the
/// error message Kafka puts in the partition's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareStateError {
    /// INVALID_REQUEST with the shard's own message.
    #[error("{0}")]
    InvalidRequest(InvalidRequest),
    /// FENCED_LEADER_EPOCH: a newer share-partition leader has been seen.
    #[error("The leader epoch in the request is older than the epoch on the broker.")]
    FencedLeaderEpoch,
    /// FENCED_STATE_EPOCH: the state was re-initialized since the writer read it.
    #[error("The coordinator rejected the request because the state epoch did not match.")]
    FencedStateEpoch,
    /// UNKNOWN_TOPIC_OR_PARTITION: not in the metadata the coordinator knows.
    #[error("This server does not host this topic-partition.")]
    UnknownTopicOrPartition,
    /// COORDINATOR_NOT_AVAILABLE, as ShareCoordinatorService answers while it is not active.
    #[error("Share coordinator is not available.")]
    CoordinatorNotAvailable,
    /// UNKNOWN_SERVER_ERROR: the record could not be written (Kafka's runtime failing the
    /// operation).
    #[error("{0}")]
    UnknownServerError(String),
}

impl ShareStateError {
    pub fn message(&self) -> String {
        self.to_string()
    }
}

/// The INVALID_REQUEST cases of Kafka's ShareCoordinatorShard, with its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRequest {
    #[error("The partition id cannot be a negative number.")]
    NegativePartitionId,
    #[error("The leader epoch cannot be a negative number.")]
    NegativeLeaderEpoch,
    #[error("The state epoch cannot be a negative number.")]
    NegativeStateEpoch,
    #[error("Write operation on uninitialized share partition not allowed.")]
    WriteUninitialized,
    #[error("Read operation on uninitialized share partition not allowed.")]
    ReadUninitialized,
}

/// The share coordinator's operations, for the message ShareCoordinatorService gives a
/// partition whose operation failed outside the shard (its records not written in time, the
/// coordinator moved): `"Unable to write share group state: <cause>"` and so on, with the
/// error code the runtime maps the failure to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareOperation {
    WriteState,
    ReadState,
    ReadStateSummary,
    InitializeState,
    DeleteState,
}

impl ShareOperation {
    pub fn failure_message(self, cause: &str) -> String {
        let what = match self {
            ShareOperation::WriteState => "write share group state",
            ShareOperation::ReadState => "read share group state",
            ShareOperation::ReadStateSummary => "read share group state summary",
            ShareOperation::InitializeState => "initialize share group state",
            ShareOperation::DeleteState => "delete share group state",
        };
        format!("Unable to {what}: {cause}")
    }
}
