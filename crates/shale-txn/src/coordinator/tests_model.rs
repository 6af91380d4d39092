//! Random workloads of competing producer instances, timeouts, expirations and failed log
//! writes: every logged transition is legal, epochs never go back, and reloading the log
//! rebuilds the live state.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;

use super::*;
use crate::allocator::ProducerIdAllocator;

const TIDS: [&str; 2] = ["a", "b"];
const TIMEOUT_MS: i32 = 1_000;

#[derive(Clone, Debug)]
enum Op {
    Init {
        tid: usize,
        instance: usize,
        recover: bool,
    },
    Add {
        tid: usize,
        instance: usize,
        partition: i32,
    },
    End {
        tid: usize,
        instance: usize,
        commit: bool,
    },
    MarkersDone,
    Advance {
        ms: i64,
    },
    AbortTimedOut,
    Expire,
    FailNextAppend,
}

fn op() -> impl Strategy<Value = Op> {
    let tid = 0usize..TIDS.len();
    let instance = 0usize..2;
    prop_oneof![
        2 => (tid.clone(), instance.clone(), any::<bool>())
            .prop_map(|(tid, instance, recover)| Op::Init { tid, instance, recover }),
        4 => (tid.clone(), instance.clone(), 0i32..3)
            .prop_map(|(tid, instance, partition)| Op::Add { tid, instance, partition }),
        3 => (tid, instance, any::<bool>())
            .prop_map(|(tid, instance, commit)| Op::End { tid, instance, commit }),
        3 => Just(Op::MarkersDone),
        1 => (1i64..2_000).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::AbortTimedOut),
        1 => Just(Op::Expire),
        1 => Just(Op::FailNextAppend),
    ]
}

struct World {
    coordinator: TxnCoordinator,
    ids: ProducerIdAllocator,
    now_ms: i64,
    log: Vec<TxnLogRecord>,
    fail_next: bool,
    markers: Vec<MarkerRequest>,
    /// Producer id and epoch each (transactional id, instance) last received.
    instances: HashMap<(usize, usize), ProducerIdAndEpoch>,
}

impl World {
    fn apply(&mut self, append: TxnAppend) -> AppendOutcome {
        let result = if std::mem::take(&mut self.fail_next) {
            Err(TxnLogAppendError::Unavailable)
        } else {
            self.log.push(append.record.clone());
            Ok(())
        };
        let outcome = self.coordinator.complete_append(append, result);
        if let Some(markers) = &outcome.markers {
            self.markers.push(markers.clone());
        }
        outcome
    }

    fn decide(&mut self, decision: TxnDecision) -> Option<TxnResult> {
        match decision {
            TxnDecision::Reply(result) => Some(result),
            TxnDecision::Append(append) => self.apply(append).reply,
        }
    }
}

/// Checks each logged value against the previous one for the same transactional id.
fn check_log(log: &[TxnLogRecord]) -> Result<(), TestCaseError> {
    let mut last: HashMap<&str, &TxnMetadata> = HashMap::new();
    for record in log {
        let Some(next) = &record.value else {
            last.remove(record.transactional_id.as_str());
            continue;
        };
        if let Some(previous) = last.get(record.transactional_id.as_str()) {
            let fenced_abort =
                previous.state == TxnState::Ongoing && next.state == TxnState::PrepareAbort;
            prop_assert!(
                previous.state.can_transition_to(next.state) || fenced_abort,
                "{:?} -> {:?}",
                previous.state,
                next.state
            );
            if next.producer_id == previous.producer_id {
                prop_assert!(next.producer_epoch >= previous.producer_epoch);
            } else {
                prop_assert_eq!(next.producer_epoch, 0);
                prop_assert_eq!(next.prev_producer_id, previous.producer_id);
            }
            prop_assert!(
                next.txn_last_update_timestamp_ms >= previous.txn_last_update_timestamp_ms
            );
        } else {
            prop_assert!(matches!(next.state, TxnState::Empty));
        }
        if next.state == TxnState::Ongoing {
            prop_assert!(!next.partitions.is_empty());
            prop_assert!(next.txn_start_timestamp_ms >= 0);
        }
        last.insert(record.transactional_id.as_str(), next);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn logged_transitions_are_legal_and_reload_matches(ops in prop::collection::vec(op(), 1..120)) {
        let mut ids = ProducerIdAllocator::new();
        ids.add_block(0, 1_000_000).unwrap();
        let mut world = World {
            coordinator: TxnCoordinator::new(TxnCoordinatorConfig {
                transaction_max_timeout_ms: 10_000,
                transactional_id_expiration_ms: 5_000,
            }, 1),
            ids,
            now_ms: 0,
            log: Vec::new(),
            fail_next: false,
            markers: Vec::new(),
            instances: HashMap::new(),
        };
        for op in ops {
            match op {
                Op::Init { tid, instance, recover } => {
                    let expected = if recover { world.instances.get(&(tid, instance)).copied() } else { None };
                    let decision = world.coordinator.init_producer_id(
                        Some(TIDS[tid]), TIMEOUT_MS, expected, world.now_ms, &mut world.ids);
                    if let Some(Ok(TxnReply::ProducerIdAndEpoch(id))) = world.decide(decision) {
                        world.instances.insert((tid, instance), id);
                    }
                }
                Op::Add { tid, instance, partition } => {
                    let Some(id) = world.instances.get(&(tid, instance)).copied() else { continue };
                    let partitions: BTreeSet<_> = [TopicPartition::new("t", partition)].into();
                    let decision = world.coordinator.add_partitions(
                        TIDS[tid], id.producer_id, id.producer_epoch, &partitions, world.now_ms);
                    let result = world.decide(decision).unwrap();
                    if result.is_ok() {
                        // Only the current owner of the transactional id can add partitions.
                        let meta = world.coordinator.metadata(TIDS[tid]).unwrap();
                        prop_assert_eq!(meta.producer_epoch, id.producer_epoch);
                        prop_assert_eq!(meta.state, TxnState::Ongoing);
                    }
                }
                Op::End { tid, instance, commit } => {
                    let Some(id) = world.instances.get(&(tid, instance)).copied() else { continue };
                    let decision = world.coordinator.end_txn(
                        TIDS[tid], id.producer_id, id.producer_epoch, commit, world.now_ms);
                    world.decide(decision);
                }
                Op::MarkersDone => {
                    for markers in std::mem::take(&mut world.markers) {
                        let decision = world.coordinator.markers_written(
                            &markers.transactional_id, markers.producer_id, markers.producer_epoch, world.now_ms);
                        if let TxnDecision::Append(append) = decision {
                            world.apply(append);
                        }
                    }
                }
                Op::Advance { ms } => world.now_ms += ms,
                Op::AbortTimedOut => {
                    for append in world.coordinator.abort_timed_out(world.now_ms) {
                        world.apply(append);
                    }
                }
                Op::Expire => {
                    for append in world.coordinator.expire_transactional_ids(world.now_ms) {
                        world.apply(append);
                    }
                }
                Op::FailNextAppend => world.fail_next = true,
            }
            for tid in TIDS {
                prop_assert_eq!(world.coordinator.pending_state(tid), None);
            }
        }

        check_log(&world.log)?;
        let mut loaded = TxnCoordinator::new(TxnCoordinatorConfig::default(), 1);
        for record in &world.log {
            loaded.replay(record);
        }
        for tid in TIDS {
            // A transactional id created by a failed first append exists only in memory.
            let live = world.coordinator.metadata(tid).filter(|m| m.producer_epoch >= 0);
            prop_assert_eq!(loaded.metadata(tid), live);
        }
    }
}
