//! Records of `__consumer_offsets`, in Kafka's own key/value schemas so that Kafka's tools (and a
//! Kafka broker reading the same topic) agree on them.
//!
//! Keys start with an int16 version that names the record type: 0 and 1 are `OffsetCommitKey`,
//! 2 is `GroupMetadataKey`; 3-8 and 16 are the consumer group records of KIP-848
//! ([`consumer_records`]); 10-15 the share group records of KIP-932 ([`share_records`]); other
//! versions (streams groups, Kafka 4.0's share partition metadata) are not handled and are
//! skipped at load. Values start with their own int16 version. A null value is a tombstone.

pub mod classic_member_metadata;
mod codec;
pub mod consumer_protocol;
pub mod consumer_records;
mod consumer_values;
pub mod share_records;

pub use consumer_records::ConsumerRecord;
pub use share_records::ShareRecord;

use bytes::Bytes;
use thiserror::Error;

use codec::{Reader, Writer};

/// Key version written for offset commits (Kafka writes 1).
pub const OFFSET_COMMIT_KEY_VERSION: i16 = 1;
/// Key version of group metadata records.
pub const GROUP_METADATA_KEY_VERSION: i16 = 2;
/// Value version written for offset commits without an explicit expiry.
pub const OFFSET_COMMIT_VALUE_VERSION: i16 = 3;
/// Value version written for offset commits that carry an expire timestamp (only v1 has it).
pub const OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY: i16 = 1;
/// Value version written for group metadata (the one Kafka 4 writes).
pub const GROUP_METADATA_VALUE_VERSION: i16 = 3;

/// One record of `__consumer_offsets`. `value: None` is a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupRecord {
    OffsetCommit {
        group_id: String,
        topic: String,
        partition: i32,
        value: Option<OffsetCommitValue>,
    },
    GroupMetadata {
        group_id: String,
        value: Option<GroupMetadataValue>,
    },
    /// A consumer group (KIP-848) record.
    Consumer(ConsumerRecord),
    /// A share group (KIP-932) record.
    Share(ShareRecord),
}

impl GroupRecord {
    pub fn group_id(&self) -> &str {
        match self {
            GroupRecord::OffsetCommit { group_id, .. }
            | GroupRecord::GroupMetadata { group_id, .. } => group_id,
            GroupRecord::Consumer(record) => record.group_id(),
            GroupRecord::Share(record) => record.group_id(),
        }
    }
}

/// `OffsetCommitValue`: a committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitValue {
    pub offset: i64,
    /// -1 when unknown.
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp_ms: i64,
    /// Only in value version 1 (OffsetCommit v2-v4 `retention_time_ms`); -1 when absent.
    pub expire_timestamp_ms: i64,
}

/// `GroupMetadataValue`: a classic group's generation and members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadataValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// -1 when unknown (value versions 0 and 1).
    pub current_state_timestamp_ms: i64,
    pub members: Vec<MemberMetadataValue>,
}

/// One member inside [`GroupMetadataValue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadataValue {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// The member's metadata for the group's selected protocol.
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// Why a stored record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RecordDecodeError {
    #[error("record truncated")]
    Truncated,
    #[error("negative length")]
    NegativeLength,
    #[error("null where a value is required")]
    UnexpectedNull,
    #[error("invalid UTF-8 in a string")]
    InvalidUtf8,
    #[error("invalid varint")]
    InvalidVarint,
    /// A record type this coordinator does not know (for example KIP-848 group records).
    #[error("unknown record key version {0}")]
    UnknownKeyVersion(i16),
    #[error("unknown value version {value_version} for key version {key_version}")]
    UnknownValueVersion {
        key_version: i16,
        value_version: i16,
    },
}

/// Encodes a record into its `__consumer_offsets` key and value (None for a tombstone).
pub fn encode_record(record: &GroupRecord) -> (Vec<u8>, Option<Vec<u8>>) {
    match record {
        GroupRecord::OffsetCommit {
            group_id,
            topic,
            partition,
            value,
        } => {
            let mut key = Writer::default();
            key.i16(OFFSET_COMMIT_KEY_VERSION);
            key.string(group_id);
            key.string(topic);
            key.i32(*partition);
            (key.bytes, value.as_ref().map(encode_offset_commit_value))
        }
        GroupRecord::GroupMetadata { group_id, value } => {
            let mut key = Writer::default();
            key.i16(GROUP_METADATA_KEY_VERSION);
            key.string(group_id);
            (key.bytes, value.as_ref().map(encode_group_metadata_value))
        }
        GroupRecord::Consumer(record) => consumer_records::encode(record),
        GroupRecord::Share(record) => share_records::encode(record),
    }
}

fn encode_offset_commit_value(value: &OffsetCommitValue) -> Vec<u8> {
    let mut out = Writer::default();
    if value.expire_timestamp_ms >= 0 {
        out.i16(OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY);
        out.i64(value.offset);
        out.string(&value.metadata);
        out.i64(value.commit_timestamp_ms);
        out.i64(value.expire_timestamp_ms);
    } else {
        out.i16(OFFSET_COMMIT_VALUE_VERSION);
        out.i64(value.offset);
        out.i32(value.leader_epoch);
        out.string(&value.metadata);
        out.i64(value.commit_timestamp_ms);
    }
    out.bytes
}

