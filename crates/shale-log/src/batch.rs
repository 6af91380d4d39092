//! RecordBatch v2 headers: parsing, validation and the in-place patches done on append.
//!
//! Layout (61 bytes): baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 |
//! crc u32 | attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 |
//! producerId i64 | producerEpoch i16 | baseSequence i32 | recordCount i32 | records.
//! The CRC-32C covers attributes through the end of the batch.

use crate::error::LogError;

pub const HEADER_LEN: usize = 61;
/// Bytes before `batchLength`'s payload: baseOffset + batchLength.
pub const LOG_OVERHEAD: usize = 12;
pub const MAGIC_V2: u8 = 2;

pub(crate) const BASE_OFFSET_POS: usize = 0;
pub(crate) const LENGTH_POS: usize = 8;
pub(crate) const LEADER_EPOCH_POS: usize = 12;
pub(crate) const MAGIC_POS: usize = 16;
pub(crate) const CRC_POS: usize = 17;
pub(crate) const ATTRIBUTES_POS: usize = 21;
pub(crate) const LAST_OFFSET_DELTA_POS: usize = 23;
pub(crate) const BASE_TIMESTAMP_POS: usize = 27;
pub(crate) const MAX_TIMESTAMP_POS: usize = 35;
pub(crate) const PRODUCER_ID_POS: usize = 43;
pub(crate) const PRODUCER_EPOCH_POS: usize = 51;
pub(crate) const BASE_SEQUENCE_POS: usize = 53;
pub(crate) const RECORD_COUNT_POS: usize = 57;

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const TRANSACTIONAL_BIT: i16 = 0x10;
const CONTROL_BIT: i16 = 0x20;
const DELETE_HORIZON_BIT: i16 = 0x40;

/// Largest batch length accepted from disk or the wire; bigger values are corruption.
pub const BATCH_LEN_MAX: usize = i32::MAX as usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    pub fn from_attributes(attributes: i16) -> Option<Compression> {
        match attributes & COMPRESSION_MASK {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            3 => Some(Compression::Lz4),
            4 => Some(Compression::Zstd),
            _ => None,
        }
    }

    pub fn id(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }
}

/// The decoded 61-byte header of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    /// Bytes after the length field (total size is `batch_length + 12`).
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: u8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

pub(crate) fn get_i16(b: &[u8], pos: usize) -> i16 {
    i16::from_be_bytes([b[pos], b[pos + 1]])
}
pub(crate) fn get_i32(b: &[u8], pos: usize) -> i32 {
    i32::from_be_bytes([b[pos], b[pos + 1], b[pos + 2], b[pos + 3]])
}
pub(crate) fn get_u32(b: &[u8], pos: usize) -> u32 {
    u32::from_be_bytes([b[pos], b[pos + 1], b[pos + 2], b[pos + 3]])
}
pub(crate) fn get_i64(b: &[u8], pos: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[pos..pos + 8]);
    i64::from_be_bytes(a)
}

impl BatchHeader {
    /// Decodes a header from at least `HEADER_LEN` bytes without checking anything but length.
    pub fn decode(b: &[u8]) -> Result<BatchHeader, LogError> {
        if b.len() < HEADER_LEN {
            return Err(LogError::CorruptMessage(format!(
                "{} bytes is shorter than a batch header",
                b.len()
            )));
        }
        Ok(BatchHeader {
            base_offset: get_i64(b, BASE_OFFSET_POS),
            batch_length: get_i32(b, LENGTH_POS),
            partition_leader_epoch: get_i32(b, LEADER_EPOCH_POS),
            magic: b[MAGIC_POS],
            crc: get_u32(b, CRC_POS),
            attributes: get_i16(b, ATTRIBUTES_POS),
            last_offset_delta: get_i32(b, LAST_OFFSET_DELTA_POS),
            base_timestamp: get_i64(b, BASE_TIMESTAMP_POS),
            max_timestamp: get_i64(b, MAX_TIMESTAMP_POS),
            producer_id: get_i64(b, PRODUCER_ID_POS),
            producer_epoch: get_i16(b, PRODUCER_EPOCH_POS),
            base_sequence: get_i32(b, BASE_SEQUENCE_POS),
            record_count: get_i32(b, RECORD_COUNT_POS),
        })
    }

