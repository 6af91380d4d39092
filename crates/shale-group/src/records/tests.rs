use bytes::Bytes;

use super::*;

fn offset_record(expire_timestamp_ms: i64) -> GroupRecord {
    GroupRecord::OffsetCommit {
        group_id: "group-a".into(),
        topic: "topic-1".into(),
        partition: 7,
        value: Some(OffsetCommitValue {
            offset: 12_345,
            leader_epoch: if expire_timestamp_ms >= 0 { -1 } else { 4 },
            metadata: "meta".into(),
            commit_timestamp_ms: 1_700_000_000_000,
            expire_timestamp_ms,
        }),
    }
}

fn group_record() -> GroupRecord {
    GroupRecord::GroupMetadata {
        group_id: "group-a".into(),
        value: Some(GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 3,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp_ms: 1_700_000_000_001,
            members: vec![
                MemberMetadataValue {
                    member_id: "m1".into(),
                    group_instance_id: Some("instance-1".into()),
                    client_id: "client".into(),
                    client_host: "/127.0.0.1".into(),
                    rebalance_timeout_ms: 300_000,
                    session_timeout_ms: 45_000,
                    subscription: Bytes::from_static(&[0, 0, 0, 0, 0, 0]),
                    assignment: Bytes::from_static(&[1, 2, 3]),
                },
                MemberMetadataValue {
                    member_id: "m2".into(),
                    group_instance_id: None,
                    client_id: "client".into(),
                    client_host: "/127.0.0.2".into(),
                    rebalance_timeout_ms: 60_000,
                    session_timeout_ms: 10_000,
                    subscription: Bytes::new(),
                    assignment: Bytes::new(),
                },
            ],
        }),
    }
}

fn round_trip(record: &GroupRecord) {
    let (key, value) = encode_record(record);
    let decoded = decode_record(&key, value.as_deref()).unwrap();
    assert_eq!(&decoded, record);
}

#[test]
fn records_round_trip() {
    round_trip(&offset_record(-1));
    round_trip(&offset_record(1_700_000_100_000));
    round_trip(&group_record());
    round_trip(&GroupRecord::GroupMetadata {
        group_id: "g".into(),
        value: None,
    });
    round_trip(&GroupRecord::OffsetCommit {
        group_id: "g".into(),
        topic: "t".into(),
        partition: 0,
        value: None,
    });
}

#[test]
fn offset_commit_bytes_match_kafka_layout() {
    let (key, value) = encode_record(&offset_record(-1));
    let mut expected_key = vec![0, 1, 0, 7];
    expected_key.extend_from_slice(b"group-a");
    expected_key.extend_from_slice(&[0, 7]);
    expected_key.extend_from_slice(b"topic-1");
    expected_key.extend_from_slice(&[0, 0, 0, 7]);
    assert_eq!(key, expected_key);
    let value = value.unwrap();
    // version 3, offset, leader epoch, metadata, commit timestamp
    assert_eq!(&value[..2], &[0, 3]);
    assert_eq!(&value[2..10], &12_345i64.to_be_bytes());
    assert_eq!(&value[10..14], &4i32.to_be_bytes());
    assert_eq!(&value[14..20], &[0, 4, b'm', b'e', b't', b'a']);
    assert_eq!(&value[20..], &1_700_000_000_000i64.to_be_bytes());
}

#[test]
fn group_metadata_key_layout() {
    let (key, _) = encode_record(&group_record());
    let mut expected = vec![0, 2, 0, 7];
    expected.extend_from_slice(b"group-a");
    assert_eq!(key, expected);
}

