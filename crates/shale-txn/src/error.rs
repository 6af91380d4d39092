//! Errors of producer-state validation and snapshot handling.

use std::path::PathBuf;

/// Why a batch, a transaction marker or a snapshot operation was refused. The broker chooses
/// the Kafka error code of each variant.
#[derive(Debug, thiserror::Error)]
pub enum ProducerStateError {
    /// The batch does not continue the producer's sequence (a gap, a reordered batch, or a
    /// non-zero first sequence after an epoch bump).
    #[error(
        "out of order sequence number for producer {producer_id} (epoch {producer_epoch}): \
         incoming sequence {incoming_sequence}, current last sequence {last_sequence} \
         at epoch {current_epoch}"
    )]
    OutOfOrderSequence {
        producer_id: i64,
        producer_epoch: i16,
        incoming_sequence: i32,
        /// `-1` when the producer has no cached batch at its current epoch.
        last_sequence: i32,
        current_epoch: i16,
    },
    /// The batch's epoch is older than the producer's current epoch: a zombie producer
    /// instance, fenced by a newer one.
    #[error(
        "epoch of producer {producer_id} is {producer_epoch}, which is smaller than the last \
         seen epoch {current_epoch}"
    )]
    InvalidProducerEpoch {
        producer_id: i64,
        producer_epoch: i16,
        current_epoch: i16,
    },
    /// A transaction marker carrying an epoch the producer has already used, under transaction
    /// version 2 (where every marker bumps the epoch).
    #[error(
        "transaction marker epoch {producer_epoch} of producer {producer_id} is not newer than \
         the last seen epoch {current_epoch} (transaction version 2)"
    )]
    StaleMarkerEpoch {
        producer_id: i64,
        producer_epoch: i16,
        current_epoch: i16,
    },
    /// The batch's sequence range lies entirely before the cached window of the producer's
    /// last batches: it was written before, but its offsets are no longer known.
    #[error(
        "duplicate sequence for producer {producer_id}: sequences {base_sequence}..={last_sequence} \
         were already written and are older than the cached batches"
    )]
    DuplicateSequence {
        producer_id: i64,
        base_sequence: i32,
        last_sequence: i32,
    },
    /// A non-transactional write while the producer has a transaction open on this partition.
    #[error(
        "expected a transactional write from producer {producer_id}: it has a transaction open \
         since offset {txn_first_offset}"
    )]
    InvalidTxnState {
        producer_id: i64,
        txn_first_offset: i64,
    },
    /// A transaction marker from a coordinator older than one already seen for this producer.
    #[error(
        "invalid coordinator epoch for producer {producer_id}: {coordinator_epoch} (zombie), \
         {current_coordinator_epoch} (current)"
    )]
    TransactionCoordinatorFenced {
        producer_id: i64,
        coordinator_epoch: i32,
        current_coordinator_epoch: i32,
    },
    /// The caller passed a batch kind the method does not take (for example a control batch
    /// to [`crate::ProducerStateManager::check`]).
    #[error("invalid batch: {reason}")]
    InvalidBatch { reason: String },
    /// A snapshot file could not be read or written.
    #[error("producer state snapshot I/O on {path:?}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A snapshot file failed its checksum or structure checks.
    #[error("corrupt producer state snapshot {path:?}: {reason}")]
    CorruptSnapshot { path: PathBuf, reason: String },
}

impl ProducerStateError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_producer() {
        let errors = [
            ProducerStateError::OutOfOrderSequence {
                producer_id: 17,
                producer_epoch: 0,
                incoming_sequence: 5,
                last_sequence: 2,
                current_epoch: 0,
            },
            ProducerStateError::DuplicateSequence {
                producer_id: 17,
                base_sequence: 0,
                last_sequence: 1,
            },
            ProducerStateError::InvalidProducerEpoch {
                producer_id: 17,
                producer_epoch: 0,
                current_epoch: 1,
            },
            ProducerStateError::InvalidTxnState {
                producer_id: 17,
                txn_first_offset: 0,
            },
            ProducerStateError::TransactionCoordinatorFenced {
                producer_id: 17,
                coordinator_epoch: 0,
                current_coordinator_epoch: 1,
            },
        ];
        for error in errors {
            assert!(error.to_string().contains("17"), "{error}");
        }
    }
}
