//! Transaction version 2 (KIP-890 part 2): the epoch bump on every EndTxn, retries that span
//! the bump, aborts with no transaction open, epoch exhaustion, and the list filters.

use super::*;

const V2: TransactionVersion = TransactionVersion::V2;

impl Harness {
    fn add_v2(&mut self, id: ProducerIdAndEpoch, partitions: &[(&str, i32)]) -> TxnResult {
        let decision = self.coordinator.add_partitions_with_version(
            TID,
            id.producer_id,
            id.producer_epoch,
            &parts(partitions),
            V2,
            self.now_ms,
        );
        self.run(decision).0.unwrap()
    }

    fn end_v2(
        &mut self,
        id: ProducerIdAndEpoch,
        commit: bool,
    ) -> (TxnResult, Option<MarkerRequest>) {
        let decision = self.coordinator.end_txn_with_version(
            TID,
            id.producer_id,
            id.producer_epoch,
            commit,
            V2,
            self.now_ms,
            &mut self.ids,
        );
        let (reply, markers) = self.run(decision);
        (reply.unwrap(), markers)
    }
}

fn bumped(id: ProducerIdAndEpoch) -> ProducerIdAndEpoch {
    ProducerIdAndEpoch {
        producer_id: id.producer_id,
        producer_epoch: id.producer_epoch + 1,
    }
}

#[test]
fn every_end_txn_bumps_the_epoch_and_markers_carry_it() {
    let mut h = Harness::new();
    let id = h.init_ok();
    h.add_v2(id, &[("a", 0), ("b", 1)]).unwrap();
    assert_eq!(h.meta().client_transaction_version, V2);

    let (reply, markers) = h.end_v2(id, true);
    let next = bumped(id);
    assert_eq!(reply, Ok(TxnReply::ProducerIdAndEpoch(next)));
    let markers = markers.unwrap();
    assert_eq!(markers.producer_epoch, next.producer_epoch);
    assert_eq!(markers.transaction_version, V2);
    assert!(markers.commit);
    assert_eq!(h.state(), TxnState::PrepareCommit);
    assert_eq!(h.meta().last_producer_epoch, id.producer_epoch);

    // A retry from before the bump while the markers are in flight, then after completion.
    assert_eq!(
        h.end_v2(id, true).0,
        Err(TxnCoordinatorError::ConcurrentTransactions)
    );
    h.markers_done(&markers);
    assert_eq!(h.state(), TxnState::CompleteCommit);
    assert_eq!(h.end_v2(id, true).0, Ok(TxnReply::ProducerIdAndEpoch(next)));
    // The retried EndTxn asked for the other outcome: not a retry.
    assert!(matches!(
        h.end_v2(id, false).0,
        Err(TxnCoordinatorError::InvalidTxnState { .. })
    ));

    // A late write of the old transaction is fenced at the coordinator...
    assert_eq!(
        h.add_v2(id, &[("a", 0)]),
        Err(TxnCoordinatorError::ProducerFenced {
            producer_epoch: id.producer_epoch,
            current_epoch: next.producer_epoch
        })
    );
    // ...while the next transaction runs at the new epoch.
    h.add_v2(next, &[("a", 0)]).unwrap();
    let (reply, markers) = h.end_v2(next, false);
    assert_eq!(reply, Ok(TxnReply::ProducerIdAndEpoch(bumped(next))));
    h.markers_done(&markers.unwrap());
    assert_eq!(h.state(), TxnState::CompleteAbort);
}

#[test]
fn version_2_abort_with_no_transaction_open_bumps_the_epoch() {
    let mut h = Harness::new();
    let id = h.init_ok();
    let (reply, markers) = h.end_v2(id, false);
    assert_eq!(reply, Ok(TxnReply::ProducerIdAndEpoch(bumped(id))));
    let markers = markers.unwrap();
    assert!(markers.partitions.is_empty());
    assert_eq!(h.state(), TxnState::PrepareAbort);
    h.markers_done(&markers);
    assert_eq!(h.state(), TxnState::CompleteAbort);

    // Committing nothing is still invalid, and version 1 may not abort nothing.
    assert!(matches!(
        h.end_v2(bumped(id), true).0,
        Err(TxnCoordinatorError::InvalidTxnState { .. })
    ));
    let mut v1 = Harness::new();
    let id = v1.init_ok();
    assert!(matches!(
        v1.end(id, false).0,
        Err(TxnCoordinatorError::InvalidTxnState { .. })
    ));
}

