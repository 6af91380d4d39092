//! Kafka 4.4's PersisterStateBatchCombiner: the state batches known so far and the batches of
//! a new write become one sorted list of non-overlapping batches.
//!
//! Batches below the start offset are dropped (one straddling it keeps its part from the
//! start offset on). Each offset then takes the state of the batch covering it with the
//! highest delivery count, and at equal counts the highest delivery state (archived over
//! acknowledged over available), whether that batch came earlier or later. Adjacent runs with
//! the same count and state become one batch.

use std::collections::BTreeMap;

use crate::state::{DeliveryState, StateBatch};

/// What decides between batches covering the same offset; greater wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Priority {
    delivery_count: i16,
    delivery_state: DeliveryState,
}

impl Priority {
    fn of(batch: &StateBatch) -> Self {
        Priority {
            delivery_count: batch.delivery_count,
            delivery_state: batch.delivery_state,
        }
    }
}

impl Ord for Priority {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.delivery_count
            .cmp(&other.delivery_count)
            .then(self.delivery_state.id().cmp(&other.delivery_state.id()))
    }
}

impl PartialOrd for Priority {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// `start_offset` -1 keeps every batch (nothing is known to be done).
pub fn combine_state_batches(
    so_far: &[StateBatch],
    new_batches: &[StateBatch],
    start_offset: i64,
) -> Vec<StateBatch> {
    let pruned: Vec<StateBatch> = so_far
        .iter()
        .chain(new_batches)
        .filter_map(|batch| prune(batch, start_offset))
        .collect();
    // Kafka hands a lone batch back untouched.
    if pruned.len() < 2 {
        return pruned;
    }
    sweep(&pruned)
}

fn prune(batch: &StateBatch, start_offset: i64) -> Option<StateBatch> {
    if start_offset == -1 || batch.first_offset >= start_offset {
        return Some(*batch);
    }
    if batch.last_offset < start_offset {
        return None;
    }
    Some(StateBatch {
        first_offset: start_offset,
        ..*batch
    })
}

/// Walks the batch boundaries in offset order, keeping the batches that cover the current
/// offset, and emits the winning state of each stretch between two boundaries.
fn sweep(batches: &[StateBatch]) -> Vec<StateBatch> {
    // (offset, starts, priority): a batch starts at its first offset and stops covering at
    // the offset after its last. A batch with its last offset before its first covers
    // nothing (Kafka's sweep would fail on it).
    let mut boundaries: Vec<(i64, bool, Priority)> = batches
        .iter()
        .filter(|batch| batch.first_offset <= batch.last_offset)
        .flat_map(|batch| {
            let priority = Priority::of(batch);
            [
                (batch.first_offset, true, priority),
                (batch.last_offset.wrapping_add(1), false, priority),
            ]
        })
        .collect();
    boundaries.sort_by_key(|(offset, starts, _)| (*offset, *starts));

    let mut covering: BTreeMap<Priority, usize> = BTreeMap::new();
    let mut combined: Vec<StateBatch> = Vec::with_capacity(batches.len());
    let mut winner: Option<Priority> = None;
    let mut stretch_start = -1i64;
    let mut i = 0;
    while i < boundaries.len() {
        let offset = boundaries[i].0;
        if let Some(priority) = winner {
            if offset > stretch_start {
                append_coalesced(&mut combined, stretch_start, offset - 1, priority);
            }
        }
        while i < boundaries.len() && boundaries[i].0 == offset {
            let (_, starts, priority) = boundaries[i];
            if starts {
                *covering.entry(priority).or_insert(0) += 1;
            } else if let Some(count) = covering.get_mut(&priority) {
                *count -= 1;
                if *count == 0 {
                    covering.remove(&priority);
                }
            }
            i += 1;
        }
        winner = covering.keys().next_back().copied();
        stretch_start = offset;
    }
    combined
}

fn append_coalesced(combined: &mut Vec<StateBatch>, first: i64, last: i64, priority: Priority) {
    if let Some(previous) = combined.last_mut() {
        if previous.last_offset.wrapping_add(1) == first && Priority::of(previous) == priority {
            previous.last_offset = last;
            return;
        }
    }
    combined.push(StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: priority.delivery_state,
        delivery_count: priority.delivery_count,
    });
}
