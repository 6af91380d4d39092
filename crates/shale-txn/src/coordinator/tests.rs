//! Transaction coordinator: every transition, errors, timeouts, fencing, expiration, reload.

use std::collections::BTreeSet;

use super::*;
use crate::allocator::ProducerIdAllocator;
use crate::producer_state::TransactionVersion;

const TID: &str = "txn-1";
const TIMEOUT_MS: i32 = 60_000;

struct Harness {
    coordinator: TxnCoordinator,
    ids: ProducerIdAllocator,
    now_ms: i64,
    log: Vec<TxnLogRecord>,
}

fn parts(names: &[(&str, i32)]) -> BTreeSet<TopicPartition> {
    names
        .iter()
        .map(|(topic, partition)| TopicPartition::new(*topic, *partition))
        .collect()
}

impl Harness {
    fn new() -> Self {
        let mut ids = ProducerIdAllocator::new();
        ids.add_block(1000, 1000).unwrap();
        Self {
            coordinator: TxnCoordinator::new(TxnCoordinatorConfig::default(), 3),
            ids,
            now_ms: 1_000_000,
            log: Vec::new(),
        }
    }

    /// Appends successfully when asked to; returns the reply and markers to send.
    fn run(&mut self, decision: TxnDecision) -> (Option<TxnResult>, Option<MarkerRequest>) {
        match decision {
            TxnDecision::Reply(result) => (Some(result), None),
            TxnDecision::Append(append) => {
                self.log.push(append.record.clone());
                let outcome = self.coordinator.complete_append(append, Ok(()));
                (outcome.reply, outcome.markers)
            }
        }
    }

    fn init(&mut self, expected: Option<ProducerIdAndEpoch>) -> TxnResult {
        let decision = self.coordinator.init_producer_id(
            Some(TID),
            TIMEOUT_MS,
            expected,
            self.now_ms,
            &mut self.ids,
        );
        self.run(decision).0.unwrap()
    }

