//! Random sequences of acquisitions (read_committed or not, over a log with an aborted
//! transaction), acknowledgements, releases, expiries, write outcomes and log start moves: an
//! offset whose acknowledgement was written is never handed out again, nor an aborted one under
//! read_committed; the start offset only passes done records (or the log start); nothing between
//! the start and end offsets is lost.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::support::*;
use crate::partition::{
    AckBatch, AcquireMode, AcquiredRecords, LogBatch, RecordState, SharePartition,
    SharePartitionConfig, StateWrite,
};
use crate::state::DeliveryState;

const MEMBERS: [&str; 3] = ["a", "b", "c"];

#[derive(Debug, Clone)]
enum Op {
    Acquire {
        member: usize,
        record_limit: bool,
        read_committed: bool,
        batch_size: usize,
        max_records: usize,
    },
    Ack {
        member: usize,
        pick: usize,
        per_offset: bool,
        ack_type: i8,
    },
    Release {
        member: usize,
    },
    Advance {
        ms: u64,
    },
    Complete {
        pick: usize,
        ok: bool,
    },
    LogStart {
        delta: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, any::<bool>(), any::<bool>(), 1..8usize, 1..12usize).prop_map(
            |(member, record_limit, read_committed, batch_size, max_records)| Op::Acquire {
                member,
                record_limit,
                read_committed,
                batch_size,
                max_records,
            }
        ),
        4 => (0..3usize, any::<usize>(), any::<bool>(), 0..5i8).prop_map(
            |(member, pick, per_offset, ack_type)| Op::Ack {
                member,
                pick,
                per_offset,
                ack_type,
            }
        ),
        1 => (0..3usize).prop_map(|member| Op::Release { member }),
        2 => (1..40_000u64).prop_map(|ms| Op::Advance { ms }),
        3 => (any::<usize>(), prop::bool::weighted(0.8)).prop_map(|(pick, ok)| Op::Complete { pick, ok }),
        1 => (1..6i64).prop_map(|delta| Op::LogStart { delta }),
    ]
}

/// The producer whose transaction over offsets 8-9 aborts, its marker at 10.
const ABORTING_PRODUCER: i64 = 5;

/// A log of 41 offsets in batches of 1 to 5, with one aborted transaction.
fn log() -> Vec<LogBatch> {
    let sizes = [3, 1, 4, 2, 1, 5, 3, 2, 4, 1, 5, 3, 2, 4, 1];
    let mut batches = Vec::new();
    let mut base = 0;
    for (index, size) in sizes.into_iter().enumerate() {
        let mut log_batch = batch(base, base + size - 1);
        if index == 3 || index == 4 {
            log_batch.producer_id = ABORTING_PRODUCER;
            log_batch.is_transactional = true;
            log_batch.is_control = index == 4;
        }
        batches.push(log_batch);
        base += size;
    }
    batches
}

/// The records of the aborted transaction.
const ABORTED: std::ops::RangeInclusive<i64> = 8..=9;

struct Model {
    partition: SharePartition,
    now_ms: u64,
    held: BTreeMap<usize, Vec<AcquiredRecords>>,
    pending: Vec<StateWrite>,
    /// Offsets whose ACCEPT or REJECT was written.
    done: BTreeSet<i64>,
    limit: i16,
    log_start: i64,
}

