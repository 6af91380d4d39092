//! The records of `__share_group_state`, byte for byte as Kafka's share coordinator writes
//! them (ShareSnapshotKey/Value and ShareUpdateKey/Value, version 0).
//!
//! Key: i16 record type (0 snapshot, 1 update), then the key struct (non-flexible): group id
//! as an i16-length string, topic id as 16 bytes, partition as i32. Value: i16 version (0),
//! then the flexible struct: its fields, the state batches as a compact array whose elements
//! end with an empty tagged-field section, then the struct's tagged fields, where
//! DeliveryCompleteCount (tag 0, KIP-1226) appears only when it differs from its default -1.
//! A tombstone is a snapshot key with a null value.

use bytes::{BufMut, Bytes, BytesMut};

use super::wire::{put_compact_array_len, put_string, put_uuid, put_uvarint, Reader};
use crate::state::{DeliveryState, SharePartitionKey, StateBatch};

/// `DeliveryCompleteCount` when it is not known (its schema default).
pub const UNKNOWN_DELIVERY_COMPLETE_COUNT: i32 = -1;

/// The one value version Kafka 4.4 defines for both record types.
const VALUE_VERSION: i16 = 0;
const DELIVERY_COMPLETE_COUNT_TAG: u32 = 0;
/// FirstOffset, LastOffset, DeliveryState, DeliveryCount and the element's tag count.
const STATE_BATCH_BYTES: usize = 8 + 8 + 1 + 2 + 1;

/// The record type, the i16 that leads every key (Kafka's CoordinatorRecordType).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    Snapshot,
    Update,
}

impl RecordKind {
    pub fn id(self) -> i16 {
        match self {
            RecordKind::Snapshot => 0,
            RecordKind::Update => 1,
        }
    }

    pub fn from_id(id: i16) -> Option<RecordKind> {
        match id {
            0 => Some(RecordKind::Snapshot),
            1 => Some(RecordKind::Update),
            _ => None,
        }
    }
}

/// A share-partition's full state (Kafka's ShareSnapshotValue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSnapshotValue {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub create_timestamp_ms: i64,
    pub write_timestamp_ms: i64,
    pub state_batches: Vec<StateBatch>,
}

/// A change on top of the last snapshot (Kafka's ShareUpdateValue). `start_offset` and
/// `leader_epoch` -1 mean unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareUpdateValue {
    pub snapshot_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub state_batches: Vec<StateBatch>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareRecord {
    Snapshot {
        key: SharePartitionKey,
        value: ShareSnapshotValue,
    },
    Update {
        key: SharePartitionKey,
        value: ShareUpdateValue,
    },
    /// A null value: the share-partition's state is gone. Kafka writes it with a snapshot
    /// key only.
    Tombstone {
        key: SharePartitionKey,
        kind: RecordKind,
    },
}

impl ShareRecord {
    pub fn key(&self) -> &SharePartitionKey {
        match self {
            ShareRecord::Snapshot { key, .. }
            | ShareRecord::Update { key, .. }
            | ShareRecord::Tombstone { key, .. } => key,
        }
    }

    pub fn kind(&self) -> RecordKind {
        match self {
            ShareRecord::Snapshot { .. } => RecordKind::Snapshot,
            ShareRecord::Update { .. } => RecordKind::Update,
            ShareRecord::Tombstone { kind, .. } => *kind,
        }
    }

