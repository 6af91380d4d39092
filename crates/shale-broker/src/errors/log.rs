//! Log-engine and producer-state errors, as Produce (and the coordinators' writes) answer them.

use kafka_protocol::ResponseError as E;
use shale_log::{LogError, RecordErrors};
use shale_txn::ProducerStateError;

use super::refusal::Refusal;
use shale_replica::AppendError;

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
        // The log directory is in trouble, not the request.
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

    /// Every log-engine error, with Kafka's number for it.
    #[test]
    fn every_log_error_has_kafka_code() {
        let keyless = RecordErrors(vec![record_error(0, RecordFault::MissingKey, "no key")]);
        let late = RecordErrors(vec![record_error(0, RecordFault::Timestamp, "too old")]);
        let cases: Vec<(LogError, i16)> = vec![
            (LogError::CorruptMessage("crc".into()), 2),
            (
                LogError::MessageTooLarge {
                    size_bytes: 2,
                    limit_bytes: 1,
                },
                10,
            ),
            (LogError::RecordsRejected(keyless), 87),
            (LogError::RecordsRejected(late), 32),
            (LogError::UnsupportedMagic(1), 43),
            (LogError::InvalidRecord("r".into()), 87),
            (
                LogError::OffsetOutOfRange {
                    requested: 9,
                    log_start: 0,
                    log_end: 1,
                },
                1,
            ),
            (
                LogError::UnexpectedAppendOffset {
                    first_offset: 5,
                    log_end: 3,
                },
                -1,
            ),
            (LogError::Compression("lz4".into()), 2),
            (LogError::Storage(std::io::Error::other("ENOSPC")), 56),
            (LogError::LogOffline("t-0".into()), 56),
            (
                LogError::CorruptFile {
                    path: "p".into(),
                    reason: "r".into(),
                },
                56,
            ),
            (LogError::InvalidArgument("a".into()), -1),
        ];
        for (error, code) in &cases {
            assert_eq!(log_error_code(error).0, *code, "{error:?}");
        }
    }

    /// Every producer-state error, with Kafka's number for it, in a Produce answer.
    #[test]
    fn every_producer_state_error_has_kafka_code() {
        let cases: Vec<(ProducerStateError, i16)> = vec![
            (
                ProducerStateError::OutOfOrderSequence {
                    producer_id: 1,
                    producer_epoch: 0,
                    incoming_sequence: 5,
                    last_sequence: 2,
                    current_epoch: 0,
                },
                45,
            ),
            (
                ProducerStateError::DuplicateSequence {
                    producer_id: 1,
                    base_sequence: 0,
                    last_sequence: 1,
                },
                46,
            ),
            (
                ProducerStateError::InvalidProducerEpoch {
                    producer_id: 1,
                    producer_epoch: 0,
                    current_epoch: 1,
                },
                47,
            ),
            (
                ProducerStateError::StaleMarkerEpoch {
                    producer_id: 1,
                    producer_epoch: 1,
                    current_epoch: 1,
                },
                47,
            ),
            (
                ProducerStateError::InvalidTxnState {
                    producer_id: 1,
                    txn_first_offset: 0,
                },
                48,
            ),
            (
                ProducerStateError::TransactionCoordinatorFenced {
                    producer_id: 1,
                    coordinator_epoch: 0,
                    current_coordinator_epoch: 1,
                },
                52,
            ),
            (
                ProducerStateError::InvalidBatch {
                    reason: "control".into(),
                },
                87,
            ),
            (
                ProducerStateError::Io {
                    path: "s".into(),
                    source: std::io::Error::other("EIO"),
                },
                56,
            ),
            (
                ProducerStateError::CorruptSnapshot {
                    path: "s".into(),
                    reason: "crc".into(),
                },
                56,
            ),
        ];
        for (error, code) in cases {
            assert_eq!(producer_error_code(&error).0, code, "{error}");
            let append = AppendError::Producer(error);
            assert_eq!(append_error_code(&append).0, code);
            assert_eq!(append_refusal(&append).code, code);
        }
    }
}