fn encode_group_metadata_value(value: &GroupMetadataValue) -> Vec<u8> {
    let mut out = Writer::default();
    out.i16(GROUP_METADATA_VALUE_VERSION);
    out.string(&value.protocol_type);
    out.i32(value.generation);
    out.nullable_string(value.protocol.as_deref());
    out.nullable_string(value.leader.as_deref());
    out.i64(value.current_state_timestamp_ms);
    out.i32(i32::try_from(value.members.len()).unwrap_or(i32::MAX));
    for member in &value.members {
        out.string(&member.member_id);
        out.nullable_string(member.group_instance_id.as_deref());
        out.string(&member.client_id);
        out.string(&member.client_host);
        out.i32(member.rebalance_timeout_ms);
        out.i32(member.session_timeout_ms);
        out.bytes(&member.subscription);
        out.bytes(&member.assignment);
    }
    out.bytes
}

/// Decodes a `__consumer_offsets` record. Never panics; every length is bounded by the input.
pub fn decode_record(key: &[u8], value: Option<&[u8]>) -> Result<GroupRecord, RecordDecodeError> {
    let mut key_reader = Reader::new(key);
    let key_version = key_reader.i16()?;
    match key_version {
        0 | 1 => {
            let group_id = key_reader.string(false)?;
            let topic = key_reader.string(false)?;
            let partition = key_reader.i32()?;
            let value = value.map(decode_offset_commit_value).transpose()?;
            Ok(GroupRecord::OffsetCommit {
                group_id,
                topic,
                partition,
                value,
            })
        }
        2 => {
            let group_id = key_reader.string(false)?;
            let value = value.map(decode_group_metadata_value).transpose()?;
            Ok(GroupRecord::GroupMetadata { group_id, value })
        }
        3..=8 | 16 => Ok(GroupRecord::Consumer(consumer_records::decode(
            key_version,
            &mut key_reader,
            value,
        )?)),
        10..=15 => Ok(GroupRecord::Share(share_records::decode(
            key_version,
            &mut key_reader,
            value,
        )?)),
        other => Err(RecordDecodeError::UnknownKeyVersion(other)),
    }
}

fn decode_offset_commit_value(bytes: &[u8]) -> Result<OffsetCommitValue, RecordDecodeError> {
    let mut reader = Reader::new(bytes);
    let version = reader.i16()?;
    if !(0..=4).contains(&version) {
        return Err(RecordDecodeError::UnknownValueVersion {
            key_version: OFFSET_COMMIT_KEY_VERSION,
            value_version: version,
        });
    }
    let compact = version >= 4;
    let offset = reader.i64()?;
    let leader_epoch = if version >= 3 { reader.i32()? } else { -1 };
    let metadata = reader.string(compact)?;
    let commit_timestamp_ms = reader.i64()?;
    let expire_timestamp_ms = if version == 1 { reader.i64()? } else { -1 };
    if compact {
        reader.skip_tagged_fields()?;
    }
    Ok(OffsetCommitValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp_ms,
        expire_timestamp_ms,
    })
}

fn decode_group_metadata_value(bytes: &[u8]) -> Result<GroupMetadataValue, RecordDecodeError> {
    let mut reader = Reader::new(bytes);
    let version = reader.i16()?;
    if !(0..=4).contains(&version) {
        return Err(RecordDecodeError::UnknownValueVersion {
            key_version: GROUP_METADATA_KEY_VERSION,
            value_version: version,
        });
    }
    let compact = version >= 4;
    let protocol_type = reader.string(compact)?;
    let generation = reader.i32()?;
    let protocol = reader.nullable_string(compact)?;
    let leader = reader.nullable_string(compact)?;
    let current_state_timestamp_ms = if version >= 2 { reader.i64()? } else { -1 };
    // A member takes at least 2+2+2+4+4+4 bytes (empty strings and bytes, v0).
    let member_count = reader.array_length(compact, 18)?;
    let mut members = Vec::with_capacity(member_count);
    for _ in 0..member_count {
        let member_id = reader.string(compact)?;
        let group_instance_id = if version >= 3 {
            reader.nullable_string(compact)?
        } else {
            None
        };
        let client_id = reader.string(compact)?;
        let client_host = reader.string(compact)?;
        let session_or_rebalance = reader.i32()?;
        let (rebalance_timeout_ms, session_timeout_ms) = if version >= 1 {
            (session_or_rebalance, reader.i32()?)
        } else {
            (session_or_rebalance, session_or_rebalance)
        };
        let subscription = reader.bytes(compact)?;
        let assignment = reader.bytes(compact)?;
        if compact {
            reader.skip_tagged_fields()?;
        }
        members.push(MemberMetadataValue {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            subscription,
            assignment,
        });
    }
    if compact {
        reader.skip_tagged_fields()?;
    }
    Ok(GroupMetadataValue {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp_ms,
        members,
    })
}

#[cfg(test)]
mod consumer_tests;
#[cfg(test)]
mod share_tests;
#[cfg(test)]
mod tests;