    /// Writes the header fields into the first 61 bytes of `b` (the CRC as stored in `self`).
    pub fn encode_into(&self, b: &mut [u8]) {
        b[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        b[8..12].copy_from_slice(&self.batch_length.to_be_bytes());
        b[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        b[16] = self.magic;
        b[17..21].copy_from_slice(&self.crc.to_be_bytes());
        b[21..23].copy_from_slice(&self.attributes.to_be_bytes());
        b[23..27].copy_from_slice(&self.last_offset_delta.to_be_bytes());
        b[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        b[35..43].copy_from_slice(&self.max_timestamp.to_be_bytes());
        b[43..51].copy_from_slice(&self.producer_id.to_be_bytes());
        b[51..53].copy_from_slice(&self.producer_epoch.to_be_bytes());
        b[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        b[57..61].copy_from_slice(&self.record_count.to_be_bytes());
    }

    /// Compression codec; `None` (the Option) for an unknown codec id.
    pub fn compression(&self) -> Option<Compression> {
        Compression::from_attributes(self.attributes)
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & DELETE_HORIZON_BIT != 0
    }
    pub fn timestamp_type(&self) -> crate::config::TimestampType {
        if self.attributes & TIMESTAMP_TYPE_BIT != 0 {
            crate::config::TimestampType::LogAppendTime
        } else {
            crate::config::TimestampType::CreateTime
        }
    }
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }
    /// Sequence of the last record, wrapping at i32::MAX as Kafka does; -1 when not idempotent.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence < 0 {
            return -1;
        }
        let last = i64::from(self.base_sequence) + i64::from(self.last_offset_delta);
        if last > i64::from(i32::MAX) {
            (last - i64::from(i32::MAX) - 1) as i32
        } else {
            last as i32
        }
    }
    /// Size of the whole batch in bytes.
    pub fn total_len(&self) -> usize {
        self.batch_length.max(0) as usize + LOG_OVERHEAD
    }
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }
}

/// CRC-32C over attributes..end of one whole batch.
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(&batch[ATTRIBUTES_POS..])
}

/// Checks one whole batch (framing, magic, CRC, counts) given exactly its bytes.
pub fn check_batch(bytes: &[u8]) -> Result<BatchHeader, LogError> {
    let h = check_header_frame(bytes)?;
    if h.total_len() != bytes.len() {
        return Err(LogError::CorruptMessage(format!(
            "batch length {} does not match {} bytes",
            h.total_len(),
            bytes.len()
        )));
    }
    let crc = compute_crc(bytes);
    if crc != h.crc {
        return Err(LogError::CorruptMessage(format!(
            "CRC mismatch at offset {}: stored {:#x}, computed {:#x}",
            h.base_offset, h.crc, crc
        )));
    }
    Ok(h)
}

/// Checks the header fields that can be checked without the body.
pub(crate) fn check_header_frame(bytes: &[u8]) -> Result<BatchHeader, LogError> {
    if bytes.len() < LOG_OVERHEAD + 5 {
        return Err(LogError::CorruptMessage(format!(
            "{} bytes is too short for a batch",
            bytes.len()
        )));
    }
    // The magic byte decides the format, so report it before length problems of v0/v1 headers.
    let magic = bytes[MAGIC_POS];
    if magic != MAGIC_V2 {
        return Err(LogError::UnsupportedMagic(magic));
    }
    let h = BatchHeader::decode(bytes)?;
    if (h.batch_length as i64) < (HEADER_LEN - LOG_OVERHEAD) as i64 {
        return Err(LogError::CorruptMessage(format!(
            "batch length {} is smaller than the header",
            h.batch_length
        )));
    }
    if h.last_offset_delta < 0 {
        return Err(LogError::CorruptMessage(format!(
            "negative last offset delta {}",
            h.last_offset_delta
        )));
    }
    if h.record_count < 0 || i64::from(h.record_count) > i64::from(h.last_offset_delta) + 1 {
        return Err(LogError::CorruptMessage(format!(
            "record count {} does not fit last offset delta {}",
            h.record_count, h.last_offset_delta
        )));
    }
    if h.compression().is_none() {
        return Err(LogError::CorruptMessage(format!(
            "unknown compression in attributes {:#x}",
            h.attributes
        )));
    }
    // Every record takes at least 7 bytes uncompressed; a count beyond that is corruption.
    let body = h.total_len().saturating_sub(HEADER_LEN);
    if h.compression() == Some(Compression::None) && (h.record_count as usize) * 7 > body {
        return Err(LogError::CorruptMessage(format!(
            "record count {} cannot fit in {} bytes",
            h.record_count, body
        )));
    }
    Ok(h)
}

