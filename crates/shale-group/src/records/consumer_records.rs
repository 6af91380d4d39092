//! The consumer group records of `__consumer_offsets` (KIP-848), in Kafka 4.4's schemas:
//! keys are the non-flexible version 0 of `ConsumerGroup*Key` behind the record type (3, 4, 5, 6,
//! 7, 8, 16); values are the flexible version 0 of `ConsumerGroup*Value` (compact strings and
//! arrays, tagged fields).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::codec::{Reader, Writer};
use super::consumer_values::*;
use super::RecordDecodeError;
use crate::assignor::MemberAssignment;

pub const CONSUMER_GROUP_METADATA_KEY: i16 = 3;
/// Written by Kafka before 4.1; 4.1+ writes the metadata hash in the group's metadata instead
/// (KIP-1101) and only a tombstone of this record when a group is deleted.
pub const CONSUMER_GROUP_PARTITION_METADATA_KEY: i16 = 4;
pub const CONSUMER_GROUP_MEMBER_METADATA_KEY: i16 = 5;
pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: i16 = 6;
pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: i16 = 7;
pub const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: i16 = 8;
pub const CONSUMER_GROUP_REGULAR_EXPRESSION_KEY: i16 = 16;

/// Partitions by topic id, each with the member epoch at which it was assigned.
pub type PartitionEpochs = BTreeMap<Uuid, BTreeMap<i32, i32>>;

/// A consumer group record; `value: None` is a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerRecord {
    GroupMetadata {
        group_id: String,
        value: Option<ConsumerGroupMetadataValue>,
    },
    PartitionMetadata {
        group_id: String,
        value: Option<Vec<PartitionMetadataTopic>>,
    },
    MemberMetadata {
        group_id: String,
        member_id: String,
        value: Option<ConsumerMemberMetadataValue>,
    },
    TargetAssignmentMetadata {
        group_id: String,
        value: Option<TargetAssignmentMetadataValue>,
    },
    TargetAssignmentMember {
        group_id: String,
        member_id: String,
        value: Option<MemberAssignment>,
    },
    CurrentMemberAssignment {
        group_id: String,
        member_id: String,
        value: Option<CurrentMemberAssignmentValue>,
    },
    RegularExpression {
        group_id: String,
        regex: String,
        value: Option<RegularExpressionValue>,
    },
}

impl ConsumerRecord {
    pub fn group_id(&self) -> &str {
        match self {
            ConsumerRecord::GroupMetadata { group_id, .. }
            | ConsumerRecord::PartitionMetadata { group_id, .. }
            | ConsumerRecord::MemberMetadata { group_id, .. }
            | ConsumerRecord::TargetAssignmentMetadata { group_id, .. }
            | ConsumerRecord::TargetAssignmentMember { group_id, .. }
            | ConsumerRecord::CurrentMemberAssignment { group_id, .. }
            | ConsumerRecord::RegularExpression { group_id, .. } => group_id,
        }
    }
}

/// `ConsumerGroupMetadataValue`: the group epoch and (4.1+) the hash of its subscribed topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerGroupMetadataValue {
    pub epoch: i32,
    /// Tagged field 0; 0 when absent.
    pub metadata_hash: i64,
}

/// One topic of the pre-4.1 `ConsumerGroupPartitionMetadataValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadataTopic {
    pub topic_id: Uuid,
    pub topic_name: String,
    pub num_partitions: i32,
    /// Deprecated racks by partition, kept so that the record round-trips.
    pub partition_racks: Vec<(i32, Vec<String>)>,
}

/// `ConsumerGroupMemberMetadataValue`: a member's subscription and client details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMemberMetadataValue {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    /// Tagged field 0 (`ClassicMemberMetadata`): only members that joined with the classic
    /// protocol (or were converted from a classic group) have it.
    pub classic_member_metadata: Option<super::classic_member_metadata::ClassicMemberMetadata>,
}

/// `ConsumerGroupTargetAssignmentMetadataValue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetAssignmentMetadataValue {
    pub assignment_epoch: i32,
    /// Tagged field 0 (4.3+, KIP-1263); 0 when absent.
    pub assignment_timestamp_ms: i64,
}

