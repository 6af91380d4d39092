//! Fetch response frames whose record sets are not copied into the frame.
//!
//! A Fetch response is mostly record data already sitting in segment files. Encoding it
//! with `kafka-protocol` needs every record set as `Bytes` in memory and then copies them
//! all once more into one buffer. Here the framing (header, topics, partitions, tagged
//! fields) is encoded into one buffer and the record sets stay whatever the caller holds
//! (for the broker, file ranges sent with `sendfile`): the frame is a chain of framing
//! chunks and record sets, byte-identical to `kafka-protocol`'s encoding when written out
//! in order.

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{ApiKey, FetchResponse};
use kafka_protocol::protocol::Encodable;

use crate::{ProtocolError, FRAME_LEN_PREFIX_BYTES};

/// Lowest and highest Fetch versions this encoder writes (Kafka 4.x serves 4-18).
pub const FETCH_FRAME_VERSION_MIN: i16 = 4;
pub const FETCH_FRAME_VERSION_MAX: i16 = 18;

/// First version with compact (flexible) encodings and tagged fields.
const FLEXIBLE_VERSION_MIN: i16 = 12;

/// A record set placed into a frame by reference: only its length is needed to encode.
pub trait RecordSet {
    fn len_bytes(&self) -> usize;
}

impl RecordSet for Bytes {
    fn len_bytes(&self) -> usize {
        self.len()
    }
}

/// One piece of a frame, in write order.
#[derive(Debug)]
pub enum FrameChunk<R> {
    /// Encoded framing bytes (the first chunk starts with the length prefix).
    Framing(Bytes),
    /// A partition's record set, written as is.
    Records(R),
}

/// A complete response frame (length prefix included) as a chain of chunks.
#[derive(Debug)]
pub struct FetchFrame<R> {
    pub chunks: Vec<FrameChunk<R>>,
    /// Total bytes of the frame, length prefix included.
    pub len_bytes: usize,
}

impl FetchFrame<Bytes> {
    /// The frame as one contiguous buffer (tests, benches and small answers).
    pub fn to_contiguous(&self) -> BytesMut {
        let mut out = BytesMut::with_capacity(self.len_bytes);
        for chunk in &self.chunks {
            match chunk {
                FrameChunk::Framing(b) | FrameChunk::Records(b) => out.put_slice(b),
            }
        }
        out
    }
}

/// Encodes a Fetch response frame at `version` for `correlation_id`.
///
/// The `records` field of every [`PartitionData`] must be empty or `None`: partition `i` (counting
/// partitions of all topics in order) takes `records[i]` instead. An empty record set is
/// encoded as empty bytes, never null (some clients reject a null record set).
pub fn encode_fetch_frame<R: RecordSet>(
    correlation_id: i32,
    version: i16,
    response: &FetchResponse,
    records: Vec<R>,
) -> Result<FetchFrame<R>, ProtocolError> {
    if !(FETCH_FRAME_VERSION_MIN..=FETCH_FRAME_VERSION_MAX).contains(&version) {
        return Err(ProtocolError::Encode(format!(
            "Fetch response version {version} is not encoded here"
        )));
    }
    let partition_count: usize = response.responses.iter().map(|t| t.partitions.len()).sum();
    if records.len() != partition_count {
        return Err(ProtocolError::Encode(format!(
            "{} record sets for {partition_count} partitions",
            records.len()
        )));
    }
    let mut enc = Encoder {
        buf: BytesMut::with_capacity(64 + partition_count * 64),
        flexible: version >= FLEXIBLE_VERSION_MIN,
        version,
        cuts: Vec::with_capacity(partition_count),
        records_len_bytes: 0,
    };
    enc.buf.put_i32(0);
    enc.buf.put_i32(correlation_id);
    if ApiKey::Fetch.response_header_version(version) >= 1 {
        // The response header has no tagged fields of its own.
        enc.buf.put_u8(0);
    }
    let mut records = records.into_iter();
    enc.response(response, &mut records)?;

    let len_bytes = enc.buf.len() + enc.records_len_bytes;
    let body_len = i32::try_from(len_bytes - FRAME_LEN_PREFIX_BYTES).map_err(|_| {
        ProtocolError::Encode(format!(
            "Fetch response of {len_bytes} bytes exceeds a frame"
        ))
    })?;
    enc.buf[..FRAME_LEN_PREFIX_BYTES].copy_from_slice(&body_len.to_be_bytes());

    let mut chunks = Vec::with_capacity(enc.cuts.len() * 2 + 1);
    let mut buf = enc.buf;
    let mut consumed = 0usize;
    for (at, set) in enc.cuts {
        chunks.push(FrameChunk::Framing(buf.split_to(at - consumed).freeze()));
        consumed = at;
        chunks.push(FrameChunk::Records(set));
    }
    if !buf.is_empty() {
        chunks.push(FrameChunk::Framing(buf.freeze()));
    }
    Ok(FetchFrame { chunks, len_bytes })
}

