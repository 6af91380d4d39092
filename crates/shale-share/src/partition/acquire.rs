//! Acquisition (Kafka's SharePartition.acquire): what a log read hands to a member. Records
//! read for the first time are acquired by whole log batches, split at `batch_size`; records
//! already cached are acquired again where available, by their cached batch, or one by one
//! where only some of a batch are available or its records are close to their last delivery.

use super::in_flight::{BatchStates, DeliveryCountOps, InFlightBatch, InFlightState, RecordState};
use super::types::{AcquireMode, AcquiredRecords, LogBatch, LogRead, ShareAcquiredRecords};
use super::{clamp_delivery_count, SharePartition};

/// Where one acquisition may go: up to which offset, and how many records.
struct AcquireLimit {
    last_offset: i64,
    max_records: i64,
}

impl SharePartition {
    /// Acquires records of `read` for `member_id`. `max_records` is a soft limit under
    /// [`AcquireMode::BatchOptimized`] (whole log batches are acquired) and a hard one under
    /// [`AcquireMode::RecordLimit`]. Under read_committed the records of aborted transactions
    /// are archived, not handed out.
    pub fn acquire(
        &mut self,
        member_id: &str,
        mode: AcquireMode,
        batch_size: usize,
        max_records: usize,
        read: &LogRead,
        now_ms: u64,
    ) -> ShareAcquiredRecords {
        if read.log_start_offset > self.start_offset {
            self.update_log_start_offset(read.log_start_offset);
        }
        let batches = readable_batches(read);
        let (acquired, count) = match batches.first().zip(batches.last()) {
            Some((first, last)) if max_records > 0 => {
                let request = Request {
                    member_id,
                    record_limit: mode == AcquireMode::RecordLimit,
                    batch_size: i64::try_from(batch_size.max(1)).unwrap_or(i64::MAX),
                    batches: &batches,
                    now_ms,
                };
                let max_records = i64::try_from(max_records).unwrap_or(i64::MAX);
                let (first_base_offset, last_offset) = (first.base_offset, last.last_offset);
                self.acquire_read(&request, read, first_base_offset, last_offset, max_records)
            }
            _ => (Vec::new(), 0),
        };
        ShareAcquiredRecords {
            acquired,
            count: usize::try_from(count).unwrap_or(0),
            next_fetch_offset: self.next_fetch_offset(),
        }
    }