    /// Kafka's ShareCoordinatorRecordHelpers.newShareStateTombstoneRecord.
    pub fn tombstone(key: SharePartitionKey) -> ShareRecord {
        ShareRecord::Tombstone {
            key,
            kind: RecordKind::Snapshot,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareRecordError {
    /// A record type this version does not know: Kafka's loader logs and skips it ("It could
    /// be a left over from an aborted upgrade").
    #[error("Found an unknown record type {0}")]
    UnknownRecordType(i16),
    #[error("Unknown value version {version} for record type {record_type}")]
    UnknownValueVersion { record_type: i16, version: i16 },
    #[error("the {buffer}'s buffer ends before the record does")]
    Truncated { buffer: &'static str },
    #[error("non-nullable field {field} was serialized as null")]
    NullField { field: &'static str },
    #[error("field {field} is not valid UTF-8")]
    InvalidUtf8 { field: &'static str },
    #[error("a varint in the {buffer}'s buffer is longer than five bytes")]
    VarintTooLong { buffer: &'static str },
    #[error(
        "Tried to allocate a collection of size {count} for {field}, but there are only \
         {remaining} bytes remaining."
    )]
    ArrayTooLong {
        field: &'static str,
        count: usize,
        remaining: usize,
    },
    #[error("tagged field {tag} has {size} bytes, expected {expected}")]
    TaggedFieldSize {
        tag: u32,
        size: usize,
        expected: usize,
    },
    /// A delivery state Kafka never persists (1, acquired) or does not define.
    #[error("delivery state {0} is not one a share-partition persists")]
    InvalidDeliveryState(i8),
}

impl ShareRecordError {
    /// True for the one error a loader skips instead of failing the load, as Kafka's
    /// CoordinatorLoaderImpl skips an UnknownRecordTypeException.
    pub fn is_unknown_kind(&self) -> bool {
        matches!(self, ShareRecordError::UnknownRecordType(_))
    }
}

/// The record's key and value bytes as Kafka writes them; the value is None for a tombstone.
pub fn encode_record(record: &ShareRecord) -> (Bytes, Option<Bytes>) {
    let key = encode_key(record.kind(), record.key());
    let value = match record {
        ShareRecord::Snapshot { value, .. } => Some(encode_snapshot_value(value)),
        ShareRecord::Update { value, .. } => Some(encode_update_value(value)),
        ShareRecord::Tombstone { .. } => None,
    };
    (key, value)
}

pub fn decode_record(key: &[u8], value: Option<&[u8]>) -> Result<ShareRecord, ShareRecordError> {
    let mut reader = Reader::new(key, "key");
    let record_type = reader.i16()?;
    let kind =
        RecordKind::from_id(record_type).ok_or(ShareRecordError::UnknownRecordType(record_type))?;
    let key = SharePartitionKey {
        group_id: reader.string("groupId")?,
        topic_id: reader.uuid()?,
        partition: reader.i32()?,
    };
    let Some(value) = value else {
        return Ok(ShareRecord::Tombstone { key, kind });
    };
    let mut reader = Reader::new(value, "value");
    let version = reader.i16()?;
    if version != VALUE_VERSION {
        return Err(ShareRecordError::UnknownValueVersion {
            record_type,
            version,
        });
    }
    Ok(match kind {
        RecordKind::Snapshot => ShareRecord::Snapshot {
            key,
            value: decode_snapshot_value(&mut reader)?,
        },
        RecordKind::Update => ShareRecord::Update {
            key,
            value: decode_update_value(&mut reader)?,
        },
    })
}

fn encode_key(kind: RecordKind, key: &SharePartitionKey) -> Bytes {
    let mut out = BytesMut::with_capacity(2 + 2 + key.group_id.len() + 16 + 4);
    out.put_i16(kind.id());
    put_string(&mut out, &key.group_id);
    put_uuid(&mut out, &key.topic_id);
    out.put_i32(key.partition);
    out.freeze()
}

fn encode_snapshot_value(value: &ShareSnapshotValue) -> Bytes {
    let mut out = BytesMut::with_capacity(48 + value.state_batches.len() * STATE_BATCH_BYTES);
    out.put_i16(VALUE_VERSION);
    out.put_i32(value.snapshot_epoch);
    out.put_i32(value.state_epoch);
    out.put_i32(value.leader_epoch);
    out.put_i64(value.start_offset);
    out.put_i64(value.create_timestamp_ms);
    out.put_i64(value.write_timestamp_ms);
    put_state_batches(&mut out, &value.state_batches);
    put_delivery_complete_count(&mut out, value.delivery_complete_count);
    out.freeze()
}

fn encode_update_value(value: &ShareUpdateValue) -> Bytes {
    let mut out = BytesMut::with_capacity(24 + value.state_batches.len() * STATE_BATCH_BYTES);
    out.put_i16(VALUE_VERSION);
    out.put_i32(value.snapshot_epoch);
    out.put_i32(value.leader_epoch);
    out.put_i64(value.start_offset);
    put_state_batches(&mut out, &value.state_batches);
    put_delivery_complete_count(&mut out, value.delivery_complete_count);
    out.freeze()
}

fn put_state_batches(out: &mut BytesMut, batches: &[StateBatch]) {
    put_compact_array_len(out, batches.len());
    for batch in batches {
        out.put_i64(batch.first_offset);
        out.put_i64(batch.last_offset);
        out.put_i8(batch.delivery_state.id());
        out.put_i16(batch.delivery_count);
        put_uvarint(out, 0);
    }
}

/// The struct's tagged-field section: Kafka writes a tagged field only when it differs from
/// its default.
fn put_delivery_complete_count(out: &mut BytesMut, count: i32) {
    if count == UNKNOWN_DELIVERY_COMPLETE_COUNT {
        put_uvarint(out, 0);
        return;
    }
    put_uvarint(out, 1);
    put_uvarint(out, DELIVERY_COMPLETE_COUNT_TAG);
    put_uvarint(out, 4);
    out.put_i32(count);
}

fn decode_snapshot_value(reader: &mut Reader<'_>) -> Result<ShareSnapshotValue, ShareRecordError> {
    let snapshot_epoch = reader.i32()?;
    let state_epoch = reader.i32()?;
    let leader_epoch = reader.i32()?;
    let start_offset = reader.i64()?;
    let create_timestamp_ms = reader.i64()?;
    let write_timestamp_ms = reader.i64()?;
    let state_batches = read_state_batches(reader)?;
    let delivery_complete_count = read_delivery_complete_count(reader)?;
    Ok(ShareSnapshotValue {
        snapshot_epoch,
        state_epoch,
        leader_epoch,
        start_offset,
        delivery_complete_count,
        create_timestamp_ms,
        write_timestamp_ms,
        state_batches,
    })
}

fn decode_update_value(reader: &mut Reader<'_>) -> Result<ShareUpdateValue, ShareRecordError> {
    let snapshot_epoch = reader.i32()?;
    let leader_epoch = reader.i32()?;
    let start_offset = reader.i64()?;
    let state_batches = read_state_batches(reader)?;
    let delivery_complete_count = read_delivery_complete_count(reader)?;
    Ok(ShareUpdateValue {
        snapshot_epoch,
        leader_epoch,
        start_offset,
        delivery_complete_count,
        state_batches,
    })
}

fn read_state_batches(reader: &mut Reader<'_>) -> Result<Vec<StateBatch>, ShareRecordError> {
    let count = reader.compact_array_len("stateBatches", STATE_BATCH_BYTES)?;
    let mut batches = Vec::with_capacity(count);
    for _ in 0..count {
        let first_offset = reader.i64()?;
        let last_offset = reader.i64()?;
        let state_id = reader.i8()?;
        let delivery_count = reader.i16()?;
        reader.tagged_fields(|_, _| Ok(()))?;
        let delivery_state = DeliveryState::from_id(state_id)
            .ok_or(ShareRecordError::InvalidDeliveryState(state_id))?;
        batches.push(StateBatch {
            first_offset,
            last_offset,
            delivery_state,
            delivery_count,
        });
    }
    Ok(batches)
}

fn read_delivery_complete_count(reader: &mut Reader<'_>) -> Result<i32, ShareRecordError> {
    let mut count = UNKNOWN_DELIVERY_COMPLETE_COUNT;
    reader.tagged_fields(|tag, data| {
        if tag != DELIVERY_COMPLETE_COUNT_TAG {
            return Ok(());
        }
        let bytes: [u8; 4] = data
            .try_into()
            .map_err(|_| ShareRecordError::TaggedFieldSize {
                tag,
                size: data.len(),
                expected: 4,
            })?;
        count = i32::from_be_bytes(bytes);
        Ok(())
    })?;
    Ok(count)
}
