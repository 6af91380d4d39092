//! Wire numbers of the acquire modes and acknowledgement types, and what a state write carries.

use super::support::*;
use crate::partition::{AckType, AcquireMode};

#[test]
fn acquire_modes_have_kafkas_numbers() {
    assert_eq!(AcquireMode::from_wire(0), Some(AcquireMode::BatchOptimized));
    assert_eq!(AcquireMode::from_wire(1), Some(AcquireMode::RecordLimit));
    assert_eq!(AcquireMode::from_wire(2), None);
    assert_eq!(AcquireMode::from_wire(-1), None);
    assert_eq!(AcquireMode::RecordLimit.wire_id(), 1);
}

#[test]
fn acknowledge_types_have_kafkas_numbers() {
    let types: Vec<Option<AckType>> = (0..=5).map(AckType::from_wire).collect();
    assert_eq!(
        types,
        vec![
            None,
            Some(AckType::Accept),
            Some(AckType::Release),
            Some(AckType::Reject),
            Some(AckType::Renew),
            None
        ]
    );
    for ack_type in [
        AckType::Accept,
        AckType::Release,
        AckType::Reject,
        AckType::Renew,
    ] {
        assert_eq!(AckType::from_wire(ack_type.wire_id()), Some(ack_type));
    }
}

#[test]
fn a_state_write_carries_the_epochs_and_the_delivery_complete_count() {
    let mut p = partition();
    p.set_leader_epoch(7);
    p.acquire(
        "a",
        AcquireMode::BatchOptimized,
        5,
        100,
        &read(0, vec![batch(0, 4), batch(5, 9)]),
        0,
    );
    let write = p
        .acknowledge("a", &[ack(5, 9, REJECT)], 1)
        .expect("ok")
        .expect("write");
    assert_eq!(write.leader_epoch, 7);
    assert_eq!(write.state_epoch, 0);
    assert_eq!(write.start_offset, 0);
    assert_eq!(write.delivery_complete_count, 5);
    p.complete_write(write.write_id, true, 1);
    assert_eq!(p.summary(), (0, 5));
    assert_eq!(p.lag(10), 5);
}
