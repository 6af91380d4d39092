//! The embedded consumer protocol (protocol type "consumer"): only what the coordinator needs.
//! `ConsumerProtocolSubscription` (versions 0-3, never flexible): topics, user data, then owned
//! partitions (v1+), generation (v2+) and rack (v3+); `ConsumerProtocolAssignment` (versions
//! 0-3, one layout): assigned partitions and user data. A version above 3 is read as 3, as
//! Kafka's ConsumerProtocol reads a newer client's bytes.

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

/// Topic names with partitions, as the embedded protocol lists them.
pub type TopicPartitionList = Vec<(String, Vec<i32>)>;

/// What the coordinator reads of a `ConsumerProtocolSubscription`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerSubscription {
    pub topics: Vec<String>,
    pub owned_partitions: TopicPartitionList,
    pub rack_id: Option<String>,
}

/// The version a subscription or assignment starts with (Kafka's `deserializeVersion`).
pub fn protocol_version(bytes: &[u8]) -> Result<i16, RecordDecodeError> {
    let version = Reader::new(bytes).i16()?;
    if version < 0 {
        return Err(RecordDecodeError::UnknownValueVersion {
            key_version: -1,
            value_version: version,
        });
    }
    Ok(version)
}

fn topic_partitions(reader: &mut Reader<'_>) -> Result<TopicPartitionList, RecordDecodeError> {
    // A topic is at least its name length and its partition count.
    let count = reader.array_length(false, 6)?;
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        let topic = reader.string(false)?;
        let partition_count = reader.array_length(false, 4)?;
        let mut partitions = Vec::with_capacity(partition_count);
        for _ in 0..partition_count {
            partitions.push(reader.i32()?);
        }
        topics.push((topic, partitions));
    }
    Ok(topics)
}

/// A whole `ConsumerProtocolSubscription` (Kafka's `deserializeConsumerProtocolSubscription`).
pub fn decode_subscription(bytes: &[u8]) -> Result<ConsumerSubscription, RecordDecodeError> {
    let version = protocol_version(bytes)?;
    let mut reader = Reader::new(bytes);
    reader.i16()?;
    let count = reader.array_length(false, 2)?;
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        topics.push(reader.string(false)?);
    }
    let _user_data = reader.bytes(false)?;
    let mut subscription = ConsumerSubscription {
        topics,
        ..ConsumerSubscription::default()
    };
    if version >= 1 {
        subscription.owned_partitions = topic_partitions(&mut reader)?;
    }
    if version >= 2 {
        let _generation_id = reader.i32()?;
    }
    if version >= 3 {
        subscription.rack_id = reader.nullable_string(false)?;
    }
    Ok(subscription)
}

/// What the coordinator reads of a `ConsumerProtocolAssignment`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerAssignment {
    pub partitions: TopicPartitionList,
    /// Set by a custom assignor; the consumer protocol's server assignors cannot keep it.
    pub has_user_data: bool,
}

pub fn decode_assignment(bytes: &[u8]) -> Result<ConsumerAssignment, RecordDecodeError> {
    protocol_version(bytes)?;
    let mut reader = Reader::new(bytes);
    reader.i16()?;
    let partitions = topic_partitions(&mut reader)?;
    let user_data = reader.bytes(false)?;
    Ok(ConsumerAssignment {
        partitions,
        has_user_data: !user_data.is_empty(),
    })
}

/// A `ConsumerProtocolAssignment` without user data, at `version` (capped at 3, Kafka's latest).
pub fn encode_assignment(partitions: &[(String, Vec<i32>)], version: i16) -> Vec<u8> {
    let mut out = Writer::default();
    out.i16(version.clamp(0, 3));
    write_topic_partitions(&mut out, partitions);
    out.i32(-1);
    out.bytes
}

fn write_topic_partitions(out: &mut Writer, partitions: &[(String, Vec<i32>)]) {
    out.i32(i32::try_from(partitions.len()).unwrap_or(i32::MAX));
    for (topic, indexes) in partitions {
        out.string(topic);
        out.i32(i32::try_from(indexes.len()).unwrap_or(i32::MAX));
        for index in indexes {
            out.i32(*index);
        }
    }
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

/// A version-1 subscription with owned partitions (tests and tools).
pub fn encode_subscription_v1(topics: &[&str], owned: &[(String, Vec<i32>)]) -> Vec<u8> {
    let mut out = Writer::default();
    out.i16(1);
    out.i32(i32::try_from(topics.len()).unwrap_or(i32::MAX));
    for topic in topics {
        out.string(topic);
    }
    out.i32(-1);
    write_topic_partitions(&mut out, owned);
    out.bytes
}

#[cfg(test)]
mod tests {
    use super::{
        decode_assignment, decode_subscription, decode_subscription_topics, encode_assignment,
        encode_subscription, encode_subscription_v1, protocol_version,
    };

    #[test]
    fn full_subscription_and_assignment() {
        let owned = vec![("a".to_string(), vec![0, 2])];
        let bytes = encode_subscription_v1(&["a", "b"], &owned);
        let subscription = decode_subscription(&bytes).unwrap();
        assert_eq!(subscription.topics, vec!["a", "b"]);
        assert_eq!(subscription.owned_partitions, owned);
        assert_eq!(subscription.rack_id, None);
        let v0 = decode_subscription(&encode_subscription(&["c"])).unwrap();
        assert!(v0.owned_partitions.is_empty());
        let assignment = encode_assignment(&owned, 3);
        assert_eq!(protocol_version(&assignment).unwrap(), 3);
        assert_eq!(protocol_version(&encode_assignment(&owned, 9)).unwrap(), 3);
        let decoded = decode_assignment(&assignment).unwrap();
        assert_eq!(decoded.partitions, owned);
        assert!(!decoded.has_user_data);
        assert!(decode_assignment(&[0, 0, 0x7f, 0xff, 0xff, 0xff]).is_err());
        assert!(protocol_version(&[0xff, 0xff]).is_err());
    }

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
