//! The embedded consumer protocol (protocol type "consumer"): only what the coordinator needs,
//! the topics a member subscribes to (`ConsumerProtocolSubscription`, versions 0-3, never
//! flexible: version, then `topics` as an int32-counted array of int16-length strings).

use std::collections::BTreeSet;

use super::codec::{Reader, Writer};
use super::RecordDecodeError;

/// The protocol type of Kafka consumers.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// The topics of a `ConsumerProtocolSubscription`.
pub fn decode_subscription_topics(bytes: &[u8]) -> Result<BTreeSet<String>, RecordDecodeError> {
    let mut reader = Reader::new(bytes);
    let version = reader.i16()?;
    if version < 0 {
        return Err(RecordDecodeError::UnknownValueVersion {
            key_version: -1,
            value_version: version,
        });
    }
    let count = reader.array_length(false, 2)?;
    let mut topics = BTreeSet::new();
    for _ in 0..count {
        topics.insert(reader.string(false)?);
    }
    Ok(topics)
}

/// A version-0 `ConsumerProtocolSubscription` with no user data (used by tests and tools).
pub fn encode_subscription(topics: &[&str]) -> Vec<u8> {
    let mut out = Writer::default();
    out.i16(0);
    out.i32(i32::try_from(topics.len()).unwrap_or(i32::MAX));
    for topic in topics {
        out.string(topic);
    }
    out.i32(-1);
    out.bytes
}

#[cfg(test)]
mod tests {
    use super::{decode_subscription_topics, encode_subscription};

    #[test]
    fn round_trip_and_hostile_input() {
        let bytes = encode_subscription(&["b", "a"]);
        let topics = decode_subscription_topics(&bytes).unwrap();
        assert_eq!(topics.into_iter().collect::<Vec<_>>(), vec!["a", "b"]);
        assert!(decode_subscription_topics(&[]).is_err());
        assert!(decode_subscription_topics(&[0, 0, 0x7f, 0xff, 0xff, 0xff]).is_err());
        assert!(decode_subscription_topics(&[0, 0, 0, 0, 0, 1, 0, 5, b'a']).is_err());
    }
}
