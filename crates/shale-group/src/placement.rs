//! Which `__consumer_offsets` partition coordinates a group, computed exactly as Kafka does.

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units,
/// with 32-bit wrapping arithmetic.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The `__consumer_offsets` partition of `group_id`: Kafka's `Utils.abs(hash) % n`, where
/// `Utils.abs` is the absolute value with `i32::MIN` mapped to 0 (not a sign mask: a negative
/// hash gives a different partition under the two).
/// `num_partitions` must be positive; a non-positive count yields partition 0.
pub fn partition_for(group_id: &str, num_partitions: i32) -> i32 {
    if num_partitions <= 0 {
        return 0;
    }
    kafka_abs(java_string_hash(group_id)) % num_partitions
}

/// Kafka's `Utils.abs`: `|n|`, except that `i32::MIN` (which has no positive counterpart) is 0.
pub fn kafka_abs(n: i32) -> i32 {
    if n == i32::MIN {
        0
    } else {
        n.abs()
    }
}

#[cfg(test)]
mod tests {
    use super::{java_string_hash, partition_for};

    #[test]
    fn hash_matches_java_values() {
        // Values computed by java.lang.String#hashCode.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("Hello, World!"), 1_498_789_909);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(java_string_hash("test-group"), 627_841_412);
        assert_eq!(java_string_hash("my-group"), -1_906_497_762);
        // A character outside the BMP is two UTF-16 code units (0xD83D 0xDE00).
        assert_eq!(java_string_hash("\u{1F600}"), 1_772_899);
        assert_eq!(java_string_hash("é"), 233);
    }

    #[test]
    fn partition_uses_kafka_abs() {
        // hash == i32::MIN: Utils.abs gives 0, not an overflow.
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        assert_eq!(partition_for("hello", 50), 99_162_322 % 50);
        assert_eq!(partition_for("a", 50), 47);
        assert_eq!(partition_for("anything", 1), 0);
        assert_eq!(partition_for("x", 0), 0);
        // A negative hash: its absolute value, then the remainder. Apache Kafka 4.4 places
        // "my-group" on __consumer_offsets partition 12 of 50 (FindCoordinator against it).
        assert_eq!(partition_for("my-group", 50), 1_906_497_762 % 50);
        assert_eq!(partition_for("my-group", 50), 12);
        let negative = java_string_hash("abcdefghij");
        assert!(negative < 0);
        assert_eq!(partition_for("abcdefghij", 50), negative.abs() % 50);
    }
}
