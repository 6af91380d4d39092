//! The values of the consumer group records: version 0, flexible (compact strings and arrays,
//! tagged fields), as Kafka 4.4's `ConsumerGroup*Value` schemas.

use std::collections::BTreeSet;

use super::classic_member_metadata::ClassicMemberMetadata;
use super::codec::{CompactWriter, Reader};
use super::consumer_records::*;
use super::RecordDecodeError;
use crate::assignor::MemberAssignment;

/// The only value version of every consumer group record.
const VALUE_VERSION: i16 = 0;

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

fn tagged_i64(tag: u32, value: i64) -> Vec<(u32, Vec<u8>)> {
    if value == 0 {
        // Tagged fields equal to their default are not written.
        return Vec::new();
    }
    vec![(tag, value.to_be_bytes().to_vec())]
}

fn read_tagged_i64(reader: &mut Reader<'_>, tag: u32) -> Result<i64, RecordDecodeError> {
    let mut value = 0;
    reader.tagged_fields(|field, bytes| {
        if field == tag {
            value = Reader::new(bytes).i64()?;
        }
        Ok(())
    })?;
    Ok(value)
}

pub(super) fn encode_group_metadata(value: &ConsumerGroupMetadataValue) -> Vec<u8> {
    let mut out = value_writer();
    out.i32(value.epoch);
    out.tagged_fields(&tagged_i64(0, value.metadata_hash));
    out.bytes
}

pub(super) fn decode_group_metadata(
    bytes: &[u8],
) -> Result<ConsumerGroupMetadataValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, CONSUMER_GROUP_METADATA_KEY)?;
    let epoch = reader.i32()?;
    let metadata_hash = read_tagged_i64(&mut reader, 0)?;
    Ok(ConsumerGroupMetadataValue {
        epoch,
        metadata_hash,
    })
}

pub(super) fn encode_partition_metadata(topics: &[PartitionMetadataTopic]) -> Vec<u8> {
    let mut out = value_writer();
    out.length(topics.len());
    for topic in topics {
        out.uuid(&topic.topic_id);
        out.string(&topic.topic_name);
        out.i32(topic.num_partitions);
        out.length(topic.partition_racks.len());
        for (partition, racks) in &topic.partition_racks {
            out.i32(*partition);
            out.length(racks.len());
            for rack in racks {
                out.string(rack);
            }
            out.tagged_fields(&[]);
        }
        out.tagged_fields(&[]);
    }
    out.tagged_fields(&[]);
    out.bytes
}

pub(super) fn decode_partition_metadata(
    bytes: &[u8],
) -> Result<Vec<PartitionMetadataTopic>, RecordDecodeError> {
    let mut reader = value_reader(bytes, CONSUMER_GROUP_PARTITION_METADATA_KEY)?;
    // A topic takes at least 16 + 1 + 4 + 1 + 1 bytes.
    let count = reader.array_length(true, 23)?;
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        let topic_id = reader.uuid()?;
        let topic_name = reader.string(true)?;
        let num_partitions = reader.i32()?;
        let partition_count = reader.array_length(true, 6)?;
        let mut partition_racks = Vec::with_capacity(partition_count);
        for _ in 0..partition_count {
            let partition = reader.i32()?;
            let rack_count = reader.array_length(true, 1)?;
            let mut racks = Vec::with_capacity(rack_count);
            for _ in 0..rack_count {
                racks.push(reader.string(true)?);
            }
            reader.skip_tagged_fields()?;
            partition_racks.push((partition, racks));
        }
        reader.skip_tagged_fields()?;
        topics.push(PartitionMetadataTopic {
            topic_id,
            topic_name,
            num_partitions,
            partition_racks,
        });
    }
    reader.skip_tagged_fields()?;
    Ok(topics)
}