    fn init_ok(&mut self) -> ProducerIdAndEpoch {
        match self.init(None) {
            Ok(TxnReply::ProducerIdAndEpoch(id)) => id,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn add(&mut self, id: ProducerIdAndEpoch, partitions: &[(&str, i32)]) -> TxnResult {
        let decision = self.coordinator.add_partitions(
            TID,
            id.producer_id,
            id.producer_epoch,
            &parts(partitions),
            self.now_ms,
        );
        self.run(decision).0.unwrap()
    }

    fn end(&mut self, id: ProducerIdAndEpoch, commit: bool) -> (TxnResult, Option<MarkerRequest>) {
        let decision =
            self.coordinator
                .end_txn(TID, id.producer_id, id.producer_epoch, commit, self.now_ms);
        let (reply, markers) = self.run(decision);
        (reply.unwrap(), markers)
    }

    fn markers_done(&mut self, markers: &MarkerRequest) {
        let decision = self.coordinator.markers_written(
            &markers.transactional_id,
            markers.producer_id,
            markers.producer_epoch,
            self.now_ms,
        );
        let (reply, more) = self.run(decision);
        assert_eq!(reply, None, "completion is internal");
        assert_eq!(more, None);
    }

    fn state(&self) -> TxnState {
        self.coordinator.metadata(TID).unwrap().state
    }

    fn meta(&self) -> &TxnMetadata {
        self.coordinator.metadata(TID).unwrap()
    }
}

#[test]
fn idempotent_init_hands_out_fresh_ids_at_epoch_zero() {
    let mut h = Harness::new();
    let mut ids = ProducerIdAllocator::new();
    ids.add_block(5, 1).unwrap();
    let d = h
        .coordinator
        .init_producer_id(None, 0, None, h.now_ms, &mut ids);
    assert_eq!(
        d,
        TxnDecision::Reply(Ok(TxnReply::ProducerIdAndEpoch(ProducerIdAndEpoch {
            producer_id: 5,
            producer_epoch: 0
        })))
    );
    let d = h
        .coordinator
        .init_producer_id(None, 0, None, h.now_ms, &mut ids);
    assert_eq!(
        d,
        TxnDecision::Reply(Err(TxnCoordinatorError::CoordinatorLoadInProgress))
    );
    // Out of ids for a new transactional id too.
    let d = h
        .coordinator
        .init_producer_id(Some(TID), TIMEOUT_MS, None, h.now_ms, &mut ids);
    assert_eq!(
        d,
        TxnDecision::Reply(Err(TxnCoordinatorError::CoordinatorLoadInProgress))
    );
    assert!(h.coordinator.metadata(TID).is_none());
}

#[test]
fn init_validates_the_request() {
    let mut h = Harness::new();
    let now = h.now_ms;
    let mut init = |tid: &str, timeout| {
        h.coordinator
            .init_producer_id(Some(tid), timeout, None, now, &mut h.ids)
    };
    assert!(matches!(
        init("", TIMEOUT_MS),
        TxnDecision::Reply(Err(TxnCoordinatorError::InvalidRequest { .. }))
    ));
    for bad in [0, -5, 900_001] {
        match init(TID, bad) {
            TxnDecision::Reply(Err(TxnCoordinatorError::InvalidTransactionTimeout { .. })) => {}
            other => panic!("timeout {bad}: {other:?}"),
        }
    }
    assert!(matches!(init(TID, 900_000), TxnDecision::Append(_)));
}

#[test]
fn init_creates_then_bumps_the_epoch() {
    let mut h = Harness::new();
    let first = h.init_ok();
    assert_eq!(first.producer_epoch, 0);
    assert_eq!(first.producer_id, 1000);
    assert_eq!(h.state(), TxnState::Empty);
    assert_eq!(h.log.len(), 1);
    let second = h.init_ok();
    assert_eq!(
        second,
        ProducerIdAndEpoch {
            producer_id: 1000,
            producer_epoch: 1
        }
    );
    assert_eq!(h.meta().last_producer_epoch, -1);
    assert_eq!(h.meta().txn_start_timestamp_ms, -1);
}

#[test]
fn commit_flow_through_every_state() {
    let mut h = Harness::new();
    let id = h.init_ok();
    // Empty -> Ongoing
    h.now_ms += 10;
    assert_eq!(h.add(id, &[("a", 0)]), Ok(TxnReply::Done));
    assert_eq!(h.state(), TxnState::Ongoing);
    let started = h.meta().txn_start_timestamp_ms;
    assert_eq!(started, h.now_ms);
    // Ongoing -> Ongoing (grows; start time kept)
    h.now_ms += 10;
    assert_eq!(h.add(id, &[("a", 1), ("b", 0)]), Ok(TxnReply::Done));
    assert_eq!(h.meta().txn_start_timestamp_ms, started);
    assert_eq!(h.meta().partitions, parts(&[("a", 0), ("a", 1), ("b", 0)]));
    // Already added: answered without a log write.
    let logged = h.log.len();
    assert_eq!(h.add(id, &[("a", 0)]), Ok(TxnReply::Done));
    assert_eq!(h.log.len(), logged);
    // Ongoing -> PrepareCommit, with markers for every partition.
    let (reply, markers) = h.end(id, true);
    assert_eq!(reply, Ok(TxnReply::Done));
    assert_eq!(h.state(), TxnState::PrepareCommit);
    let markers = markers.unwrap();
    assert_eq!(
        markers,
        MarkerRequest {
            transactional_id: TID.to_owned(),
            producer_id: id.producer_id,
            producer_epoch: id.producer_epoch,
            coordinator_epoch: 3,
            commit: true,
            partitions: parts(&[("a", 0), ("a", 1), ("b", 0)]).into_iter().collect(),
            transaction_version: TransactionVersion::Legacy,
        }
    );
    // While markers are written: retried commit waits, abort is invalid, adds wait.
    assert_eq!(
        h.end(id, true).0,
        Err(TxnCoordinatorError::ConcurrentTransactions)
    );
    assert!(matches!(
        h.end(id, false).0,
        Err(TxnCoordinatorError::InvalidTxnState {
            state: TxnState::PrepareCommit,
            ..
        })
    ));
    assert_eq!(
        h.add(id, &[("c", 0)]),
        Err(TxnCoordinatorError::ConcurrentTransactions)
    );
    assert_eq!(
        h.init(None),
        Err(TxnCoordinatorError::ConcurrentTransactions)
    );
    // PrepareCommit -> CompleteCommit
    h.markers_done(&markers);
    assert_eq!(h.state(), TxnState::CompleteCommit);
    assert!(h.meta().partitions.is_empty());
    // A retried commit succeeds; an abort now is invalid.
    assert_eq!(h.end(id, true).0, Ok(TxnReply::Done));
    assert!(matches!(
        h.end(id, false).0,
        Err(TxnCoordinatorError::InvalidTxnState {
            state: TxnState::CompleteCommit,
            ..
        })
    ));
    // CompleteCommit -> Ongoing -> PrepareAbort -> CompleteAbort
    h.now_ms += 10;
    h.add(id, &[("x", 0)]).unwrap();
    assert_eq!(h.meta().txn_start_timestamp_ms, h.now_ms);
    let (reply, markers) = h.end(id, false);
    assert_eq!(reply, Ok(TxnReply::Done));
    assert_eq!(h.state(), TxnState::PrepareAbort);
    let markers = markers.unwrap();
    assert!(!markers.commit);
    assert_eq!(
        h.end(id, false).0,
        Err(TxnCoordinatorError::ConcurrentTransactions)
    );
    assert!(matches!(
        h.end(id, true).0,
        Err(TxnCoordinatorError::InvalidTxnState { .. })
    ));
    h.markers_done(&markers);
    assert_eq!(h.state(), TxnState::CompleteAbort);
    assert_eq!(h.end(id, false).0, Ok(TxnReply::Done));
    assert!(matches!(
        h.end(id, true).0,
        Err(TxnCoordinatorError::InvalidTxnState {
            state: TxnState::CompleteAbort,
            ..
        })
    ));
    // CompleteAbort -> Ongoing is legal too, and CompleteAbort -> Empty through InitProducerId.
    let again = h.init_ok();
    assert_eq!(again.producer_epoch, id.producer_epoch + 1);
    assert_eq!(h.state(), TxnState::Empty);
}

#[test]
fn end_txn_on_an_empty_transaction_is_invalid() {
    let mut h = Harness::new();
    let id = h.init_ok();
    for commit in [true, false] {
        let error = h.end(id, commit).0.unwrap_err();
        assert!(
            matches!(error, TxnCoordinatorError::InvalidTxnState { .. }),
            "{error:?}"
        );
    }
}

#[test]
fn wrong_producer_id_or_unknown_transactional_id_is_a_mapping_error() {
    let mut h = Harness::new();
    let id = h.init_ok();
    let wrong = ProducerIdAndEpoch {
        producer_id: 4,
        ..id
    };
    assert_eq!(
        h.add(wrong, &[("a", 0)]),
        Err(TxnCoordinatorError::InvalidProducerIdMapping { producer_id: 4 })
    );
    assert_eq!(
        h.end(wrong, true).0,
        Err(TxnCoordinatorError::InvalidProducerIdMapping { producer_id: 4 })
    );
    let d = h
        .coordinator
        .add_partitions("other", id.producer_id, 0, &parts(&[("a", 0)]), h.now_ms);
    assert!(matches!(
        d,
        TxnDecision::Reply(Err(TxnCoordinatorError::InvalidProducerIdMapping { .. }))
    ));
    let d = h.coordinator.end_txn("", id.producer_id, 0, true, h.now_ms);
    assert!(matches!(
        d,
        TxnDecision::Reply(Err(TxnCoordinatorError::InvalidRequest { .. }))
    ));
}

#[test]
fn a_new_producer_instance_fences_the_old_one_and_aborts_its_transaction() {
    let mut h = Harness::new();
    let old = h.init_ok();
    h.add(old, &[("a", 0), ("b", 1)]).unwrap();

    // The new instance calls InitProducerId: Ongoing -> (PrepareEpochFence) -> PrepareAbort
    // under epoch + 1, answered with CONCURRENT_TRANSACTIONS so that it retries.
    let decision =
        h.coordinator
            .init_producer_id(Some(TID), TIMEOUT_MS, None, h.now_ms, &mut h.ids);
    let TxnDecision::Append(append) = decision else {
        panic!("expected an append, got {decision:?}");
    };
    assert_eq!(append.purpose, AppendPurpose::FenceForInitProducerId);
    let logged = append.record.value.clone().unwrap();
    assert_eq!(logged.state, TxnState::PrepareAbort);
    assert_eq!(logged.producer_epoch, old.producer_epoch + 1);
    assert_eq!(logged.last_producer_epoch, -1);
    assert_eq!(
        h.coordinator.pending_state(TID),
        Some(TxnState::PrepareAbort)
    );
    let outcome = h.coordinator.complete_append(append, Ok(()));
    assert_eq!(
        outcome.reply,
        Some(Err(TxnCoordinatorError::ConcurrentTransactions))
    );
    let markers = outcome.markers.unwrap();
    assert!(!markers.commit);
    assert_eq!(markers.producer_epoch, old.producer_epoch + 1);
    assert_eq!(markers.partitions.len(), 2);

    // The old instance is fenced everywhere.
    for result in [
        h.add(old, &[("c", 0)]),
        h.end(old, true).0,
        h.end(old, false).0,
    ] {
        let error = result.unwrap_err();
        assert!(
            matches!(error, TxnCoordinatorError::ProducerFenced { .. }),
            "{error:?}"
        );
    }
    // The new instance retries until the abort completes.
    assert_eq!(
        h.init(None),
        Err(TxnCoordinatorError::ConcurrentTransactions)
    );
    h.markers_done(&markers);
    assert_eq!(h.state(), TxnState::CompleteAbort);
    let new = h.init_ok();
    assert_eq!(new.producer_epoch, old.producer_epoch + 2);
    assert_eq!(new.producer_id, old.producer_id);
}

#[test]
fn timed_out_transactions_are_aborted_with_a_bumped_epoch() {
    let mut h = Harness::new();
    let id = h.init_ok();
    h.add(id, &[("a", 0)]).unwrap();
    let started = h.meta().txn_start_timestamp_ms;

    assert!(h
        .coordinator
        .abort_timed_out(started + i64::from(TIMEOUT_MS))
        .is_empty());
    let now = started + i64::from(TIMEOUT_MS) + 1;
    let mut appends = h.coordinator.abort_timed_out(now);
    assert_eq!(appends.len(), 1);
    // In flight: a second sweep and the producer both see the pending transition.
    assert!(h.coordinator.abort_timed_out(now + 1).is_empty());
    assert_eq!(
        h.end(id, true).0,
        Err(TxnCoordinatorError::ConcurrentTransactions)
    );

    let append = appends.remove(0);
    assert_eq!(append.purpose, AppendPurpose::TimeoutAbort);
    let outcome = h.coordinator.complete_append(append, Ok(()));
    assert_eq!(outcome.reply, None);
    let markers = outcome.markers.unwrap();
    assert_eq!(markers.producer_epoch, id.producer_epoch + 1);
    assert_eq!(h.state(), TxnState::PrepareAbort);
    // The producer, still at the old epoch, is fenced.
    assert_eq!(
        h.end(id, true).0,
        Err(TxnCoordinatorError::ProducerFenced {
            producer_epoch: id.producer_epoch,
            current_epoch: id.producer_epoch + 1
        })
    );
    h.markers_done(&markers);
    assert_eq!(h.state(), TxnState::CompleteAbort);
    // KIP-360: the producer recovers by re-initialising with the epoch it knows... which is
    // no longer current nor the last one: fenced for good.
    assert!(matches!(
        h.init(Some(id)),
        Err(TxnCoordinatorError::ProducerFenced { .. })
    ));
}

#[test]
fn idle_and_complete_transactions_do_not_time_out() {
    let mut h = Harness::new();
    let id = h.init_ok();
    assert!(h.coordinator.abort_timed_out(i64::MAX).is_empty());
    h.add(id, &[("a", 0)]).unwrap();
    let (_, markers) = h.end(id, true);
    assert!(
        h.coordinator.abort_timed_out(i64::MAX).is_empty(),
        "PrepareCommit"
    );
    h.markers_done(&markers.unwrap());
    assert!(h.coordinator.abort_timed_out(i64::MAX).is_empty());
}

#[test]
fn kip_360_epoch_recovery_and_retries() {
    let mut h = Harness::new();
    let first = h.init_ok();
    // The producer hit an error and re-initialises with its current id and epoch.
    let bumped = match h.init(Some(first)).unwrap() {
        TxnReply::ProducerIdAndEpoch(id) => id,
        other => panic!("{other:?}"),
    };
    assert_eq!(bumped.producer_epoch, first.producer_epoch + 1);
    assert_eq!(h.meta().last_producer_epoch, first.producer_epoch);
    // The response was lost; the retry carries the old epoch again: same answer, no bump.
    let retried = h.init(Some(first)).unwrap();
    assert_eq!(retried, TxnReply::ProducerIdAndEpoch(bumped));
    // Another producer id is not ours.
    let stranger = ProducerIdAndEpoch {
        producer_id: 77,
        producer_epoch: 0,
    };
    assert!(matches!(
        h.init(Some(stranger)),
        Err(TxnCoordinatorError::ProducerFenced { .. })
    ));
}

#[test]
fn exhausted_epoch_rotates_the_producer_id() {
    let mut h = Harness::new();
    let mut metadata = TxnMetadata::new(TID, 42, TIMEOUT_MS, h.now_ms);
    metadata.producer_epoch = i16::MAX - 1;
    metadata.state = TxnState::CompleteCommit;
    h.coordinator.replay(&TxnLogRecord {
        transactional_id: TID.to_owned(),
        value: Some(metadata),
    });
    let old = ProducerIdAndEpoch {
        producer_id: 42,
        producer_epoch: i16::MAX - 1,
    };
    let rotated = match h.init(Some(old)).unwrap() {
        TxnReply::ProducerIdAndEpoch(id) => id,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        rotated,
        ProducerIdAndEpoch {
            producer_id: 1000,
            producer_epoch: 0
        }
    );
    assert_eq!(h.meta().prev_producer_id, 42);
    assert_eq!(h.meta().last_producer_epoch, i16::MAX - 1);
    // A retry with the old, exhausted id and epoch gets the rotated id again.
    assert_eq!(
        h.init(Some(old)).unwrap(),
        TxnReply::ProducerIdAndEpoch(rotated)
    );
    assert_eq!(h.meta().producer_id, 1000);
}

#[test]
fn fencing_at_the_maximum_epoch_keeps_it() {
    let h = Harness::new();
    let mut metadata = TxnMetadata::new(TID, 42, TIMEOUT_MS, h.now_ms);
    metadata.producer_epoch = i16::MAX;
    metadata.state = TxnState::Ongoing;
    metadata.partitions = parts(&[("a", 0)]);
    metadata.txn_start_timestamp_ms = h.now_ms;
    let next = metadata.prepare_fence_and_abort(h.now_ms).unwrap();
    assert_eq!(next.producer_epoch, i16::MAX);
    assert_eq!(next.state, TxnState::PrepareAbort);
}

#[test]
fn failed_append_clears_the_pending_transition() {
    let mut h = Harness::new();
    let id = h.init_ok();
    let before = h.coordinator.clone();
    let d = h.coordinator.add_partitions(
        TID,
        id.producer_id,
        id.producer_epoch,
        &parts(&[("a", 0)]),
        h.now_ms,
    );
    let TxnDecision::Append(append) = d else {
        panic!("{d:?}");
    };
    // While in flight everything else waits.
    assert_eq!(
        h.init(None),
        Err(TxnCoordinatorError::ConcurrentTransactions)
    );
    assert_eq!(
        h.end(id, true).0,
        Err(TxnCoordinatorError::ConcurrentTransactions)
    );
    let outcome = h
        .coordinator
        .complete_append(append, Err(TxnLogAppendError::NotLeader));
    assert_eq!(
        outcome.reply,
        Some(Err(TxnCoordinatorError::NotCoordinator))
    );
    assert_eq!(outcome.markers, None);
    assert_eq!(h.coordinator, before, "nothing changed");
    assert_eq!(h.add(id, &[("a", 0)]), Ok(TxnReply::Done));
}

#[test]
fn append_completed_under_an_older_coordinator_epoch_is_not_applied() {
    let mut h = Harness::new();
    let id = h.init_ok();
    let d = h.coordinator.add_partitions(
        TID,
        id.producer_id,
        id.producer_epoch,
        &parts(&[("a", 0)]),
        h.now_ms,
    );
    let TxnDecision::Append(mut append) = d else {
        panic!("{d:?}");
    };
    append.coordinator_epoch -= 1;
    let outcome = h.coordinator.complete_append(append, Ok(()));
    assert_eq!(
        outcome.reply,
        Some(Err(TxnCoordinatorError::NotCoordinator))
    );
    assert_eq!(h.state(), TxnState::Empty);
}

#[test]
fn idle_transactional_ids_expire_with_a_tombstone() {
    let mut h = Harness::new();
    let id = h.init_ok();
    let expiration = TxnCoordinatorConfig::default().transactional_id_expiration_ms;
    let last_update = h.meta().txn_last_update_timestamp_ms;
    assert!(h
        .coordinator
        .expire_transactional_ids(last_update + expiration - 1)
        .is_empty());
    let mut appends = h
        .coordinator
        .expire_transactional_ids(last_update + expiration);
    assert_eq!(appends.len(), 1);
    let append = appends.remove(0);
    assert_eq!(append.record.value, None, "a tombstone");
    assert_eq!(h.coordinator.pending_state(TID), Some(TxnState::Dead));
    assert_eq!(
        h.coordinator.complete_append(append, Ok(())),
        AppendOutcome::default()
    );
    assert!(h.coordinator.metadata(TID).is_none());
    assert_eq!(
        h.coordinator.describe(TID),
        Err(TxnCoordinatorError::TransactionalIdNotFound)
    );
    // The producer id is now unknown to the coordinator.
    assert!(matches!(
        h.end(id, true).0,
        Err(TxnCoordinatorError::InvalidProducerIdMapping { .. })
    ));
}

#[test]
fn running_transactions_never_expire() {
    let mut h = Harness::new();
    let id = h.init_ok();
    h.add(id, &[("a", 0)]).unwrap();
    assert!(h.coordinator.expire_transactional_ids(i64::MAX).is_empty());
    let (_, markers) = h.end(id, false);
    assert!(h.coordinator.expire_transactional_ids(i64::MAX).is_empty());
    h.markers_done(&markers.unwrap());
    assert_eq!(h.coordinator.expire_transactional_ids(i64::MAX).len(), 1);
}

#[test]
fn reload_from_the_log_rebuilds_the_same_state_and_resends_markers() {
    let mut h = Harness::new();
    let id = h.init_ok();
    h.add(id, &[("a", 0)]).unwrap();
    let (_, markers) = h.end(id, true);
    let markers = markers.unwrap();

    let mut loaded = TxnCoordinator::new(TxnCoordinatorConfig::default(), 4);
    for record in &h.log {
        loaded.replay(record);
    }
    assert_eq!(loaded.metadata(TID), h.coordinator.metadata(TID));
    let resend = loaded.markers_to_resend();
    assert_eq!(
        resend,
        vec![MarkerRequest {
            coordinator_epoch: 4,
            ..markers.clone()
        }]
    );
    // Finishing on either copy gives the same result.
    h.markers_done(&markers);
    let d = loaded.markers_written(TID, id.producer_id, id.producer_epoch, h.now_ms);
    let TxnDecision::Append(append) = d else {
        panic!("{d:?}");
    };
    loaded.complete_append(append, Ok(()));
    assert_eq!(loaded.metadata(TID), h.coordinator.metadata(TID));
    assert!(loaded.markers_to_resend().is_empty());
}

#[test]
fn markers_written_checks_the_producer_and_state() {
    let mut h = Harness::new();
    let id = h.init_ok();
    let d = h
        .coordinator
        .markers_written(TID, id.producer_id, id.producer_epoch, h.now_ms);
    assert!(matches!(
        d,
        TxnDecision::Reply(Err(TxnCoordinatorError::IllegalState { .. }))
    ));
    let d = h
        .coordinator
        .markers_written(TID, id.producer_id, id.producer_epoch + 1, h.now_ms);
    assert!(matches!(
        d,
        TxnDecision::Reply(Err(TxnCoordinatorError::ProducerFenced { .. }))
    ));
}

#[test]
fn describe_list_and_verify() {
    let mut h = Harness::new();
    let id = h.init_ok();
    h.add(id, &[("a", 0)]).unwrap();
    let described = h.coordinator.describe(TID).unwrap();
    assert_eq!(described.state.name(), "Ongoing");
    assert_eq!(described.txn_timeout_ms, TIMEOUT_MS);
    assert!(matches!(
        h.coordinator.describe(""),
        Err(TxnCoordinatorError::InvalidRequest { .. })
    ));
    assert_eq!(
        h.coordinator.describe("nope"),
        Err(TxnCoordinatorError::TransactionalIdNotFound)
    );
    assert_eq!(h.coordinator.list(&[], &[]).count(), 1);
    assert_eq!(h.coordinator.list(&[TxnState::Ongoing], &[]).count(), 1);
    assert_eq!(h.coordinator.list(&[TxnState::Empty], &[]).count(), 0);
    assert_eq!(h.coordinator.list(&[], &[id.producer_id]).count(), 1);
    assert_eq!(h.coordinator.list(&[], &[id.producer_id + 1]).count(), 0);

    let results = h
        .coordinator
        .verify_partitions(
            TID,
            id.producer_id,
            id.producer_epoch,
            &parts(&[("a", 0), ("b", 0)]),
        )
        .unwrap();
    assert_eq!(results[0], (TopicPartition::new("a", 0), Ok(())));
    assert!(
        matches!(
            results[1].1,
            Err(TxnCoordinatorError::InvalidTxnState { .. })
        ),
        "{results:?}"
    );
    assert!(matches!(
        h.coordinator.verify_partitions(
            TID,
            id.producer_id,
            id.producer_epoch + 1,
            &parts(&[("a", 0)])
        ),
        Err(TxnCoordinatorError::ProducerFenced { .. })
    ));
}

#[test]
fn illegal_transitions_are_refused_by_the_metadata() {
    let mut metadata = TxnMetadata::new(TID, 1, TIMEOUT_MS, 0);
    metadata.producer_epoch = 0;
    // Empty cannot commit, complete, or be fenced.
    assert!(metadata
        .prepare_abort_or_commit(true, TransactionVersion::Legacy, -1, 1)
        .is_err());
    assert!(metadata.prepare_complete(1).is_err());
    assert!(metadata.prepare_fence_and_abort(1).is_err());
    metadata.state = TxnState::Ongoing;
    assert!(metadata.prepare_dead().is_err());
    assert!(metadata
        .prepare_increment_epoch(TIMEOUT_MS, None, 1)
        .is_err());
    assert!(metadata
        .prepare_producer_id_rotation(2, TIMEOUT_MS, 1, false)
        .is_err());
    metadata.state = TxnState::Dead;
    assert!(metadata
        .prepare_add_partitions(&parts(&[("a", 0)]), TransactionVersion::Legacy, 1)
        .is_err());
    // Every transition records the current producer id as the previous one.
    metadata.state = TxnState::Empty;
    let next = metadata
        .prepare_add_partitions(&parts(&[("a", 0)]), TransactionVersion::Legacy, 5)
        .unwrap();
    assert_eq!(next.prev_producer_id, 1);
    assert_eq!(next.txn_start_timestamp_ms, 5);
}

#[test]
fn reload_through_kafkas_record_format() {
    let mut h = Harness::new();
    let id = h.init_ok();
    h.add(id, &[("a", 0), ("a", 2), ("b", 1)]).unwrap();
    let (_, markers) = h.end(id, false);

    let mut loaded = TxnCoordinator::new(TxnCoordinatorConfig::default(), 3);
    for record in &h.log {
        let (key, value) = encode_txn_log_record(record);
        loaded.replay(&decode_txn_log_record(&key, value.as_deref()).unwrap());
    }
    // Kafka's value has no last producer epoch; everything else survives.
    let expected = TxnMetadata {
        last_producer_epoch: -1,
        ..h.meta().clone()
    };
    assert_eq!(loaded.metadata(TID), Some(&expected));
    assert_eq!(loaded.markers_to_resend(), vec![markers.unwrap()]);
}

#[path = "tests_v2.rs"]
mod v2;
