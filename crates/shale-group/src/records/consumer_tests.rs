//! Consumer group records: round trips, and bytes worked out by hand from Kafka 4.4's schemas.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::classic_member_metadata::ClassicMemberMetadata;
use super::consumer_records::*;
use super::{decode_record, encode_record, GroupRecord, RecordDecodeError};

const TOPIC: Uuid = Uuid::from_u128(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10);

fn topic_bytes() -> Vec<u8> {
    (1..=16).collect()
}

fn round_trip(record: ConsumerRecord) {
    let record = GroupRecord::Consumer(record);
    let (key, value) = encode_record(&record);
    assert_eq!(decode_record(&key, value.as_deref()), Ok(record));
}

#[test]
fn group_metadata_bytes_by_hand() {
    let record = GroupRecord::Consumer(ConsumerRecord::GroupMetadata {
        group_id: "g".into(),
        value: Some(ConsumerGroupMetadataValue {
            epoch: 5,
            metadata_hash: 0,
        }),
    });
    let (key, value) = encode_record(&record);
    // Key: record type 3, then GroupId as a non-flexible string.
    assert_eq!(key, [0, 3, 0, 1, b'g']);
    // Value: version 0, Epoch, no tagged fields (MetadataHash 0 is its default).
    assert_eq!(value.unwrap(), [0, 0, 0, 0, 0, 5, 0]);

    let record = GroupRecord::Consumer(ConsumerRecord::GroupMetadata {
        group_id: "g".into(),
        value: Some(ConsumerGroupMetadataValue {
            epoch: 5,
            metadata_hash: 0x0102_0304_0506_0708,
        }),
    });
    let (_, value) = encode_record(&record);
    // One tagged field: tag 0, 8 bytes.
    assert_eq!(
        value.unwrap(),
        [0, 0, 0, 0, 0, 5, 1, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]
    );
}

#[test]
fn current_member_assignment_bytes_by_hand() {
    let record = GroupRecord::Consumer(ConsumerRecord::CurrentMemberAssignment {
        group_id: "g".into(),
        member_id: "m".into(),
        value: Some(CurrentMemberAssignmentValue {
            member_epoch: 3,
            previous_member_epoch: 2,
            state: 1,
            assigned_partitions: BTreeMap::from([(TOPIC, BTreeMap::from([(0, 3), (2, 1)]))]),
            partitions_pending_revocation: BTreeMap::new(),
        }),
    });
    let (key, value) = encode_record(&record);
    assert_eq!(key, [0, 8, 0, 1, b'g', 0, 1, b'm']);
    let mut expected = vec![0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 1];
    expected.push(2); // AssignedPartitions: one topic
    expected.extend(topic_bytes());
    expected.extend([3, 0, 0, 0, 0, 0, 0, 0, 2]); // Partitions [0, 2]
                                                  // Tagged field 0, AssignmentEpochs [3, 1]: 9 bytes.
    expected.extend([1, 0, 9, 3, 0, 0, 0, 3, 0, 0, 0, 1]);
    expected.push(1); // PartitionsPendingRevocation: empty
    expected.push(0); // no tagged fields
    assert_eq!(value.clone().unwrap(), expected);
    assert_eq!(decode_record(&key, value.as_deref()), Ok(record));
}

