//! The one place where domain errors of the lower layers become Kafka error codes.

use kafka_protocol::ResponseError as E;
use shale_group::GroupError;
use shale_log::{LogError, RecordErrors};
use shale_metadata::MetadataError;
use shale_txn::ProducerStateError;

use shale_replica::{AckError, AppendError, ReplicaError};

/// A refused append as a Produce partition answer carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: i16,
    pub message: String,
    /// KIP-467: the records at fault, by index in the batch, with their messages.
    pub record_errors: Vec<(i32, String)>,
}

impl Refusal {
    pub fn new(code: i16, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
            record_errors: Vec::new(),
        }
    }
}

/// Kafka's answer for a batch with refused records (its `LogValidator.processRecordErrors`):
/// any bad timestamp makes it INVALID_TIMESTAMP with a fixed message, otherwise INVALID_RECORD
/// with a message quoting at most the first three record errors.
fn record_errors_refusal(errors: &RecordErrors) -> Refusal {
    let (code, message) = if errors.has_invalid_timestamp() {
        (
            E::InvalidTimestamp,
            "One or more records have been rejected due to invalid timestamp".to_string(),
        )
    } else {
        let shown: Vec<String> = errors
            .0
            .iter()
            .take(3)
            .map(|e| {
                format!(
                    "RecordError(batchIndex={}, message='{}')",
                    e.batch_index, e.message
                )
            })
            .collect();
        (
            E::InvalidRecord,
            format!(
                "One or more records have been rejected due to {} record errors in total, and \
                 only showing the first three errors at most: [{}]",
                errors.0.len(),
                shown.join(", ")
            ),
        )
    };
    Refusal {
        code: code.code(),
        message,
        record_errors: errors
            .0
            .iter()
            .map(|e| (e.batch_index, e.message.clone()))
            .collect(),
    }
}

/// How Produce answers a failed append.
pub fn append_refusal(e: &AppendError) -> Refusal {
    match e {
        AppendError::Log(LogError::RecordsRejected(errors)) => record_errors_refusal(errors),
        other => {
            let (code, message) = append_error_code(other);
            Refusal::new(code, message)
        }
    }
}

/// Kafka error code and message for a log-engine error.
pub fn log_error_code(e: &LogError) -> (i16, String) {
    if let LogError::RecordsRejected(errors) = e {
        let refusal = record_errors_refusal(errors);
        return (refusal.code, refusal.message);
    }
    let code = match e {
        LogError::CorruptMessage(_) => E::CorruptMessage,
        LogError::MessageTooLarge { .. } => E::MessageTooLarge,
        LogError::RecordsRejected(_) => E::InvalidRecord,
        LogError::UnsupportedMagic(_) => E::UnsupportedForMessageFormat,
        LogError::InvalidRecord(_) => E::InvalidRecord,
        LogError::OffsetOutOfRange { .. } => E::OffsetOutOfRange,
        LogError::Compression(_) => E::CorruptMessage,
        LogError::Storage(_) | LogError::LogOffline(_) | LogError::CorruptFile { .. } => {
            E::KafkaStorageError
        }
        LogError::UnexpectedAppendOffset { .. } | LogError::InvalidArgument(_) => {
            E::UnknownServerError
        }
    };
    (code.code(), e.to_string())
}

/// Kafka error code and message for a producer-state error. Retriable problems never become
/// UNKNOWN_SERVER_ERROR: the Java client would then resend and duplicate (KAFKA-14034).
pub fn producer_error_code(e: &ProducerStateError) -> (i16, String) {
    let code = match e {
        ProducerStateError::OutOfOrderSequence { .. } => E::OutOfOrderSequenceNumber,
        ProducerStateError::DuplicateSequence { .. } => E::DuplicateSequenceNumber,
        ProducerStateError::InvalidProducerEpoch { .. }
        | ProducerStateError::StaleMarkerEpoch { .. } => E::InvalidProducerEpoch,
        ProducerStateError::InvalidTxnState { .. } => E::InvalidTxnState,
        ProducerStateError::TransactionCoordinatorFenced { .. } => E::TransactionCoordinatorFenced,
        ProducerStateError::InvalidBatch { .. } => E::InvalidRecord,
        ProducerStateError::Io { .. } | ProducerStateError::CorruptSnapshot { .. } => {
            E::KafkaStorageError
        }
    };
    (code.code(), e.to_string())
}

