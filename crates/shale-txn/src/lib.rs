//! Producer ids, producer state (idempotence and transactions) and the transaction index.
//!
//! Everything here is pure domain logic: no wire types, no dependency on other Shale crates.
//! The broker converts record batch headers into [`ProducerBatch`] / [`TxnMarker`] values,
//! calls [`ProducerStateManager::check`] before an append and [`ProducerStateManager::record`]
//! after it, under the partition's append lock.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod allocator;
pub mod coordinator;
pub mod error;
pub mod producer_state;
pub mod txn_index;

pub use allocator::{ProducerIdAllocator, ProducerIdAllocatorError, PRODUCER_ID_BLOCK_SIZE};
pub use error::ProducerStateError;
pub use producer_state::{
    BatchMetadata, CompletedTxn, ProducerBatch, ProducerSnapshotEntry, ProducerStateManager,
    SequenceCheck, TransactionVersion, TxnMarker, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
    NUM_BATCHES_TO_RETAIN,
};
pub use txn_index::{AbortedTxn, TxnIndex, TxnIndexError, TxnIndexSearchResult};
