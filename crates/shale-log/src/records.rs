//! Records inside a v2 batch: varint decoding, a borrowed record view and a batch builder.
//! Every length read from the bytes is checked against what remains before it is used.

use crate::batch::{self, BatchHeader, Compression, HEADER_LEN};
use crate::compression;
use crate::config::TimestampType;
use crate::error::LogError;

fn corrupt(what: &str) -> LogError {
    LogError::CorruptMessage(format!("malformed record: {what}"))
}

/// Reads a zig-zag varint of at most 5 bytes.
pub(crate) fn read_varint(b: &[u8], pos: &mut usize) -> Result<i32, LogError> {
    let v = read_varlong_max(b, pos, 5)?;
    i32::try_from(v).map_err(|_| corrupt("varint out of range"))
}

pub(crate) fn read_varlong(b: &[u8], pos: &mut usize) -> Result<i64, LogError> {
    read_varlong_max(b, pos, 10)
}

fn read_varlong_max(b: &[u8], pos: &mut usize, max_len: usize) -> Result<i64, LogError> {
    let mut raw: u64 = 0;
    let mut shift = 0u32;
    for i in 0..max_len {
        let byte = *b.get(*pos).ok_or_else(|| corrupt("truncated varint"))?;
        *pos += 1;
        raw |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64));
        }
        shift += 7;
        if i + 1 == max_len {
            break;
        }
    }
    Err(corrupt("varint too long"))
}

pub(crate) fn write_varlong(out: &mut Vec<u8>, v: i64) {
    let mut raw = ((v << 1) ^ (v >> 63)) as u64;
    while raw >= 0x80 {
        out.push((raw as u8) | 0x80);
        raw >>= 7;
    }
    out.push(raw as u8);
}

/// One record header: `(key, value)` pair of bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader<'a> {
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
}

/// A record borrowed from (decompressed) batch bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    pub attributes: u8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Vec<RecordHeader<'a>>,
    /// The whole encoded record including its length prefix, for copying it unchanged.
    pub raw: &'a [u8],
}

fn read_bytes<'a>(b: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, LogError> {
    let len = read_varint(b, pos)?;
    if len < 0 {
        return Ok(None);
    }
    let len = len as usize;
    let end = pos
        .checked_add(len)
        .filter(|e| *e <= b.len())
        .ok_or_else(|| corrupt("field longer than the record"))?;
    let s = &b[*pos..end];
    *pos = end;
    Ok(Some(s))
}

/// Decodes exactly `count` records from `body`; the records must fill `body` exactly.
pub fn decode_records(body: &[u8], count: i32) -> Result<Vec<Record<'_>>, LogError> {
    if count < 0 {
        return Err(corrupt("negative record count"));
    }
    // Each record needs at least 7 bytes, which bounds the allocation.
    let mut out = Vec::with_capacity((count as usize).min(body.len() / 7 + 1));
    let mut pos = 0usize;
    for _ in 0..count {
        let start = pos;
        let len = read_varint(body, &mut pos)?;
        if len < 0 {
            return Err(corrupt("negative record length"));
        }
        let end = pos
            .checked_add(len as usize)
            .filter(|e| *e <= body.len())
            .ok_or_else(|| corrupt("record longer than the batch"))?;
        let rec = &body[..end];
        let mut p = pos;
        let attributes = *rec.get(p).ok_or_else(|| corrupt("missing attributes"))?;
        p += 1;
        let timestamp_delta = read_varlong(rec, &mut p)?;
        let offset_delta = read_varint(rec, &mut p)?;
        let key = read_bytes(rec, &mut p)?;
        let value = read_bytes(rec, &mut p)?;
        let header_count = read_varint(rec, &mut p)?;
        if header_count < 0 {
            return Err(corrupt("negative header count"));
        }
        let mut headers = Vec::with_capacity((header_count as usize).min(len as usize / 2 + 1));
        for _ in 0..header_count {
            let key = read_bytes(rec, &mut p)?.ok_or_else(|| corrupt("null header key"))?;
            let value = read_bytes(rec, &mut p)?;
            headers.push(RecordHeader { key, value });
        }
        if p != end {
            return Err(corrupt("record length does not match its fields"));
        }
        out.push(Record {
            attributes,
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers,
            raw: &body[start..end],
        });
        pos = end;
    }
    if pos != body.len() {
        return Err(corrupt("bytes left after the last record"));
    }
    Ok(out)
}

/// The records section of a batch, decompressed if needed, bounded by `decompressed_bytes_max`.
pub fn batch_body(batch_bytes: &[u8], decompressed_bytes_max: u64) -> Result<Vec<u8>, LogError> {
    let h = BatchHeader::decode(batch_bytes)?;
    let body = batch_bytes
        .get(HEADER_LEN..h.total_len())
        .ok_or_else(|| corrupt("batch shorter than its length"))?;
    let codec = h
        .compression()
        .ok_or_else(|| corrupt("unknown compression codec"))?;
    compression::decompress(codec, body, decompressed_bytes_max)
}

