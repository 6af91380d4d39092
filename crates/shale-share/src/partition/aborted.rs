//! read_committed acquisition (Kafka's maybeFilterAbortedTransactionalAcquiredRecords): a share
//! consumer gets no aborted-transaction list to drop records with, so the share-partition
//! archives the records of aborted transactions itself and hands out the rest.

use std::collections::HashSet;

use super::in_flight::RecordState;
use super::types::{AcquiredRecords, LogBatch, LogRead};
use super::SharePartition;

impl SharePartition {
    pub(super) fn filter_aborted(
        &mut self,
        read: &LogRead,
        acquired: Vec<AcquiredRecords>,
        count: i64,
    ) -> (Vec<AcquiredRecords>, i64) {
        if !read.read_committed || read.aborted.is_empty() {
            return (acquired, count);
        }
        let to_archive = aborted_batches(&read.batches, &read.aborted);
        for &(first, last) in &to_archive {
            let Some((&floor_key, _)) = self.cached.range(..=first).next_back() else {
                continue;
            };
            let keys: Vec<i64> = self
                .cached
                .range(floor_key..=last)
                .map(|(key, _)| *key)
                .collect();
            self.archive_records(first, last + 1, &keys, RecordState::Acquired);
        }
        let filtered = subtract_ranges(acquired, &to_archive);
        let count = filtered
            .iter()
            .map(|records| records.last_offset - records.first_offset + 1)
            .sum();
        (filtered, count)
    }
}

/// Kafka's fetchAbortedTransactionRecordBatches: the transactional batches of producers with an
/// aborted transaction begun by then, up to that producer's abort marker. A control batch of a
/// producer with an open aborted transaction is its abort marker: the commit marker of an
/// aborted transaction cannot exist.
fn aborted_batches(batches: &[LogBatch], aborted: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut ordered = aborted.to_vec();
    ordered.sort_by_key(|&(_, first_offset)| first_offset);
    let mut next = ordered.iter().peekable();
    let mut aborted_producers = HashSet::new();
    let mut to_archive = Vec::new();
    for batch in batches {
        if batch.producer_id < 0 {
            continue;
        }
        while let Some(&(producer_id, _)) =
            next.next_if(|&&(_, first_offset)| first_offset <= batch.last_offset)
        {
            aborted_producers.insert(producer_id);
        }
        if batch.is_control && aborted_producers.contains(&batch.producer_id) {
            aborted_producers.remove(&batch.producer_id);
        } else if batch.is_transactional && aborted_producers.contains(&batch.producer_id) {
            to_archive.push((batch.base_offset, batch.last_offset));
        }
    }
    to_archive
}

/// Kafka's filterRecordBatchesFromAcquiredRecords: the acquired ranges without the archived
/// ones, in order, each piece keeping its delivery count.
fn subtract_ranges(acquired: Vec<AcquiredRecords>, removed: &[(i64, i64)]) -> Vec<AcquiredRecords> {
    let mut result = Vec::new();
    for records in acquired {
        let mut pieces = vec![(records.first_offset, records.last_offset)];
        for &(first, last) in removed {
            pieces = pieces
                .into_iter()
                .flat_map(|(from, to)| {
                    if last < from || first > to {
                        return vec![(from, to)];
                    }
                    let mut kept = Vec::new();
                    if from < first {
                        kept.push((from, first - 1));
                    }
                    if to > last {
                        kept.push((last + 1, to));
                    }
                    kept
                })
                .collect();
        }
        result.extend(
            pieces
                .into_iter()
                .map(|(first_offset, last_offset)| AcquiredRecords {
                    first_offset,
                    last_offset,
                    delivery_count: records.delivery_count,
                }),
        );
    }
    result
}