/// Kafka error code and message for a failed append.
pub fn append_error_code(e: &AppendError) -> (i16, String) {
    match e {
        AppendError::Log(l) => log_error_code(l),
        AppendError::Producer(p) => producer_error_code(p),
    }
}

/// Kafka error code and message for a metadata-controller error.
pub fn metadata_error_code(e: &MetadataError) -> (i16, String) {
    use MetadataError as M;
    let code = match e {
        M::TopicAlreadyExists(_) => E::TopicAlreadyExists,
        M::InvalidTopic(_) => E::InvalidTopicException,
        M::InvalidPartitions(_) => E::InvalidPartitions,
        M::InvalidReplicationFactor(_) => E::InvalidReplicationFactor,
        M::InvalidReplicaAssignment(_) => E::InvalidReplicaAssignment,
        M::InvalidConfig(_) => E::InvalidConfig,
        M::InvalidRequest(_) => E::InvalidRequest,
        M::PolicyViolation(_) => E::PolicyViolation,
        M::UnknownTopicOrPartition => E::UnknownTopicOrPartition,
        M::UnknownTopicId => E::UnknownTopicId,
        M::TopicDeletionDisabled => E::TopicDeletionDisabled,
        M::StaleBrokerEpoch(_) => E::StaleBrokerEpoch,
        M::BrokerIdNotRegistered(_) => E::BrokerIdNotRegistered,
        M::DuplicateBrokerRegistration(_) => E::DuplicateBrokerRegistration,
        M::InconsistentClusterId(_) => E::InconsistentClusterId,
        M::FencedLeaderEpoch(_) => E::FencedLeaderEpoch,
        M::InvalidUpdateVersion(_) => E::InvalidUpdateVersion,
        M::IneligibleReplica(_) => E::IneligibleReplica,
        M::NotLeaderOrFollower(_) => E::NotLeaderOrFollower,
        M::ElectionNotNeeded(_) => E::ElectionNotNeeded,
        M::PreferredLeaderNotAvailable(_) => E::PreferredLeaderNotAvailable,
        M::EligibleLeadersNotAvailable(_) => E::EligibleLeadersNotAvailable,
        M::NoReassignmentInProgress(_) => E::NoReassignmentInProgress,
        M::UnsupportedSaslMechanism(_) => E::UnsupportedSaslMechanism,
        M::UnacceptableCredential(_) => E::UnacceptableCredential,
        M::ResourceNotFound(_) => E::ResourceNotFound,
        M::DuplicateResource(_) => E::DuplicateResource,
        M::NotController => E::NotController,
        M::RequestTimedOut => E::RequestTimedOut,
        M::ShutDown => E::NotController,
        M::Io(_) | M::Corrupt(_) | M::InconsistentStorage(_) => E::KafkaStorageError,
    };
    (code.code(), e.to_string())
}

/// What an ApiVersions v5 request's cluster id and node id say (KIP-1242).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterCheck {
    /// One of the two is given without the other.
    Unpaired,
    /// They name another cluster or another node: the client's metadata is stale.
    Stale,
}

pub fn cluster_check_error_code(check: ClusterCheck) -> i16 {
    match check {
        ClusterCheck::Unpaired => E::InvalidRequest.code(),
        ClusterCheck::Stale => E::RebootstrapRequired.code(),
    }
}

/// The message a DeleteGroups v3 result carries with its error. Kafka 4.4 gives one only
/// when the request failed as a whole at the coordinator (its exception's message); a
/// group's own outcome (not empty, not found) has none.
pub fn delete_group_error_message(e: &GroupError) -> Option<&'static str> {
    use GroupError as G;
    match e {
        G::NotCoordinator => Some("This is not the correct coordinator."),
        G::CoordinatorNotAvailable => Some("The coordinator is not available."),
        G::CoordinatorLoadInProgress => {
            Some("The coordinator is loading and hence can't process requests.")
        }
        G::UnknownServerError(_) => {
            Some("The server experienced an unexpected error when processing the request.")
        }
        _ => None,
    }
}