    fn acquire_read(
        &mut self,
        request: &Request<'_>,
        read: &LogRead,
        first_base_offset: i64,
        read_last_offset: i64,
        max_records: i64,
    ) -> (Vec<AcquiredRecords>, i64) {
        let limit = self.acquire_limit(read.fetch_offset, max_records, read_last_offset);
        if limit.max_records <= 0 {
            return (Vec::new(), 0);
        }
        let mut max_to_acquire = limit.max_records;
        let last_to_acquire = limit.last_offset;
        self.archive_stale_batches(read.fetch_offset, first_base_offset);

        let mut base_offset = first_base_offset;
        match self.cached.range(..=base_offset).next_back() {
            None => {
                // A persisted start offset may be inside the first batch read.
                if base_offset < self.start_offset {
                    base_offset = self.start_offset;
                    // Kafka stops here; but a log start moved inside a cached batch leaves that
                    // batch holding the start offset, and acquiring from the start offset as new
                    // records would cache its offsets twice.
                    if let Some((key, batch)) = self.cached.range(..=base_offset).next_back() {
                        if batch.last_offset >= base_offset {
                            base_offset = *key;
                        }
                    }
                }
            }
            Some((key, batch)) if batch.last_offset >= base_offset => base_offset = *key,
            Some(_) => {}
        }
        let keys: Vec<i64> = self
            .cached
            .range(base_offset..=last_to_acquire)
            .map(|(key, _)| *key)
            .collect();
        let Some(&last_key) = keys.last() else {
            let (acquired, count) = self.acquire_new_batch_records(
                request,
                first_base_offset,
                last_to_acquire,
                max_to_acquire,
            );
            return self.filter_aborted(read, acquired, count);
        };

        let mut result = Vec::new();
        let mut acquired_count = 0;
        let mut gap_start_offset = base_offset;
        for key in keys.iter().copied() {
            if acquired_count >= max_to_acquire {
                break;
            }
            let Some((batch_first, batch_last)) = self
                .cached
                .get(&key)
                .map(|batch| (batch.first_offset, batch.last_offset))
            else {
                continue;
            };
            if self.gap_window_active() {
                if gap_start_offset < key {
                    let (acquired, count) = self.acquire_new_batch_records(
                        request,
                        gap_start_offset,
                        key - 1,
                        max_to_acquire - acquired_count,
                    );
                    result.extend(acquired);
                    acquired_count += count;
                }
                gap_start_offset = batch_last + 1;
                if acquired_count >= max_to_acquire {
                    break;
                }
            }
            let remaining = max_to_acquire - acquired_count;
            let full_match = batch_first >= first_base_offset && batch_last <= last_to_acquire;
            let record_limit_subset =
                request.record_limit && batch_last - batch_first + 1 > remaining;
            let throttle = self.should_throttle(key, first_base_offset, last_to_acquire);
            if throttle && acquired_count > 0 {
                max_to_acquire = 0;
                break;
            }
            let per_offset = self.cached.get(&key).is_some_and(|b| b.is_per_offset());
            if !full_match || per_offset || record_limit_subset || throttle {
                let Some(batch) = self.cached.get_mut(&key) else {
                    continue;
                };
                if let Some(state) = batch.whole_state() {
                    if !state.is_available() {
                        continue;
                    }
                    batch.split();
                }
                let acquired = self.acquire_subset(
                    request,
                    key,
                    remaining,
                    first_base_offset,
                    last_to_acquire,
                    &mut result,
                );
                acquired_count += acquired;
                if throttle && acquired > 0 {
                    max_to_acquire = 0;
                    break;
                }
                continue;
            }
            let max_delivery_count = self.max_delivery_count();
            let deadline_ms = self.lock_deadline_ms(request.now_ms);
            let Some(batch) = self.cached.get_mut(&key) else {
                continue;
            };
            let BatchStates::Whole(state) = &mut batch.states else {
                continue;
            };
            if !state.is_available()
                || !state.try_update(
                    RecordState::Acquired,
                    DeliveryCountOps::Increase,
                    max_delivery_count,
                    request.member_id,
                )
                || state.state != RecordState::Acquired
            {
                continue;
            }
            state.lock_deadline_ms = Some(deadline_ms);
            result.push(AcquiredRecords {
                first_offset: batch_first,
                last_offset: batch_last,
                delivery_count: clamp_delivery_count(state.delivery_count),
            });
            acquired_count += batch_last - batch_first + 1;
        }

        let last_cached_offset = self
            .cached
            .get(&last_key)
            .map_or(last_key, |batch| batch.last_offset);
        if acquired_count < max_to_acquire && last_cached_offset < last_to_acquire {
            let (acquired, count) = self.acquire_new_batch_records(
                request,
                last_cached_offset + 1,
                last_to_acquire,
                max_to_acquire - acquired_count,
            );
            result.extend(acquired);
            acquired_count += count;
        }
        match result.last() {
            Some(last) => {
                self.narrow_gap_window(last.last_offset + 1);
                self.filter_aborted(read, result, acquired_count)
            }
            None => (result, acquired_count),
        }
    }

    /// Kafka's lastOffsetAndMaxRecordsToAcquire: no more than `max_in_flight_records` between
    /// the start and end offsets, except for records released below the end offset.
    fn acquire_limit(&self, fetch_offset: i64, max_records: i64, last_offset: i64) -> AcquireLimit {
        let in_flight = self.in_flight_record_count();
        let mut max = max_records.min(self.max_in_flight_records() - in_flight);
        let mut last = last_offset;
        if max <= 0 && fetch_offset <= self.end_offset {
            max = max_records.min(self.end_offset - fetch_offset + 1);
            last = last_offset.min(self.end_offset);
        }
        AcquireLimit {
            last_offset: last,
            max_records: max,
        }
    }

