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
    /// A record timestamp lies outside the allowed window (INVALID_TIMESTAMP).
    #[error("timestamp {timestamp_ms} is outside the allowed range around {now_ms}")]
    InvalidTimestamp { timestamp_ms: i64, now_ms: i64 },
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
