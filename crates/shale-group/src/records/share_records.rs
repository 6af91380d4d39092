//! The share group records of `__consumer_offsets` (KIP-932), in Kafka 4.4's schemas: keys are
//! the non-flexible version 0 of `ShareGroup*Key` behind the record type (10 to 15); values are
//! the flexible version 0 of `ShareGroup*Value`. Kafka 4.0's `ShareGroupPartitionMetadata`
//! (type 9) is gone from 4.4 and is skipped at load like any unknown type.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::codec::{CompactWriter, Reader, Writer};
use super::RecordDecodeError;
use crate::assignor::MemberAssignment;

pub const SHARE_GROUP_MEMBER_METADATA_KEY: i16 = 10;
pub const SHARE_GROUP_METADATA_KEY: i16 = 11;
pub const SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: i16 = 12;
pub const SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: i16 = 13;
pub const SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: i16 = 14;
pub const SHARE_GROUP_STATE_PARTITION_METADATA_KEY: i16 = 15;

/// The only value version of every share group record.
const VALUE_VERSION: i16 = 0;

/// A share group record; `value: None` is a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareRecord {
    GroupMetadata {
        group_id: String,
        value: Option<ShareGroupMetadataValue>,
    },
    MemberMetadata {
        group_id: String,
        member_id: String,
        value: Option<ShareMemberMetadataValue>,
    },
    TargetAssignmentMetadata {
        group_id: String,
        value: Option<ShareTargetAssignmentMetadataValue>,
    },
    TargetAssignmentMember {
        group_id: String,
        member_id: String,
        value: Option<MemberAssignment>,
    },
    CurrentMemberAssignment {
        group_id: String,
        member_id: String,
        value: Option<ShareCurrentAssignmentValue>,
    },
    StatePartitionMetadata {
        group_id: String,
        value: Option<ShareStatePartitionMetadataValue>,
    },
}

impl ShareRecord {
    pub fn group_id(&self) -> &str {
        match self {
            ShareRecord::GroupMetadata { group_id, .. }
            | ShareRecord::MemberMetadata { group_id, .. }
            | ShareRecord::TargetAssignmentMetadata { group_id, .. }
            | ShareRecord::TargetAssignmentMember { group_id, .. }
            | ShareRecord::CurrentMemberAssignment { group_id, .. }
            | ShareRecord::StatePartitionMetadata { group_id, .. } => group_id,
        }
    }
}

/// `ShareGroupMetadataValue`: the group epoch and the hash of its subscribed topics (a plain
/// field here, unlike the consumer group's tagged one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareGroupMetadataValue {
    pub epoch: i32,
    pub metadata_hash: i64,
}

/// `ShareGroupMemberMetadataValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareMemberMetadataValue {
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
}

/// `ShareGroupTargetAssignmentMetadataValue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareTargetAssignmentMetadataValue {
    pub assignment_epoch: i32,
    /// Tagged field 0 (4.3+, KIP-1263); 0 when absent.
    pub assignment_timestamp_ms: i64,
}

/// `ShareGroupCurrentMemberAssignmentValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareCurrentAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Kafka's MemberState byte; share members are always STABLE (0).
    pub state: i8,
    pub assigned_partitions: MemberAssignment,
}

/// One topic of `ShareGroupStatePartitionMetadataValue`'s initializing or initialized lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareStateTopic {
    pub topic_name: String,
    pub partitions: BTreeSet<i32>,
}

/// `ShareGroupStatePartitionMetadataValue`: the topic-partitions whose share-partition state
/// is being initialized, is initialized, or is being deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareStatePartitionMetadataValue {
    pub initializing_topics: BTreeMap<Uuid, ShareStateTopic>,
    pub initialized_topics: BTreeMap<Uuid, ShareStateTopic>,
    /// Topic id -> topic name.
    pub deleting_topics: BTreeMap<Uuid, String>,
}

pub(super) fn encode(record: &ShareRecord) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut key = Writer::default();
    let value = match record {
        ShareRecord::GroupMetadata { group_id, value } => {
            key.i16(SHARE_GROUP_METADATA_KEY);
            key.string(group_id);
            value.as_ref().map(encode_group_metadata)
        }
        ShareRecord::MemberMetadata {
            group_id,
            member_id,
            value,
        } => {
            key.i16(SHARE_GROUP_MEMBER_METADATA_KEY);
            key.string(group_id);
            key.string(member_id);
            value.as_ref().map(encode_member_metadata)
        }
        ShareRecord::TargetAssignmentMetadata { group_id, value } => {
            key.i16(SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY);
            key.string(group_id);
            value.as_ref().map(encode_target_metadata)
        }
        ShareRecord::TargetAssignmentMember {
            group_id,
            member_id,
            value,
        } => {
            key.i16(SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY);
            key.string(group_id);
            key.string(member_id);
            value.as_ref().map(|assignment| {
                let mut out = value_writer();
                encode_topic_partitions(&mut out, assignment);
                out.tagged_fields(&[]);
                out.bytes
            })
        }
        ShareRecord::CurrentMemberAssignment {
            group_id,
            member_id,
            value,
        } => {
            key.i16(SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY);
            key.string(group_id);
            key.string(member_id);
            value.as_ref().map(encode_current_assignment)
        }
        ShareRecord::StatePartitionMetadata { group_id, value } => {
            key.i16(SHARE_GROUP_STATE_PARTITION_METADATA_KEY);
            key.string(group_id);
            value.as_ref().map(encode_state_metadata)
        }
    };
    (key.bytes, value)
}