#[test]
fn version_2_producer_recovers_from_a_timeout_abort() {
    let mut h = Harness::new();
    let id = h.init_ok();
    h.add_v2(id, &[("a", 0)]).unwrap();
    let now = h.meta().txn_start_timestamp_ms + i64::from(TIMEOUT_MS) + 1;
    let append = h.coordinator.abort_timed_out(now).remove(0);
    let markers = h
        .coordinator
        .complete_append(append, Ok(()))
        .markers
        .unwrap();
    assert_eq!(markers.producer_epoch, id.producer_epoch + 1);
    h.markers_done(&markers);

    // The producer's abort, one epoch behind, is a retry of the abort: it learns the epoch.
    assert_eq!(
        h.end_v2(id, false).0,
        Ok(TxnReply::ProducerIdAndEpoch(bumped(id)))
    );
    // Its commit cannot be.
    assert!(matches!(
        h.end_v2(id, true).0,
        Err(TxnCoordinatorError::InvalidTxnState { .. })
    ));
    // Two epochs behind is fenced.
    h.add_v2(bumped(id), &[("a", 0)]).unwrap();
    let (_, markers) = h.end_v2(bumped(id), false);
    h.markers_done(&markers.unwrap());
    assert!(matches!(
        h.end_v2(id, false).0,
        Err(TxnCoordinatorError::ProducerFenced { .. })
    ));
}

#[test]
fn version_2_end_txn_at_an_exhausted_epoch_continues_under_a_new_producer_id() {
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
    h.add_v2(old, &[("a", 0)]).unwrap();
    let (reply, markers) = h.end_v2(old, true);
    let fresh = ProducerIdAndEpoch {
        producer_id: 1000,
        producer_epoch: 0,
    };
    assert_eq!(reply, Ok(TxnReply::ProducerIdAndEpoch(fresh)));
    let markers = markers.unwrap();
    // The markers close the transaction of the old id at the last epoch.
    assert_eq!(
        (markers.producer_id, markers.producer_epoch),
        (42, i16::MAX)
    );
    assert_eq!(h.meta().next_producer_id, 1000);
    h.markers_done(&markers);
    assert_eq!(h.meta().producer_id, 1000);
    assert_eq!(h.meta().producer_epoch, 0);
    assert_eq!(h.meta().prev_producer_id, 42);
    // A retry with the old id and epoch answers the new ones.
    assert_eq!(
        h.end_v2(old, true).0,
        Ok(TxnReply::ProducerIdAndEpoch(fresh))
    );
    // Without an id to rotate to, the coordinator asks the producer to retry.
    let mut empty = Harness::new();
    let mut metadata = TxnMetadata::new(TID, 42, TIMEOUT_MS, empty.now_ms);
    metadata.producer_epoch = i16::MAX - 1;
    empty.coordinator.replay(&TxnLogRecord {
        transactional_id: TID.to_owned(),
        value: Some(metadata),
    });
    empty.ids = ProducerIdAllocator::new();
    assert_eq!(
        empty.end_v2(old, false).0,
        Err(TxnCoordinatorError::CoordinatorLoadInProgress)
    );
}

#[test]
fn version_2_state_survives_a_reload() {
    let mut h = Harness::new();
    let id = h.init_ok();
    h.add_v2(id, &[("a", 0)]).unwrap();
    let (_, markers) = h.end_v2(id, true);
    let mut loaded = TxnCoordinator::new(TxnCoordinatorConfig::default(), 4);
    for record in &h.log {
        let (key, value) = encode_txn_log_record(record);
        loaded.replay(&decode_txn_log_record(&key, value.as_deref()).unwrap());
    }
    let resend = loaded.markers_to_resend();
    assert_eq!(resend.len(), 1);
    let markers = markers.unwrap();
    assert_eq!(resend[0].producer_epoch, markers.producer_epoch);
    assert_eq!(resend[0].transaction_version, V2);
    assert_eq!(resend[0].coordinator_epoch, 4);
}

#[test]
fn list_filters_by_state_producer_and_running_time() {
    let mut h = Harness::new();
    let id = h.init_ok();
    let start = h.now_ms;
    h.add(id, &[("a", 0)]).unwrap();
    let ongoing = [TxnState::Ongoing];
    let ids = |c: &TxnCoordinator, states: &[TxnState], pids: &[i64], duration: i64, now: i64| {
        c.list_running_longer_than(states, pids, duration, now)
            .map(|m| m.transactional_id.clone())
            .collect::<Vec<_>>()
    };
    let c = &h.coordinator;
    assert_eq!(ids(c, &[], &[], -1, start), vec![TID]);
    assert_eq!(ids(c, &ongoing, &[id.producer_id], -1, start), vec![TID]);
    assert!(ids(c, &[TxnState::Empty], &[], -1, start).is_empty());
    assert!(ids(c, &[], &[id.producer_id + 1], -1, start).is_empty());
    // KIP-994: only transactions running longer than the duration.
    assert!(ids(c, &ongoing, &[], 5_000, start + 5_000).is_empty());
    assert_eq!(ids(c, &ongoing, &[], 5_000, start + 5_001), vec![TID]);
    assert_eq!(c.list(&ongoing, &[]).count(), 1);
}
