//! Producer ids, producer state (idempotence and transactions) and the transaction
//! coordinator. The aborted-transaction index lives with the segments in `shale-log`.
//!
//! Everything here is domain logic: no wire types, no Kafka error codes, no dependency on
//! other Shale crates but the `shale-durable` floor.
//!
//! How a partition uses it (under the partition's append lock):
//! - Produce: build a [`ProducerBatch`] from the batch header; [`ProducerStateManager::check`];
//!   on `Append` append to the log, then [`ProducerStateManager::record`] with the assigned
//!   offsets; on `Duplicate` answer with the original offsets without appending. The broker
//!   chooses the Kafka error code of each [`ProducerStateError`].
//! - WriteTxnMarkers: [`ProducerStateManager::check_marker`], append the control batch, then
//!   [`ProducerStateManager::complete_txn`]; for an aborted [`CompletedTxn`] append an
//!   entry to the log with `shale_log::Log::append_aborted_txn`.
//! - High watermark moves: [`ProducerStateManager::on_high_watermark_updated`]; the last stable
//!   offset is [`ProducerStateManager::last_stable_offset`]. A read_committed fetch stops there
//!   and lists the aborted transactions from `shale_log::Log::collect_aborted_txns`.
//! - Segment roll / shutdown: [`ProducerStateManager::write_snapshot`] at
//!   [`ProducerStateManager::map_end_offset`]; keep a few with
//!   [`producer_state::retain_newest_snapshots`].
//! - Open / follower truncation: [`ProducerStateManager::truncate_and_reload`], then feed every
//!   batch from the returned offset to the log end to [`ProducerStateManager::replay`] (data)
//!   or [`ProducerStateManager::replay_marker`] (control batches).
//! - Periodically: [`ProducerStateManager::remove_expired`].
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod allocator;
pub mod coordinator;
pub mod error;
pub mod producer_state;

pub use allocator::{ProducerIdAllocator, ProducerIdAllocatorError, PRODUCER_ID_BLOCK_SIZE};
pub use error::ProducerStateError;
pub use producer_state::{
    BatchMetadata, CompletedTxn, ProducerBatch, ProducerSnapshotEntry, ProducerStateManager,
    SequenceCheck, TransactionVersion, TxnMarker, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
    NUM_BATCHES_TO_RETAIN,
};
