//! Exactly-once for an idempotent producer whose requests are lost, retried and reordered:
//! every sequence lands in the log at most once, in order, and every success the producer is
//! told about (an append, a duplicate with its original offsets, or DUPLICATE_SEQUENCE_NUMBER
//! beyond the five cached batches) is in the log. A producer without state may start
//! mid-stream (KIP-360), so a batch overtaken by a later first batch is refused, never
//! acknowledged.

use std::collections::HashMap;

use proptest::prelude::*;

use super::tests::{batch, TestLog};
use super::*;
use crate::error::ProducerStateError;

const MAX_IN_FLIGHT: usize = 5;

#[derive(Clone, Debug)]
enum Op {
    /// The client sends its next batch (if fewer than five are unacknowledged).
    Send { count: i32 },
    /// One of the unacknowledged batches reaches the broker (first attempt or a retry).
    Deliver { which: usize },
    /// The broker's answer for an unacknowledged batch reaches the client.
    Acknowledge { which: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1i32..4).prop_map(|count| Op::Send { count }),
        4 => (0usize..MAX_IN_FLIGHT).prop_map(|which| Op::Deliver { which }),
        2 => (0usize..MAX_IN_FLIGHT).prop_map(|which| Op::Acknowledge { which }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn retries_never_duplicate_or_reorder(
        ops in prop::collection::vec(op(), 1..200),
        start in prop_oneof![Just(0i32), Just(i32::MAX - 20)],
    ) {
        let mut log = TestLog::new();
        let mut next_sequence = start;
        // Unacknowledged batches, oldest first: (batch, answer the broker gave, if any).
        let mut in_flight: Vec<(ProducerBatch, Option<i64>)> = Vec::new();
        // Offsets the log assigned to each sequence range.
        let mut written: HashMap<(i32, i32), (i64, i64)> = HashMap::new();

        for op in ops {
            log.now_ms += 1;
            match op {
                Op::Send { count } => {
                    if in_flight.len() < MAX_IN_FLIGHT {
                        let b = batch(1, 0, next_sequence, count);
                        next_sequence = b.last_sequence.wrapping_add(1).max(0);
                        in_flight.push((b, None));
                    }
                }
                Op::Deliver { which } => {
                    let Some((b, answer)) = in_flight.get_mut(which) else { continue };
                    let key = (b.base_sequence, b.last_sequence);
                    match log.append(*b) {
                        Ok((SequenceCheck::Append, offset)) => {
                            prop_assert!(!written.contains_key(&key), "appended twice: {key:?}");
                            let appended = log.appended.last().unwrap();
                            written.insert(key, (appended.first_offset, appended.last_offset));
                            *answer = Some(offset);
                        }
                        Ok((SequenceCheck::Duplicate { first_offset, last_offset, .. }, _)) => {
                            prop_assert_eq!(written.get(&key), Some(&(first_offset, last_offset)));
                            *answer = Some(first_offset);
                        }
                        Err(ProducerStateError::DuplicateSequence { .. }) => {
                            prop_assert!(written.contains_key(&key));
                            *answer = Some(-1);
                        }
                        Err(ProducerStateError::OutOfOrderSequence { .. }) => {
                            // An earlier batch has not arrived yet; the client retries later.
                            prop_assert!(!written.contains_key(&key));
                        }
                        Err(other) => prop_assert!(false, "unexpected {other:?}"),
                    }
                }
                Op::Acknowledge { which } => {
                    if in_flight.get(which).is_some_and(|(_, answer)| answer.is_some()) {
                        in_flight.remove(which);
                    }
                }
            }
        }

        // The log holds consecutive sequences, each once.
        for pair in log.appended.windows(2) {
            prop_assert_eq!(pair[1].base_sequence, pair[0].last_sequence.wrapping_add(1).max(0));
        }
    }
}
