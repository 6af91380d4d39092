//! How the start offset moves: past the acknowledged and archived records at its front
//! (Kafka's maybeUpdateCachedStateAndOffsets), past the log start offset when the log is
//! truncated below it (updateCacheAndOffsets), and the archiving both rely on.

use super::in_flight::RecordState;
use super::SharePartition;

impl SharePartition {
    /// Kafka's updateCacheAndOffsets, for OFFSET_OUT_OF_RANGE or a log start offset past the
    /// start offset: available records below it are archived (not persisted, as in Kafka: the
    /// next write carries the new start offset); acquired ones are archived when their lock
    /// ends.
    pub fn update_log_start_offset(&mut self, log_start_offset: i64) {
        if log_start_offset <= self.start_offset {
            return;
        }
        if self.cached.is_empty() {
            self.start_offset = log_start_offset;
            self.end_offset = log_start_offset;
            return;
        }
        let keys: Vec<i64> = self.cached.keys().copied().collect();
        self.archive_records(
            self.start_offset,
            log_start_offset,
            &keys,
            RecordState::Available,
        );
        self.start_offset = log_start_offset;
        // Gaps of the persisted state below the log start are gone with the log.
        if let Some(gap) = &mut self.gap_window {
            gap.gap_start_offset = gap.gap_start_offset.max(log_start_offset);
        }
        if self.end_offset < self.start_offset {
            self.end_offset = self.start_offset;
        }
    }

    /// Kafka's archiveRecords: the records of the batches starting at `keys` that are in
    /// `initial_state` and within `[from_offset, to_offset)` are archived for good.
    pub(super) fn archive_records(
        &mut self,
        from_offset: i64,
        to_offset: i64,
        keys: &[i64],
        initial_state: RecordState,
    ) -> bool {
        let mut any_archived = false;
        for key in keys {
            if *key >= to_offset {
                break;
            }
            let Some(batch) = self.cached.get_mut(key) else {
                continue;
            };
            let full_match = batch.first_offset >= from_offset && batch.last_offset < to_offset;
            if !full_match || batch.is_per_offset() {
                if let Some(state) = batch.whole_state() {
                    if state.state != initial_state {
                        continue;
                    }
                    batch.split();
                }
            }
            for (first, last, state) in batch.states_mut() {
                if first < from_offset || last >= to_offset || state.state != initial_state {
                    continue;
                }
                state.archive();
                any_archived = true;
            }
        }
        any_archived
    }

    /// Kafka's maybeArchiveStaleBatches: cached batches between the offset a read started at
    /// and its first batch were compacted away; archived, they no longer hold the start offset.
    pub(super) fn archive_stale_batches(&mut self, fetch_offset: i64, base_offset: i64) {
        if self.cached.is_empty() || fetch_offset >= base_offset {
            return;
        }
        let floor_offset = match self.cached.range(..=fetch_offset).next_back() {
            Some((key, batch)) if batch.last_offset >= fetch_offset => *key,
            _ => fetch_offset,
        };
        let keys: Vec<i64> = self
            .cached
            .range(floor_offset..base_offset)
            .map(|(key, _)| *key)
            .collect();
        self.archive_records(fetch_offset, base_offset, &keys, RecordState::Available);
    }

    /// Kafka's canMoveStartOffset: the record at the start offset is done and not waiting for
    /// its write.
    fn can_move_start_offset(&self) -> bool {
        let Some((_, batch)) = self.cached.range(..=self.start_offset).next_back() else {
            return false;
        };
        let Some(state) = batch.state_at(self.start_offset) else {
            return false;
        };
        !state.has_ongoing_transition() && state.state.is_terminal()
    }

    /// Kafka's findLastOffsetAcknowledgedAndMetadata: the end of the done prefix of the cache.
    fn last_offset_acknowledged(&self) -> Option<i64> {
        let gap_start_offset = self
            .gap_window_active()
            .then(|| self.gap_window.map(|gap| gap.gap_start_offset))
            .flatten();
        let mut last_acknowledged = None;
        'batches: for batch in self.cached.values() {
            if gap_start_offset.is_some_and(|gap_start| batch.last_offset >= gap_start) {
                break;
            }
            for (_, last, state) in batch.states() {
                if state.has_ongoing_transition() || !state.state.is_terminal() {
                    break 'batches;
                }
                last_acknowledged = Some(last);
            }
        }
        last_acknowledged
    }

    /// Kafka's maybeUpdateCachedStateAndOffsets: the start offset moves past the done records
    /// at the front, and the batches wholly behind it leave the cache. True if anything moved.
    pub(super) fn maybe_update_cached_state_and_offsets(&mut self) -> bool {
        if !self.can_move_start_offset() {
            return false;
        }
        let Some(last_acknowledged) = self.last_offset_acknowledged() else {
            return false;
        };
        let Some(last_cached_offset) = self.cached.values().next_back().map(|b| b.last_offset)
        else {
            return false;
        };
        if last_acknowledged == last_cached_offset {
            // Never backwards: the log start offset may have moved past the cache already.
            self.start_offset = self.start_offset.max(last_cached_offset + 1);
            self.end_offset = self.end_offset.max(self.start_offset);
            self.cached.clear();
            return true;
        }
        let Some((&floor_key, floor_batch)) = self.cached.range(..=last_acknowledged).next_back()
        else {
            return false;
        };
        let floor_last_offset = floor_batch.last_offset;
        let start_before = self.start_offset;
        let first_key = self.cached.keys().next().copied();
        let last_key_to_remove = if last_acknowledged == floor_last_offset {
            if let Some((&higher_key, _)) = self.cached.range(last_acknowledged + 1..).next() {
                if higher_key > self.start_offset {
                    self.start_offset = higher_key;
                }
            }
            if self.gap_window_active() {
                if let Some(gap) = self.gap_window {
                    // Not past a gap still to fetch, nor back behind a log start that passed it.
                    self.start_offset = self
                        .start_offset
                        .min(gap.gap_start_offset)
                        .max(start_before);
                }
            }
            Some(floor_key)
        } else {
            if last_acknowledged + 1 > self.start_offset {
                self.start_offset = last_acknowledged + 1;
            }
            if Some(floor_key) == first_key {
                None
            } else {
                self.cached
                    .range(..floor_key)
                    .next_back()
                    .map(|(key, _)| *key)
            }
        };
        if let Some(last_key) = last_key_to_remove {
            let kept = self.cached.split_off(&(last_key + 1));
            self.cached = kept;
        }
        true
    }
}