/// Kafka's code for a topic id this broker does not know (OffsetCommit and OffsetFetch v10,
/// TxnOffsetCommit v6).
pub fn unknown_topic_id_code() -> i16 {
    metadata_error_code(&MetadataError::UnknownTopicId).0
}

/// Kafka error code and message for a group-coordinator error.
pub fn group_error_code(e: &GroupError) -> (i16, String) {
    use GroupError as G;
    let code = match e {
        G::UnknownMemberId => E::UnknownMemberId,
        G::IllegalGeneration => E::IllegalGeneration,
        G::RebalanceInProgress => E::RebalanceInProgress,
        G::MemberIdRequired { .. } => E::MemberIdRequired,
        G::FencedInstanceId => E::FencedInstanceId,
        G::InconsistentGroupProtocol => E::InconsistentGroupProtocol,
        G::GroupMaxSizeReached => E::GroupMaxSizeReached,
        G::InvalidSessionTimeout => E::InvalidSessionTimeout,
        G::GroupIdNotFound => E::GroupIdNotFound,
        G::NonEmptyGroup => E::NonEmptyGroup,
        G::CoordinatorLoadInProgress => E::CoordinatorLoadInProgress,
        G::NotCoordinator => E::NotCoordinator,
        G::CoordinatorNotAvailable => E::CoordinatorNotAvailable,
        G::UnknownTopicOrPartition => E::UnknownTopicOrPartition,
        G::OffsetMetadataTooLarge => E::OffsetMetadataTooLarge,
        G::UnstableOffsetCommit => E::UnstableOffsetCommit,
        G::GroupSubscribedToTopic => E::GroupSubscribedToTopic,
        G::InvalidGroupId => E::InvalidGroupId,
        G::InvalidCommitOffsetSize => E::InvalidCommitOffsetSize,
        G::UnknownServerError(_) => E::UnknownServerError,
    };
    (code.code(), e.to_string())
}

/// Kafka error code and message for a transaction-coordinator error. Requests older than
/// KIP-588 (`fenced_code_supported == false`) get INVALID_PRODUCER_EPOCH instead of
/// PRODUCER_FENCED, which those clients do not know.
pub fn txn_coordinator_error_code(
    e: &shale_txn::coordinator::TxnCoordinatorError,
    fenced_code_supported: bool,
) -> (i16, String) {
    use shale_txn::coordinator::TxnCoordinatorError as T;
    let code = match e {
        T::InvalidRequest { .. } => E::InvalidRequest.code(),
        T::InvalidTransactionTimeout { .. } => E::InvalidTransactionTimeout.code(),
        T::ConcurrentTransactions => E::ConcurrentTransactions.code(),
        T::ProducerFenced { .. } if fenced_code_supported => E::ProducerFenced.code(),
        T::ProducerFenced { .. } => E::InvalidProducerEpoch.code(),
        T::InvalidProducerIdMapping { .. } => E::InvalidProducerIdMapping.code(),
        T::InvalidTxnState { .. } => E::InvalidTxnState.code(),
        T::NotCoordinator => E::NotCoordinator.code(),
        T::CoordinatorNotAvailable => E::CoordinatorNotAvailable.code(),
        T::CoordinatorLoadInProgress => E::CoordinatorLoadInProgress.code(),
        T::TransactionalIdNotFound => E::TransactionalIdNotFound.code(),
        T::IllegalState { .. } => E::UnknownServerError.code(),
        T::LogAppendFailed { code } => *code,
    };
    (code, e.to_string())
}

/// A leader-only request refused by the replica layer's leader check.
pub fn replica_error_code(e: &ReplicaError) -> i16 {
    match e {
        ReplicaError::UnknownTopicOrPartition => E::UnknownTopicOrPartition.code(),
        ReplicaError::UnknownTopicId => E::UnknownTopicId.code(),
        ReplicaError::NotLeaderOrFollower => E::NotLeaderOrFollower.code(),
        ReplicaError::FencedLeaderEpoch { .. } => E::FencedLeaderEpoch.code(),
        ReplicaError::UnknownLeaderEpoch { .. } => E::UnknownLeaderEpoch.code(),
        ReplicaError::NotEnoughReplicas { .. } => E::NotEnoughReplicas.code(),
    }
}

