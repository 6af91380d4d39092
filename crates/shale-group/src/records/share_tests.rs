//! Share group records: the bytes Kafka 4.4's generated record classes write for the same
//! values (`MessageUtil.toVersionPrefixedByteBuffer`), round trips and tombstones.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::share_records::*;
use super::{decode_record, encode_record, GroupRecord, RecordDecodeError};

const TOPIC: Uuid = Uuid::from_u128(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10);

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn encoded(record: ShareRecord) -> (String, Option<String>) {
    let record = GroupRecord::Share(record);
    let (key, value) = encode_record(&record);
    assert_eq!(decode_record(&key, value.as_deref()), Ok(record));
    (hex(&key), value.map(|value| hex(&value)))
}

fn partitions(values: &[i32]) -> BTreeSet<i32> {
    values.iter().copied().collect()
}

#[test]
fn group_metadata_is_kafkas_bytes() {
    let (key, value) = encoded(ShareRecord::GroupMetadata {
        group_id: "g".into(),
        value: Some(ShareGroupMetadataValue {
            epoch: 5,
            metadata_hash: -2,
        }),
    });
    assert_eq!(key, "000b000167");
    assert_eq!(value.unwrap(), "000000000005fffffffffffffffe00");
}

#[test]
fn member_metadata_is_kafkas_bytes() {
    let (key, value) = encoded(ShareRecord::MemberMetadata {
        group_id: "g".into(),
        member_id: "m".into(),
        value: Some(ShareMemberMetadataValue {
            rack_id: None,
            client_id: "c".into(),
            client_host: "/h".into(),
            subscribed_topic_names: vec!["t1".into(), "t2".into()],
        }),
    });
    assert_eq!(key, "000a00016700016d");
    assert_eq!(value.unwrap(), "0000000263032f680303743103743200");
}

#[test]
fn target_assignment_metadata_is_kafkas_bytes() {
    let (key, value) = encoded(ShareRecord::TargetAssignmentMetadata {
        group_id: "g".into(),
        value: Some(ShareTargetAssignmentMetadataValue {
            assignment_epoch: 3,
            assignment_timestamp_ms: 7,
        }),
    });
    assert_eq!(key, "000c000167");
    assert_eq!(value.unwrap(), "0000000000030100080000000000000007");
    let (_, value) = encoded(ShareRecord::TargetAssignmentMetadata {
        group_id: "g".into(),
        value: Some(ShareTargetAssignmentMetadataValue {
            assignment_epoch: 3,
            assignment_timestamp_ms: 0,
        }),
    });
    assert_eq!(value.unwrap(), "00000000000300");
}

#[test]
fn target_assignment_member_is_kafkas_bytes() {
    let (key, value) = encoded(ShareRecord::TargetAssignmentMember {
        group_id: "g".into(),
        member_id: "m".into(),
        value: Some(BTreeMap::from([(TOPIC, partitions(&[0, 2]))])),
    });
    assert_eq!(key, "000d00016700016d");
    assert_eq!(
        value.unwrap(),
        "0000020102030405060708090a0b0c0d0e0f100300000000000000020000"
    );
}

#[test]
fn current_member_assignment_is_kafkas_bytes() {
    let (key, value) = encoded(ShareRecord::CurrentMemberAssignment {
        group_id: "g".into(),
        member_id: "m".into(),
        value: Some(ShareCurrentAssignmentValue {
            member_epoch: 4,
            previous_member_epoch: 3,
            state: 0,
            assigned_partitions: BTreeMap::from([(TOPIC, partitions(&[1]))]),
        }),
    });
    assert_eq!(key, "000e00016700016d");
    assert_eq!(
        value.unwrap(),
        "0000000000040000000300020102030405060708090a0b0c0d0e0f1002000000010000"
    );
}

#[test]
fn state_partition_metadata_is_kafkas_bytes() {
    let (key, value) = encoded(ShareRecord::StatePartitionMetadata {
        group_id: "g".into(),
        value: Some(ShareStatePartitionMetadataValue {
            initializing_topics: BTreeMap::from([(
                TOPIC,
                ShareStateTopic {
                    topic_name: "t1".into(),
                    partitions: partitions(&[0, 1]),
                },
            )]),
            initialized_topics: BTreeMap::new(),
            deleting_topics: BTreeMap::from([(TOPIC, "t1".to_owned())]),
        }),
    });
    assert_eq!(key, "000f000167");
    assert_eq!(
        value.unwrap(),
        "0000020102030405060708090a0b0c0d0e0f10037431030000000000000001000102\
         0102030405060708090a0b0c0d0e0f100374310000"
    );
}

#[test]
fn tombstones_round_trip() {
    let group_id = "g".to_owned();
    let member_id = "m".to_owned();
    for record in [
        ShareRecord::GroupMetadata {
            group_id: group_id.clone(),
            value: None,
        },
        ShareRecord::MemberMetadata {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
            value: None,
        },
        ShareRecord::TargetAssignmentMetadata {
            group_id: group_id.clone(),
            value: None,
        },
        ShareRecord::TargetAssignmentMember {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
            value: None,
        },
        ShareRecord::CurrentMemberAssignment {
            group_id: group_id.clone(),
            member_id,
            value: None,
        },
        ShareRecord::StatePartitionMetadata {
            group_id: group_id.clone(),
            value: None,
        },
    ] {
        let (_, value) = encoded(record);
        assert_eq!(value, None);
    }
}

#[test]
fn kafka_4_0_partition_metadata_and_bad_values_are_refused() {
    // Type 9 (4.0's ShareGroupPartitionMetadata) is not a 4.4 record.
    assert_eq!(
        decode_record(&[0, 9, 0, 1, b'g'], Some(&[0, 0, 1, 0])),
        Err(RecordDecodeError::UnknownKeyVersion(9))
    );
    assert_eq!(
        decode_record(&[0, 11, 0, 1, b'g'], Some(&[0, 1, 0, 0, 0, 5])),
        Err(RecordDecodeError::UnknownValueVersion {
            key_version: 11,
            value_version: 1
        })
    );
    // A huge array count is refused before anything is allocated.
    assert_eq!(
        decode_record(
            &[0, 13, 0, 1, b'g', 0, 1, b'm'],
            Some(&[0, 0, 0xff, 0xff, 0xff, 0xff, 0x07])
        ),
        Err(RecordDecodeError::Truncated)
    );
    assert_eq!(
        decode_record(&[0, 11, 0, 1, b'g'], Some(&[0, 0, 0, 0])),
        Err(RecordDecodeError::Truncated)
    );
}
