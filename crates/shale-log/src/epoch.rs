//! Leader-epoch cache: epoch -> first offset written in that epoch (KIP-101), with
//! Kafka's `endOffsetFor` semantics for OffsetForLeaderEpoch.

use std::path::PathBuf;

use crate::checkpoint;
use crate::error::LogError;

pub(crate) const EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";

pub(crate) struct LeaderEpochCache {
    path: PathBuf,
    entries: Vec<(i32, i64)>,
}

impl LeaderEpochCache {
    /// Loads the checkpoint; a corrupt file is dropped (as Kafka, it is rebuilt from batches
    /// appended later) rather than failing the partition.
    pub(crate) fn load(dir: &std::path::Path) -> LeaderEpochCache {
        let path = dir.join(EPOCH_CHECKPOINT_FILE);
        let entries = match checkpoint::read_epochs(&path) {
            Ok(e) => e.unwrap_or_default(),
            Err(e) => {
                tracing::warn!(error = %e, "ignoring corrupt leader-epoch checkpoint");
                Vec::new()
            }
        };
        LeaderEpochCache { path, entries }
    }

    pub(crate) fn entries(&self) -> &[(i32, i64)] {
        &self.entries
    }

    pub(crate) fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.0)
    }

    /// Whether `assign(epoch, start_offset)` would change the cache.
    pub(crate) fn would_change(&self, epoch: i32, start_offset: i64) -> bool {
        if epoch < 0 || start_offset < 0 {
            return false;
        }
        match self.entries.last() {
            Some(&(e, o)) => epoch != e || start_offset < o,
            None => true,
        }
    }

    /// Records that `epoch` starts at `start_offset`; returns whether the cache changed.
    pub(crate) fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if !self.would_change(epoch, start_offset) {
            return false;
        }
        self.entries.retain(|&(e, o)| e < epoch && o < start_offset);
        self.entries.push((epoch, start_offset));
        true
    }

    /// Kafka's `endOffsetFor(requestedEpoch, logEndOffset)`; `None` is UNDEFINED.
    pub(crate) fn end_offset_for(&self, epoch: i32, log_end_offset: i64) -> Option<(i32, i64)> {
        if epoch < 0 {
            return None;
        }
        if self.latest_epoch() == Some(epoch) {
            return Some((epoch, log_end_offset));
        }
        let higher = self.entries.iter().find(|(e, _)| *e > epoch)?;
        match self.entries.iter().rev().find(|(e, _)| *e <= epoch) {
            None => Some((epoch, higher.1)),
            Some(floor) => Some((floor.0, higher.1)),
        }
    }

    /// Removes entries starting at or after `offset` (log truncated to `offset`).
    pub(crate) fn truncate_from_end(&mut self, offset: i64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|&(_, o)| o < offset);
        before != self.entries.len()
    }

    /// The log now starts at `offset`: drop entries wholly below it and move the last of
    /// them up to `offset`.
    pub(crate) fn truncate_from_start(&mut self, offset: i64) -> bool {
        let below = self.entries.iter().filter(|(_, o)| *o < offset).count();
        if below == 0 {
            return false;
        }
        let keep_epoch = self.entries[below - 1].0;
        let changed_head = below > 1 || self.entries[below - 1].1 != offset;
        self.entries.drain(..below);
        if self.entries.first().map(|e| e.1) != Some(offset) {
            self.entries.insert(0, (keep_epoch, offset));
        }
        changed_head
    }

    /// Puts back entries saved before a change that could not be completed.
    pub(crate) fn restore(&mut self, entries: Vec<(i32, i64)>) {
        self.entries = entries;
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }

    pub(crate) fn flush(&self) -> Result<(), LogError> {
        checkpoint::write_epochs(&self.path, &self.entries)?;
        Ok(())
    }
}
