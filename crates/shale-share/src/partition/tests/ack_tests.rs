//! Acknowledgements: their validation, ACCEPT, RELEASE, REJECT and gaps, the holder check, and
//! the start offset moving past what is done.

use super::support::*;
use crate::partition::{
    validate_acknowledgement_batches, AckBatch, AcquireMode, RecordState, SharePartition,
    SharePartitionError,
};
use crate::state::DeliveryState;

fn acquired(batch_size: usize) -> SharePartition {
    let mut p = partition();
    let log = read(0, vec![batch(0, 4), batch(5, 9), batch(10, 14)]);
    p.acquire("a", AcquireMode::BatchOptimized, batch_size, 100, &log, 0);
    p
}

fn commit(p: &mut SharePartition, member: &str, batches: &[AckBatch], now_ms: u64) {
    let write = p
        .acknowledge(member, batches, now_ms)
        .expect("acknowledged")
        .expect("a write");
    p.complete_write(write.write_id, true, now_ms);
}

fn per_offset(first_offset: i64, ack_types: Vec<i8>) -> AckBatch {
    let last_offset = first_offset + i64::try_from(ack_types.len()).expect("few") - 1;
    AckBatch {
        first_offset,
        last_offset,
        ack_types,
    }
}

fn invalid(batches: &[AckBatch], renew_supported: bool) -> bool {
    matches!(
        validate_acknowledgement_batches(batches, renew_supported),
        Err(SharePartitionError::InvalidRequest(_))
    )
}

#[test]
fn validation_follows_kafka() {
    assert!(
        validate_acknowledgement_batches(&[ack(0, 4, ACCEPT), ack(5, 9, REJECT)], false).is_ok()
    );
    // Kafka compares with the previous last offset by `<`: sharing it is accepted.
    assert!(
        validate_acknowledgement_batches(&[ack(0, 4, ACCEPT), ack(4, 9, ACCEPT)], false).is_ok()
    );
    assert!(invalid(&[ack(5, 4, ACCEPT)], false));
    assert!(invalid(&[ack(5, 9, ACCEPT), ack(0, 4, ACCEPT)], false));
    assert!(invalid(&[ack(0, 4, ACCEPT), ack(3, 9, ACCEPT)], false));
    assert!(invalid(
        &[AckBatch {
            first_offset: 0,
            last_offset: 4,
            ack_types: Vec::new()
        }],
        false
    ));
    assert!(invalid(
        &[per_offset(0, vec![ACCEPT, ACCEPT]).with_last(4)],
        false
    ));
    assert!(invalid(&[ack(0, 4, RENEW)], false));
    assert!(validate_acknowledgement_batches(&[ack(0, 4, RENEW)], true).is_ok());
    assert!(invalid(&[ack(0, 4, 5)], true));
    assert!(invalid(&[ack(0, 4, -1)], true));
    assert!(validate_acknowledgement_batches(&[per_offset(0, vec![0, ACCEPT, 0])], false).is_ok());
    // Offsets from the wire at the ends of the range do not overflow.
    let wide = AckBatch {
        first_offset: i64::MIN,
        last_offset: i64::MAX,
        ack_types: vec![ACCEPT, ACCEPT],
    };
    assert!(invalid(&[wide], false));
}

trait WithLast {
    fn with_last(self, last_offset: i64) -> Self;
}

impl WithLast for AckBatch {
    fn with_last(mut self, last_offset: i64) -> Self {
        self.last_offset = last_offset;
        self
    }
}

#[test]
fn accept_acknowledges_once_written_and_moves_the_start_offset() {
    let mut p = acquired(100);
    let write = p
        .acknowledge("a", &[ack(0, 14, ACCEPT)], 1)
        .expect("ok")
        .expect("write");
    assert_eq!(write.batches.len(), 1);
    assert_eq!(write.batches[0].delivery_state, DeliveryState::Acknowledged);
    assert_eq!(write.start_offset, 0);
    assert_eq!(write.delivery_complete_count, 15);
    assert_eq!(state(&p, 0), Some((RecordState::Acknowledged, 1)));
    assert_eq!(p.start_offset(), 0);
    let done = p.complete_write(write.write_id, true, 1);
    assert!(done.records_available);
    assert_eq!((p.start_offset(), p.end_offset()), (15, 15));
    assert_eq!(p.in_flight_batch_count(), 0);
    assert_eq!(p.next_fetch_offset(), 15);
    assert_eq!(p.summary(), (15, 0));
}

