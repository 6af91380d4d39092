//! `__transaction_state` record keys and values in Kafka's layout (TransactionLogKey v0,
//! TransactionLogValue v0 and v1), so that the log reads like Kafka's.
//!
//! Values are written as v1 (flexible, with Kafka's tagged fields: 0 the previous producer id,
//! 1 the next producer id and 2 the client's transaction version, each only when set).
//! Kafka's value carries no "last producer epoch", so after a reload it is `-1`, as in Kafka:
//! a retried InitProducerId that spans a coordinator change is fenced.

use std::collections::BTreeSet;

use super::metadata::{TopicPartition, TxnLogRecord, TxnMetadata};
use super::state::TxnState;
use crate::producer_state::{TransactionVersion, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};

const KEY_VERSION: i16 = 0;
const VALUE_VERSION: i16 = 1;
const TAG_PREVIOUS_PRODUCER_ID: u32 = 0;
const TAG_NEXT_PRODUCER_ID: u32 = 1;
const TAG_CLIENT_TRANSACTION_VERSION: u32 = 2;
/// The `transaction.version` level written for version 2 clients.
const TRANSACTION_VERSION_2: i16 = 2;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed transaction log record: {reason}")]
pub struct TxnLogFormatError {
    pub reason: String,
}

fn malformed(reason: impl Into<String>) -> TxnLogFormatError {
    TxnLogFormatError {
        reason: reason.into(),
    }
}

/// The record key: version 0 and the transactional id.
pub fn encode_txn_log_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&KEY_VERSION.to_be_bytes());
    // Transactional ids come from requests whose strings are at most i16::MAX bytes long.
    let len = i16::try_from(transactional_id.len()).unwrap_or(i16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&transactional_id.as_bytes()[..len as usize]);
    out
}

/// The record value (version 1).
pub fn encode_txn_log_value(metadata: &TxnMetadata) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&VALUE_VERSION.to_be_bytes());
    out.extend_from_slice(&metadata.producer_id.to_be_bytes());
    out.extend_from_slice(&metadata.producer_epoch.to_be_bytes());
    out.extend_from_slice(&metadata.txn_timeout_ms.to_be_bytes());
    out.push(metadata.state.id());

    let mut topics: Vec<(&str, Vec<i32>)> = Vec::new();
    for tp in &metadata.partitions {
        match topics.last_mut() {
            Some((topic, ids)) if *topic == tp.topic => ids.push(tp.partition),
            _ => topics.push((&tp.topic, vec![tp.partition])),
        }
    }
    put_uvarint(&mut out, topics.len() as u64 + 1);
    for (topic, ids) in &topics {
        put_uvarint(&mut out, topic.len() as u64 + 1);
        out.extend_from_slice(topic.as_bytes());
        put_uvarint(&mut out, ids.len() as u64 + 1);
        for id in ids {
            out.extend_from_slice(&id.to_be_bytes());
        }
        put_uvarint(&mut out, 0);
    }
    out.extend_from_slice(&metadata.txn_last_update_timestamp_ms.to_be_bytes());
    out.extend_from_slice(&metadata.txn_start_timestamp_ms.to_be_bytes());
    let mut tagged: Vec<(u32, Vec<u8>)> = Vec::new();
    if metadata.prev_producer_id != NO_PRODUCER_ID {
        let bytes = metadata.prev_producer_id.to_be_bytes().to_vec();
        tagged.push((TAG_PREVIOUS_PRODUCER_ID, bytes));
    }
    if metadata.next_producer_id != NO_PRODUCER_ID {
        let bytes = metadata.next_producer_id.to_be_bytes().to_vec();
        tagged.push((TAG_NEXT_PRODUCER_ID, bytes));
    }
    if metadata.client_transaction_version == TransactionVersion::V2 {
        let bytes = TRANSACTION_VERSION_2.to_be_bytes().to_vec();
        tagged.push((TAG_CLIENT_TRANSACTION_VERSION, bytes));
    }
    put_uvarint(&mut out, tagged.len() as u64);
    for (tag, bytes) in tagged {
        put_uvarint(&mut out, u64::from(tag));
        put_uvarint(&mut out, bytes.len() as u64);
        out.extend_from_slice(&bytes);
    }
    out
}

