//! Kafka's ShareCoordinatorOffsetsManager: which prefix of a `__share_group_state` partition
//! no share-partition needs any more, so that it can be pruned with DeleteRecords.
//!
//! A share-partition's state is its last snapshot plus the updates after it, so everything
//! before the latest snapshot of every share-partition in the partition is redundant. A
//! deleted share-partition stops holding the offset back once its tombstone is in.

use std::collections::HashMap;

use crate::state::SharePartitionKey;

#[derive(Debug, Default)]
pub(crate) struct RedundantOffsets {
    latest_snapshot_offsets: HashMap<SharePartitionKey, i64>,
    /// None until the first snapshot is replayed.
    last_redundant_offset: Option<i64>,
}

impl RedundantOffsets {
    pub(crate) fn on_snapshot(&mut self, key: &SharePartitionKey, offset: i64, is_delete: bool) {
        self.latest_snapshot_offsets.insert(key.clone(), offset);
        // The deleted share-partition's own tombstone still counts here: it must stay until
        // a later snapshot of another share-partition passes it.
        self.last_redundant_offset = self.latest_snapshot_offsets.values().copied().min();
        if is_delete {
            self.latest_snapshot_offsets.remove(key);
        }
    }

    /// Kafka answers nothing for 0 as well: there is nothing below it to prune.
    pub(crate) fn last_redundant_offset(&self) -> Option<i64> {
        self.last_redundant_offset.filter(|offset| *offset > 0)
    }
}
