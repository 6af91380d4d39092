//! Reading what the first releases wrote with bincode 1.3, so their data directories open and
//! are carried over to the versioned encoding (`encoding`). Only reading: nothing writes this
//! layout any more.
//!
//! Every site used bincode's fixed-width options (`bincode::serialize`, or `DefaultOptions`
//! with `with_fixint_encoding`): integers little-endian at their full width, `bool` one byte,
//! lengths of strings, byte strings, sequences and maps as u64, `Option` a one-byte tag,
//! enum variants a u32 index, structs and tuples their fields in order with nothing around
//! them, and a `Uuid` as a 16-byte byte string (length, then bytes).

use crate::encoding::DecodeError;

/// A cursor over bincode bytes.
#[derive(Debug)]
pub struct LegacyReader<'a> {
    rest: &'a [u8],
}

impl<'a> LegacyReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        LegacyReader { rest: bytes }
    }

    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    pub fn finish(self) -> Result<(), DecodeError> {
        match self.rest.len() {
            0 => Ok(()),
            left => Err(DecodeError::TrailingBytes(left)),
        }
    }

    pub fn take(&mut self, len: u64, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if len > self.rest.len() as u64 {
            return Err(DecodeError::Truncated {
                what,
                needed: len,
                remaining: self.rest.len(),
            });
        }
        let (head, tail) = self.rest.split_at(len as usize);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N as u64, what)?);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>("a byte")?[0])
    }

    pub fn i8(&mut self) -> Result<i8, DecodeError> {
        Ok(i8::from_le_bytes(self.array("an i8")?))
    }

    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array("a u16")?))
    }

    pub fn i16(&mut self) -> Result<i16, DecodeError> {
        Ok(i16::from_le_bytes(self.array("an i16")?))
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array("a u32")?))
    }

    pub fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_le_bytes(self.array("an i32")?))
    }

    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array("a u64")?))
    }

    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array("an i64")?))
    }

    pub fn f64(&mut self) -> Result<f64, DecodeError> {
        Ok(f64::from_le_bytes(self.array("an f64")?))
    }

    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError::Invalid("boolean")),
        }
    }

    /// The u32 index of an enum variant.
    pub fn variant(&mut self) -> Result<u32, DecodeError> {
        self.u32()
    }

    /// A sequence or map length; never more than the bytes that remain, since every item
    /// takes at least one byte.
    pub fn len(&mut self, what: &'static str) -> Result<usize, DecodeError> {
        let len = self.u64()?;
        if len > self.rest.len() as u64 {
            return Err(DecodeError::Truncated {
                what,
                needed: len,
                remaining: self.rest.len(),
            });
        }
        Ok(len as usize)
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.u64()?;
        self.take(len, "a byte string")
    }

    pub fn string(&mut self) -> Result<String, DecodeError> {
        std::str::from_utf8(self.bytes()?)
            .map(str::to_owned)
            .map_err(|_| DecodeError::Invalid("UTF-8 string"))
    }

    pub fn uuid(&mut self) -> Result<uuid::Uuid, DecodeError> {
        let bytes = self.bytes()?;
        uuid::Uuid::from_slice(bytes).map_err(|_| DecodeError::Invalid("uuid"))
    }

    /// `Option<T>`: a tag byte, then the value.
    pub fn option<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Option<T>, DecodeError> {
        match self.u8()? {
            0 => Ok(None),
            1 => read(self).map(Some),
            _ => Err(DecodeError::Invalid("option tag")),
        }
    }

    /// `Vec<T>` (also sets and maps, as their items in order).
    pub fn seq<T>(
        &mut self,
        mut read: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let count = self.len("a sequence")?;
        let mut items = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            items.push(read(self)?);
        }
        Ok(items)
    }

    pub fn i32s(&mut self) -> Result<Vec<i32>, DecodeError> {
        self.seq(Self::i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bincode_fixint_layouts_and_refuses_short_input() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&2u64.to_le_bytes());
        bytes.extend_from_slice(&(-3i32).to_le_bytes());
        bytes.extend_from_slice(&4i32.to_le_bytes());
        bytes.extend_from_slice(&[1]);
        bytes.extend_from_slice(&1u64.to_le_bytes());
        bytes.push(b'x');
        let mut reader = LegacyReader::new(&bytes);
        assert_eq!(reader.i32s().unwrap(), vec![-3, 4]);
        assert_eq!(
            reader.option(LegacyReader::string).unwrap(),
            Some("x".into())
        );
        reader.finish().unwrap();
        for cut in 0..bytes.len() {
            let mut reader = LegacyReader::new(&bytes[..cut]);
            let read = reader
                .i32s()
                .and_then(|_| reader.option(LegacyReader::string));
            assert!(read.is_err(), "cut at {cut}");
        }
        let mut huge = LegacyReader::new(&[0xff; 12]);
        assert!(huge.i32s().is_err());
    }
}
