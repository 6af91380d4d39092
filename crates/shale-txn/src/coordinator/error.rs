//! Errors the transaction coordinator answers with.

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
    /// Writing to the transaction log failed with a Kafka error code passed through.
    #[error("transaction log append failed with error code {code}")]
    LogAppendFailed { code: i16 },
}

impl TxnCoordinatorError {
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            Self::InvalidRequest { .. } => 42,
            Self::InvalidTransactionTimeout { .. } => 50,
            Self::ConcurrentTransactions => 51,
            Self::ProducerFenced { .. } => 90,
            Self::InvalidProducerIdMapping { .. } => 49,
            Self::InvalidTxnState { .. } => 48,
            Self::NotCoordinator => 16,
            Self::CoordinatorNotAvailable => 15,
            Self::CoordinatorLoadInProgress => 14,
            Self::TransactionalIdNotFound => 105,
            Self::IllegalState { .. } => -1,
            Self::LogAppendFailed { code } => *code,
        }
    }
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
    /// Any other Kafka error code.
    Other(i16),
}

impl TxnLogAppendError {
    /// The error the client sees (Kafka's TransactionStateManager mapping).
    pub fn to_coordinator_error(self) -> TxnCoordinatorError {
        match self {
            Self::Unavailable => TxnCoordinatorError::CoordinatorNotAvailable,
            Self::NotLeader => TxnCoordinatorError::NotCoordinator,
            Self::TooLarge => TxnCoordinatorError::LogAppendFailed { code: -1 },
            Self::Other(code) => TxnCoordinatorError::LogAppendFailed { code },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_kafka() {
        let cases = [
            (TxnCoordinatorError::InvalidRequest { reason: "x" }, 42),
            (
                TxnCoordinatorError::InvalidTransactionTimeout {
                    timeout_ms: 0,
                    max_ms: 1,
                },
                50,
            ),
            (TxnCoordinatorError::ConcurrentTransactions, 51),
            (
                TxnCoordinatorError::ProducerFenced {
                    producer_epoch: 0,
                    current_epoch: 1,
                },
                90,
            ),
            (
                TxnCoordinatorError::InvalidProducerIdMapping { producer_id: 1 },
                49,
            ),
            (
                TxnCoordinatorError::InvalidTxnState {
                    state: TxnState::Empty,
                    action: "commit",
                },
                48,
            ),
            (TxnCoordinatorError::NotCoordinator, 16),
            (TxnCoordinatorError::CoordinatorNotAvailable, 15),
            (TxnCoordinatorError::CoordinatorLoadInProgress, 14),
            (TxnCoordinatorError::TransactionalIdNotFound, 105),
            (TxnCoordinatorError::IllegalState { reason: "x".into() }, -1),
        ];
        for (error, code) in cases {
            assert_eq!(error.kafka_error_code(), code, "{error}");
        }
        assert_eq!(
            TxnLogAppendError::Unavailable.to_coordinator_error(),
            TxnCoordinatorError::CoordinatorNotAvailable
        );
        assert_eq!(
            TxnLogAppendError::NotLeader.to_coordinator_error(),
            TxnCoordinatorError::NotCoordinator
        );
        assert_eq!(
            TxnLogAppendError::TooLarge
                .to_coordinator_error()
                .kafka_error_code(),
            -1
        );
        assert_eq!(
            TxnLogAppendError::Other(7)
                .to_coordinator_error()
                .kafka_error_code(),
            7
        );
    }
}
