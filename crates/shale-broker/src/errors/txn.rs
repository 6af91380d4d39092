//! Transaction-coordinator errors, the ListTransactions pattern, and KIP-890's verification of
//! a partition with the transaction coordinator (on this broker or another).

use kafka_protocol::ResponseError as E;
use shale_txn::coordinator::{InvalidPatternError, TxnCoordinatorError, TxnState};

use super::refusal::Refusal;

/// Kafka error code and message for a transaction-coordinator error. Requests older than
/// KIP-588 (`fenced_code_supported == false`) get INVALID_PRODUCER_EPOCH instead of
/// PRODUCER_FENCED, which those clients do not know.
pub fn txn_coordinator_error_code(
    e: &TxnCoordinatorError,
    fenced_code_supported: bool,
) -> (i16, String) {
    use TxnCoordinatorError as T;
    let code = match e {
        T::InvalidRequest { .. } => E::InvalidRequest,
        T::InvalidTransactionTimeout { .. } => E::InvalidTransactionTimeout,
        T::ConcurrentTransactions => E::ConcurrentTransactions,
        T::ProducerFenced { .. } if fenced_code_supported => E::ProducerFenced,
        T::ProducerFenced { .. } => E::InvalidProducerEpoch,
        T::InvalidProducerIdMapping { .. } => E::InvalidProducerIdMapping,
        T::InvalidTxnState { .. } => E::InvalidTxnState,
        T::NotCoordinator => E::NotCoordinator,
        T::CoordinatorNotAvailable => E::CoordinatorNotAvailable,
        T::CoordinatorLoadInProgress => E::CoordinatorLoadInProgress,
        T::TransactionalIdNotFound => E::TransactionalIdNotFound,
        T::IllegalState { .. } => E::UnknownServerError,
        // Kafka's TransactionStateManager answers a record the log refuses as too large so.
        T::TxnLogRecordTooLarge => E::UnknownServerError,
    };
    (code.code(), e.to_string())
}

/// ListTransactions v2's answer to a transactional-id pattern that does not compile.
pub fn invalid_pattern_error_code(_: &InvalidPatternError) -> i16 {
    E::InvalidRegularExpression.code()
}

/// Why the transaction coordinator did not verify (or add) a partition for a transactional
/// Produce or TxnOffsetCommit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerificationError {
    /// The coordinator refused: the one on this broker, or another broker's whose answer
    /// [`peer_verification_error`] read back into the coordinator's error.
    #[error(transparent)]
    Coordinator(#[from] TxnCoordinatorError),
    /// Another broker's coordinator answered with a code the coordinator's errors do not
    /// name; it is passed on as it came.
    #[error("the transaction coordinator answered with error code {0}")]
    PeerCode(i16),
}

/// Another broker's AddPartitionsToTxn answer (a top-level or partition error code), as the
/// coordinator's own error where it names one.
pub fn peer_verification_error(code: i16) -> VerificationError {
    use TxnCoordinatorError as T;
    let error = match code {
        c if c == E::InvalidTxnState.code() => T::InvalidTxnState {
            state: TxnState::Empty,
            action: "write to a partition not added to",
        },
        c if c == E::ProducerFenced.code() || c == E::InvalidProducerEpoch.code() => {
            T::ProducerFenced {
                producer_epoch: -1,
                current_epoch: -1,
            }
        }
        c if c == E::InvalidProducerIdMapping.code() => {
            T::InvalidProducerIdMapping { producer_id: -1 }
        }
        c if c == E::ConcurrentTransactions.code() => T::ConcurrentTransactions,
        c if c == E::NotCoordinator.code() => T::NotCoordinator,
        c if c == E::CoordinatorLoadInProgress.code() => T::CoordinatorLoadInProgress,
        c if c == E::CoordinatorNotAvailable.code() => T::CoordinatorNotAvailable,
        c if c == E::InvalidTransactionTimeout.code() => T::InvalidTransactionTimeout {
            timeout_ms: -1,
            max_ms: -1,
        },
        other => return VerificationError::PeerCode(other),
    };
    VerificationError::Coordinator(error)
}

/// The code a TxnOffsetCommit answers with when its group's partition was not verified.
pub fn verification_error_code(e: &VerificationError) -> i16 {
    match e {
        VerificationError::Coordinator(e) => txn_coordinator_error_code(e, true).0,
        VerificationError::PeerCode(code) => *code,
    }
}

