//! A log's aborted-transaction indexes: one `.txnindex` per segment, found by the offset of
//! the ABORT marker, so retention and truncation drop a segment's entries with it.

use crate::txn_index::AbortedTxn;

use crate::error::LogError;
use crate::log::Log;

impl Log {
    /// Records an aborted transaction in the index of the segment holding its ABORT marker
    /// (`txn.last_offset`). Markers are indexed in offset order: a marker at or below the
    /// segment's last entry is refused ([`LogError::InvalidArgument`]).
    pub fn append_aborted_txn(&self, txn: AbortedTxn) -> Result<(), LogError> {
        let segment = self
            .segments
            .read()
            .range(..=txn.last_offset)
            .next_back()
            .map(|(_, s)| s.clone());
        match segment {
            Some(segment) => segment.append_aborted_txn(txn),
            None => Err(LogError::InvalidArgument(format!(
                "aborted transaction ending at {} is below the log start",
                txn.last_offset
            ))),
        }
    }

    /// Aborted transactions overlapping `[fetch_offset, upper_bound_offset)`, searched from
    /// the segment holding `fetch_offset` on and stopping at the first index whose entries
    /// prove no later transaction overlaps, as Kafka's `collectAbortedTransactions`.
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<Vec<AbortedTxn>, LogError> {
        let segments: Vec<_> = {
            let map = self.segments.read();
            let first = map
                .range(..=fetch_offset)
                .next_back()
                .map_or(i64::MIN, |(base, _)| *base);
            // A transaction starting in range may end in any later segment.
            map.range(first..).map(|(_, s)| s.clone()).collect()
        };
        let mut aborted = Vec::new();
        for segment in segments {
            let result = segment.collect_aborted_txns(fetch_offset, upper_bound_offset)?;
            aborted.extend(result.aborted);
            if result.is_complete {
                break;
            }
        }
        Ok(aborted)
    }

    /// Opens every segment's transaction index. Returns `true` when one was torn or corrupt
    /// and restarted empty: the caller then rebuilds all entries by replaying the log from
    /// its start ([`Log::truncate_aborted_txns_from`] with the log start, then
    /// [`Log::append_aborted_txn`] for every aborted transaction found).
    pub fn load_txn_indexes(&self) -> Result<bool, LogError> {
        let mut rebuilt = false;
        for segment in self.segments_snapshot() {
            rebuilt |= segment.load_txn_index()?;
        }
        Ok(rebuilt)
    }

    /// After an unclean shutdown, the offset from which transaction index entries may have
    /// been lost with unflushed pages (segments below it were flushed with their indexes). A
    /// rebuild replays producer state from a snapshot at or below it; `None` after a clean
    /// shutdown.
    pub fn txn_index_unflushed_from(&self) -> Option<i64> {
        self.unflushed_from
    }

    /// Drops the entries of aborted transactions whose marker is at or after `offset` in
    /// every segment, before a producer-state replay from `offset` indexes them again.
    pub fn truncate_aborted_txns_from(&self, offset: i64) -> Result<(), LogError> {
        let segments: Vec<_> = {
            let map = self.segments.read();
            let first = map
                .range(..=offset)
                .next_back()
                .map_or(i64::MIN, |(base, _)| *base);
            map.range(first..).map(|(_, s)| s.clone()).collect()
        };
        for segment in segments {
            segment.truncate_txn_index(offset)?;
        }
        Ok(())
    }
}
