//! Replay equivalence: state loaded from a snapshot and rebuilt by replaying the rest of the
//! log equals the state built live, for random producer workloads.

use std::path::Path;

use proptest::prelude::*;

use super::snapshot;
use super::tests::{batch, LogEntry, TestLog};
use super::*;

#[derive(Clone, Debug)]
enum Op {
    /// The next batch of a producer, transactional or not.
    Send {
        producer: usize,
        count: i32,
        transactional: bool,
    },
    /// A retry of one of the producer's earlier batches (duplicate, or an error).
    Retry { producer: usize, back: usize },
    /// A batch that skips sequences (refused).
    Gap { producer: usize },
    /// The producer re-initialises with a bumped epoch.
    BumpEpoch { producer: usize },
    /// A zombie with an older epoch writes (refused once the epoch moved on).
    Zombie { producer: usize },
    /// A COMMIT or ABORT marker.
    EndTxn { producer: usize, commit: bool },
    /// Take the snapshot used for the equivalence check here.
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    let producer = 0usize..3;
    prop_oneof![
        6 => (producer.clone(), 1i32..4, any::<bool>()).prop_map(|(producer, count, transactional)| {
            Op::Send { producer, count, transactional }
        }),
        2 => (producer.clone(), 0usize..8).prop_map(|(producer, back)| Op::Retry { producer, back }),
        1 => producer.clone().prop_map(|producer| Op::Gap { producer }),
        1 => producer.clone().prop_map(|producer| Op::BumpEpoch { producer }),
        1 => producer.clone().prop_map(|producer| Op::Zombie { producer }),
        2 => (producer, any::<bool>()).prop_map(|(producer, commit)| Op::EndTxn { producer, commit }),
        1 => Just(Op::Snapshot),
    ]
}

#[derive(Clone, Debug, Default)]
struct Producer {
    epoch: i16,
    next_sequence: i32,
    sent: Vec<ProducerBatch>,
}

const PRODUCER_IDS: [i64; 3] = [10, 20, 30];

/// Runs the workload live; returns the log and the snapshot bytes with their offset.
fn run(ops: &[Op], sequence_start: i32) -> (TestLog, Vec<(i64, Vec<u8>)>) {
    let mut log = TestLog::new();
    let mut producers = vec![
        Producer {
            next_sequence: sequence_start,
            ..Producer::default()
        };
        PRODUCER_IDS.len()
    ];
    let mut snapshots = Vec::new();
    for op in ops {
        log.now_ms += 1;
        match *op {
            Op::Send {
                producer,
                count,
                transactional,
            } => {
                let p = &mut producers[producer];
                let mut b = batch(PRODUCER_IDS[producer], p.epoch, p.next_sequence, count);
                b.is_transactional = transactional;
                if log.append(b).is_ok() {
                    p.next_sequence = b.last_sequence.wrapping_add(1).max(0);
                    p.sent.push(b);
                }
            }
            Op::Retry { producer, back } => {
                let p = &producers[producer];
                if let Some(earlier) = p.sent.iter().rev().nth(back) {
                    let _ = log.append(*earlier);
                }
            }
            Op::Gap { producer } => {
                let p = &producers[producer];
                let b = batch(
                    PRODUCER_IDS[producer],
                    p.epoch,
                    p.next_sequence.wrapping_add(3).max(0),
                    1,
                );
                let _ = log.append(b);
            }
            Op::BumpEpoch { producer } => {
                let p = &mut producers[producer];
                p.epoch += 1;
                p.next_sequence = 0;
                p.sent.clear();
            }
            Op::Zombie { producer } => {
                let p = &producers[producer];
                let b = batch(PRODUCER_IDS[producer], p.epoch - 1, 0, 1);
                let _ = log.append(b);
            }
            Op::EndTxn { producer, commit } => {
                let _ = log.marker(PRODUCER_IDS[producer], producers[producer].epoch, commit);
            }
            Op::Snapshot => {
                let offset = log.state.map_end_offset();
                snapshots.push((offset, snapshot::encode(&log.state, offset)));
            }
        }
    }
    (log, snapshots)
}

fn replay_from(log: &TestLog, mut state: ProducerStateManager, from: i64) -> ProducerStateManager {
    for entry in &log.entries {
        match entry {
            LogEntry::Data(b) if b.first_offset >= from => {
                // TestLog appends as a LogAppendTime topic: max timestamp == append time.
                state.replay_with_log_append_time(b, b.max_timestamp_ms);
            }
            LogEntry::Marker(m) if m.offset >= from => {
                state.replay_marker(m);
            }
            _ => {}
        }
    }
    state
}

fn assert_equivalent(live: &ProducerStateManager, rebuilt: &ProducerStateManager) {
    assert_eq!(rebuilt, live);
    let mut live = live.clone();
    let mut rebuilt = rebuilt.clone();
    let end = live.map_end_offset();
    live.on_high_watermark_updated(end);
    rebuilt.on_high_watermark_updated(end);
    assert_eq!(rebuilt, live);
    assert_eq!(
        rebuilt.first_unstable_offset(),
        live.first_unstable_offset()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn snapshot_plus_replay_equals_live_state(
        ops in prop::collection::vec(op(), 1..80),
        near_wrap in any::<bool>(),
    ) {
        let sequence_start = if near_wrap { i32::MAX - 6 } else { 0 };
        let (log, snapshots) = run(&ops, sequence_start);
        let path = Path::new("in-memory");

        // From the empty state (a log without snapshots).
        let rebuilt = replay_from(&log, ProducerStateManager::new(super::tests::EXPIRATION_MS), 0);
        assert_equivalent(&log.state, &rebuilt);

        // From every snapshot taken along the way.
        for (offset, bytes) in &snapshots {
            let (loaded, loaded_offset) =
                snapshot::decode(bytes, path, super::tests::EXPIRATION_MS).unwrap();
            prop_assert_eq!(loaded_offset, *offset);
            let rebuilt = replay_from(&log, loaded, *offset);
            assert_equivalent(&log.state, &rebuilt);
        }

        // A final snapshot round-trips exactly.
        let end = log.state.map_end_offset();
        let (loaded, _) =
            snapshot::decode(&snapshot::encode(&log.state, end), path, super::tests::EXPIRATION_MS).unwrap();
        prop_assert_eq!(&loaded, &log.state);
    }
}