/// How a verification failure reaches the producer (Kafka's AddPartitionsToTxnManager):
/// coordinator trouble is retriable, a newer epoch fences, anything else means the partition
/// is not part of an ongoing transaction.
pub fn verification_refusal(error: &VerificationError) -> Refusal {
    use TxnCoordinatorError as T;
    let code = match error {
        VerificationError::Coordinator(
            T::ConcurrentTransactions
            | T::NotCoordinator
            | T::CoordinatorNotAvailable
            | T::CoordinatorLoadInProgress
            | T::TxnLogRecordTooLarge,
        )
        | VerificationError::PeerCode(_) => E::NotEnoughReplicas,
        VerificationError::Coordinator(T::ProducerFenced { .. }) => E::InvalidProducerEpoch,
        VerificationError::Coordinator(
            T::InvalidTransactionTimeout { .. }
            | T::InvalidRequest { .. }
            | T::InvalidProducerIdMapping { .. }
            | T::InvalidTxnState { .. }
            | T::TransactionalIdNotFound
            | T::IllegalState { .. },
        ) => E::InvalidTxnState,
    };
    Refusal::new(
        code.code(),
        format!("transaction verification failed: {error}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every transaction-coordinator error, with Kafka's number for it: for clients that know
    /// PRODUCER_FENCED, for older ones, and in a transactional Produce's refusal.
    #[test]
    fn every_txn_coordinator_error_has_kafka_code() {
        use TxnCoordinatorError as T;
        let cases = [
            (T::InvalidRequest { reason: "x" }, 42, 42, 48),
            (
                T::InvalidTransactionTimeout {
                    timeout_ms: 0,
                    max_ms: 1,
                },
                50,
                50,
                48,
            ),
            (T::ConcurrentTransactions, 51, 51, 19),
            (
                T::ProducerFenced {
                    producer_epoch: 0,
                    current_epoch: 1,
                },
                90,
                47,
                47,
            ),
            (T::InvalidProducerIdMapping { producer_id: 1 }, 49, 49, 48),
            (
                T::InvalidTxnState {
                    state: TxnState::Empty,
                    action: "commit",
                },
                48,
                48,
                48,
            ),
            (T::NotCoordinator, 16, 16, 19),
            (T::CoordinatorNotAvailable, 15, 15, 19),
            (T::CoordinatorLoadInProgress, 14, 14, 19),
            (T::TransactionalIdNotFound, 105, 105, 48),
            (T::IllegalState { reason: "x".into() }, -1, -1, 48),
            (T::TxnLogRecordTooLarge, -1, -1, 19),
        ];
        for (error, fenced_known, fenced_unknown, produce) in cases {
            assert_eq!(
                txn_coordinator_error_code(&error, true).0,
                fenced_known,
                "{error}"
            );
            assert_eq!(
                txn_coordinator_error_code(&error, false).0,
                fenced_unknown,
                "{error}"
            );
            let verification = VerificationError::Coordinator(error);
            assert_eq!(verification_error_code(&verification), fenced_known);
            assert_eq!(verification_refusal(&verification).code, produce);
        }
        assert_eq!(verification_error_code(&VerificationError::PeerCode(3)), 3);
        assert_eq!(
            verification_refusal(&VerificationError::PeerCode(3)).code,
            19
        );
    }

    #[test]
    fn an_invalid_pattern_is_invalid_regular_expression() {
        let error = shale_txn::coordinator::TransactionalIdPattern::compile("app-(").unwrap_err();
        assert_eq!(invalid_pattern_error_code(&error), 128);
    }

    #[test]
    fn coordinator_codes_round_trip_to_the_same_code() {
        for code in [48, 90, 49, 51, 16, 14, 15, 50, 7] {
            let back = verification_error_code(&peer_verification_error(code));
            assert_eq!(back, code, "code {code}");
        }
        assert_eq!(verification_error_code(&peer_verification_error(47)), 90);
    }

    #[test]
    fn verification_errors_map_like_kafka() {
        let fenced = TxnCoordinatorError::ProducerFenced {
            producer_epoch: 1,
            current_epoch: 2,
        };
        assert_eq!(verification_refusal(&fenced.into()).code, 47);
        assert_eq!(
            verification_refusal(&TxnCoordinatorError::ConcurrentTransactions.into()).code,
            19
        );
        let not_added = TxnCoordinatorError::InvalidTxnState {
            state: TxnState::CompleteCommit,
            action: "write",
        };
        assert_eq!(verification_refusal(&not_added.into()).code, 48);
    }
}