#[test]
fn release_offers_the_records_again_once_written() {
    let mut p = acquired(100);
    let write = p
        .acknowledge("a", &[ack(0, 14, RELEASE)], 1)
        .expect("ok")
        .expect("write");
    assert_eq!(write.batches[0].delivery_state, DeliveryState::Available);
    // Until written the records are neither acquired nor offered.
    assert_eq!(p.next_fetch_offset(), 15);
    assert!(p.complete_write(write.write_id, true, 1).records_available);
    assert_eq!(p.next_fetch_offset(), 0);
    assert_eq!(state(&p, 3), Some((RecordState::Available, 1)));
    assert_eq!(p.start_offset(), 0);
}

#[test]
fn reject_archives() {
    let mut p = acquired(100);
    commit(&mut p, "a", &[ack(0, 14, REJECT)], 1);
    assert_eq!(p.start_offset(), 15);
    assert_eq!(p.in_flight_batch_count(), 0);
}

#[test]
fn gaps_are_archived() {
    let mut p = acquired(100);
    let types = vec![ACCEPT, ACCEPT, 0, 0, ACCEPT];
    let write = p
        .acknowledge("a", &[per_offset(0, types)], 1)
        .expect("ok")
        .expect("write");
    let states: Vec<DeliveryState> = write.batches.iter().map(|b| b.delivery_state).collect();
    assert_eq!(
        states,
        vec![
            DeliveryState::Acknowledged,
            DeliveryState::Acknowledged,
            DeliveryState::Archived,
            DeliveryState::Archived,
            DeliveryState::Acknowledged
        ]
    );
    p.complete_write(write.write_id, true, 1);
    assert_eq!(p.start_offset(), 5);
    assert_eq!(state(&p, 2), Some((RecordState::Archived, 1)));
    assert_eq!(state(&p, 5), Some((RecordState::Acquired, 1)));
}

#[test]
fn only_the_holder_may_acknowledge() {
    let mut p = acquired(100);
    let refused = p.acknowledge("b", &[ack(0, 14, ACCEPT)], 1);
    assert_eq!(
        refused,
        Err(SharePartitionError::InvalidRecordState(
            "Member is not the owner of batch record".to_string()
        ))
    );
    let refused = p.acknowledge("b", &[ack(2, 3, ACCEPT)], 1);
    assert!(matches!(
        refused,
        Err(SharePartitionError::InvalidRecordState(_))
    ));
    assert_eq!(state(&p, 2), Some((RecordState::Acquired, 1)));
    assert_eq!(
        p.record_state(2).map(|s| s.member_id),
        Some("a".to_string())
    );
}

#[test]
fn a_refused_batch_undoes_the_batches_before_it() {
    let mut p = partition();
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(0, vec![batch(0, 4)]),
        0,
    );
    p.acquire(
        "b",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(5, vec![batch(5, 9)]),
        0,
    );
    let refused = p.acknowledge("a", &[ack(0, 4, ACCEPT), ack(5, 9, ACCEPT)], 1);
    assert!(matches!(
        refused,
        Err(SharePartitionError::InvalidRecordState(_))
    ));
    assert_eq!(state(&p, 0), Some((RecordState::Acquired, 1)));
    assert_eq!(p.delivery_complete_count(), 0);
    assert!(p
        .acknowledge("a", &[ack(0, 4, ACCEPT)], 2)
        .expect("ok")
        .is_some());
}