impl Model {
    fn apply(&mut self, op: &Op, log: &[LogBatch]) -> Result<(), TestCaseError> {
        match *op {
            Op::Acquire {
                member,
                record_limit,
                read_committed,
                batch_size,
                max_records,
            } => {
                let mode = if record_limit {
                    AcquireMode::RecordLimit
                } else {
                    AcquireMode::BatchOptimized
                };
                let mut read = read_next(&self.partition, log);
                read.log_start_offset = self.log_start;
                read.batches.retain(|b| b.last_offset >= self.log_start);
                read.read_committed = read_committed;
                read.aborted = vec![(ABORTING_PRODUCER, *ABORTED.start())];
                let got = self.partition.acquire(
                    MEMBERS[member],
                    mode,
                    batch_size,
                    max_records,
                    &read,
                    self.now_ms,
                );
                if record_limit {
                    prop_assert!(got.count <= max_records);
                }
                let mut covered = 0;
                for records in &got.acquired {
                    prop_assert!(records.delivery_count >= 1);
                    prop_assert!(records.delivery_count <= self.limit);
                    for offset in records.first_offset..=records.last_offset {
                        prop_assert!(!self.done.contains(&offset), "{offset} handed out again");
                        prop_assert!(offset >= self.log_start, "{offset} is below the log start");
                        if read_committed {
                            prop_assert!(!ABORTED.contains(&offset), "aborted {offset} handed out");
                        }
                        let snapshot = self.partition.record_state(offset);
                        prop_assert_eq!(
                            snapshot.map(|s| (s.state, s.member_id)),
                            Some((RecordState::Acquired, MEMBERS[member].to_string()))
                        );
                        covered += 1;
                    }
                }
                prop_assert_eq!(covered, got.count, "count");
                self.held.insert(member, got.acquired);
            }
            Op::Ack {
                member,
                pick,
                per_offset,
                ack_type,
            } => {
                let Some(held) = self.held.get(&member).filter(|h| !h.is_empty()) else {
                    return Ok(());
                };
                let records = held[pick % held.len()];
                let ack_types = if per_offset {
                    (records.first_offset..=records.last_offset)
                        .map(|offset| i8::try_from((offset + i64::from(ack_type)) % 5).unwrap_or(1))
                        .collect()
                } else {
                    vec![ack_type.max(1)]
                };
                let batch = AckBatch {
                    first_offset: records.first_offset,
                    last_offset: records.last_offset,
                    ack_types,
                };
                if let Ok(Some(write)) =
                    self.partition
                        .acknowledge(MEMBERS[member], &[batch], self.now_ms)
                {
                    self.pending.push(write);
                }
            }
            Op::Release { member } => {
                if let Some(write) = self
                    .partition
                    .release_acquired_records(MEMBERS[member], self.now_ms)
                {
                    self.pending.push(write);
                }
            }
            Op::Advance { ms } => {
                self.now_ms += ms;
                if let Some(write) = self.partition.expire_locks(self.now_ms) {
                    self.pending.push(write);
                }
            }
            Op::LogStart { delta } => {
                self.log_start = (self.log_start + delta).min(41);
                self.partition.update_log_start_offset(self.log_start);
            }
            Op::Complete { pick, ok } => {
                if self.pending.is_empty() {
                    return Ok(());
                }
                let write = self.pending.remove(pick % self.pending.len());
                let before: Vec<(i64, Option<RecordState>)> = write
                    .batches
                    .iter()
                    .flat_map(|b| b.first_offset..=b.last_offset)
                    .map(|o| (o, self.partition.record_state(o).map(|s| s.state)))
                    .collect();
                self.partition
                    .complete_write(write.write_id, ok, self.now_ms);
                if ok {
                    for batch in &write.batches {
                        let done = matches!(
                            batch.delivery_state,
                            DeliveryState::Acknowledged | DeliveryState::Archived
                        );
                        for offset in batch.first_offset..=batch.last_offset {
                            let was = before
                                .iter()
                                .find(|(o, _)| *o == offset)
                                .and_then(|(_, s)| *s);
                            if done && was.is_some_and(RecordState::is_terminal) {
                                self.done.insert(offset);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn check(&self, start_before: i64) -> Result<(), TestCaseError> {
        let p = &self.partition;
        let mut previous_last = i64::MIN;
        for (key, batch) in &p.cached {
            prop_assert_eq!(*key, batch.first_offset);
            prop_assert!(batch.first_offset <= batch.last_offset);
            prop_assert!(
                batch.first_offset > previous_last,
                "cached batches overlap at {}",
                key
            );
            previous_last = batch.last_offset;
        }
        prop_assert!(
            p.start_offset() >= start_before,
            "the start offset went back"
        );
        prop_assert!(p.end_offset() >= p.start_offset() - 1);
        // Right after the log start passed every cached batch the end offset is the next to
        // fetch, not a cached one.
        let cached_up_to_start = p.record_state(p.start_offset()).is_some();
        if p.in_flight_record_count() > 0 && cached_up_to_start && p.gap_window.is_none() {
            let mut terminal = 0;
            for offset in p.start_offset()..=p.end_offset() {
                let snapshot = p.record_state(offset);
                prop_assert!(
                    snapshot.is_some(),
                    "offset {offset} lost below the end offset"
                );
                if snapshot.is_some_and(|s| s.state.is_terminal()) {
                    terminal += 1;
                }
            }
            prop_assert_eq!(
                terminal,
                p.delivery_complete_count(),
                "delivery complete count"
            );
        } else if p.in_flight_record_count() == 0 {
            prop_assert_eq!(p.delivery_complete_count(), 0);
        }
        for offset in &self.done {
            if *offset >= p.start_offset() && *offset <= p.end_offset() {
                let state = p.record_state(*offset).map(|s| s.state);
                prop_assert!(state.is_some_and(RecordState::is_terminal));
            }
        }
        Ok(())
    }
}

/// Runs `ops` on `model`, checking the invariants after each.
fn run(model: &mut Model, ops: &[Op], log: &[LogBatch]) -> Result<(), TestCaseError> {
    for op in ops {
        let start_before = model.partition.start_offset();
        let states_before: Vec<(i64, Option<RecordState>)> = (start_before
            ..=model.partition.end_offset())
            .map(|offset| {
                (
                    offset,
                    model.partition.record_state(offset).map(|s| s.state),
                )
            })
            .collect();
        model.apply(op, log)?;
        model.check(start_before)?;
        // The start offset passes only records that were done (or waiting to be written as
        // done) before the step, unless the log start passed them; never a gap of a persisted
        // state not fetched yet.
        let start_after = model.partition.start_offset();
        for (offset, state) in &states_before {
            if !matches!(op, Op::LogStart { .. }) && *offset < start_after {
                prop_assert!(
                    state.is_some_and(RecordState::is_terminal),
                    "the start offset passed {} in {:?}",
                    offset,
                    state
                );
            }
        }
    }
    Ok(())
}

fn model(partition: SharePartition, limit: i16, done: BTreeSet<i64>) -> Model {
    Model {
        partition,
        now_ms: 0,
        held: BTreeMap::new(),
        pending: Vec::new(),
        done,
        limit,
        log_start: 0,
    }
}

fn partition_config(limit: i16, max_in_flight: usize) -> SharePartitionConfig {
    SharePartitionConfig {
        delivery_count_limit: limit,
        max_in_flight_records: max_in_flight,
        ..config()
    }
}

/// What a previous leader persisted for one log batch: nothing (a gap), or a state.
fn persisted_choice() -> impl Strategy<Value = Option<(DeliveryState, i16)>> {
    prop_oneof![
        2 => Just(None),
        2 => (1..2i16).prop_map(|count| Some((DeliveryState::Available, count))),
        1 => Just(Some((DeliveryState::Acknowledged, 1))),
        1 => Just(Some((DeliveryState::Archived, 2))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_sequences_keep_the_share_partition_consistent(
        ops in prop::collection::vec(op(), 1..80),
        limit in 2..6i16,
        max_in_flight in 5..40usize,
    ) {
        let log = log();
        let partition = SharePartition::new(partition_config(limit, max_in_flight), 0);
        run(&mut model(partition, limit, BTreeSet::new()), &ops, &log)?;
    }

    #[test]
    fn random_sequences_from_a_persisted_state_fetch_every_gap(
        choices in prop::collection::vec(persisted_choice(), 8),
        ops in prop::collection::vec(op(), 1..80),
        limit in 2..6i16,
        max_in_flight in 5..40usize,
    ) {
        let log = log();
        let mut batches = Vec::new();
        let mut done = BTreeSet::new();
        for (log_batch, choice) in log.iter().zip(&choices) {
            if let Some((delivery_state, delivery_count)) = *choice {
                batches.push(crate::state::StateBatch {
                    first_offset: log_batch.base_offset,
                    last_offset: log_batch.last_offset,
                    delivery_state,
                    delivery_count,
                });
                if delivery_state != DeliveryState::Available {
                    done.extend(log_batch.base_offset..=log_batch.last_offset);
                }
            }
        }
        let persisted = crate::state::PersistedState {
            state_epoch: 1,
            leader_epoch: 1,
            start_offset: 0,
            batches,
        };
        let partition = SharePartition::from_persisted(partition_config(limit, max_in_flight), persisted)
            .map_err(|error| TestCaseError::fail(error.to_string()))?;
        run(&mut model(partition, limit, done), &ops, &log)?;
    }
}
