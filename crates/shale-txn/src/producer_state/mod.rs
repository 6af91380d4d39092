//! Per-partition producer state: idempotent sequence checks, duplicate detection, open
//! transactions and the first unstable offset, with snapshots beside the log.
//!
//! The rules follow Kafka's `ProducerStateManager` / `ProducerAppendInfo` (KIP-98, KIP-360,
//! KIP-890 for transaction-version-2 markers).

mod entry;
mod manager;
mod snapshot;
mod snapshot_files;
mod types;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_exactly_once;
#[cfg(test)]
mod tests_replay;
#[cfg(test)]
mod tests_snapshot;
#[cfg(test)]
mod tests_txn;

pub use manager::ProducerStateManager;
pub use snapshot_files::{
    delete_snapshots_after, delete_snapshots_before, list_snapshot_offsets,
    remove_temp_snapshot_files, retain_newest_snapshots, snapshot_file_name, snapshot_path,
    SNAPSHOT_SUFFIX,
};
pub use types::{
    BatchMetadata, CompletedTxn, ProducerBatch, ProducerSnapshotEntry, SequenceCheck,
    TransactionVersion, TxnMarker, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
    NUM_BATCHES_TO_RETAIN,
};