struct Encoder<R> {
    buf: BytesMut,
    flexible: bool,
    version: i16,
    /// Framing offsets after which a record set goes, with that set.
    cuts: Vec<(usize, R)>,
    records_len_bytes: usize,
}

impl<R: RecordSet> Encoder<R> {
    fn response(
        &mut self,
        r: &FetchResponse,
        records: &mut impl Iterator<Item = R>,
    ) -> Result<(), ProtocolError> {
        let v = self.version;
        self.buf.put_i32(r.throttle_time_ms);
        if v >= 7 {
            self.buf.put_i16(r.error_code);
            self.buf.put_i32(r.session_id);
        } else if r.session_id != 0 {
            return Err(field_not_in_version("session_id", v));
        }
        self.array_len(r.responses.len())?;
        for topic in &r.responses {
            self.topic(topic, records)?;
        }
        if self.flexible {
            let known_present = v >= 16 && !r.node_endpoints.is_empty();
            self.tagged_count(&r.unknown_tagged_fields, usize::from(known_present))?;
            if known_present {
                let mut field = BytesMut::new();
                put_uvarint(&mut field, len_u32(r.node_endpoints.len() + 1)?);
                for e in &r.node_endpoints {
                    e.encode(&mut field, v).map_err(encode_error)?;
                }
                self.tagged_field(0, &field)?;
            }
            self.unknown_tagged(&r.unknown_tagged_fields, 1)?;
        }
        Ok(())
    }

    fn topic(
        &mut self,
        t: &FetchableTopicResponse,
        records: &mut impl Iterator<Item = R>,
    ) -> Result<(), ProtocolError> {
        let v = self.version;
        if v <= 12 {
            self.string(t.topic.0.as_bytes())?;
        }
        if v >= 13 {
            self.buf.put_slice(t.topic_id.as_bytes());
        }
        self.array_len(t.partitions.len())?;
        for p in &t.partitions {
            let set = records
                .next()
                .ok_or_else(|| ProtocolError::Encode("missing record set".to_string()))?;
            self.partition(p, set)?;
        }
        if self.flexible {
            self.tagged_count(&t.unknown_tagged_fields, 0)?;
            self.unknown_tagged(&t.unknown_tagged_fields, 0)?;
        }
        Ok(())
    }