#[test]
fn member_metadata_and_target_bytes_by_hand() {
    let record = GroupRecord::Consumer(ConsumerRecord::MemberMetadata {
        group_id: "g".into(),
        member_id: "m".into(),
        value: Some(ConsumerMemberMetadataValue {
            instance_id: None,
            rack_id: Some("r".into()),
            client_id: "c".into(),
            client_host: "h".into(),
            subscribed_topic_names: vec!["t".into()],
            subscribed_topic_regex: None,
            rebalance_timeout_ms: 300,
            server_assignor: Some("u".into()),
            classic_member_metadata: None,
        }),
    });
    let (key, value) = encode_record(&record);
    assert_eq!(key, [0, 5, 0, 1, b'g', 0, 1, b'm']);
    assert_eq!(
        value.unwrap(),
        [
            0, 0, // version
            0, // InstanceId null
            2, b'r', // RackId
            2, b'c', // ClientId
            2, b'h', // ClientHost
            2, 2, b't', // SubscribedTopicNames ["t"]
            0,    // SubscribedTopicRegex null
            0, 0, 1, 44, // RebalanceTimeoutMs 300
            2, b'u', // ServerAssignor
            1, 0, 1, 0, // tag 0, ClassicMemberMetadata: null, written as Kafka writes it
        ]
    );

    let record = GroupRecord::Consumer(ConsumerRecord::TargetAssignmentMember {
        group_id: "g".into(),
        member_id: "m".into(),
        value: Some(BTreeMap::from([(TOPIC, BTreeSet::from([1]))])),
    });
    let (key, value) = encode_record(&record);
    assert_eq!(key, [0, 7, 0, 1, b'g', 0, 1, b'm']);
    let mut expected = vec![0, 0, 2];
    expected.extend(topic_bytes());
    expected.extend([2, 0, 0, 0, 1, 0, 0]);
    assert_eq!(value.unwrap(), expected);

    let record = GroupRecord::Consumer(ConsumerRecord::RegularExpression {
        group_id: "g".into(),
        regex: "o.*".into(),
        value: Some(RegularExpressionValue {
            topics: BTreeSet::from(["orders".to_owned()]),
            version: 7,
            timestamp_ms: 9,
        }),
    });
    let (key, value) = encode_record(&record);
    assert_eq!(key, [0, 16, 0, 1, b'g', 0, 3, b'o', b'.', b'*']);
    let mut expected = vec![0, 0, 2, 7];
    expected.extend(b"orders");
    expected.extend([0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9, 0]);
    assert_eq!(value.unwrap(), expected);
}

#[test]
fn every_consumer_record_round_trips() {
    round_trip(ConsumerRecord::GroupMetadata {
        group_id: "group".into(),
        value: Some(ConsumerGroupMetadataValue {
            epoch: 12,
            metadata_hash: -77,
        }),
    });
    round_trip(ConsumerRecord::GroupMetadata {
        group_id: "group".into(),
        value: None,
    });
    round_trip(ConsumerRecord::PartitionMetadata {
        group_id: "group".into(),
        value: Some(vec![PartitionMetadataTopic {
            topic_id: TOPIC,
            topic_name: "orders".into(),
            num_partitions: 2,
            partition_racks: vec![(0, vec!["a".into(), "b".into()]), (1, vec![])],
        }]),
    });
    round_trip(ConsumerRecord::MemberMetadata {
        group_id: "group".into(),
        member_id: "member".into(),
        value: Some(ConsumerMemberMetadataValue {
            instance_id: Some("instance".into()),
            rack_id: None,
            client_id: "client".into(),
            client_host: "/10.0.0.1".into(),
            subscribed_topic_names: vec![],
            subscribed_topic_regex: Some("or.*".into()),
            rebalance_timeout_ms: -1,
            server_assignor: None,
            classic_member_metadata: Some(ClassicMemberMetadata {
                session_timeout_ms: 10_000,
                supported_protocols: vec![],
            }),
        }),
    });
    round_trip(ConsumerRecord::TargetAssignmentMetadata {
        group_id: "group".into(),
        value: Some(TargetAssignmentMetadataValue {
            assignment_epoch: 4,
            assignment_timestamp_ms: 1_700_000_000_000,
        }),
    });
    round_trip(ConsumerRecord::TargetAssignmentMember {
        group_id: "group".into(),
        member_id: "member".into(),
        value: None,
    });
    round_trip(ConsumerRecord::CurrentMemberAssignment {
        group_id: "group".into(),
        member_id: "member".into(),
        value: Some(CurrentMemberAssignmentValue {
            member_epoch: -2,
            previous_member_epoch: 9,
            state: 2,
            assigned_partitions: BTreeMap::from([(TOPIC, BTreeMap::from([(5, 9)]))]),
            partitions_pending_revocation: BTreeMap::from([(
                Uuid::from_u128(7),
                BTreeMap::from([(1, 8), (3, 8)]),
            )]),
        }),
    });
    round_trip(ConsumerRecord::RegularExpression {
        group_id: "group".into(),
        regex: "x".into(),
        value: None,
    });
}

