//! Typed errors of the log engine; the broker maps each variant to a Kafka error code.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// Framing or CRC is wrong (CORRUPT_MESSAGE).
    #[error("corrupt record batch: {0}")]
    CorruptMessage(String),
    /// A batch is larger than `max.message.bytes` or a segment (MESSAGE_TOO_LARGE).
    #[error("record batch of {size_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    MessageTooLarge { size_bytes: u64, limit_bytes: u64 },
    /// Records of a batch break per-record rules (KIP-467): each is named by its index in
    /// the batch, so a client can fail only those and retry the rest.
    #[error("{0}")]
    RecordsRejected(RecordErrors),
    /// Only RecordBatch v2 is accepted (UNSUPPORTED_FOR_MESSAGE_FORMAT / CORRUPT_MESSAGE).
    #[error("unsupported record batch magic {0}")]
    UnsupportedMagic(u8),
    /// Structurally valid but not acceptable (INVALID_RECORD).
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// A read or seek outside `[log_start, log_end]` (OFFSET_OUT_OF_RANGE).
    #[error("offset {requested} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        requested: i64,
        log_start: i64,
        log_end: i64,
    },
    /// A follower append that does not continue the log (UNKNOWN_SERVER_ERROR in Kafka,
    /// the fetcher truncates and retries).
    #[error("unexpected append offset {first_offset}, log end is {log_end}")]
    UnexpectedAppendOffset { first_offset: i64, log_end: i64 },
    /// The compressed payload could not be decoded or exceeds the decompression limit.
    #[error("decompression failed: {0}")]
    Compression(String),
    /// The disk failed (including ENOSPC) (KAFKA_STORAGE_ERROR).
    #[error("storage error: {0}")]
    Storage(#[from] io::Error),
    /// The partition refuses writes after an earlier storage failure (KAFKA_STORAGE_ERROR).
    #[error("log {0} is offline after a storage failure")]
    LogOffline(String),
    /// A file on disk is not in the expected format.
    #[error("corrupt file {path}: {reason}")]
    CorruptFile { path: String, reason: String },
    /// Invalid argument from the caller (e.g. a negative offset).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl LogError {
    /// True for errors that mean the disk failed, not the input.
    pub fn is_storage(&self) -> bool {
        matches!(self, LogError::Storage(_) | LogError::LogOffline(_))
    }
}

/// Why one record of a batch was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordFault {
    /// Its timestamp lies outside `message.timestamp.before.max.ms` / `after.max.ms`.
    Timestamp,
    /// It has no key and the topic is compacted.
    MissingKey,
}

/// One refused record: its index in the batch, the rule it broke and Kafka's message for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    pub batch_index: i32,
    pub fault: RecordFault,
    pub message: String,
}

/// Every refused record of a batch, in batch order (never empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordErrors(pub Vec<RecordError>);

impl RecordErrors {
    /// True when any record was refused for its timestamp: Kafka then answers
    /// INVALID_TIMESTAMP for the whole batch.
    pub fn has_invalid_timestamp(&self) -> bool {
        self.0.iter().any(|e| e.fault == RecordFault::Timestamp)
    }
}

impl std::fmt::Display for RecordErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} records rejected", self.0.len())?;
        if let Some(first) = self.0.first() {
            write!(
                f,
                ", the first at index {}: {}",
                first.batch_index, first.message
            )?;
        }
        Ok(())
    }
}
