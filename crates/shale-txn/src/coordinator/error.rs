//! Errors the transaction coordinator answers with. The broker chooses the Kafka error code of
//! each variant.

use super::state::TxnState;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxnCoordinatorError {
    #[error("invalid request: {reason}")]
    InvalidRequest { reason: &'static str },
    #[error("transaction timeout {timeout_ms} ms is not in 1..={max_ms} ms")]
    InvalidTransactionTimeout { timeout_ms: i32, max_ms: i32 },
    /// Retriable: another operation on the transactional id is in progress.
    #[error("a concurrent transaction operation is in progress")]
    ConcurrentTransactions,
    /// A newer producer instance with the same transactional id exists.
    #[error("producer epoch {producer_epoch} is fenced (current epoch {current_epoch})")]
    ProducerFenced {
        producer_epoch: i16,
        current_epoch: i16,
    },
    #[error("producer id {producer_id} does not belong to the transactional id")]
    InvalidProducerIdMapping { producer_id: i64 },
    #[error("cannot {action} a transaction in state {state:?}")]
    InvalidTxnState {
        state: TxnState,
        action: &'static str,
    },
    #[error("this broker is no longer the coordinator for the transactional id")]
    NotCoordinator,
    #[error("the transaction log is not available")]
    CoordinatorNotAvailable,
    /// No producer id is available yet (the next block is being requested).
    #[error("no producer id available yet")]
    CoordinatorLoadInProgress,
    #[error("unknown transactional id")]
    TransactionalIdNotFound,
    /// A bug: the coordinator reached a state it never should.
    #[error("illegal transaction state: {reason}")]
    IllegalState { reason: String },
    /// The transaction-log record is larger than the partition accepts.
    #[error("the transaction log record is too large for its partition")]
    TxnLogRecordTooLarge,
}

/// Why the broker could not write a transaction-log record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnLogAppendError {
    /// The `__transaction_state` partition is gone or lacks in-sync replicas, or the write
    /// timed out.
    Unavailable,
    /// This broker no longer leads the partition, or its log directory failed.
    NotLeader,
    /// The record exceeds the partition's size limits.
    TooLarge,
}

impl TxnLogAppendError {
    /// The error the client sees (Kafka's TransactionStateManager mapping).
    pub fn to_coordinator_error(self) -> TxnCoordinatorError {
        match self {
            Self::Unavailable => TxnCoordinatorError::CoordinatorNotAvailable,
            Self::NotLeader => TxnCoordinatorError::NotCoordinator,
            Self::TooLarge => TxnCoordinatorError::TxnLogRecordTooLarge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_append_errors_become_coordinator_errors_as_in_kafka() {
        assert_eq!(
            TxnLogAppendError::Unavailable.to_coordinator_error(),
            TxnCoordinatorError::CoordinatorNotAvailable
        );
        assert_eq!(
            TxnLogAppendError::NotLeader.to_coordinator_error(),
            TxnCoordinatorError::NotCoordinator
        );
        assert_eq!(
            TxnLogAppendError::TooLarge.to_coordinator_error(),
            TxnCoordinatorError::TxnLogRecordTooLarge
        );
    }
}