pub(super) fn encode_member_metadata(value: &ConsumerMemberMetadataValue) -> Vec<u8> {
    let mut out = value_writer();
    out.nullable_string(value.instance_id.as_deref());
    out.nullable_string(value.rack_id.as_deref());
    out.string(&value.client_id);
    out.string(&value.client_host);
    out.length(value.subscribed_topic_names.len());
    for topic in &value.subscribed_topic_names {
        out.string(topic);
    }
    out.nullable_string(value.subscribed_topic_regex.as_deref());
    out.i32(value.rebalance_timeout_ms);
    out.nullable_string(value.server_assignor.as_deref());
    // Kafka's generated writer always writes tag 0: a null ClassicMemberMetadata is the
    // single byte 0 (the nullable struct's null marker).
    let classic = value
        .classic_member_metadata
        .as_ref()
        .map_or_else(|| vec![0], ClassicMemberMetadata::encode);
    out.tagged_fields(&[(0, classic)]);
    out.bytes
}

pub(super) fn decode_member_metadata(
    bytes: &[u8],
) -> Result<ConsumerMemberMetadataValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, CONSUMER_GROUP_MEMBER_METADATA_KEY)?;
    let instance_id = reader.nullable_string(true)?;
    let rack_id = reader.nullable_string(true)?;
    let client_id = reader.string(true)?;
    let client_host = reader.string(true)?;
    let topic_count = reader.array_length(true, 1)?;
    let mut subscribed_topic_names = Vec::with_capacity(topic_count);
    for _ in 0..topic_count {
        subscribed_topic_names.push(reader.string(true)?);
    }
    let subscribed_topic_regex = reader.nullable_string(true)?;
    let rebalance_timeout_ms = reader.i32()?;
    let server_assignor = reader.nullable_string(true)?;
    let mut classic_member_metadata = None;
    reader.tagged_fields(|tag, bytes| {
        if tag == 0 {
            classic_member_metadata = ClassicMemberMetadata::decode(bytes)?;
        }
        Ok(())
    })?;
    Ok(ConsumerMemberMetadataValue {
        instance_id,
        rack_id,
        client_id,
        client_host,
        subscribed_topic_names,
        subscribed_topic_regex,
        rebalance_timeout_ms,
        server_assignor,
        classic_member_metadata,
    })
}

pub(super) fn encode_target_metadata(value: &TargetAssignmentMetadataValue) -> Vec<u8> {
    let mut out = value_writer();
    out.i32(value.assignment_epoch);
    out.tagged_fields(&tagged_i64(0, value.assignment_timestamp_ms));
    out.bytes
}

pub(super) fn decode_target_metadata(
    bytes: &[u8],
) -> Result<TargetAssignmentMetadataValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY)?;
    let assignment_epoch = reader.i32()?;
    let assignment_timestamp_ms = read_tagged_i64(&mut reader, 0)?;
    Ok(TargetAssignmentMetadataValue {
        assignment_epoch,
        assignment_timestamp_ms,
    })
}

pub(super) fn encode_target_member(assignment: &MemberAssignment) -> Vec<u8> {
    let mut out = value_writer();
    out.length(assignment.len());
    for (topic_id, partitions) in assignment {
        out.uuid(topic_id);
        out.length(partitions.len());
        for partition in partitions {
            out.i32(*partition);
        }
        out.tagged_fields(&[]);
    }
    out.tagged_fields(&[]);
    out.bytes
}

pub(super) fn decode_target_member(bytes: &[u8]) -> Result<MemberAssignment, RecordDecodeError> {
    let mut reader = value_reader(bytes, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY)?;
    let count = reader.array_length(true, 18)?;
    let mut assignment = MemberAssignment::new();
    for _ in 0..count {
        let topic_id = reader.uuid()?;
        let partitions = read_partitions(&mut reader)?;
        reader.skip_tagged_fields()?;
        assignment.entry(topic_id).or_default().extend(partitions);
    }
    reader.skip_tagged_fields()?;
    Ok(assignment)
}

fn read_partitions(reader: &mut Reader<'_>) -> Result<Vec<i32>, RecordDecodeError> {
    let count = reader.array_length(true, 4)?;
    let mut partitions = Vec::with_capacity(count);
    for _ in 0..count {
        partitions.push(reader.i32()?);
    }
    Ok(partitions)
}

