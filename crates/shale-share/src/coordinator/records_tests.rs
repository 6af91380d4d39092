//! The expected bytes are laid out by hand from Kafka's schemas (and match what Kafka 4.4's
//! ShareCoordinatorRecordSerde writes for the same records).

use uuid::Uuid;

use super::*;
use crate::state::{DeliveryState, SharePartitionKey, StateBatch};

const TOPIC: Uuid = Uuid::from_u128(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);

fn key() -> SharePartitionKey {
    SharePartitionKey {
        group_id: "g1".to_string(),
        topic_id: TOPIC,
        partition: 5,
    }
}

fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).unwrap_or("00");
            u8::from_str_radix(pair, 16).unwrap_or(0)
        })
        .collect()
}

const KEY_BODY: &str = "0002 6731 00112233445566778899aabbccddeeff 00000005";

fn snapshot_value() -> ShareSnapshotValue {
    ShareSnapshotValue {
        snapshot_epoch: 1,
        state_epoch: 2,
        leader_epoch: 3,
        start_offset: 100,
        delivery_complete_count: 7,
        create_timestamp_ms: 1000,
        write_timestamp_ms: 2000,
        state_batches: vec![
            StateBatch {
                first_offset: 100,
                last_offset: 109,
                delivery_state: DeliveryState::Acknowledged,
                delivery_count: 1,
            },
            StateBatch {
                first_offset: 110,
                last_offset: 119,
                delivery_state: DeliveryState::Available,
                delivery_count: 2,
            },
        ],
    }
}

const SNAPSHOT_VALUE: &str = "
    0000
    00000001 00000002 00000003
    0000000000000064 00000000000003e8 00000000000007d0
    03
      0000000000000064 000000000000006d 02 0001 00
      000000000000006e 0000000000000077 00 0002 00
    01 00 04 00000007";

#[test]
fn a_snapshot_is_written_as_kafka_writes_it() {
    let record = ShareRecord::Snapshot {
        key: key(),
        value: snapshot_value(),
    };
    let (key_bytes, value_bytes) = encode_record(&record);
    assert_eq!(key_bytes.to_vec(), hex(&format!("0000 {KEY_BODY}")));
    assert_eq!(value_bytes.map(|v| v.to_vec()), Some(hex(SNAPSHOT_VALUE)));
    assert_eq!(
        decode_record(&key_bytes, Some(&hex(SNAPSHOT_VALUE))),
        Ok(record)
    );
}

