//! The primitives that the generated codec (`codec_generated.rs`) is written in: Kafka's
//! wire types read from untrusted bytes with every length checked before anything is
//! allocated, and written back with every length checked against what its prefix can say.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::reader::{truncated, Reader};
use crate::ProtocolError;

/// Kafka refuses strings longer than `i16::MAX` bytes, compact ones included.
const MAX_STRING_BYTES: usize = 0x7fff;

/// A cursor over a request or response body. Strings and bytes are slices of the body
/// (no copy).
pub struct Decoder {
    bytes: Bytes,
    pos: usize,
}

impl Decoder {
    pub fn new(bytes: Bytes) -> Self {
        Decoder { bytes, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// Runs `read` on a bounds-checked reader over the rest of the body and advances past
    /// what it consumed.
    fn with_reader<T>(
        &mut self,
        read: impl FnOnce(&mut Reader<'_>) -> Result<T, ProtocolError>,
    ) -> Result<T, ProtocolError> {
        let mut reader = Reader::new(&self.bytes[self.pos..]);
        let value = read(&mut reader)?;
        self.pos += reader.position();
        Ok(value)
    }

    fn take(&mut self, len: usize, what: &str) -> Result<Bytes, ProtocolError> {
        if len > self.remaining() {
            return Err(truncated(what, len, self.remaining()));
        }
        let slice = self.bytes.slice(self.pos..self.pos + len);
        self.pos += len;
        Ok(slice)
    }

    fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ProtocolError> {
        let mut out = [0u8; N];
        out.copy_from_slice(&self.take(N, what)?);
        Ok(out)
    }

    pub fn bool(&mut self, what: &str) -> Result<bool, ProtocolError> {
        // Kafka reads any non-zero byte as true.
        Ok(self.fixed::<1>(what)?[0] != 0)
    }

    pub fn i8(&mut self, what: &str) -> Result<i8, ProtocolError> {
        Ok(i8::from_be_bytes(self.fixed(what)?))
    }

    pub fn i16(&mut self, what: &str) -> Result<i16, ProtocolError> {
        Ok(i16::from_be_bytes(self.fixed(what)?))
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, ProtocolError> {
        Ok(u16::from_be_bytes(self.fixed(what)?))
    }

    pub fn i32(&mut self, what: &str) -> Result<i32, ProtocolError> {
        Ok(i32::from_be_bytes(self.fixed(what)?))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, ProtocolError> {
        Ok(u32::from_be_bytes(self.fixed(what)?))
    }

    pub fn i64(&mut self, what: &str) -> Result<i64, ProtocolError> {
        Ok(i64::from_be_bytes(self.fixed(what)?))
    }

    pub fn f64(&mut self, what: &str) -> Result<f64, ProtocolError> {
        Ok(f64::from_be_bytes(self.fixed(what)?))
    }

    pub fn uuid(&mut self, what: &str) -> Result<Uuid, ProtocolError> {
        Ok(Uuid::from_bytes(self.fixed(what)?))
    }

    /// A length or count prefix: `i16`/`i32` (-1 is null), or in flexible versions an
    /// unsigned varint of length + 1 (0 is null). `None` is null.
    fn length(
        &mut self,
        flexible: bool,
        wide: bool,
        what: &str,
    ) -> Result<Option<usize>, ProtocolError> {
        let len: i64 = if flexible {
            i64::from(self.with_reader(|r| r.unsigned_varint(what))?) - 1
        } else if wide {
            i64::from(self.i32(what)?)
        } else {
            i64::from(self.i16(what)?)
        };
        match len {
            -1 => Ok(None),
            len if len < -1 => Err(ProtocolError::Malformed(format!(
                "{what}: negative length {len}"
            ))),
            len => usize::try_from(len)
                .map(Some)
                .map_err(|_| truncated(what, usize::MAX, self.remaining())),
        }
    }

    fn required<T>(value: Option<T>, what: &str) -> Result<T, ProtocolError> {
        value.ok_or_else(|| ProtocolError::Malformed(format!("{what}: non-nullable field is null")))
    }

    pub fn nullable_string(
        &mut self,
        flexible: bool,
        what: &str,
    ) -> Result<Option<StrBytes>, ProtocolError> {
        let Some(len) = self.length(flexible, false, what)? else {
            return Ok(None);
        };
        if len > MAX_STRING_BYTES {
            return Err(ProtocolError::Malformed(format!(
                "{what}: string of {len} bytes"
            )));
        }
        let bytes = self.take(len, what)?;
        StrBytes::from_utf8(bytes)
            .map(Some)
            .map_err(|_| ProtocolError::Malformed(format!("{what}: not UTF-8")))
    }

    pub fn string(&mut self, flexible: bool, what: &str) -> Result<StrBytes, ProtocolError> {
        let value = self.nullable_string(flexible, what)?;
        Self::required(value, what)
    }

    pub fn nullable_bytes(
        &mut self,
        flexible: bool,
        what: &str,
    ) -> Result<Option<Bytes>, ProtocolError> {
        match self.length(flexible, true, what)? {
            None => Ok(None),
            Some(len) => self.take(len, what).map(Some),
        }
    }

    pub fn bytes(&mut self, flexible: bool, what: &str) -> Result<Bytes, ProtocolError> {
        let value = self.nullable_bytes(flexible, what)?;
        Self::required(value, what)
    }

    pub fn nullable_array<T>(
        &mut self,
        flexible: bool,
        what: &str,
        mut element: impl FnMut(&mut Decoder) -> Result<T, ProtocolError>,
    ) -> Result<Option<Vec<T>>, ProtocolError> {
        let Some(count) = self.length(flexible, true, what)? else {
            return Ok(None);
        };
        // Every element takes at least one byte: a count beyond the bytes left is a lie,
        // and refusing it bounds what is reserved below.
        if count > self.remaining() {
            return Err(ProtocolError::Malformed(format!(
                "{what}: array of {count} elements in {} bytes",
                self.remaining()
            )));
        }
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            items.push(element(self)?);
        }
        Ok(Some(items))
    }

    pub fn array<T>(
        &mut self,
        flexible: bool,
        what: &str,
        element: impl FnMut(&mut Decoder) -> Result<T, ProtocolError>,
    ) -> Result<Vec<T>, ProtocolError> {
        let value = self.nullable_array(flexible, what, element)?;
        Self::required(value, what)
    }

    pub fn nullable_struct<T>(
        &mut self,
        what: &str,
        read: impl FnOnce(&mut Decoder) -> Result<T, ProtocolError>,
    ) -> Result<Option<T>, ProtocolError> {
        match self.i8(what)? {
            -1 => Ok(None),
            1 => read(self).map(Some),
            marker => Err(ProtocolError::Malformed(format!(
                "{what}: struct marker {marker}"
            ))),
        }
    }

    /// Skips a tagged-field section: none of the generated messages declares a tag, and
    /// unknown tags are ignored as Kafka ignores them.
    pub fn skip_tagged_fields(&mut self) -> Result<(), ProtocolError> {
        let count = self.with_reader(|r| r.unsigned_varint("tagged field count"))?;
        for _ in 0..count {
            self.with_reader(|r| r.unsigned_varint("tag"))?;
            let size = self.with_reader(|r| r.unsigned_varint("tagged field size"))?;
            self.take(size as usize, "tagged field")?;
        }
        Ok(())
    }
}

/// Writes a body into a buffer.
pub struct Encoder<'a> {
    buf: &'a mut BytesMut,
}

impl<'a> Encoder<'a> {
    pub fn new(buf: &'a mut BytesMut) -> Self {
        Encoder { buf }
    }

    pub fn bool(&mut self, value: bool) {
        self.buf.put_u8(u8::from(value));
    }

    pub fn i8(&mut self, value: i8) {
        self.buf.put_i8(value);
    }

    pub fn i16(&mut self, value: i16) {
        self.buf.put_i16(value);
    }

    pub fn u16(&mut self, value: u16) {
        self.buf.put_u16(value);
    }

    pub fn i32(&mut self, value: i32) {
        self.buf.put_i32(value);
    }

    pub fn u32(&mut self, value: u32) {
        self.buf.put_u32(value);
    }

    pub fn i64(&mut self, value: i64) {
        self.buf.put_i64(value);
    }

    pub fn f64(&mut self, value: f64) {
        self.buf.put_f64(value);
    }

    pub fn uuid(&mut self, value: Uuid) {
        self.buf.put_slice(value.as_bytes());
    }

    fn unsigned_varint(&mut self, mut value: u32) {
        while value >= 0x80 {
            self.buf.put_u8((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.buf.put_u8(value as u8);
    }

    /// A length prefix for `len` (`None`: null) in the classic or the compact form.
    fn length(
        &mut self,
        flexible: bool,
        wide: bool,
        len: Option<usize>,
        what: &str,
    ) -> Result<(), ProtocolError> {
        let limit = if wide {
            i32::MAX as usize - 1
        } else {
            MAX_STRING_BYTES
        };
        let too_long = || ProtocolError::Encode(format!("{what}: length beyond {limit}"));
        match (len, flexible) {
            (Some(len), _) if len > limit => return Err(too_long()),
            (None, true) => self.unsigned_varint(0),
            (Some(len), true) => self.unsigned_varint(len as u32 + 1),
            (None, false) if wide => self.buf.put_i32(-1),
            (None, false) => self.buf.put_i16(-1),
            (Some(len), false) if wide => self.buf.put_i32(len as i32),
            (Some(len), false) => self.buf.put_i16(len as i16),
        }
        Ok(())
    }

    pub fn nullable_string(
        &mut self,
        flexible: bool,
        value: Option<&StrBytes>,
        what: &str,
    ) -> Result<(), ProtocolError> {
        self.length(flexible, false, value.map(|v| v.len()), what)?;
        if let Some(value) = value {
            self.buf.put_slice(value.as_bytes());
        }
        Ok(())
    }

    pub fn string(
        &mut self,
        flexible: bool,
        value: &StrBytes,
        what: &str,
    ) -> Result<(), ProtocolError> {
        self.nullable_string(flexible, Some(value), what)
    }

    pub fn nullable_bytes(
        &mut self,
        flexible: bool,
        value: Option<&Bytes>,
        what: &str,
    ) -> Result<(), ProtocolError> {
        self.length(flexible, true, value.map(Bytes::len), what)?;
        if let Some(value) = value {
            self.buf.put_slice(value);
        }
        Ok(())
    }

    pub fn bytes(
        &mut self,
        flexible: bool,
        value: &Bytes,
        what: &str,
    ) -> Result<(), ProtocolError> {
        self.nullable_bytes(flexible, Some(value), what)
    }

    pub fn nullable_array<T>(
        &mut self,
        flexible: bool,
        items: Option<&[T]>,
        what: &str,
        mut element: impl FnMut(&mut Encoder<'a>, &T) -> Result<(), ProtocolError>,
    ) -> Result<(), ProtocolError> {
        self.length(flexible, true, items.map(<[T]>::len), what)?;
        for item in items.unwrap_or_default() {
            element(self, item)?;
        }
        Ok(())
    }

    pub fn array<T>(
        &mut self,
        flexible: bool,
        items: &[T],
        what: &str,
        element: impl FnMut(&mut Encoder<'a>, &T) -> Result<(), ProtocolError>,
    ) -> Result<(), ProtocolError> {
        self.nullable_array(flexible, Some(items), what, element)
    }

    pub fn nullable_struct<T>(
        &mut self,
        value: Option<&T>,
        write: impl FnOnce(&mut Encoder<'a>, &T) -> Result<(), ProtocolError>,
    ) -> Result<(), ProtocolError> {
        match value {
            None => {
                self.buf.put_i8(-1);
                Ok(())
            }
            Some(value) => {
                self.buf.put_i8(1);
                write(self, value)
            }
        }
    }

    pub fn empty_tagged_fields(&mut self) {
        self.unsigned_varint(0);
    }
}

/// A field that is nullable in some versions but not in the one being written.
pub fn non_null<'v, T>(value: Option<&'v T>, what: &str) -> Result<&'v T, ProtocolError> {
    value.ok_or_else(|| {
        ProtocolError::Encode(format!("{what} is null in a version where it cannot be"))
    })
}

/// A field set to something other than its default at a version that does not have it, in
/// the words of Kafka's own generated writers.
pub fn not_in_version(what: &str, version: i16) -> ProtocolError {
    ProtocolError::Encode(format!(
        "Attempted to write a non-default {what} at version {version}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_and_classic_lengths_round_trip() {
        for flexible in [false, true] {
            let mut buf = BytesMut::new();
            let mut e = Encoder::new(&mut buf);
            e.string(flexible, &StrBytes::from_static_str("héllo"), "s")
                .unwrap();
            e.nullable_string(flexible, None, "n").unwrap();
            e.array(flexible, &[7i32, 8], "a", |e, x| {
                e.i32(*x);
                Ok(())
            })
            .unwrap();
            e.nullable_bytes(flexible, Some(&Bytes::from_static(b"xy")), "b")
                .unwrap();
            let mut d = Decoder::new(buf.freeze());
            assert_eq!(d.string(flexible, "s").unwrap().as_str(), "héllo");
            assert_eq!(d.nullable_string(flexible, "n").unwrap(), None);
            assert_eq!(d.array(flexible, "a", |d| d.i32("x")).unwrap(), vec![7, 8]);
            assert_eq!(d.bytes(flexible, "b").unwrap(), Bytes::from_static(b"xy"));
            assert_eq!(d.remaining(), 0);
        }
    }

    #[test]
    fn lying_lengths_are_refused_before_allocating() {
        // 2^31-1 elements announced, four bytes follow.
        let mut d = Decoder::new(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]));
        assert!(matches!(
            d.array(false, "a", |d| d.i32("x")),
            Err(ProtocolError::Malformed(_))
        ));
        // A compact string of 2^32-2 bytes.
        let mut d = Decoder::new(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f]));
        assert!(d.string(true, "s").is_err());
        let mut d = Decoder::new(Bytes::from_static(&[0x00, 0x05, b'a']));
        assert!(d.string(false, "s").is_err());
        let mut d = Decoder::new(Bytes::from_static(&[0xff, 0xff]));
        assert!(
            d.string(false, "s").is_err(),
            "null where a string is required"
        );
        let mut d = Decoder::new(Bytes::from_static(&[0x00, 0x02, 0xc3, 0x28]));
        assert!(d.string(false, "s").is_err(), "invalid UTF-8");
    }

    #[test]
    fn null_where_the_version_forbids_it_is_an_encode_error() {
        assert!(matches!(
            non_null::<i32>(None, "Topics"),
            Err(ProtocolError::Encode(_))
        ));
    }
}