#[test]
fn acknowledgements_outside_the_acquired_records_are_refused() {
    let mut p = acquired(100);
    assert_eq!(
        p.acknowledge("a", &[ack(10, 20, ACCEPT)], 1),
        Err(SharePartitionError::InvalidRequest(
            "Batch record not found. The last offset in request is past acquired records."
                .to_string()
        ))
    );
    assert_eq!(
        p.acknowledge("a", &[ack(16, 20, ACCEPT)], 1),
        Err(SharePartitionError::InvalidRequest(
            "Batch record not found. The first offset in request is past acquired records."
                .to_string()
        ))
    );
    let mut fresh = SharePartition::new(config(), 5);
    assert!(matches!(
        fresh.acknowledge("a", &[ack(5, 6, ACCEPT)], 1),
        Err(SharePartitionError::InvalidRecordState(_))
    ));
    assert!(matches!(
        p.acknowledge("a", &[ack(0, 4, 9)], 1),
        Err(SharePartitionError::InvalidRequest(message)) if message == "Invalid acknowledge type: [9]"
    ));
}

#[test]
fn acknowledging_an_acknowledged_record_is_refused() {
    let mut p = acquired(5);
    commit(&mut p, "a", &[ack(5, 9, ACCEPT)], 1);
    assert!(matches!(
        p.acknowledge("a", &[ack(5, 9, ACCEPT)], 2),
        Err(SharePartitionError::InvalidRecordState(_))
    ));
}

#[test]
fn the_start_offset_moves_past_the_done_prefix_and_the_cache_shrinks() {
    let mut p = acquired(5);
    assert_eq!(p.in_flight_batch_count(), 3);
    commit(&mut p, "a", &[ack(5, 9, ACCEPT)], 1);
    assert_eq!(p.start_offset(), 0);
    assert_eq!(p.in_flight_batch_count(), 3);
    assert_eq!(p.delivery_complete_count(), 5);

    commit(&mut p, "a", &[ack(0, 4, REJECT)], 2);
    assert_eq!(p.start_offset(), 10);
    assert_eq!(p.in_flight_batch_count(), 1);
    assert_eq!(p.delivery_complete_count(), 0);
    assert_eq!(p.in_flight_record_count(), 5);

    // A batch done in part moves the start offset but stays cached until done.
    commit(&mut p, "a", &[ack(10, 11, ACCEPT)], 3);
    assert_eq!(p.start_offset(), 12);
    assert_eq!(p.in_flight_batch_count(), 1);
    assert_eq!(p.delivery_complete_count(), 0);
    assert_eq!(p.lag(15), 3);

    commit(&mut p, "a", &[ack(12, 14, ACCEPT)], 4);
    assert_eq!((p.start_offset(), p.end_offset()), (15, 15));
    assert_eq!(p.in_flight_batch_count(), 0);
    assert_eq!(p.lag(15), 0);
}

#[test]
fn acknowledgements_below_the_start_offset_are_skipped() {
    let mut p = acquired(5);
    commit(&mut p, "a", &[ack(0, 4, ACCEPT)], 1);
    assert_eq!(p.acknowledge("a", &[ack(0, 4, ACCEPT)], 2), Ok(None));
}

#[test]
fn a_leaving_member_gives_its_records_back_with_their_delivery_count() {
    let mut p = partition();
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(0, vec![batch(0, 4)]),
        0,
    );
    p.acquire(
        "b",
        AcquireMode::BatchOptimized,
        100,
        100,
        &read(5, vec![batch(5, 9)]),
        0,
    );
    let write = p.release_acquired_records("a", 1).expect("a release write");
    assert_eq!(write.batches.len(), 1);
    assert_eq!(write.batches[0].first_offset, 0);
    // Kafka 4.4 releases with DeliveryCountOps.NO_OP: the delivery counts.
    assert_eq!(write.batches[0].delivery_count, 1);
    assert!(p.complete_write(write.write_id, true, 1).records_available);
    assert_eq!(state(&p, 0), Some((RecordState::Available, 1)));
    assert_eq!(state(&p, 5), Some((RecordState::Acquired, 1)));
    assert_eq!(p.next_fetch_offset(), 0);
    assert_eq!(p.release_acquired_records("c", 2), None);
}