/// `ConsumerGroupCurrentMemberAssignmentValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentMemberAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Kafka's MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS.
    pub state: i8,
    pub assigned_partitions: PartitionEpochs,
    pub partitions_pending_revocation: PartitionEpochs,
}

/// `ConsumerGroupRegularExpressionValue`: the topics a regular expression resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegularExpressionValue {
    pub topics: BTreeSet<String>,
    /// The version of the topics image it was resolved against.
    pub version: i64,
    pub timestamp_ms: i64,
}

pub(super) fn encode(record: &ConsumerRecord) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut key = Writer::default();
    let value = match record {
        ConsumerRecord::GroupMetadata { group_id, value } => {
            key.i16(CONSUMER_GROUP_METADATA_KEY);
            key.string(group_id);
            value.as_ref().map(encode_group_metadata)
        }
        ConsumerRecord::PartitionMetadata { group_id, value } => {
            key.i16(CONSUMER_GROUP_PARTITION_METADATA_KEY);
            key.string(group_id);
            value.as_deref().map(encode_partition_metadata)
        }
        ConsumerRecord::MemberMetadata {
            group_id,
            member_id,
            value,
        } => {
            key.i16(CONSUMER_GROUP_MEMBER_METADATA_KEY);
            key.string(group_id);
            key.string(member_id);
            value.as_ref().map(encode_member_metadata)
        }
        ConsumerRecord::TargetAssignmentMetadata { group_id, value } => {
            key.i16(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY);
            key.string(group_id);
            value.as_ref().map(encode_target_metadata)
        }
        ConsumerRecord::TargetAssignmentMember {
            group_id,
            member_id,
            value,
        } => {
            key.i16(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY);
            key.string(group_id);
            key.string(member_id);
            value.as_ref().map(encode_target_member)
        }
        ConsumerRecord::CurrentMemberAssignment {
            group_id,
            member_id,
            value,
        } => {
            key.i16(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY);
            key.string(group_id);
            key.string(member_id);
            value.as_ref().map(encode_current_assignment)
        }
        ConsumerRecord::RegularExpression {
            group_id,
            regex,
            value,
        } => {
            key.i16(CONSUMER_GROUP_REGULAR_EXPRESSION_KEY);
            key.string(group_id);
            key.string(regex);
            value.as_ref().map(encode_regular_expression)
        }
    };
    (key.bytes, value)
}

/// Decodes the key fields after the record type, and the value.
pub(super) fn decode(
    key_version: i16,
    key: &mut Reader<'_>,
    value: Option<&[u8]>,
) -> Result<ConsumerRecord, RecordDecodeError> {
    let group_id = key.string(false)?;
    Ok(match key_version {
        CONSUMER_GROUP_METADATA_KEY => ConsumerRecord::GroupMetadata {
            group_id,
            value: value.map(decode_group_metadata).transpose()?,
        },
        CONSUMER_GROUP_PARTITION_METADATA_KEY => ConsumerRecord::PartitionMetadata {
            group_id,
            value: value.map(decode_partition_metadata).transpose()?,
        },
        CONSUMER_GROUP_MEMBER_METADATA_KEY => ConsumerRecord::MemberMetadata {
            group_id,
            member_id: key.string(false)?,
            value: value.map(decode_member_metadata).transpose()?,
        },
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY => ConsumerRecord::TargetAssignmentMetadata {
            group_id,
            value: value.map(decode_target_metadata).transpose()?,
        },
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY => ConsumerRecord::TargetAssignmentMember {
            group_id,
            member_id: key.string(false)?,
            value: value.map(decode_target_member).transpose()?,
        },
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY => ConsumerRecord::CurrentMemberAssignment {
            group_id,
            member_id: key.string(false)?,
            value: value.map(decode_current_assignment).transpose()?,
        },
        CONSUMER_GROUP_REGULAR_EXPRESSION_KEY => ConsumerRecord::RegularExpression {
            group_id,
            regex: key.string(false)?,
            value: value.map(decode_regular_expression).transpose()?,
        },
        other => return Err(RecordDecodeError::UnknownKeyVersion(other)),
    })
}