    fn partition(&mut self, p: &PartitionData, set: R) -> Result<(), ProtocolError> {
        let v = self.version;
        if p.records.as_ref().is_some_and(|r| !r.is_empty()) {
            return Err(ProtocolError::Encode(
                "PartitionData.records must be empty: record sets are passed separately"
                    .to_string(),
            ));
        }
        self.buf.put_i32(p.partition_index);
        self.buf.put_i16(p.error_code);
        self.buf.put_i64(p.high_watermark);
        self.buf.put_i64(p.last_stable_offset);
        if v >= 5 {
            self.buf.put_i64(p.log_start_offset);
        }
        match &p.aborted_transactions {
            None => {
                if self.flexible {
                    self.buf.put_u8(0);
                } else {
                    self.buf.put_i32(-1);
                }
            }
            Some(aborted) => {
                self.array_len(aborted.len())?;
                for a in aborted {
                    a.encode(&mut self.buf, v).map_err(encode_error)?;
                }
            }
        }
        if v >= 11 {
            self.buf.put_i32(p.preferred_read_replica.0);
        } else if p.preferred_read_replica.0 != -1 {
            return Err(field_not_in_version("preferred_read_replica", v));
        }
        let set_len = set.len_bytes();
        if self.flexible {
            put_uvarint(&mut self.buf, len_u32(set_len + 1)?);
        } else {
            self.buf.put_i32(len_i32(set_len)?);
        }
        if set_len > 0 {
            self.records_len_bytes += set_len;
            self.cuts.push((self.buf.len(), set));
        }
        if self.flexible {
            let diverging = p.diverging_epoch != Default::default();
            let leader = p.current_leader != Default::default();
            let snapshot = p.snapshot_id != Default::default();
            let known = usize::from(diverging) + usize::from(leader) + usize::from(snapshot);
            self.tagged_count(&p.unknown_tagged_fields, known)?;
            if diverging {
                self.tagged_struct(0, &p.diverging_epoch)?;
            }
            if leader {
                self.tagged_struct(1, &p.current_leader)?;
            }
            if snapshot {
                self.tagged_struct(2, &p.snapshot_id)?;
            }
            self.unknown_tagged(&p.unknown_tagged_fields, 3)?;
        }
        Ok(())
    }

    fn array_len(&mut self, len: usize) -> Result<(), ProtocolError> {
        if self.flexible {
            put_uvarint(&mut self.buf, len_u32(len + 1)?);
        } else {
            self.buf.put_i32(len_i32(len)?);
        }
        Ok(())
    }

    fn string(&mut self, s: &[u8]) -> Result<(), ProtocolError> {
        if self.flexible {
            put_uvarint(&mut self.buf, len_u32(s.len() + 1)?);
        } else {
            let len = i16::try_from(s.len())
                .map_err(|_| ProtocolError::Encode(format!("string of {} bytes", s.len())))?;
            self.buf.put_i16(len);
        }
        self.buf.put_slice(s);
        Ok(())
    }

    /// The tagged-field count as `kafka-protocol` writes it: every unknown field plus the
    /// known ones present.
    fn tagged_count(
        &mut self,
        unknown: &BTreeMap<i32, Bytes>,
        known_present: usize,
    ) -> Result<(), ProtocolError> {
        put_uvarint(&mut self.buf, len_u32(unknown.len() + known_present)?);
        Ok(())
    }

    fn tagged_struct<T: Encodable>(&mut self, tag: u32, value: &T) -> Result<(), ProtocolError> {
        let size = value.compute_size(self.version).map_err(encode_error)?;
        put_uvarint(&mut self.buf, tag);
        put_uvarint(&mut self.buf, len_u32(size)?);
        value
            .encode(&mut self.buf, self.version)
            .map_err(encode_error)
    }

    fn tagged_field(&mut self, tag: u32, field: &[u8]) -> Result<(), ProtocolError> {
        put_uvarint(&mut self.buf, tag);
        put_uvarint(&mut self.buf, len_u32(field.len())?);
        self.buf.put_slice(field);
        Ok(())
    }

    /// Unknown tagged fields from `first_tag` on, in tag order (as `kafka-protocol` does).
    fn unknown_tagged(
        &mut self,
        unknown: &BTreeMap<i32, Bytes>,
        first_tag: i32,
    ) -> Result<(), ProtocolError> {
        for (&tag, value) in unknown.range(first_tag..) {
            self.tagged_field(tag as u32, value)?;
        }
        Ok(())
    }
}

fn put_uvarint(buf: &mut BytesMut, mut value: u32) {
    while value >= 0x80 {
        buf.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

fn len_u32(len: usize) -> Result<u32, ProtocolError> {
    u32::try_from(len).map_err(|_| ProtocolError::Encode(format!("length {len} too large")))
}

fn len_i32(len: usize) -> Result<i32, ProtocolError> {
    i32::try_from(len).map_err(|_| ProtocolError::Encode(format!("length {len} too large")))
}

fn field_not_in_version(field: &str, version: i16) -> ProtocolError {
    ProtocolError::Encode(format!(
        "{field} is set but Fetch v{version} has no such field"
    ))
}

fn encode_error(error: impl std::fmt::Display) -> ProtocolError {
    ProtocolError::Encode(format!("{error:#}"))
}