    /// Kafka's acquireNewBatchRecords: records never cached, acquired as new batches.
    fn acquire_new_batch_records(
        &mut self,
        request: &Request<'_>,
        first_offset: i64,
        last_offset: i64,
        max_records: i64,
    ) -> (Vec<AcquiredRecords>, i64) {
        let mut first_acquired = first_offset;
        if self.cached.is_empty() && self.end_offset > first_acquired {
            first_acquired = self.end_offset;
        }
        // Kafka moves the first offset only when the cache is empty; batches left cached behind
        // a log start that moved past them would let a batch read from inside it be acquired
        // from its base, below the start offset, which is done by definition.
        first_acquired = first_acquired.max(self.start_offset);
        let mut last_acquired = last_offset;
        if max_records < last_acquired - first_acquired + 1 {
            last_acquired =
                last_offset_of_batch_holding(request.batches, first_acquired + max_records - 1);
            if self.gap_window_active() && last_acquired > last_offset {
                last_acquired = last_offset;
            }
        }
        if first_acquired > last_acquired {
            return (Vec::new(), 0);
        }
        let acquired = self.create_batches(request, max_records, first_acquired, last_acquired);
        if self.cached.keys().next() == Some(&first_acquired) {
            self.start_offset = first_acquired;
        }
        if last_acquired > self.end_offset {
            self.end_offset = last_acquired;
        }
        if request.record_limit {
            if let Some(first) = acquired.first() {
                last_acquired = first.last_offset;
            }
        }
        self.narrow_gap_window(last_acquired + 1);
        (acquired, last_acquired - first_acquired + 1)
    }

    /// Kafka's createBatches: the new records in batches of about `batch_size`, cut at log
    /// batch boundaries; under record-limit one batch, of which only `max_records` are locked.
    fn create_batches(
        &mut self,
        request: &Request<'_>,
        max_records: i64,
        first_acquired: i64,
        last_acquired: i64,
    ) -> Vec<AcquiredRecords> {
        let mut ranges = Vec::new();
        let mut current_first = first_acquired;
        if !request.record_limit && last_acquired - first_acquired + 1 > request.batch_size {
            for batch in request.batches {
                if batch.base_offset > last_acquired {
                    break;
                }
                if batch.base_offset - current_first >= request.batch_size {
                    ranges.push((current_first, batch.base_offset - 1));
                    current_first = batch.base_offset;
                }
            }
        }
        ranges.push((current_first, last_acquired));

        let deadline_ms = self.lock_deadline_ms(request.now_ms);
        if request.record_limit {
            if let Some(&(first, last)) = ranges.first() {
                if last - first + 1 > max_records {
                    let locked_last = first + max_records - 1;
                    let mut batch = InFlightBatch::whole(
                        first,
                        last,
                        InFlightState::acquired(request.member_id, 1, deadline_ms),
                    );
                    batch.split_acquired_up_to(locked_last);
                    self.cached.insert(first, batch);
                    return vec![AcquiredRecords {
                        first_offset: first,
                        last_offset: locked_last,
                        delivery_count: 1,
                    }];
                }
            }
        }
        ranges
            .into_iter()
            .map(|(first, last)| {
                self.cached.insert(
                    first,
                    InFlightBatch::whole(
                        first,
                        last,
                        InFlightState::acquired(request.member_id, 1, deadline_ms),
                    ),
                );
                AcquiredRecords {
                    first_offset: first,
                    last_offset: last,
                    delivery_count: 1,
                }
            })
            .collect()
    }

