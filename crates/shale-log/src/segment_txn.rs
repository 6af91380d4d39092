//! Each segment's aborted-transaction index (`<base>.txnindex`, Kafka's layout): opened on
//! first use, truncated, flushed and deleted with its segment. The entry format and search
//! live in `crate::txn_index`; this file ties an index to its segment's lifecycle.

use std::path::PathBuf;

use crate::txn_index::{AbortedTxn, TxnIndex, TxnIndexError, TxnIndexSearchResult};

use crate::error::LogError;
use crate::segment::{file_name, Segment, TXN_INDEX_SUFFIX};

impl From<TxnIndexError> for LogError {
    fn from(e: TxnIndexError) -> Self {
        match e {
            TxnIndexError::Io { source, .. } => LogError::Storage(source),
            TxnIndexError::Corrupt { path, reason } => LogError::CorruptFile {
                path: path.display().to_string(),
                reason,
            },
            e @ TxnIndexError::NonIncreasingLastOffset { .. } => {
                LogError::InvalidArgument(e.to_string())
            }
        }
    }
}

impl Segment {
    pub(crate) fn txn_index_path(&self) -> PathBuf {
        self.dir.join(file_name(self.base_offset, TXN_INDEX_SUFFIX))
    }

    /// Opens the index if it is not open yet. Returns `true` when the file was torn or
    /// corrupt and the index restarted empty: its entries must be rebuilt from the log.
    pub(crate) fn load_txn_index(&self) -> Result<bool, LogError> {
        let mut guard = self.txn_index.lock();
        if guard.is_some() {
            return Ok(false);
        }
        let path = self.txn_index_path();
        let (index, rebuilt) = match TxnIndex::open(&path, self.base_offset) {
            Ok(index) => (index, false),
            Err(TxnIndexError::Corrupt { reason, .. }) => {
                tracing::warn!(path = %path.display(), reason,
                    "transaction index unusable, starting it empty for a rebuild");
                (TxnIndex::recreate(&path, self.base_offset)?, true)
            }
            Err(e) => return Err(e.into()),
        };
        *guard = Some(index);
        Ok(rebuilt)
    }

    fn with_txn_index<R>(
        &self,
        f: impl FnOnce(&mut TxnIndex) -> Result<R, TxnIndexError>,
    ) -> Result<R, LogError> {
        self.load_txn_index()?;
        let mut guard = self.txn_index.lock();
        match guard.as_mut() {
            Some(index) => Ok(f(index)?),
            // Deleted meanwhile: nothing to read or change.
            None => f(&mut TxnIndex::open(
                self.txn_index_path(),
                self.base_offset,
            )?)
            .map_err(Into::into),
        }
    }

    pub(crate) fn append_aborted_txn(&self, txn: AbortedTxn) -> Result<(), LogError> {
        self.with_txn_index(|index| index.append(txn))
    }

    pub(crate) fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<TxnIndexSearchResult, LogError> {
        self.with_txn_index(
            |index| Ok(index.collect_aborted_txns(fetch_offset, upper_bound_offset)),
        )
    }

    pub(crate) fn aborted_txn_entries(&self) -> Result<Vec<AbortedTxn>, LogError> {
        self.with_txn_index(|index| Ok(index.entries().to_vec()))
    }

    /// Drops entries whose ABORT marker is at or after `offset`.
    pub(crate) fn truncate_txn_index(&self, offset: i64) -> Result<(), LogError> {
        self.with_txn_index(|index| index.truncate_to(offset))
    }

    pub(crate) fn flush_txn_index(&self) -> Result<(), LogError> {
        match self.txn_index.lock().as_mut() {
            Some(index) => Ok(index.flush()?),
            None => Ok(()),
        }
    }
}
