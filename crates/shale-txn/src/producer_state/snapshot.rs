//! The binary snapshot format of a partition's producer state.
//!
//! Layout (big-endian):
//! ```text
//! magic "SHPS" | version u16 (1) | crc32c u32 of everything after this field
//! snapshot_offset i64 | producer_count u32
//! per producer: producer_id i64 | epoch i16 | coordinator_epoch i32 | last_timestamp_ms i64
//!               | last_update_ms i64 | current_txn_first_offset i64 (-1: none)
//!               | sequences_written i64 | batch_count u8
//!               | per batch: first_seq i32 | last_seq i32 | first_offset i64 | last_offset i64
//!                            | max_timestamp_ms i64 | log_append_time_ms i64
//! unreplicated_count u32 | per txn: first_offset i64 | producer_id i64 | last_offset i64
//! ```
//! Unlike Kafka's snapshot (last batch only), all cached batches are kept so that a restarted
//! broker still answers retries of the last five batches with their original offsets.

use std::collections::BTreeMap;
use std::path::Path;

use super::entry::ProducerStateEntry;
use super::manager::{ProducerStateManager, UnreplicatedTxn};
use super::types::{BatchMetadata, NUM_BATCHES_TO_RETAIN};
use crate::error::ProducerStateError;

const MAGIC: &[u8; 4] = b"SHPS";
const VERSION: u16 = 1;
const HEADER_BYTES: usize = 4 + 2 + 4;
const ENTRY_FIXED_BYTES: usize = 8 + 2 + 4 + 8 + 8 + 8 + 8 + 1;
const BATCH_BYTES: usize = 4 + 4 + 8 + 8 + 8 + 8;
const UNREPLICATED_BYTES: usize = 8 + 8 + 8;

