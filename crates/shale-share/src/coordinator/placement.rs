//! Which `__share_group_state` partition holds a share-partition's state, as Kafka's
//! ShareCoordinatorService.partitionFor picks it: `Utils.abs(key.hashCode()) % partitions`
//! over the coordinator key `groupId:topicId:partition`, the topic id in Kafka's base64 form.
//! FindCoordinator with key type SHARE sends the same key.

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use uuid::Uuid;

use crate::state::SharePartitionKey;

/// Java's `Base64.getUrlEncoder().withoutPadding()`, and its `getUrlDecoder()` for text
/// without padding: the unused bits of the last character are ignored.
const KAFKA_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// Java's `getUrlDecoder()` for text with padding, which must then be complete.
const KAFKA_BASE64_PADDED: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// Kafka's `Uuid.fromString` refuses anything longer before decoding.
const KAFKA_UUID_STRING_LEN_MAX: usize = 24;

/// Kafka's `Uuid.toString()`: the 16 bytes, most significant first, in url-safe base64
/// without padding (22 characters).
pub fn kafka_uuid_string(id: &Uuid) -> String {
    KAFKA_BASE64.encode(id.as_bytes())
}

/// Kafka's `Uuid.fromString`: None where Kafka throws.
pub fn parse_kafka_uuid(text: &str) -> Option<Uuid> {
    if text.len() > KAFKA_UUID_STRING_LEN_MAX {
        return None;
    }
    let engine = if text.contains('=') {
        &KAFKA_BASE64_PADDED
    } else {
        &KAFKA_BASE64
    };
    let bytes = engine.decode(text).ok()?;
    let bytes: [u8; 16] = bytes.try_into().ok()?;
    Some(Uuid::from_bytes(bytes))
}

/// The coordinator key of a share-partition (`SharePartitionKey.asCoordinatorKey`).
pub fn coordinator_key(key: &SharePartitionKey) -> String {
    key.coordinator_key(&kafka_uuid_string(&key.topic_id))
}

/// `SharePartitionKey.getInstance(String)` of Kafka 4.4: None where it throws. The partition
/// and the topic id are the last two pieces, so a group id may hold colons; Java's
/// `split(":")` drops trailing empty pieces, so `g:t:0:` parses as `g:t:0`. The group id is
/// kept as it is, but must not be blank.
pub fn parse_coordinator_key(text: &str) -> Option<SharePartitionKey> {
    let mut pieces: Vec<&str> = text.split(':').collect();
    while pieces.last().is_some_and(|piece| piece.is_empty()) {
        pieces.pop();
    }
    let [group_pieces @ .., topic_id, partition] = pieces.as_slice() else {
        return None;
    };
    let group_id = group_pieces.join(":");
    if group_pieces.is_empty() || group_id.trim_matches(|c: char| c <= ' ').is_empty() {
        return None;
    }
    Some(SharePartitionKey {
        group_id,
        topic_id: parse_kafka_uuid(topic_id)?,
        partition: parse_java_int(partition)?,
    })
}

/// Java's `Integer.parseInt` for ASCII input: an optional sign, then decimal digits.
fn parse_java_int(text: &str) -> Option<i32> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Java's `String.hashCode()`: `h = 31 * h + c` over the UTF-16 code units, wrapping.
pub fn java_string_hash(text: &str) -> i32 {
    text.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// Kafka's `Utils.abs`: the absolute value, with i32::MIN mapped to 0 instead of itself.
pub fn kafka_abs(n: i32) -> i32 {
    if n == i32::MIN {
        0
    } else {
        n.abs()
    }
}

/// The `__share_group_state` partition for a share-partition. `num_partitions` comes from
/// the topic (at least 1); 0 gives partition 0 rather than Java's division by zero.
pub fn partition_for(key: &SharePartitionKey, num_partitions: i32) -> i32 {
    kafka_abs(java_string_hash(&coordinator_key(key)))
        .checked_rem(num_partitions)
        .unwrap_or(0)
}
