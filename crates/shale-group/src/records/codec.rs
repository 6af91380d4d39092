//! Bounded readers and writers for Kafka's generated-message primitives (classic and compact
//! encodings). Every length is checked against the bytes that remain before anything is allocated.

use bytes::Bytes;

use super::RecordDecodeError;

pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, position: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    fn take(&mut self, count: usize) -> Result<&'a [u8], RecordDecodeError> {
        if count > self.remaining() {
            return Err(RecordDecodeError::Truncated);
        }
        let slice = &self.bytes[self.position..self.position + count];
        self.position += count;
        Ok(slice)
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], RecordDecodeError> {
        let mut array = [0u8; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    pub(crate) fn i16(&mut self) -> Result<i16, RecordDecodeError> {
        Ok(i16::from_be_bytes(self.take_array()?))
    }

    pub(crate) fn i32(&mut self) -> Result<i32, RecordDecodeError> {
        Ok(i32::from_be_bytes(self.take_array()?))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, RecordDecodeError> {
        Ok(i64::from_be_bytes(self.take_array()?))
    }

    pub(crate) fn unsigned_varint(&mut self) -> Result<u32, RecordDecodeError> {
        let mut value: u32 = 0;
        for shift in (0..35).step_by(7) {
            let byte = self.take(1)?[0];
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(RecordDecodeError::InvalidVarint)
    }

    /// A length that is `-1` for null, otherwise non-negative and at most what remains.
    fn length(&mut self, raw: i64) -> Result<Option<usize>, RecordDecodeError> {
        match raw {
            -1 => Ok(None),
            raw if raw < 0 => Err(RecordDecodeError::NegativeLength),
            raw => {
                let length = usize::try_from(raw).map_err(|_| RecordDecodeError::Truncated)?;
                if length > self.remaining() {
                    return Err(RecordDecodeError::Truncated);
                }
                Ok(Some(length))
            }
        }
    }

    fn string_of(&mut self, length: Option<usize>) -> Result<Option<String>, RecordDecodeError> {
        match length {
            None => Ok(None),
            Some(length) => {
                let raw = self.take(length)?;
                let text = std::str::from_utf8(raw).map_err(|_| RecordDecodeError::InvalidUtf8)?;
                Ok(Some(text.to_owned()))
            }
        }
    }

    fn string_length(&mut self, compact: bool) -> Result<Option<usize>, RecordDecodeError> {
        let raw = if compact {
            i64::from(self.unsigned_varint()?) - 1
        } else {
            i64::from(self.i16()?)
        };
        self.length(raw)
    }

    pub(crate) fn nullable_string(
        &mut self,
        compact: bool,
    ) -> Result<Option<String>, RecordDecodeError> {
        let length = self.string_length(compact)?;
        self.string_of(length)
    }

    pub(crate) fn string(&mut self, compact: bool) -> Result<String, RecordDecodeError> {
        self.nullable_string(compact)?
            .ok_or(RecordDecodeError::UnexpectedNull)
    }

    /// Bytes fields of the records are never null in Kafka's schemas; a null is read as empty.
    pub(crate) fn bytes(&mut self, compact: bool) -> Result<Bytes, RecordDecodeError> {
        let raw = if compact {
            i64::from(self.unsigned_varint()?) - 1
        } else {
            i64::from(self.i32()?)
        };
        match self.length(raw)? {
            None => Ok(Bytes::new()),
            Some(length) => Ok(Bytes::copy_from_slice(self.take(length)?)),
        }
    }

    /// An array length; each element takes at least `element_bytes_min` bytes, which bounds the
    /// count by the bytes that remain.
    pub(crate) fn array_length(
        &mut self,
        compact: bool,
        element_bytes_min: usize,
    ) -> Result<usize, RecordDecodeError> {
        let raw = if compact {
            i64::from(self.unsigned_varint()?) - 1
        } else {
            i64::from(self.i32()?)
        };
        if raw < 0 {
            return Err(RecordDecodeError::NegativeLength);
        }
        let count = usize::try_from(raw).map_err(|_| RecordDecodeError::Truncated)?;
        if count.saturating_mul(element_bytes_min.max(1)) > self.remaining() {
            return Err(RecordDecodeError::Truncated);
        }
        Ok(count)
    }

    /// Skips a flexible version's tagged-field section (no tagged fields are understood).
    pub(crate) fn skip_tagged_fields(&mut self) -> Result<(), RecordDecodeError> {
        let count = self.unsigned_varint()?;
        for _ in 0..count {
            let _tag = self.unsigned_varint()?;
            let size = self.unsigned_varint()?;
            let size = usize::try_from(size).map_err(|_| RecordDecodeError::Truncated)?;
            self.take(size)?;
        }
        Ok(())
    }
}

/// Writer for the non-flexible encodings Shale writes (the versions Kafka 4 writes too).
#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) bytes: Vec<u8>,
}

impl Writer {
    pub(crate) fn i16(&mut self, value: i16) {
        self.bytes.extend_from_slice(&value.to_be_bytes());
    }

    pub(crate) fn i32(&mut self, value: i32) {
        self.bytes.extend_from_slice(&value.to_be_bytes());
    }

    pub(crate) fn i64(&mut self, value: i64) {
        self.bytes.extend_from_slice(&value.to_be_bytes());
    }

    /// Strings longer than `i16::MAX` bytes cannot be encoded; they are truncated at a character
    /// boundary. Callers validate lengths earlier (group ids, topics and metadata are bounded).
    pub(crate) fn nullable_string(&mut self, value: Option<&str>) {
        match value {
            None => self.i16(-1),
            Some(text) => {
                let mut end = text.len().min(i16::MAX as usize);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                self.i16(end as i16);
                self.bytes.extend_from_slice(&text.as_bytes()[..end]);
            }
        }
    }

    pub(crate) fn string(&mut self, value: &str) {
        self.nullable_string(Some(value));
    }

    pub(crate) fn bytes(&mut self, value: &[u8]) {
        let length = i32::try_from(value.len()).unwrap_or(i32::MAX);
        self.i32(length);
        self.bytes.extend_from_slice(&value[..length as usize]);
    }
}

impl Reader<'_> {
    pub(crate) fn i8(&mut self) -> Result<i8, RecordDecodeError> {
        Ok(i8::from_be_bytes(self.take_array()?))
    }

    pub(crate) fn uuid(&mut self) -> Result<uuid::Uuid, RecordDecodeError> {
        Ok(uuid::Uuid::from_bytes(self.take_array()?))
    }

    /// A flexible version's tagged fields, each handed to `on_field(tag, bytes)`.
    pub(crate) fn tagged_fields(
        &mut self,
        mut on_field: impl FnMut(u32, &[u8]) -> Result<(), RecordDecodeError>,
    ) -> Result<(), RecordDecodeError> {
        let count = self.unsigned_varint()?;
        for _ in 0..count {
            let tag = self.unsigned_varint()?;
            let size = self.unsigned_varint()?;
            let size = usize::try_from(size).map_err(|_| RecordDecodeError::Truncated)?;
            on_field(tag, self.take(size)?)?;
        }
        Ok(())
    }
}

/// Writer for the flexible (compact) encodings of the consumer group records' values.
#[derive(Default)]
pub(crate) struct CompactWriter {
    pub(crate) bytes: Vec<u8>,
}

impl CompactWriter {
    pub(crate) fn i8(&mut self, value: i8) {
        self.bytes.extend_from_slice(&value.to_be_bytes());
    }

    pub(crate) fn i16(&mut self, value: i16) {
        self.bytes.extend_from_slice(&value.to_be_bytes());
    }

    pub(crate) fn i32(&mut self, value: i32) {
        self.bytes.extend_from_slice(&value.to_be_bytes());
    }

    pub(crate) fn i64(&mut self, value: i64) {
        self.bytes.extend_from_slice(&value.to_be_bytes());
    }

    pub(crate) fn uuid(&mut self, value: &uuid::Uuid) {
        self.bytes.extend_from_slice(value.as_bytes());
    }

    pub(crate) fn unsigned_varint(&mut self, mut value: u32) {
        while value >= 0x80 {
            self.bytes.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.bytes.push(value as u8);
    }

    /// A compact length: the length plus one (zero is null).
    pub(crate) fn length(&mut self, length: usize) {
        self.unsigned_varint(u32::try_from(length).unwrap_or(u32::MAX - 1) + 1);
    }

    pub(crate) fn nullable_string(&mut self, value: Option<&str>) {
        match value {
            None => self.unsigned_varint(0),
            Some(text) => {
                self.length(text.len());
                self.bytes.extend_from_slice(text.as_bytes());
            }
        }
    }

    pub(crate) fn string(&mut self, value: &str) {
        self.nullable_string(Some(value));
    }

    /// A tagged-field section with the given `(tag, bytes)` fields, in tag order.
    pub(crate) fn tagged_fields(&mut self, fields: &[(u32, Vec<u8>)]) {
        self.unsigned_varint(u32::try_from(fields.len()).unwrap_or(u32::MAX));
        for (tag, bytes) in fields {
            self.unsigned_varint(*tag);
            self.unsigned_varint(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
            self.bytes.extend_from_slice(bytes);
        }
    }
}