/// Decodes the key fields after the record type, and the value.
pub(super) fn decode(
    key_version: i16,
    key: &mut Reader<'_>,
    value: Option<&[u8]>,
) -> Result<ShareRecord, RecordDecodeError> {
    let group_id = key.string(false)?;
    Ok(match key_version {
        SHARE_GROUP_METADATA_KEY => ShareRecord::GroupMetadata {
            group_id,
            value: value.map(decode_group_metadata).transpose()?,
        },
        SHARE_GROUP_MEMBER_METADATA_KEY => ShareRecord::MemberMetadata {
            group_id,
            member_id: key.string(false)?,
            value: value.map(decode_member_metadata).transpose()?,
        },
        SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY => ShareRecord::TargetAssignmentMetadata {
            group_id,
            value: value.map(decode_target_metadata).transpose()?,
        },
        SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY => ShareRecord::TargetAssignmentMember {
            group_id,
            member_id: key.string(false)?,
            value: value.map(decode_target_member).transpose()?,
        },
        SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY => ShareRecord::CurrentMemberAssignment {
            group_id,
            member_id: key.string(false)?,
            value: value.map(decode_current_assignment).transpose()?,
        },
        SHARE_GROUP_STATE_PARTITION_METADATA_KEY => ShareRecord::StatePartitionMetadata {
            group_id,
            value: value.map(decode_state_metadata).transpose()?,
        },
        other => return Err(RecordDecodeError::UnknownKeyVersion(other)),
    })
}

fn value_reader(bytes: &[u8], key_version: i16) -> Result<Reader<'_>, RecordDecodeError> {
    let mut reader = Reader::new(bytes);
    let version = reader.i16()?;
    if version != VALUE_VERSION {
        return Err(RecordDecodeError::UnknownValueVersion {
            key_version,
            value_version: version,
        });
    }
    Ok(reader)
}

fn value_writer() -> CompactWriter {
    let mut out = CompactWriter::default();
    out.i16(VALUE_VERSION);
    out
}

fn encode_group_metadata(value: &ShareGroupMetadataValue) -> Vec<u8> {
    let mut out = value_writer();
    out.i32(value.epoch);
    out.i64(value.metadata_hash);
    out.tagged_fields(&[]);
    out.bytes
}

fn decode_group_metadata(bytes: &[u8]) -> Result<ShareGroupMetadataValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, SHARE_GROUP_METADATA_KEY)?;
    let epoch = reader.i32()?;
    let metadata_hash = reader.i64()?;
    reader.skip_tagged_fields()?;
    Ok(ShareGroupMetadataValue {
        epoch,
        metadata_hash,
    })
}

fn encode_member_metadata(value: &ShareMemberMetadataValue) -> Vec<u8> {
    let mut out = value_writer();
    out.nullable_string(value.rack_id.as_deref());
    out.string(&value.client_id);
    out.string(&value.client_host);
    out.length(value.subscribed_topic_names.len());
    for name in &value.subscribed_topic_names {
        out.string(name);
    }
    out.tagged_fields(&[]);
    out.bytes
}

fn decode_member_metadata(bytes: &[u8]) -> Result<ShareMemberMetadataValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, SHARE_GROUP_MEMBER_METADATA_KEY)?;
    let rack_id = reader.nullable_string(true)?;
    let client_id = reader.string(true)?;
    let client_host = reader.string(true)?;
    let count = reader.array_length(true, 1)?;
    let mut subscribed_topic_names = Vec::with_capacity(count);
    for _ in 0..count {
        subscribed_topic_names.push(reader.string(true)?);
    }
    reader.skip_tagged_fields()?;
    Ok(ShareMemberMetadataValue {
        rack_id,
        client_id,
        client_host,
        subscribed_topic_names,
    })
}

fn encode_target_metadata(value: &ShareTargetAssignmentMetadataValue) -> Vec<u8> {
    let mut out = value_writer();
    out.i32(value.assignment_epoch);
    if value.assignment_timestamp_ms == 0 {
        // A tagged field equal to its default is not written.
        out.tagged_fields(&[]);
    } else {
        out.tagged_fields(&[(0, value.assignment_timestamp_ms.to_be_bytes().to_vec())]);
    }
    out.bytes
}

fn decode_target_metadata(
    bytes: &[u8],
) -> Result<ShareTargetAssignmentMetadataValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY)?;
    let assignment_epoch = reader.i32()?;
    let mut assignment_timestamp_ms = 0;
    reader.tagged_fields(|tag, field| {
        if tag == 0 {
            assignment_timestamp_ms = Reader::new(field).i64()?;
        }
        Ok(())
    })?;
    Ok(ShareTargetAssignmentMetadataValue {
        assignment_epoch,
        assignment_timestamp_ms,
    })
}

