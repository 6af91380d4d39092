//! Log compaction.

use std::path::{Path, PathBuf};

use crate::error::LogError;

/// Outcome of a transaction as known to the transaction coordinator's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOutcome {
    Committed,
    Aborted,
    /// Still open or not known: the cleaner keeps its records.
    Unknown,
}

/// Tells the cleaner what happened to a transactional batch (`producer_id`, first offset).
pub trait TxnResolver: Send + Sync {
    fn outcome(&self, producer_id: i64, batch_base_offset: i64) -> TxnOutcome;
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanerReport {
    pub logs_cleaned: usize,
    pub segments_rewritten: usize,
    pub records_removed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

pub(crate) fn complete_swaps(
    _dir: &Path,
    swaps: &[PathBuf],
    _bases: &mut Vec<i64>,
) -> Result<(), LogError> {
    for s in swaps {
        crate::segment::remove_if_exists(s)?;
    }
    Ok(())
}