/// Owned record used to build batches.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OwnedRecord {
    pub offset_delta: i32,
    pub timestamp_delta: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl OwnedRecord {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut body = Vec::with_capacity(
            16 + self.key.as_ref().map_or(0, Vec::len) + self.value.as_ref().map_or(0, Vec::len),
        );
        body.push(0u8);
        write_varlong(&mut body, self.timestamp_delta);
        write_varlong(&mut body, i64::from(self.offset_delta));
        write_opt(&mut body, self.key.as_deref());
        write_opt(&mut body, self.value.as_deref());
        write_varlong(&mut body, self.headers.len() as i64);
        for (k, v) in &self.headers {
            write_opt(&mut body, Some(k));
            write_opt(&mut body, v.as_deref());
        }
        write_varlong(out, body.len() as i64);
        out.extend_from_slice(&body);
    }
}

fn write_opt(out: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        None => write_varlong(out, -1),
        Some(b) => {
            write_varlong(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Builds one RecordBatch v2 with a valid CRC.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub compression: Compression,
    pub timestamp_type: TimestampType,
    pub transactional: bool,
    pub control: bool,
    pub base_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    /// Overrides lastOffsetDelta (compaction keeps it although records are gone).
    pub last_offset_delta: Option<i32>,
    /// Overrides maxTimestamp (compaction keeps the original one).
    pub max_timestamp: Option<i64>,
    /// Sets the delete-horizon attribute bit (baseTimestamp then holds the horizon).
    pub delete_horizon: bool,
    records: Vec<u8>,
    count: i32,
    max_delta: i32,
    max_ts_delta: i64,
}

impl BatchBuilder {
    pub fn new(base_timestamp: i64) -> BatchBuilder {
        BatchBuilder {
            base_offset: 0,
            partition_leader_epoch: -1,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            transactional: false,
            control: false,
            base_timestamp,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            last_offset_delta: None,
            max_timestamp: None,
            delete_horizon: false,
            records: Vec::new(),
            count: 0,
            max_delta: -1,
            max_ts_delta: 0,
        }
    }

    pub fn compression(mut self, c: Compression) -> Self {
        self.compression = c;
        self
    }

    /// Appends a record with the next offset delta and the given timestamp.
    pub fn push(&mut self, timestamp_ms: i64, key: Option<&[u8]>, value: Option<&[u8]>) {
        let delta = self.max_delta + 1;
        self.push_record(&OwnedRecord {
            offset_delta: delta,
            timestamp_delta: timestamp_ms - self.base_timestamp,
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            headers: Vec::new(),
        });
    }

    pub fn push_record(&mut self, r: &OwnedRecord) {
        r.encode(&mut self.records);
        self.note(r.offset_delta, r.timestamp_delta);
    }

    /// Appends an already encoded record (length prefix included) unchanged.
    pub fn push_raw(&mut self, raw: &[u8], offset_delta: i32, timestamp_delta: i64) {
        self.records.extend_from_slice(raw);
        self.note(offset_delta, timestamp_delta);
    }

    fn note(&mut self, offset_delta: i32, timestamp_delta: i64) {
        self.count += 1;
        self.max_delta = self.max_delta.max(offset_delta);
        self.max_ts_delta = if self.count == 1 {
            timestamp_delta
        } else {
            self.max_ts_delta.max(timestamp_delta)
        };
    }

    pub fn record_count(&self) -> i32 {
        self.count
    }

    pub fn build(&self) -> Result<Vec<u8>, LogError> {
        let body = compression::compress(self.compression, &self.records)?;
        let mut out = vec![0u8; HEADER_LEN];
        out.extend_from_slice(&body);
        let len = i32::try_from(out.len() - batch::LOG_OVERHEAD)
            .map_err(|_| LogError::InvalidArgument("batch too large".into()))?;
        let header = BatchHeader {
            base_offset: self.base_offset,
            batch_length: len,
            partition_leader_epoch: self.partition_leader_epoch,
            magic: batch::MAGIC_V2,
            crc: 0,
            attributes: batch::attributes_with(
                self.compression,
                self.timestamp_type,
                self.transactional,
                self.control,
                self.delete_horizon,
            ),
            last_offset_delta: self.last_offset_delta.unwrap_or(self.max_delta.max(0)),
            base_timestamp: self.base_timestamp,
            max_timestamp: self
                .max_timestamp
                .unwrap_or(self.base_timestamp + self.max_ts_delta),
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: self.base_sequence,
            record_count: self.count,
        };
        header.encode_into(&mut out);
        batch::rewrite_crc(&mut out);
        Ok(out)
    }
}
