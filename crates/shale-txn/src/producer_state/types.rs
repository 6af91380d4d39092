//! Inputs and outputs of the producer state manager.

/// Producer id of a batch written without idempotence.
pub const NO_PRODUCER_ID: i64 = -1;
/// Producer epoch of a producer that has not written anything yet.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Sequence of a batch that carries no sequence (non-idempotent, or coordinator writes).
pub const NO_SEQUENCE: i32 = -1;
/// How many of a producer's most recent batches are kept to answer retries (Kafka's value;
/// clients cap `max.in.flight.requests.per.connection` at 5 for idempotence).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;

/// The producer-related fields of one record batch, as the broker reads them from the
/// batch header. Offsets are meaningful only once the log has assigned them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub last_sequence: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp_ms: i64,
    pub is_transactional: bool,
    pub is_control: bool,
    pub record_count: i32,
}

impl ProducerBatch {
    /// Whether the batch takes part in idempotence at all.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }

    /// Whether the batch carries sequence numbers to check. Coordinator writes (transactional
    /// offset commits) carry a producer id and epoch but no sequence.
    pub fn has_sequence(&self) -> bool {
        self.base_sequence >= 0
    }
}

/// Outcome of checking a batch before appending it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequenceCheck {
    /// Append the batch, then call [`crate::ProducerStateManager::record`].
    Append,
    /// The batch is a retry of one already in the log: answer with these offsets and do not
    /// append it again.
    Duplicate {
        first_offset: i64,
        last_offset: i64,
        /// As passed to `record` for the original batch (`-1` for CreateTime topics).
        log_append_time_ms: i64,
    },
}

/// What is remembered of one of a producer's recent batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp_ms: i64,
    pub log_append_time_ms: i64,
}

/// One producer as DescribeProducers reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerSnapshotEntry {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// `-1` when no batch was written at the current epoch.
    pub last_sequence: i32,
    /// The largest record timestamp of the producer's last write (`-1` if none).
    pub last_timestamp_ms: i64,
    /// `-1` until a transaction marker was written for the producer.
    pub coordinator_epoch: i32,
    pub current_txn_start_offset: Option<i64>,
}

/// Which transaction protocol wrote a marker; it decides the marker's epoch rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TransactionVersion {
    /// Transaction versions 0 and 1: the marker carries the transaction's own epoch, so any
    /// epoch not older than the current one is accepted.
    #[default]
    Legacy,
    /// Transaction version 2 (KIP-890): the coordinator bumps the epoch for every marker, so
    /// the marker's epoch must be newer than the current one (an equal epoch with no open
    /// transaction is a retried marker and is accepted).
    V2,
}

/// A COMMIT or ABORT control record for one producer on this partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    /// `true` for COMMIT, `false` for ABORT.
    pub commit: bool,
    /// Offset of the control batch (ignored by the pre-append check).
    pub offset: i64,
    pub timestamp_ms: i64,
    pub transaction_version: TransactionVersion,
}

/// A transaction that a marker closed on this partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    /// Offset of the transaction's first data batch on this partition.
    pub first_offset: i64,
    /// Offset of the marker.
    pub last_offset: i64,
    pub is_aborted: bool,
    /// The last stable offset once this transaction is complete (the first offset of the next
    /// open transaction of another producer, or the marker offset + 1). This is the value the
    /// aborted-transaction index stores for an aborted transaction.
    pub last_stable_offset: i64,
}