#[test]
fn an_unknown_delivery_complete_count_leaves_the_tagged_section_empty() {
    let mut value = snapshot_value();
    value.delivery_complete_count = UNKNOWN_DELIVERY_COMPLETE_COUNT;
    value.state_batches.clear();
    let record = ShareRecord::Snapshot { key: key(), value };
    let (_, value_bytes) = encode_record(&record);
    let expected = hex("
        0000
        00000001 00000002 00000003
        0000000000000064 00000000000003e8 00000000000007d0
        01
        00");
    assert_eq!(value_bytes.map(|v| v.to_vec()), Some(expected));
}

#[test]
fn an_update_is_written_as_kafka_writes_it() {
    let value = ShareUpdateValue {
        snapshot_epoch: 4,
        leader_epoch: -1,
        start_offset: -1,
        delivery_complete_count: 300,
        state_batches: vec![StateBatch {
            first_offset: 5,
            last_offset: 5,
            delivery_state: DeliveryState::Archived,
            delivery_count: 5,
        }],
    };
    let record = ShareRecord::Update { key: key(), value };
    let (key_bytes, value_bytes) = encode_record(&record);
    assert_eq!(key_bytes.to_vec(), hex(&format!("0001 {KEY_BODY}")));
    let expected = hex("
        0000
        00000004 ffffffff ffffffffffffffff
        02
          0000000000000005 0000000000000005 04 0005 00
        01 00 04 0000012c");
    assert_eq!(value_bytes.map(|v| v.to_vec()), Some(expected.clone()));
    assert_eq!(decode_record(&key_bytes, Some(&expected)), Ok(record));
}

#[test]
fn a_tombstone_is_a_snapshot_key_without_a_value() {
    let record = ShareRecord::tombstone(key());
    let (key_bytes, value_bytes) = encode_record(&record);
    assert_eq!(key_bytes.to_vec(), hex(&format!("0000 {KEY_BODY}")));
    assert_eq!(value_bytes, None);
    assert_eq!(decode_record(&key_bytes, None), Ok(record));
    assert_eq!(
        decode_record(&hex(&format!("0001 {KEY_BODY}")), None),
        Ok(ShareRecord::Tombstone {
            key: key(),
            kind: RecordKind::Update
        })
    );
}

#[test]
fn unknown_record_types_are_the_ones_to_skip() {
    for record_type in ["0002", "ffff", "0003"] {
        let error = decode_record(&hex(&format!("{record_type} {KEY_BODY}")), None)
            .expect_err("an unknown type");
        assert!(error.is_unknown_kind(), "{error:?}");
    }
    let error = decode_record(&hex(&format!("0000 {KEY_BODY}")), Some(&hex("0001")))
        .expect_err("an unknown value version");
    assert_eq!(
        error,
        ShareRecordError::UnknownValueVersion {
            record_type: 0,
            version: 1
        }
    );
    assert!(!error.is_unknown_kind());
}

#[test]
fn unknown_tagged_fields_are_skipped() {
    let value = hex("
        0000
        00000004 00000001 0000000000000009
        01
        02 00 04 0000000a 07 02 abcd");
    let decoded = decode_record(&hex(&format!("0001 {KEY_BODY}")), Some(&value));
    assert_eq!(
        decoded,
        Ok(ShareRecord::Update {
            key: key(),
            value: ShareUpdateValue {
                snapshot_epoch: 4,
                leader_epoch: 1,
                start_offset: 9,
                delivery_complete_count: 10,
                state_batches: Vec::new(),
            }
        })
    );
}

#[test]
fn malformed_records_are_refused() {
    let snapshot_key = hex(&format!("0000 {KEY_BODY}"));
    let cases: Vec<(Vec<u8>, Option<Vec<u8>>, ShareRecordError)> = vec![
        (hex("00"), None, ShareRecordError::Truncated { buffer: "key" }),
        (
            hex("0000 0002 67"),
            None,
            ShareRecordError::Truncated { buffer: "key" },
        ),
        (
            hex("0000 ffff 00112233445566778899aabbccddeeff 00000005"),
            None,
            ShareRecordError::NullField { field: "groupId" },
        ),
        (
            hex("0000 0001 ff 00112233445566778899aabbccddeeff 00000005"),
            None,
            ShareRecordError::InvalidUtf8 { field: "groupId" },
        ),
        (
            snapshot_key.clone(),
            Some(hex("00")),
            ShareRecordError::Truncated { buffer: "value" },
        ),
        (
            snapshot_key.clone(),
            Some(hex(
                "0000 00000001 00000002 00000003 0000000000000064 0000000000000000 0000000000000000 00 00",
            )),
            ShareRecordError::NullField {
                field: "stateBatches",
            },
        ),
        (
            snapshot_key.clone(),
            Some(hex(
                "0000 00000001 00000002 00000003 0000000000000064 0000000000000000 0000000000000000 ffffffff07",
            )),
            ShareRecordError::ArrayTooLong {
                field: "stateBatches",
                count: 0x7fff_fffe,
                remaining: 0,
            },
        ),
        (
            snapshot_key.clone(),
            Some(hex(
                "0000 00000001 00000002 00000003 0000000000000064 0000000000000000 0000000000000000 ffffffffff01",
            )),
            ShareRecordError::VarintTooLong { buffer: "value" },
        ),
        (
            snapshot_key.clone(),
            Some(hex(
                "0000 00000001 00000002 00000003 0000000000000064 0000000000000000 0000000000000000
                 02 0000000000000000 0000000000000001 01 0001 00 00",
            )),
            ShareRecordError::InvalidDeliveryState(1),
        ),
        (
            snapshot_key,
            Some(hex(
                "0000 00000001 00000002 00000003 0000000000000064 0000000000000000 0000000000000000
                 01 01 00 02 0001",
            )),
            ShareRecordError::TaggedFieldSize {
                tag: 0,
                size: 2,
                expected: 4,
            },
        ),
    ];
    for (key, value, expected) in cases {
        assert_eq!(
            decode_record(&key, value.as_deref()),
            Err(expected.clone()),
            "{expected}"
        );
    }
}