/// An acks=all wait that ended without the ISR's acknowledgement (0 when it had it).
pub fn ack_error_code(outcome: &Result<(), AckError>) -> i16 {
    match outcome {
        Ok(()) => 0,
        Err(AckError::NotLeaderOrFollower) => E::NotLeaderOrFollower.code(),
        Err(AckError::NotEnoughReplicasAfterAppend) => E::NotEnoughReplicasAfterAppend.code(),
        Err(AckError::TimedOut) => E::RequestTimedOut.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_log::{RecordError, RecordFault};

    fn record_error(batch_index: i32, fault: RecordFault, message: &str) -> RecordError {
        RecordError {
            batch_index,
            fault,
            message: message.to_string(),
        }
    }

    #[test]
    fn record_errors_are_answered_as_kafka_answers_them() {
        let keyless = |i| record_error(i, RecordFault::MissingKey, "no key");
        let errors = RecordErrors((0..5).map(keyless).collect());
        let refusal = append_refusal(&AppendError::Log(LogError::RecordsRejected(errors)));
        assert_eq!(refusal.code, 87);
        assert_eq!(
            refusal.message,
            "One or more records have been rejected due to 5 record errors in total, and only \
             showing the first three errors at most: [RecordError(batchIndex=0, message='no key'), \
             RecordError(batchIndex=1, message='no key'), RecordError(batchIndex=2, message='no key')]"
        );
        // The message shows three; the field lists every one.
        assert_eq!(refusal.record_errors.len(), 5);
        assert_eq!(refusal.record_errors[4], (4, "no key".to_string()));

        let mixed = RecordErrors(vec![
            keyless(0),
            record_error(3, RecordFault::Timestamp, "too new"),
        ]);
        let refusal = append_refusal(&AppendError::Log(LogError::RecordsRejected(mixed)));
        assert_eq!(refusal.code, 32);
        assert_eq!(
            refusal.message,
            "One or more records have been rejected due to invalid timestamp"
        );
        assert_eq!(
            refusal.record_errors,
            vec![(0, "no key".to_string()), (3, "too new".to_string())]
        );
    }

    #[test]
    fn representative_codes() {
        assert_eq!(log_error_code(&LogError::CorruptMessage("x".into())).0, 2);
        assert_eq!(
            log_error_code(&LogError::MessageTooLarge {
                size_bytes: 2,
                limit_bytes: 1
            })
            .0,
            10
        );
        assert_eq!(
            log_error_code(&LogError::OffsetOutOfRange {
                requested: 9,
                log_start: 0,
                log_end: 1
            })
            .0,
            1
        );
        assert_eq!(
            log_error_code(&LogError::Storage(std::io::Error::other("ENOSPC"))).0,
            56
        );
        assert_eq!(
            metadata_error_code(&MetadataError::TopicAlreadyExists("t".into())).0,
            36
        );
        assert_eq!(
            metadata_error_code(&MetadataError::InvalidReplicationFactor("r".into())).0,
            38
        );
        assert_eq!(
            metadata_error_code(&MetadataError::InvalidConfig("c".into())).0,
            40
        );
        assert_eq!(group_error_code(&GroupError::NonEmptyGroup).0, 68);
        assert_eq!(
            group_error_code(&GroupError::MemberIdRequired {
                member_id: "m".into()
            })
            .0,
            79
        );
        assert_eq!(
            group_error_code(&GroupError::CoordinatorLoadInProgress).0,
            14
        );
        assert_eq!(
            producer_error_code(&ProducerStateError::OutOfOrderSequence {
                producer_id: 1,
                producer_epoch: 0,
                incoming_sequence: 5,
                last_sequence: 1,
                current_epoch: 0
            })
            .0,
            45
        );
    }
}
