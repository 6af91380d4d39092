//! A bounds-checked cursor over untrusted bytes: every read states how much it needs
//! and fails instead of panicking when the bytes run out.

use crate::ProtocolError;

pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], ProtocolError> {
        if len > self.remaining() {
            return Err(truncated(what, len, self.remaining()));
        }
        let slice = &self.bytes[self.pos..self.pos + len];
        self.pos += len;
        Ok(slice)
    }

    pub(crate) fn skip(&mut self, len: usize, what: &str) -> Result<(), ProtocolError> {
        self.take(len, what).map(|_| ())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ProtocolError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn i8(&mut self, what: &str) -> Result<i8, ProtocolError> {
        Ok(i8::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i16(&mut self, what: &str) -> Result<i16, ProtocolError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i32(&mut self, what: &str) -> Result<i32, ProtocolError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    /// Kafka's unsigned varint: at most 5 bytes, the fifth without a continuation bit.
    /// Bits beyond 32 are dropped exactly as Kafka and `kafka-protocol` drop them, so
    /// both sides agree on every value this accepts.
    pub(crate) fn unsigned_varint(&mut self, what: &str) -> Result<u32, ProtocolError> {
        let mut value: u32 = 0;
        for index in 0..5u32 {
            let byte = self.array::<1>(what)?[0];
            value |= u32::from(byte & 0x7f).wrapping_shl(index * 7);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtocolError::Malformed(format!(
            "{what}: varint longer than 5 bytes"
        )))
    }
}

pub(crate) fn truncated(what: &str, needed: usize, remaining: usize) -> ProtocolError {
    ProtocolError::Malformed(format!("{what}: needs {needed} bytes, {remaining} remain"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_decode_like_kafka() {
        assert_eq!(Reader::new(&[0x00]).unsigned_varint("v"), Ok(0));
        assert_eq!(Reader::new(&[0x7f]).unsigned_varint("v"), Ok(127));
        assert_eq!(Reader::new(&[0x80, 0x01]).unsigned_varint("v"), Ok(128));
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]).unsigned_varint("v"),
            Ok(u32::MAX)
        );
        assert!(Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01])
            .unsigned_varint("v")
            .is_err());
        assert!(Reader::new(&[0x80]).unsigned_varint("v").is_err());
    }

    #[test]
    fn reads_past_the_end_fail() {
        let mut reader = Reader::new(&[1, 2, 3]);
        assert!(reader.i32("x").is_err());
        assert_eq!(reader.i16("x"), Ok(0x0102));
        assert!(reader.take(2, "x").is_err());
        assert_eq!(reader.remaining(), 1);
    }
}
