//! The primitive encodings of Kafka's generated message code that the share coordinator's
//! records use: big-endian integers, `string` with an i16 length, `uuid` as 16 bytes, and for
//! flexible versions unsigned varints, compact arrays and tagged-field sections.

use bytes::{BufMut, BytesMut};
use uuid::Uuid;

use super::records::ShareRecordError;

pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    /// Which buffer is being read, for the error: Kafka names it "key" or "value".
    buffer: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], buffer: &'static str) -> Self {
        Reader { bytes, buffer }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], ShareRecordError> {
        if self.bytes.len() < len {
            return Err(ShareRecordError::Truncated {
                buffer: self.buffer,
            });
        }
        let (head, tail) = self.bytes.split_at(len);
        self.bytes = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ShareRecordError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn i8(&mut self) -> Result<i8, ShareRecordError> {
        Ok(i8::from_be_bytes(self.array()?))
    }

    pub(crate) fn i16(&mut self) -> Result<i16, ShareRecordError> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    pub(crate) fn i32(&mut self) -> Result<i32, ShareRecordError> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, ShareRecordError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    pub(crate) fn uuid(&mut self) -> Result<Uuid, ShareRecordError> {
        Ok(Uuid::from_bytes(self.array()?))
    }

    /// A non-nullable `string` of a non-flexible version: i16 length, then UTF-8.
    pub(crate) fn string(&mut self, field: &'static str) -> Result<String, ShareRecordError> {
        let len = self.i16()?;
        let len = usize::try_from(len).map_err(|_| ShareRecordError::NullField { field })?;
        let raw = self.take(len)?;
        String::from_utf8(raw.to_vec()).map_err(|_| ShareRecordError::InvalidUtf8 { field })
    }

    /// Kafka's unsigned varint: seven bits a byte, least significant first, at most five bytes.
    pub(crate) fn uvarint(&mut self) -> Result<u32, ShareRecordError> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let [byte] = self.array::<1>()?;
            value |= u32::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ShareRecordError::VarintTooLong {
            buffer: self.buffer,
        })
    }

    /// The element count of a non-nullable compact array, checked against the bytes left so
    /// that a corrupt count cannot make the reader allocate more than the record holds.
    pub(crate) fn compact_array_len(
        &mut self,
        field: &'static str,
        element_bytes_min: usize,
    ) -> Result<usize, ShareRecordError> {
        let encoded = self.uvarint()?;
        let Some(count) = encoded.checked_sub(1) else {
            return Err(ShareRecordError::NullField { field });
        };
        let count = count as usize;
        if count.saturating_mul(element_bytes_min) > self.remaining() {
            return Err(ShareRecordError::ArrayTooLong {
                field,
                count,
                remaining: self.remaining(),
            });
        }
        Ok(count)
    }

    /// Reads a tagged-field section, handing each field to `on_field` with its tag and bytes;
    /// fields it does not know are skipped, as Kafka keeps them aside without reading them.
    pub(crate) fn tagged_fields(
        &mut self,
        mut on_field: impl FnMut(u32, &'a [u8]) -> Result<(), ShareRecordError>,
    ) -> Result<(), ShareRecordError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            let data = self.take(size)?;
            on_field(tag, data)?;
        }
        Ok(())
    }
}

pub(crate) fn put_uvarint(out: &mut BytesMut, mut value: u32) {
    while value >= 0x80 {
        out.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.put_u8(value as u8);
}

/// A `string` of a non-flexible version, at most i16::MAX bytes. The shard refuses to
/// initialize a share-partition whose group id is longer, so no record it writes holds one;
/// for any other caller the text is cut at the limit rather than written with a wrapped
/// length.
pub(crate) fn put_string(out: &mut BytesMut, value: &str) {
    let bytes = value.as_bytes();
    let len = bytes.len().min(i16::MAX as usize);
    out.put_i16(len as i16);
    out.put_slice(&bytes[..len]);
}

pub(crate) fn put_uuid(out: &mut BytesMut, value: &Uuid) {
    out.put_slice(value.as_bytes());
}

/// The length prefix of a compact array: its count plus one (zero is null).
pub(crate) fn put_compact_array_len(out: &mut BytesMut, count: usize) {
    let encoded = u32::try_from(count)
        .unwrap_or(u32::MAX - 1)
        .saturating_add(1);
    put_uvarint(out, encoded);
}
