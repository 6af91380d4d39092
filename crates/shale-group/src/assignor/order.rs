//! The orders Kafka's assignors sort by, reproduced exactly.
//!
//! Kafka's `Uuid.compareTo` compares the two halves as signed 64-bit numbers, so a topic id whose
//! first bit is set sorts before one whose first bit is clear; `uuid::Uuid`'s own order compares
//! bytes unsigned. Java's `String.compareTo` compares UTF-16 code units, which differs from Rust's
//! byte order for characters above U+FFFF. Where an assignor sorts explicitly these decide ties,
//! so they must be Kafka's.

use std::cmp::Ordering;

use uuid::Uuid;

/// Kafka's `Uuid.compareTo`: most significant half first, both as signed longs.
pub(crate) fn kafka_uuid_cmp(left: &Uuid, right: &Uuid) -> Ordering {
    let (left_msb, left_lsb) = halves(left);
    let (right_msb, right_lsb) = halves(right);
    left_msb.cmp(&right_msb).then(left_lsb.cmp(&right_lsb))
}

fn halves(id: &Uuid) -> (i64, i64) {
    let (msb, lsb) = id.as_u64_pair();
    // Reinterpreting the bits, as Java's long holds them.
    (
        i64::from_ne_bytes(msb.to_ne_bytes()),
        i64::from_ne_bytes(lsb.to_ne_bytes()),
    )
}

/// Java's `String.compareTo`: lexicographic over UTF-16 code units.
pub(crate) fn java_string_cmp(left: &str, right: &str) -> Ordering {
    left.encode_utf16().cmp(right.encode_utf16())
}

/// The ids in Kafka's `Uuid` order.
pub(crate) fn in_kafka_order<'a>(ids: impl IntoIterator<Item = &'a Uuid>) -> Vec<Uuid> {
    let mut sorted: Vec<Uuid> = ids.into_iter().copied().collect();
    sorted.sort_by(kafka_uuid_cmp);
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_uuid_order_is_signed() {
        let high_bit = Uuid::from_u64_pair(0x8000_0000_0000_0000, 0);
        let low = Uuid::from_u64_pair(1, 0);
        assert_eq!(kafka_uuid_cmp(&high_bit, &low), Ordering::Less);
        assert_eq!(high_bit.cmp(&low), Ordering::Greater);
        let a = Uuid::from_u64_pair(1, u64::MAX);
        let b = Uuid::from_u64_pair(1, 1);
        assert_eq!(kafka_uuid_cmp(&a, &b), Ordering::Less);
        assert_eq!(in_kafka_order([&low, &high_bit]), vec![high_bit, low]);
    }

    #[test]
    fn java_string_order_is_utf16() {
        // U+FF61 is one code unit 0xFF61; U+1F600 is the surrogate pair 0xD83D 0xDE00.
        assert_eq!(java_string_cmp("\u{1F600}", "\u{FF61}"), Ordering::Less);
        assert_eq!("\u{1F600}".cmp("\u{FF61}"), Ordering::Greater);
        assert_eq!(java_string_cmp("a", "b"), Ordering::Less);
        assert_eq!(java_string_cmp("ab", "a"), Ordering::Greater);
    }
}