/// Key and value (`None`: a tombstone) for a record.
pub fn encode_txn_log_record(record: &TxnLogRecord) -> (Vec<u8>, Option<Vec<u8>>) {
    (
        encode_txn_log_key(&record.transactional_id),
        record.value.as_ref().map(encode_txn_log_value),
    )
}

/// Decodes a record read back from `__transaction_state`.
pub fn decode_txn_log_record(
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<TxnLogRecord, TxnLogFormatError> {
    let mut reader = Reader(key);
    let version = reader.i16()?;
    if version != KEY_VERSION {
        return Err(malformed(format!("unknown key version {version}")));
    }
    let len = reader.i16()?;
    let len = usize::try_from(len).map_err(|_| malformed("null transactional id"))?;
    let transactional_id = reader.string(len)?;
    reader.finish()?;
    let value = value
        .map(|bytes| decode_value(&transactional_id, bytes))
        .transpose()?;
    Ok(TxnLogRecord {
        transactional_id,
        value,
    })
}

fn decode_value(transactional_id: &str, bytes: &[u8]) -> Result<TxnMetadata, TxnLogFormatError> {
    let mut reader = Reader(bytes);
    let version = reader.i16()?;
    let flexible = match version {
        0 => false,
        1 => true,
        other => return Err(malformed(format!("unknown value version {other}"))),
    };
    let producer_id = reader.i64()?;
    let producer_epoch = reader.i16()?;
    let txn_timeout_ms = reader.i32()?;
    let state_id = reader.u8()?;
    let state = TxnState::from_id(state_id)
        .ok_or_else(|| malformed(format!("unknown transaction status {state_id}")))?;

    let mut partitions = BTreeSet::new();
    // Each topic entry needs at least 2 (non-flexible) or 3 (flexible) bytes.
    let topic_count = if flexible {
        reader.compact_len(2)?
    } else {
        reader.array_len(6)?
    };
    for _ in 0..topic_count.unwrap_or(0) {
        let topic = if flexible {
            let len = reader
                .compact_len(1)?
                .ok_or_else(|| malformed("null topic"))?;
            reader.string(len)?
        } else {
            let len = usize::try_from(reader.i16()?).map_err(|_| malformed("null topic"))?;
            reader.string(len)?
        };
        let count = if flexible {
            reader.compact_len(4)?
        } else {
            reader.array_len(4)?
        };
        for _ in 0..count.ok_or_else(|| malformed("null partition ids"))? {
            partitions.insert(TopicPartition::new(topic.clone(), reader.i32()?));
        }
        if flexible {
            reader.skip_tagged_fields(|_, _| Ok(()))?;
        }
    }
    let txn_last_update_timestamp_ms = reader.i64()?;
    let txn_start_timestamp_ms = reader.i64()?;
    let mut prev_producer_id = NO_PRODUCER_ID;
    let mut next_producer_id = NO_PRODUCER_ID;
    let mut client_transaction_version = TransactionVersion::Legacy;
    if flexible {
        reader.skip_tagged_fields(|tag, data| {
            match tag {
                TAG_PREVIOUS_PRODUCER_ID | TAG_NEXT_PRODUCER_ID => {
                    let bytes: [u8; 8] = data
                        .try_into()
                        .map_err(|_| malformed("a producer id tag is not 8 bytes"))?;
                    if tag == TAG_PREVIOUS_PRODUCER_ID {
                        prev_producer_id = i64::from_be_bytes(bytes);
                    } else {
                        next_producer_id = i64::from_be_bytes(bytes);
                    }
                }
                TAG_CLIENT_TRANSACTION_VERSION => {
                    let bytes: [u8; 2] = data
                        .try_into()
                        .map_err(|_| malformed("the transaction version is not 2 bytes"))?;
                    if i16::from_be_bytes(bytes) >= TRANSACTION_VERSION_2 {
                        client_transaction_version = TransactionVersion::V2;
                    }
                }
                _ => {}
            }
            Ok(())
        })?;
    }
    reader.finish()?;
    Ok(TxnMetadata {
        transactional_id: transactional_id.to_owned(),
        producer_id,
        prev_producer_id,
        producer_epoch,
        last_producer_epoch: NO_PRODUCER_EPOCH,
        txn_timeout_ms,
        state,
        partitions,
        txn_start_timestamp_ms,
        txn_last_update_timestamp_ms,
        next_producer_id,
        client_transaction_version,
    })
}

fn put_uvarint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], TxnLogFormatError> {
        if self.0.len() < len {
            return Err(malformed("truncated"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], TxnLogFormatError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, TxnLogFormatError> {
        Ok(self.fixed::<1>()?[0])
    }

    fn i16(&mut self) -> Result<i16, TxnLogFormatError> {
        self.fixed().map(i16::from_be_bytes)
    }

    fn i32(&mut self) -> Result<i32, TxnLogFormatError> {
        self.fixed().map(i32::from_be_bytes)
    }

    fn i64(&mut self) -> Result<i64, TxnLogFormatError> {
        self.fixed().map(i64::from_be_bytes)
    }

    fn uvarint(&mut self) -> Result<u64, TxnLogFormatError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed("varint too long"))
    }

    fn string(&mut self, len: usize) -> Result<String, TxnLogFormatError> {
        String::from_utf8(self.take(len)?.to_vec()).map_err(|_| malformed("invalid UTF-8"))
    }

    /// Checks a count against the bytes left before anything is allocated for it.
    fn bounded(&self, count: usize, min_item_bytes: usize) -> Result<usize, TxnLogFormatError> {
        if count.saturating_mul(min_item_bytes) > self.0.len() {
            return Err(malformed("length exceeds the record"));
        }
        Ok(count)
    }

    /// A non-flexible array length (`-1`: null).
    fn array_len(&mut self, min_item_bytes: usize) -> Result<Option<usize>, TxnLogFormatError> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| malformed("bad length"))?;
        self.bounded(len, min_item_bytes).map(Some)
    }

    /// A compact (length + 1) array or string length (`0`: null).
    fn compact_len(&mut self, min_item_bytes: usize) -> Result<Option<usize>, TxnLogFormatError> {
        let raw = self.uvarint()?;
        let Some(len) = raw.checked_sub(1) else {
            return Ok(None);
        };
        let len = usize::try_from(len).map_err(|_| malformed("bad length"))?;
        self.bounded(len, min_item_bytes).map(Some)
    }

    fn skip_tagged_fields(
        &mut self,
        mut on_field: impl FnMut(u32, &[u8]) -> Result<(), TxnLogFormatError>,
    ) -> Result<(), TxnLogFormatError> {
        let count = self.uvarint()?;
        let count = usize::try_from(count).map_err(|_| malformed("bad tag count"))?;
        for _ in 0..self.bounded(count, 2)? {
            let tag = u32::try_from(self.uvarint()?).map_err(|_| malformed("bad tag"))?;
            let size = usize::try_from(self.uvarint()?).map_err(|_| malformed("bad size"))?;
            let data = self.take(size)?;
            on_field(tag, data)?;
        }
        Ok(())
    }

    fn finish(&self) -> Result<(), TxnLogFormatError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(malformed("trailing bytes"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TxnMetadata {
        TxnMetadata {
            transactional_id: "app-1".to_owned(),
            producer_id: 4001,
            prev_producer_id: 4000,
            producer_epoch: 7,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms: 60_000,
            state: TxnState::Ongoing,
            partitions: [("orders", 0), ("orders", 3), ("payments", 1)]
                .into_iter()
                .map(|(t, p)| TopicPartition::new(t, p))
                .collect(),
            txn_start_timestamp_ms: 1_700_000_000_000,
            txn_last_update_timestamp_ms: 1_700_000_000_500,
            next_producer_id: NO_PRODUCER_ID,
            client_transaction_version: TransactionVersion::Legacy,
        }
    }

    #[test]
    fn key_layout() {
        assert_eq!(encode_txn_log_key("ab"), vec![0, 0, 0, 2, b'a', b'b']);
    }

    #[test]
    fn record_round_trips() {
        let record = TxnLogRecord {
            transactional_id: "app-1".to_owned(),
            value: Some(sample()),
        };
        let (key, value) = encode_txn_log_record(&record);
        let decoded = decode_txn_log_record(&key, value.as_deref()).unwrap();
        assert_eq!(decoded, record);

        let mut no_prev = sample();
        no_prev.prev_producer_id = NO_PRODUCER_ID;
        no_prev.partitions.clear();
        no_prev.state = TxnState::Empty;
        let value = encode_txn_log_value(&no_prev);
        let decoded = decode_txn_log_record(&key, Some(&value)).unwrap();
        assert_eq!(decoded.value, Some(no_prev));

        let tombstone = TxnLogRecord {
            transactional_id: "app-1".to_owned(),
            value: None,
        };
        let (key, value) = encode_txn_log_record(&tombstone);
        assert_eq!(value, None);
        assert_eq!(decode_txn_log_record(&key, None).unwrap(), tombstone);
    }

    #[test]
    fn version_2_fields_round_trip_as_kafkas_tags() {
        let mut v2 = sample();
        v2.state = TxnState::PrepareCommit;
        v2.next_producer_id = 5000;
        v2.client_transaction_version = TransactionVersion::V2;
        let key = encode_txn_log_key("app-1");
        let value = encode_txn_log_value(&v2);
        // Tagged fields close the value: count 3, then tag 0 (8 bytes), tag 1 (8), tag 2 (2).
        let tail = &value[value.len() - 25..];
        assert_eq!(tail[0], 3);
        assert_eq!(&tail[1..3], &[0, 8]);
        assert_eq!(&tail[11..13], &[1, 8]);
        assert_eq!(&tail[13..21], &5000i64.to_be_bytes());
        assert_eq!(&tail[21..], &[2, 2, 0, 2]);
        let decoded = decode_txn_log_record(&key, Some(&value)).unwrap();
        assert_eq!(decoded.value, Some(v2));
    }

    #[test]
    fn decodes_version_0_values() {
        // Hand-built v0 value: one topic with two partitions.
        let mut value = Vec::new();
        value.extend_from_slice(&0i16.to_be_bytes());
        value.extend_from_slice(&9i64.to_be_bytes());
        value.extend_from_slice(&2i16.to_be_bytes());
        value.extend_from_slice(&30_000i32.to_be_bytes());
        value.push(2); // PrepareCommit
        value.extend_from_slice(&1i32.to_be_bytes());
        value.extend_from_slice(&1i16.to_be_bytes());
        value.push(b't');
        value.extend_from_slice(&2i32.to_be_bytes());
        value.extend_from_slice(&5i32.to_be_bytes());
        value.extend_from_slice(&6i32.to_be_bytes());
        value.extend_from_slice(&200i64.to_be_bytes());
        value.extend_from_slice(&100i64.to_be_bytes());
        let key = encode_txn_log_key("x");
        let metadata = decode_txn_log_record(&key, Some(&value))
            .unwrap()
            .value
            .unwrap();
        assert_eq!(metadata.producer_id, 9);
        assert_eq!(metadata.producer_epoch, 2);
        assert_eq!(metadata.state, TxnState::PrepareCommit);
        assert_eq!(metadata.partitions.len(), 2);
        assert_eq!(metadata.txn_start_timestamp_ms, 100);
        assert_eq!(metadata.txn_last_update_timestamp_ms, 200);
        assert_eq!(metadata.prev_producer_id, NO_PRODUCER_ID);

        // A null partition array (-1) is an empty set.
        let mut null_parts = value[..17].to_vec();
        null_parts.extend_from_slice(&(-1i32).to_be_bytes());
        null_parts.extend_from_slice(&200i64.to_be_bytes());
        null_parts.extend_from_slice(&100i64.to_be_bytes());
        let metadata = decode_txn_log_record(&key, Some(&null_parts))
            .unwrap()
            .value
            .unwrap();
        assert!(metadata.partitions.is_empty());
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        let key = encode_txn_log_key("app-1");
        let value = encode_txn_log_value(&sample());
        for len in 0..value.len() {
            assert!(
                decode_txn_log_record(&key, Some(&value[..len])).is_err(),
                "len {len}"
            );
        }
        for len in 0..key.len() {
            assert!(decode_txn_log_record(&key[..len], None).is_err());
        }
        let mut bad_state = value.clone();
        bad_state[16] = 42;
        assert!(decode_txn_log_record(&key, Some(&bad_state)).is_err());
        let mut huge = value[..17].to_vec();
        huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(decode_txn_log_record(&key, Some(&huge)).is_err());
        let mut trailing = value;
        trailing.push(0);
        assert!(decode_txn_log_record(&key, Some(&trailing)).is_err());
    }
}