#[test]
fn decodes_older_and_flexible_versions() {
    // OffsetCommitValue v0: offset, metadata, commit timestamp.
    let mut v0 = vec![0, 0];
    v0.extend_from_slice(&5i64.to_be_bytes());
    v0.extend_from_slice(&[0, 1, b'x']);
    v0.extend_from_slice(&9i64.to_be_bytes());
    let key = encode_record(&offset_record(-1)).0;
    let GroupRecord::OffsetCommit { value, .. } = decode_record(&key, Some(&v0)).unwrap() else {
        panic!("wrong record type");
    };
    let value = value.unwrap();
    assert_eq!(
        (value.offset, value.leader_epoch, value.metadata.as_str()),
        (5, -1, "x")
    );

    // OffsetCommitValue v4 (flexible): compact string and an empty tagged-field section.
    let mut v4 = vec![0, 4];
    v4.extend_from_slice(&6i64.to_be_bytes());
    v4.extend_from_slice(&2i32.to_be_bytes());
    v4.extend_from_slice(&[3, b'a', b'b']);
    v4.extend_from_slice(&11i64.to_be_bytes());
    v4.push(0);
    let GroupRecord::OffsetCommit { value, .. } = decode_record(&key, Some(&v4)).unwrap() else {
        panic!("wrong record type");
    };
    let value = value.unwrap();
    assert_eq!(
        (value.offset, value.leader_epoch, value.metadata.as_str()),
        (6, 2, "ab")
    );
    assert_eq!(value.commit_timestamp_ms, 11);

    // GroupMetadataValue v0 with no members.
    let mut g0 = vec![0, 0, 0, 8];
    g0.extend_from_slice(b"consumer");
    g0.extend_from_slice(&1i32.to_be_bytes());
    g0.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    g0.extend_from_slice(&0i32.to_be_bytes());
    let gkey = encode_record(&group_record()).0;
    let GroupRecord::GroupMetadata { value, .. } = decode_record(&gkey, Some(&g0)).unwrap() else {
        panic!("wrong record type");
    };
    let value = value.unwrap();
    assert_eq!(value.generation, 1);
    assert_eq!(value.protocol, None);
    assert!(value.members.is_empty());
    assert_eq!(value.current_state_timestamp_ms, -1);
}

#[test]
fn hostile_bytes_are_rejected_without_panicking() {
    let (key, value) = encode_record(&group_record());
    let value = value.unwrap();
    // Every truncation of key and value fails cleanly.
    for cut in 0..key.len() {
        assert!(decode_record(&key[..cut], Some(&value)).is_err());
    }
    for cut in 0..value.len() {
        assert!(
            decode_record(&key, Some(&value[..cut])).is_err(),
            "cut {cut}"
        );
    }
    // Huge array and string lengths.
    let mut huge_members = value[..value.len()].to_vec();
    let members_at = 2 + 2 + 8 + 4 + 2 + 5 + 2 + 2 + 8;
    huge_members[members_at..members_at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(decode_record(&key, Some(&huge_members)).is_err());
    assert_eq!(
        decode_record(&[0, 2, 0x7f, 0xff], None),
        Err(RecordDecodeError::Truncated)
    );
    assert_eq!(
        decode_record(&[0, 2, 0x80, 0x00], None),
        Err(RecordDecodeError::NegativeLength)
    );
    assert_eq!(
        decode_record(&[0, 2, 0, 2, 0xff, 0xfe], None),
        Err(RecordDecodeError::InvalidUtf8)
    );
    assert_eq!(
        decode_record(&[0, 9, 0, 0], None),
        Err(RecordDecodeError::UnknownKeyVersion(9))
    );
    assert!(matches!(
        decode_record(&key, Some(&[0, 9])),
        Err(RecordDecodeError::UnknownValueVersion { .. })
    ));
    // A flexible value with an overlong varint.
    assert!(decode_record(&key, Some(&[0, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])).is_err());
    // Deterministic pseudo-random garbage never panics.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        let length = (state % 64) as usize;
        let mut bytes = Vec::with_capacity(length);
        for _ in 0..length {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.push((state & 0xff) as u8);
        }
        let mut garbage_key = vec![0, (state % 3) as u8];
        garbage_key.extend_from_slice(&bytes);
        let _ = decode_record(&garbage_key, Some(&bytes));
        let mut garbage_value = vec![0, (state % 5) as u8];
        garbage_value.extend_from_slice(&bytes);
        let _ = decode_record(&key, Some(&garbage_value));
    }
}