pub(crate) fn encode(state: &ProducerStateManager, snapshot_offset: i64) -> Vec<u8> {
    let mut body = Vec::with_capacity(
        8 + 4 + state.producers.len() * (ENTRY_FIXED_BYTES + 2 * BATCH_BYTES) + 4,
    );
    body.extend_from_slice(&snapshot_offset.to_be_bytes());
    put_len(&mut body, state.producers.len());
    for entry in state.producers.values() {
        body.extend_from_slice(&entry.producer_id.to_be_bytes());
        body.extend_from_slice(&entry.producer_epoch.to_be_bytes());
        body.extend_from_slice(&entry.coordinator_epoch.to_be_bytes());
        body.extend_from_slice(&entry.last_timestamp_ms.to_be_bytes());
        body.extend_from_slice(&entry.last_update_ms.to_be_bytes());
        body.extend_from_slice(&entry.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
        body.extend_from_slice(&entry.sequences_written.to_be_bytes());
        // The cache never exceeds NUM_BATCHES_TO_RETAIN (5), so this fits a byte.
        body.push(entry.batches.len().min(NUM_BATCHES_TO_RETAIN) as u8);
        for batch in entry.batches.iter().take(NUM_BATCHES_TO_RETAIN) {
            body.extend_from_slice(&batch.first_sequence.to_be_bytes());
            body.extend_from_slice(&batch.last_sequence.to_be_bytes());
            body.extend_from_slice(&batch.first_offset.to_be_bytes());
            body.extend_from_slice(&batch.last_offset.to_be_bytes());
            body.extend_from_slice(&batch.max_timestamp_ms.to_be_bytes());
            body.extend_from_slice(&batch.log_append_time_ms.to_be_bytes());
        }
    }
    put_len(&mut body, state.unreplicated_txns.len());
    for (first_offset, txn) in &state.unreplicated_txns {
        body.extend_from_slice(&first_offset.to_be_bytes());
        body.extend_from_slice(&txn.producer_id.to_be_bytes());
        body.extend_from_slice(&txn.last_offset.to_be_bytes());
    }

    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    // A partition cannot hold 2^32 producers: the broker would run out of memory long before.
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
}

/// Decodes a snapshot. Every length is checked against the bytes that remain before anything
/// is allocated.
pub(crate) fn decode(
    bytes: &[u8],
    path: &Path,
    producer_id_expiration_ms: i64,
) -> Result<(ProducerStateManager, i64), ProducerStateError> {
    let corrupt = |reason: &str| ProducerStateError::CorruptSnapshot {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    };
    if bytes.len() < HEADER_BYTES {
        return Err(corrupt("shorter than the header"));
    }
    if &bytes[..4] != MAGIC {
        return Err(corrupt("bad magic"));
    }
    let version = u16::from_be_bytes([bytes[4], bytes[5]]);
    if version != VERSION {
        return Err(corrupt(&format!("unsupported version {version}")));
    }
    let stored_crc = u32::from_be_bytes([bytes[6], bytes[7], bytes[8], bytes[9]]);
    let body = &bytes[HEADER_BYTES..];
    if crc32c::crc32c(body) != stored_crc {
        return Err(corrupt("checksum mismatch"));
    }

    let mut reader = Reader { bytes: body };
    let truncated = || corrupt("truncated");
    let snapshot_offset = reader.i64().ok_or_else(truncated)?;
    let producer_count = reader.len(ENTRY_FIXED_BYTES).ok_or_else(truncated)?;
    let mut state = ProducerStateManager::new(producer_id_expiration_ms);
    state.map_end_offset = snapshot_offset;
    for _ in 0..producer_count {
        let producer_id = reader.i64().ok_or_else(truncated)?;
        let mut entry = ProducerStateEntry::empty(producer_id);
        entry.producer_epoch = reader.i16().ok_or_else(truncated)?;
        entry.coordinator_epoch = reader.i32().ok_or_else(truncated)?;
        entry.last_timestamp_ms = reader.i64().ok_or_else(truncated)?;
        entry.last_update_ms = reader.i64().ok_or_else(truncated)?;
        let txn_first_offset = reader.i64().ok_or_else(truncated)?;
        entry.sequences_written = reader.i64().ok_or_else(truncated)?;
        if !(0..=1 << 31).contains(&entry.sequences_written) {
            return Err(corrupt("written sequence count out of range"));
        }
        let batch_count = usize::from(reader.u8().ok_or_else(truncated)?);
        if batch_count > NUM_BATCHES_TO_RETAIN {
            return Err(corrupt("too many cached batches"));
        }
        for _ in 0..batch_count {
            entry.push_cached(BatchMetadata {
                first_sequence: reader.i32().ok_or_else(truncated)?,
                last_sequence: reader.i32().ok_or_else(truncated)?,
                first_offset: reader.i64().ok_or_else(truncated)?,
                last_offset: reader.i64().ok_or_else(truncated)?,
                max_timestamp_ms: reader.i64().ok_or_else(truncated)?,
                log_append_time_ms: reader.i64().ok_or_else(truncated)?,
            });
        }
        if txn_first_offset >= 0 {
            entry.current_txn_first_offset = Some(txn_first_offset);
            if state
                .ongoing_txns
                .insert(txn_first_offset, producer_id)
                .is_some()
            {
                return Err(corrupt("two open transactions share a first offset"));
            }
        } else if txn_first_offset != -1 {
            return Err(corrupt("negative transaction first offset"));
        }
        if state.producers.insert(producer_id, entry).is_some() {
            return Err(corrupt("duplicate producer id"));
        }
    }
    let unreplicated_count = reader.len(UNREPLICATED_BYTES).ok_or_else(truncated)?;
    let mut unreplicated = BTreeMap::new();
    for _ in 0..unreplicated_count {
        let first_offset = reader.i64().ok_or_else(truncated)?;
        let producer_id = reader.i64().ok_or_else(truncated)?;
        let last_offset = reader.i64().ok_or_else(truncated)?;
        unreplicated.insert(
            first_offset,
            UnreplicatedTxn {
                producer_id,
                last_offset,
            },
        );
    }
    state.unreplicated_txns = unreplicated;
    if !reader.bytes.is_empty() {
        return Err(corrupt("trailing bytes"));
    }
    Ok((state, snapshot_offset))
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.bytes.split_first_chunk::<N>()?;
        self.bytes = rest;
        Some(*head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|b| b[0])
    }

    fn i16(&mut self) -> Option<i16> {
        self.take().map(i16::from_be_bytes)
    }

    fn i32(&mut self) -> Option<i32> {
        self.take().map(i32::from_be_bytes)
    }

    fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_be_bytes)
    }

    /// A count of items of at least `item_bytes` each; `None` if the rest cannot hold them.
    fn len(&mut self, item_bytes: usize) -> Option<usize> {
        let count = usize::try_from(u32::from_be_bytes(self.take()?)).ok()?;
        (count.checked_mul(item_bytes)? <= self.bytes.len()).then_some(count)
    }
}