fn decode_target_member(bytes: &[u8]) -> Result<MemberAssignment, RecordDecodeError> {
    let mut reader = value_reader(bytes, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY)?;
    let assignment = decode_topic_partitions(&mut reader)?;
    reader.skip_tagged_fields()?;
    Ok(assignment)
}

fn encode_current_assignment(value: &ShareCurrentAssignmentValue) -> Vec<u8> {
    let mut out = value_writer();
    out.i32(value.member_epoch);
    out.i32(value.previous_member_epoch);
    out.i8(value.state);
    encode_topic_partitions(&mut out, &value.assigned_partitions);
    out.tagged_fields(&[]);
    out.bytes
}

fn decode_current_assignment(
    bytes: &[u8],
) -> Result<ShareCurrentAssignmentValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY)?;
    let member_epoch = reader.i32()?;
    let previous_member_epoch = reader.i32()?;
    let state = reader.i8()?;
    let assigned_partitions = decode_topic_partitions(&mut reader)?;
    reader.skip_tagged_fields()?;
    Ok(ShareCurrentAssignmentValue {
        member_epoch,
        previous_member_epoch,
        state,
        assigned_partitions,
    })
}

fn encode_state_metadata(value: &ShareStatePartitionMetadataValue) -> Vec<u8> {
    let mut out = value_writer();
    for topics in [&value.initializing_topics, &value.initialized_topics] {
        out.length(topics.len());
        for (topic_id, topic) in topics {
            out.uuid(topic_id);
            out.string(&topic.topic_name);
            encode_partitions(&mut out, &topic.partitions);
            out.tagged_fields(&[]);
        }
    }
    out.length(value.deleting_topics.len());
    for (topic_id, topic_name) in &value.deleting_topics {
        out.uuid(topic_id);
        out.string(topic_name);
        out.tagged_fields(&[]);
    }
    out.tagged_fields(&[]);
    out.bytes
}

fn decode_state_metadata(
    bytes: &[u8],
) -> Result<ShareStatePartitionMetadataValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, SHARE_GROUP_STATE_PARTITION_METADATA_KEY)?;
    let initializing_topics = decode_state_topics(&mut reader)?;
    let initialized_topics = decode_state_topics(&mut reader)?;
    // A topic takes at least a uuid, an empty name and its tagged fields.
    let count = reader.array_length(true, 18)?;
    let mut deleting_topics = BTreeMap::new();
    for _ in 0..count {
        let topic_id = reader.uuid()?;
        let topic_name = reader.string(true)?;
        reader.skip_tagged_fields()?;
        deleting_topics.insert(topic_id, topic_name);
    }
    reader.skip_tagged_fields()?;
    Ok(ShareStatePartitionMetadataValue {
        initializing_topics,
        initialized_topics,
        deleting_topics,
    })
}

fn decode_state_topics(
    reader: &mut Reader<'_>,
) -> Result<BTreeMap<Uuid, ShareStateTopic>, RecordDecodeError> {
    // A topic takes at least a uuid, an empty name, an empty array and its tagged fields.
    let count = reader.array_length(true, 19)?;
    let mut topics = BTreeMap::new();
    for _ in 0..count {
        let topic_id = reader.uuid()?;
        let topic_name = reader.string(true)?;
        let partitions = decode_partitions(reader)?;
        reader.skip_tagged_fields()?;
        let entry = topics.entry(topic_id).or_insert_with(|| ShareStateTopic {
            topic_name: topic_name.clone(),
            partitions: BTreeSet::new(),
        });
        entry.partitions.extend(partitions);
    }
    Ok(topics)
}

fn encode_topic_partitions(out: &mut CompactWriter, assignment: &MemberAssignment) {
    out.length(assignment.len());
    for (topic_id, partitions) in assignment {
        out.uuid(topic_id);
        encode_partitions(out, partitions);
        out.tagged_fields(&[]);
    }
}

fn decode_topic_partitions(reader: &mut Reader<'_>) -> Result<MemberAssignment, RecordDecodeError> {
    // A topic takes at least a uuid, an empty array and its tagged fields.
    let count = reader.array_length(true, 18)?;
    let mut assignment = MemberAssignment::new();
    for _ in 0..count {
        let topic_id = reader.uuid()?;
        let partitions = decode_partitions(reader)?;
        reader.skip_tagged_fields()?;
        assignment.entry(topic_id).or_default().extend(partitions);
    }
    Ok(assignment)
}

fn encode_partitions(out: &mut CompactWriter, partitions: &BTreeSet<i32>) {
    out.length(partitions.len());
    for partition in partitions {
        out.i32(*partition);
    }
}

fn decode_partitions(reader: &mut Reader<'_>) -> Result<BTreeSet<i32>, RecordDecodeError> {
    let count = reader.array_length(true, 4)?;
    let mut partitions = BTreeSet::new();
    for _ in 0..count {
        partitions.insert(reader.i32()?);
    }
    Ok(partitions)
}
