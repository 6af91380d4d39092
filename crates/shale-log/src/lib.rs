//! shale-log: the segment log engine under every partition.
//!
//! Segments hold RecordBatch v2 bytes as received, with sparse memory-mapped offset and time
//! indexes. [`Log`] is one partition; [`LogManager`] owns the log directories, recovery,
//! retention, the cleaner and checkpoints. No wire-protocol types appear here.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod batch;
mod checkpoint;
pub mod cleaner;
pub mod compression;
mod config;
mod epoch;
mod error;
mod fault;
mod index;
mod log;
mod manager;
pub mod records;
mod segment;
mod types;

pub use batch::{parse_batches, BatchHeader, Compression};
pub use cleaner::{CleanerReport, KeepAllTransactions, TxnOutcome, TxnResolver};
pub use config::{CleanupPolicy, LogConfig, TimestampType};
pub use error::LogError;
pub use fault::FaultInjector;
pub use log::{Log, RetentionResult};
pub use manager::{LogManager, RetentionReport};
pub use types::{AppendInfo, AppendOrigin, FileSlice, ReadInfo, TopicPartition};