    /// Kafka's acquireSubsetBatchRecords: the available offsets of one per-offset batch, one by
    /// one. A record at its last delivery goes alone; records past the throttle limit go in
    /// batches halved with each further delivery.
    fn acquire_subset(
        &mut self,
        request: &Request<'_>,
        key: i64,
        max_records: i64,
        request_first_offset: i64,
        request_last_offset: i64,
        result: &mut Vec<AcquiredRecords>,
    ) -> i64 {
        let max_delivery_count = self.max_delivery_count();
        let throttle_limit = self.throttle_records_delivery_limit();
        let deadline_ms = self.lock_deadline_ms(request.now_ms);
        let Some(batch) = self.cached.get_mut(&key) else {
            return 0;
        };
        let BatchStates::PerOffset(offsets) = &mut batch.states else {
            return 0;
        };
        let offset_count = i64::try_from(offsets.len()).unwrap_or(i64::MAX);
        let mut acquired = 0;
        let mut throttled_max: Option<i64> = None;
        for (offset, state) in offsets.range_mut(request_first_offset..=request_last_offset) {
            if !state.is_available() {
                continue;
            }
            let delivery_count = state.delivery_count;
            if max_delivery_count > 2 && delivery_count == max_delivery_count - 1 && acquired > 0 {
                break;
            }
            if delivery_count >= throttle_limit && throttled_max.is_none() {
                let shift = u32::try_from(delivery_count - throttle_limit + 1).unwrap_or(u32::MAX);
                throttled_max = Some(offset_count.checked_shr(shift).unwrap_or(0).max(1));
            }
            if !state.try_update(
                RecordState::Acquired,
                DeliveryCountOps::Increase,
                max_delivery_count,
                request.member_id,
            ) || state.state != RecordState::Acquired
            {
                continue;
            }
            state.lock_deadline_ms = Some(deadline_ms);
            result.push(AcquiredRecords {
                first_offset: *offset,
                last_offset: *offset,
                delivery_count: clamp_delivery_count(state.delivery_count),
            });
            acquired += 1;
            if state.delivery_count == max_delivery_count && max_delivery_count > 2 {
                break;
            }
            if request.record_limit && acquired == max_records {
                break;
            }
            if throttled_max == Some(acquired) {
                break;
            }
        }
        acquired
    }

    /// Kafka's shouldThrottleRecordsDelivery: the batch holds an available record delivered
    /// at least the throttle limit times.
    fn should_throttle(
        &self,
        key: i64,
        request_first_offset: i64,
        request_last_offset: i64,
    ) -> bool {
        let limit = self.throttle_records_delivery_limit();
        let Some(batch) = self.cached.get(&key) else {
            return false;
        };
        match &batch.states {
            BatchStates::Whole(state) => state.delivery_count >= limit,
            BatchStates::PerOffset(offsets) => {
                offsets
                    .range(request_first_offset..=request_last_offset)
                    .filter(|(_, state)| state.state == RecordState::Available)
                    .map(|(_, state)| state.delivery_count)
                    .max()
                    .unwrap_or(0)
                    >= limit
            }
        }
    }

    /// Kafka's maybeUpdatePersisterGapWindowStartOffset: gaps before `offset` are fetched;
    /// once the end offset passes the window, no gap is left to fetch.
    fn narrow_gap_window(&mut self, offset: i64) {
        if let Some(gap) = &mut self.gap_window {
            if gap.end_offset == self.end_offset && offset <= gap.end_offset {
                gap.gap_start_offset = offset;
            } else {
                self.gap_window = None;
            }
        }
    }
}

/// What one acquisition is for.
struct Request<'a> {
    member_id: &'a str,
    record_limit: bool,
    batch_size: i64,
    batches: &'a [LogBatch],
    now_ms: u64,
}

/// The batches below the readable bound, the last one cut at it.
fn readable_batches(read: &LogRead) -> Vec<LogBatch> {
    read.batches
        .iter()
        .filter(|batch| {
            batch.base_offset < read.high_watermark && batch.base_offset <= batch.last_offset
        })
        .map(|batch| LogBatch {
            last_offset: batch.last_offset.min(read.high_watermark.saturating_sub(1)),
            ..*batch
        })
        .collect()
}

/// Kafka's lastOffsetFromBatchWithRequestOffset: the last offset of the log batch holding
/// `offset`, so whole log batches are acquired.
fn last_offset_of_batch_holding(batches: &[LogBatch], offset: i64) -> i64 {
    match batches
        .iter()
        .take_while(|batch| offset >= batch.base_offset)
        .last()
    {
        Some(batch) if offset <= batch.last_offset => batch.last_offset,
        _ => offset,
    }
}
