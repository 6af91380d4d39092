//! shale-log: the segment log engine under every partition.
//!
//! Segments hold RecordBatch v2 bytes as received (a leader recompresses a client batch only
//! when the topic's `compression.type` names another codec, `recompress.rs`), with sparse
//! memory-mapped offset and time indexes. [`Log`] is one partition; [`LogManager`] owns the log directories, recovery,
//! retention, the cleaner and checkpoints. No wire-protocol types appear here.
//!
//! On disk (Kafka's layout): `<dir>/<topic>-<partition>/<20-digit base>.log|.index|.timeindex`
//! and `.txnindex` (aborted transactions whose ABORT marker is in that segment),
//! `leader-epoch-checkpoint` per partition; per log directory `recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`, `cleaner-offset-checkpoint` (each partition's first dirty
//! offset) and the `.kafka_cleanshutdown` marker.
//!
//! What is committed: each [`Log`] holds its partition's high watermark, set by the broker
//! whenever it moves ([`Log::set_high_watermark`], [`Log::raise_high_watermark`]); retention
//! deletes only segments wholly below it, and the cleaner stops before it and before the
//! partition's last stable offset ([`StableOffsets`]).
//!
//! Concurrency: one writer at a time per log (append, roll, truncation, retention, the
//! cleaner's swap); readers never wait for it beyond brief index locks and get
//! [`FileSlice`]s holding the segment file open, so a slice stays readable after its segment
//! is rolled, compacted or deleted.
//!
//! The broker drives the periodic work: [`LogManager::run_retention_once`],
//! [`LogManager::run_cleaner_once_bounded`] and [`LogManager::flush_due`]. The transaction
//! layer plugs its view of transaction outcomes into the cleaner with
//! [`LogManager::set_txn_resolver`].

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod batch;
mod checkpoint;
pub mod cleaner;
mod cleaner_txn;
mod clock;
pub mod compression;
mod config;
pub mod control;
mod epoch;
mod error;
mod fault;
mod index;
mod log;
mod log_txn;
mod manager;
mod recompress;
pub mod records;
mod segment;
mod segment_txn;
pub mod txn_index;
mod types;
mod validated;

pub use batch::{parse_batches, BatchHeader, Compression};
pub use cleaner::{
    CleanerReport, HighWatermarkOnly, KeepAllTransactions, StableOffsets, TxnOutcome, TxnResolver,
};
pub use clock::now_ms;
pub use config::{CleanupPolicy, CompressionLevels, LogConfig, TimestampType, TopicCompression};
pub use error::{LogError, RecordError, RecordErrors, RecordFault};
pub use fault::FaultInjector;
pub use log::{Log, RetentionResult};
pub use manager::{LogManager, RetentionReport, CLEANER_OFFSET_FILE};
pub use txn_index::{AbortedTxn, TxnIndex, TxnIndexError};
pub use types::{AppendInfo, AppendOrigin, FileSlice, FoundRecord, ReadInfo, TopicPartition};
pub use validated::ValidatedBatches;
