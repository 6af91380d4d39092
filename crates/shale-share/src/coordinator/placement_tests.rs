//! Expected values computed with java.lang.String#hashCode, java.util.Base64's url encoder
//! and Kafka's Utils.abs formula, run on a JVM.

use uuid::Uuid;

use super::*;
use crate::state::SharePartitionKey;

const ID_COUNTING: Uuid = Uuid::from_u128(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
const ID_ONES: Uuid = Uuid::from_u128(u128::MAX);
const ID_MIXED: Uuid = Uuid::from_u128(0x0000_0000_0000_00ff_1000_0000_0000_0001);

fn key(group_id: &str, topic_id: Uuid, partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: group_id.to_string(),
        topic_id,
        partition,
    }
}

#[test]
fn topic_ids_print_as_kafka_prints_them() {
    assert_eq!(kafka_uuid_string(&Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(kafka_uuid_string(&ID_COUNTING), "ASNFZ4mrze_-3LqYdlQyEA");
    assert_eq!(kafka_uuid_string(&ID_ONES), "_____________________w");
    assert_eq!(kafka_uuid_string(&ID_MIXED), "AAAAAAAAAP8QAAAAAAAAAQ");
}

#[test]
fn topic_ids_parse_as_kafka_parses_them() {
    for id in [Uuid::nil(), ID_COUNTING, ID_ONES, ID_MIXED] {
        assert_eq!(parse_kafka_uuid(&kafka_uuid_string(&id)), Some(id));
    }
    // Java's url decoder takes padding as well, and ignores the last character's spare bits.
    assert_eq!(
        parse_kafka_uuid("ASNFZ4mrze_-3LqYdlQyEA=="),
        Some(ID_COUNTING)
    );
    assert_eq!(parse_kafka_uuid("_____________________x"), Some(ID_ONES));
    // ...but padding, once there, must be complete.
    assert_eq!(parse_kafka_uuid("ASNFZ4mrze_-3LqYdlQyEA="), None);
    // Standard base64's alphabet, a short id, an over-long text and an empty one are refused.
    assert_eq!(parse_kafka_uuid("ASNFZ4mrze/+3LqYdlQyEA"), None);
    assert_eq!(parse_kafka_uuid("AAAAAAAAAAAAAAAAAAAA"), None);
    assert_eq!(parse_kafka_uuid("AAAAAAAAAAAAAAAAAAAAAAAAA"), None);
    assert_eq!(parse_kafka_uuid(""), None);
}

#[test]
fn java_hash_and_kafka_abs() {
    assert_eq!(java_string_hash(""), 0);
    assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    assert_eq!(kafka_abs(i32::MIN), 0);
    assert_eq!(kafka_abs(-5), 5);
    assert_eq!(kafka_abs(5), 5);
    assert_eq!(
        java_string_hash("share-group-émoji-😀:AAAAAAAAAAAAAAAAAAAAAA:0"),
        439_803_534
    );
}

#[test]
fn partitions_match_kafkas_choice() {
    let cases = [
        (key("group1", Uuid::nil(), 0), 1_506_701_694, 44, 1),
        (key("group1", Uuid::nil(), 7), 1_506_701_701, 1, 1),
        (key("g", Uuid::nil(), 0), -92_982_199, 49, 2),
        (key("g", Uuid::nil(), 7), -92_982_192, 42, 2),
        (
            key("share-group-émoji-😀", Uuid::nil(), 7),
            439_803_541,
            41,
            2,
        ),
        (key("group1", ID_COUNTING, 0), -1_593_041_139, 39, 4),
        (key("g", ID_COUNTING, 7), 1_102_242_271, 21, 4),
        (
            key("share-group-émoji-😀", ID_COUNTING, 7),
            1_635_028_004,
            4,
            1,
        ),
        (key("group1", ID_ONES, 0), -570_485_546, 46, 1),
        (key("g", ID_ONES, 0), 2_124_797_857, 7, 0),
        (
            key("share-group-émoji-😀", ID_ONES, 0),
            -1_637_383_706,
            6,
            0,
        ),
        (key("group1", ID_MIXED, 0), -1_794_230_058, 8, 5),
        (key("g", ID_MIXED, 7), 901_053_352, 2, 3),
        (
            key("share-group-émoji-😀", ID_MIXED, 0),
            1_433_839_078,
            28,
            0,
        ),
    ];
    for (key, hash, of_50, of_7) in cases {
        assert_eq!(java_string_hash(&coordinator_key(&key)), hash, "{key:?}");
        assert_eq!(partition_for(&key, 50), of_50, "{key:?}");
        assert_eq!(partition_for(&key, 7), of_7, "{key:?}");
        assert_eq!(partition_for(&key, 1), 0, "{key:?}");
    }
}

#[test]
fn no_partitions_picks_partition_zero() {
    assert_eq!(partition_for(&key("g", ID_ONES, 0), 0), 0);
}

#[test]
fn coordinator_keys_round_trip() {
    let original = key("group1", ID_COUNTING, 3);
    let text = coordinator_key(&original);
    assert_eq!(text, "group1:ASNFZ4mrze_-3LqYdlQyEA:3");
    assert_eq!(parse_coordinator_key(&text), Some(original));
}

#[test]
fn coordinator_keys_parse_as_kafka_parses_them() {
    let counting = |group_id: &str, partition| key(group_id, ID_COUNTING, partition);
    // Answers of Kafka 4.4's SharePartitionKey.getInstance(String).
    let accepted = [
        ("group1:ASNFZ4mrze_-3LqYdlQyEA:3::", counting("group1", 3)),
        (
            " group1\t:ASNFZ4mrze_-3LqYdlQyEA:3",
            counting(" group1\t", 3),
        ),
        ("group1:ASNFZ4mrze_-3LqYdlQyEA:+3", counting("group1", 3)),
        ("group1:ASNFZ4mrze_-3LqYdlQyEA:-3", counting("group1", -3)),
        ("a::b:ASNFZ4mrze_-3LqYdlQyEA:1", counting("a::b", 1)),
        ("group1:ASNFZ4mrze_-3LqYdlQyEA==:3", counting("group1", 3)),
        ("group1:_____________________x:1", key("group1", ID_ONES, 1)),
    ];
    for (text, expected) in accepted {
        assert_eq!(parse_coordinator_key(text), Some(expected), "{text:?}");
    }
    for refused in [
        "",
        "group1",
        "group1:ASNFZ4mrze_-3LqYdlQyEA",
        ":ASNFZ4mrze_-3LqYdlQyEA:3",
        "group1:ASNFZ4mrze_-3LqYdlQyEA:3:4",
        "  :ASNFZ4mrze_-3LqYdlQyEA:3",
        "group1::3",
        "group1:ASNFZ4mrze_-3LqYdlQyEA: 3",
        "group1:ASNFZ4mrze_-3LqYdlQyEA:2147483648",
        "group1:ASNFZ4mrze_-3LqYdlQyEA:+",
        "group1:ASNFZ4mrze_-3LqYdlQyEA=:3",
    ] {
        assert_eq!(parse_coordinator_key(refused), None, "{refused:?}");
    }
}

#[test]
fn group_ids_with_colons_round_trip() {
    let original = key("team:a", ID_MIXED, 12);
    assert_eq!(
        parse_coordinator_key(&coordinator_key(&original)),
        Some(original)
    );
}