/// Parses and checks every batch in `bytes` (framing, magic, CRC, counts).
/// The whole buffer must consist of whole batches.
pub fn parse_batches(bytes: &[u8]) -> Result<Vec<BatchHeader>, LogError> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        if rest.len() < LOG_OVERHEAD {
            return Err(LogError::CorruptMessage(format!(
                "{} trailing bytes after the last batch",
                rest.len()
            )));
        }
        let len = get_i32(rest, LENGTH_POS);
        if len < 0 || (len as usize) > rest.len() - LOG_OVERHEAD {
            return Err(LogError::CorruptMessage(format!(
                "batch length {} exceeds the {} bytes present",
                len,
                rest.len() - LOG_OVERHEAD
            )));
        }
        let total = len as usize + LOG_OVERHEAD;
        let h = check_batch(&rest[..total])?;
        out.push(h);
        pos += total;
    }
    if out.is_empty() {
        return Err(LogError::InvalidRecord(
            "no record batch in the request".into(),
        ));
    }
    Ok(out)
}

/// Patches baseOffset and partitionLeaderEpoch, which lie outside the CRC.
pub(crate) fn set_offset_and_epoch(batch: &mut [u8], base_offset: i64, leader_epoch: i32) {
    batch[BASE_OFFSET_POS..BASE_OFFSET_POS + 8].copy_from_slice(&base_offset.to_be_bytes());
    batch[LEADER_EPOCH_POS..LEADER_EPOCH_POS + 4].copy_from_slice(&leader_epoch.to_be_bytes());
}

/// Sets LogAppendTime and maxTimestamp (inside the CRC) and recomputes the CRC.
pub(crate) fn set_log_append_time(batch: &mut [u8], now_ms: i64) {
    let attrs = get_i16(batch, ATTRIBUTES_POS) | TIMESTAMP_TYPE_BIT;
    batch[ATTRIBUTES_POS..ATTRIBUTES_POS + 2].copy_from_slice(&attrs.to_be_bytes());
    batch[MAX_TIMESTAMP_POS..MAX_TIMESTAMP_POS + 8].copy_from_slice(&now_ms.to_be_bytes());
    rewrite_crc(batch);
}

/// Recomputes the CRC of one whole batch after its bytes were changed.
pub fn recompute_crc(batch: &mut [u8]) {
    rewrite_crc(batch);
}

pub(crate) fn rewrite_crc(batch: &mut [u8]) {
    let crc = compute_crc(batch);
    batch[CRC_POS..CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
}

pub(crate) fn attributes_with(
    compression: Compression,
    timestamp_type: crate::config::TimestampType,
    transactional: bool,
    control: bool,
    delete_horizon: bool,
) -> i16 {
    let mut a = compression.id();
    if timestamp_type == crate::config::TimestampType::LogAppendTime {
        a |= TIMESTAMP_TYPE_BIT;
    }
    if transactional {
        a |= TRANSACTIONAL_BIT;
    }
    if control {
        a |= CONTROL_BIT;
    }
    if delete_horizon {
        a |= DELETE_HORIZON_BIT;
    }
    a
}