#[test]
fn records_kafka_wrote_before_4_4_still_load() {
    // A current assignment without AssignmentEpochs: the partitions take the member epoch.
    let mut value = vec![0, 0, 0, 0, 0, 6, 0, 0, 0, 5, 0, 2];
    value.extend(topic_bytes());
    value.extend([2, 0, 0, 0, 4, 0, 1, 0]);
    let key = [0, 8, 0, 1, b'g', 0, 1, b'm'];
    let Ok(GroupRecord::Consumer(ConsumerRecord::CurrentMemberAssignment {
        value: Some(decoded),
        ..
    })) = decode_record(&key, Some(&value))
    else {
        panic!("did not decode");
    };
    assert_eq!(
        decoded.assigned_partitions,
        BTreeMap::from([(TOPIC, BTreeMap::from([(4, 6)]))])
    );
    // Unknown tagged fields are skipped; unknown value versions and hostile lengths refused.
    let with_unknown_tag = [0, 0, 0, 0, 0, 1, 1, 9, 2, 0xaa, 0xbb];
    assert!(decode_record(&[0, 3, 0, 1, b'g'], Some(&with_unknown_tag)).is_ok());
    assert_eq!(
        decode_record(&[0, 3, 0, 1, b'g'], Some(&[0, 1, 0, 0, 0, 1, 0])),
        Err(RecordDecodeError::UnknownValueVersion {
            key_version: 3,
            value_version: 1
        })
    );
    assert_eq!(
        decode_record(
            &[0, 7, 0, 1, b'g', 0, 1, b'm'],
            Some(&[0, 0, 0xff, 0xff, 0xff, 0x0f])
        ),
        Err(RecordDecodeError::Truncated)
    );
    // Share and streams group records stay unknown.
    assert_eq!(
        decode_record(&[0, 9, 0, 1, b'g'], None),
        Err(RecordDecodeError::UnknownKeyVersion(9))
    );
}

/// Records Apache Kafka 4.4 wrote to `__consumer_offsets` for members "f1" and "f2" joining a
/// new group "fresh" subscribed to a 4-partition topic (read from its log segment): decoded and
/// written again they are the same bytes.
#[test]
fn records_are_byte_for_byte_what_kafka_4_4_writes() {
    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|index| u8::from_str_radix(&text[index..index + 2], 16).unwrap())
            .collect()
    }
    let topic = Uuid::from_slice(&hex("cfdf2de850d04680a64d43f57457ec2a")).unwrap();
    let cases = [
        // MemberMetadata of f1: no regex is "", a null ClassicMemberMetadata is tag 0 = 0.
        (
            "00050005667265736800026631",
            concat!(
                "000000000b7361736c2d636865636b0b2f3132372e302e302e31",
                "02076f726465727301000075300001000100"
            ),
        ),
        // TargetAssignmentMember of f1.
        (
            "00070005667265736800026631",
            "000002cfdf2de850d04680a64d43f57457ec2a05000000000000000100000002000000030000",
        ),
        // TargetAssignmentMetadata with its AssignmentTimestamp.
        ("000600056672657368", "000000000002010008000001a23554d721"),
        // CurrentMemberAssignment of f1 with AssignmentEpochs.
        (
            "00080005667265736800026631",
            concat!(
                "000000000002000000000002cfdf2de850d04680a64d43f57457ec2a05",
                "00000000000000010000000200000003",
                "0100110500000002000000020000000200000002",
                "0100"
            ),
        ),
        // CurrentMemberAssignment of f2, nothing assigned yet.
        ("00080005667265736800026632", "0000000000020000000000010100"),
        // The group epoch with its metadata hash.
        ("000300056672657368", "000000000003010008174949f5d34f43df"),
    ];
    for (key, value) in cases {
        let (key, value) = (hex(key), hex(value));
        let decoded = decode_record(&key, Some(&value)).unwrap();
        assert_eq!(encode_record(&decoded), (key.clone(), Some(value.clone())));
        match &decoded {
            GroupRecord::Consumer(ConsumerRecord::CurrentMemberAssignment {
                member_id,
                value: Some(current),
                ..
            }) if member_id == "f1" => {
                assert_eq!(current.member_epoch, 2);
                assert_eq!(
                    current.assigned_partitions,
                    BTreeMap::from([(topic, (0..4).map(|partition| (partition, 2)).collect())])
                );
            }
            GroupRecord::Consumer(ConsumerRecord::MemberMetadata {
                value: Some(member),
                ..
            }) => {
                assert_eq!(member.subscribed_topic_regex.as_deref(), Some(""));
                assert_eq!(member.classic_member_metadata, None);
                assert_eq!(member.rebalance_timeout_ms, 30_000);
            }
            _ => {}
        }
    }
}