fn encode_partition_epochs(out: &mut CompactWriter, partitions: &PartitionEpochs) {
    out.length(partitions.len());
    for (topic_id, epochs) in partitions {
        out.uuid(topic_id);
        out.length(epochs.len());
        for partition in epochs.keys() {
            out.i32(*partition);
        }
        // Tagged field 0, AssignmentEpochs: one epoch per partition, in the same order.
        let mut field = CompactWriter::default();
        field.length(epochs.len());
        for epoch in epochs.values() {
            field.i32(*epoch);
        }
        out.tagged_fields(&[(0, field.bytes)]);
    }
}

/// `default_epoch` stands for the assignment epochs of records written before Kafka 4.4.
fn decode_partition_epochs(
    reader: &mut Reader<'_>,
    default_epoch: i32,
) -> Result<PartitionEpochs, RecordDecodeError> {
    let count = reader.array_length(true, 18)?;
    let mut result = PartitionEpochs::new();
    for _ in 0..count {
        let topic_id = reader.uuid()?;
        let partitions = read_partitions(reader)?;
        let mut epochs: Option<Vec<i32>> = None;
        reader.tagged_fields(|tag, bytes| {
            if tag == 0 {
                let mut field = Reader::new(bytes);
                let length = i64::from(field.unsigned_varint()?) - 1;
                if length >= 0 {
                    let mut values = Vec::new();
                    for _ in 0..length {
                        values.push(field.i32()?);
                    }
                    epochs = Some(values);
                }
            }
            Ok(())
        })?;
        let entry = result.entry(topic_id).or_default();
        for (index, partition) in partitions.into_iter().enumerate() {
            let epoch = epochs
                .as_ref()
                .and_then(|epochs| epochs.get(index).copied())
                .unwrap_or(default_epoch);
            entry.insert(partition, epoch);
        }
    }
    Ok(result)
}

pub(super) fn encode_current_assignment(value: &CurrentMemberAssignmentValue) -> Vec<u8> {
    let mut out = value_writer();
    out.i32(value.member_epoch);
    out.i32(value.previous_member_epoch);
    out.i8(value.state);
    encode_partition_epochs(&mut out, &value.assigned_partitions);
    encode_partition_epochs(&mut out, &value.partitions_pending_revocation);
    out.tagged_fields(&[]);
    out.bytes
}

pub(super) fn decode_current_assignment(
    bytes: &[u8],
) -> Result<CurrentMemberAssignmentValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY)?;
    let member_epoch = reader.i32()?;
    let previous_member_epoch = reader.i32()?;
    let state = reader.i8()?;
    let assigned_partitions = decode_partition_epochs(&mut reader, member_epoch)?;
    let partitions_pending_revocation = decode_partition_epochs(&mut reader, member_epoch)?;
    reader.skip_tagged_fields()?;
    Ok(CurrentMemberAssignmentValue {
        member_epoch,
        previous_member_epoch,
        state,
        assigned_partitions,
        partitions_pending_revocation,
    })
}

pub(super) fn encode_regular_expression(value: &RegularExpressionValue) -> Vec<u8> {
    let mut out = value_writer();
    out.length(value.topics.len());
    for topic in &value.topics {
        out.string(topic);
    }
    out.i64(value.version);
    out.i64(value.timestamp_ms);
    out.tagged_fields(&[]);
    out.bytes
}

pub(super) fn decode_regular_expression(
    bytes: &[u8],
) -> Result<RegularExpressionValue, RecordDecodeError> {
    let mut reader = value_reader(bytes, CONSUMER_GROUP_REGULAR_EXPRESSION_KEY)?;
    let count = reader.array_length(true, 1)?;
    let mut topics = BTreeSet::new();
    for _ in 0..count {
        topics.insert(reader.string(true)?);
    }
    let version = reader.i64()?;
    let timestamp_ms = reader.i64()?;
    reader.skip_tagged_fields()?;
    Ok(RegularExpressionValue {
        topics,
        version,
        timestamp_ms,
    })
}
