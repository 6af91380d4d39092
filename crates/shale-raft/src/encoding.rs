//! The versioned binary encoding of everything Shale persists or sends about its metadata
//! quorum: Raft log entries, votes, snapshots, the Raft wire, and (through shale-metadata)
//! metadata records and forwarded controller requests.
//!
//! Modelled on Kafka's metadata records with tagged fields:
//! - integers of fixed width are big-endian; lengths, counts, kinds, versions and tags are
//!   unsigned LEB128 varints;
//! - every struct is `[version varint][fields of that version][tagged fields]`, where the
//!   tagged fields are `[count varint]` then `[tag varint][length varint][bytes]` each. A reader
//!   skips tags it does not know, so a field added as a tag needs no new version and older
//!   readers ignore it; a change to the fixed fields takes a new version, which older readers
//!   refuse with [`DecodeError::UnknownVersion`];
//! - an enum is `[kind varint]` followed by the variant as a struct (so every kind carries its
//!   own version and tags);
//! - `Option` is a `0`/`1` byte then the value, `Result` a `0` (ok) / `1` (err) byte, sequences
//!   and maps a count then their items.
//!
//! Decoding is total: every length is checked against the bytes that remain before anything is
//! allocated or read, so truncated or garbage input is an error, never a panic or a large
//! allocation.
//!
//! Today every type is at version 0 with no tagged fields.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("truncated input: {what} needs {needed} bytes, {remaining} remain")]
    Truncated {
        what: &'static str,
        needed: u64,
        remaining: usize,
    },
    #[error("{type_name} version {version} is newer than this build reads (up to {max})")]
    UnknownVersion {
        type_name: &'static str,
        version: u64,
        max: u64,
    },
    #[error("unknown {type_name} kind {kind}")]
    UnknownKind { type_name: &'static str, kind: u64 },
    #[error("invalid {0}")]
    Invalid(&'static str),
    #[error("{0} bytes left over after the value")]
    TrailingBytes(usize),
}

/// A value with a versioned encoding.
pub trait Encode {
    fn encode(&self, out: &mut Vec<u8>);
}

/// A value that decodes from its versioned encoding.
pub trait Decode: Sized {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

/// Encodes one value into a new buffer.
pub fn to_vec<T: Encode + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    value.encode(&mut out);
    out
}

/// Decodes one value that must fill `bytes` exactly.
pub fn from_slice<T: Decode>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut reader = Reader::new(bytes);
    let value = T::decode(&mut reader)?;
    reader.finish()?;
    Ok(value)
}

/// Appends `value` as an unsigned LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a length or count.
pub fn put_len(out: &mut Vec<u8>, len: usize) {
    put_varint(out, len as u64);
}

/// Appends length-prefixed bytes in one copy: the encoding of `Vec<u8>` and `[u8]`.
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// Starts a struct at `version`.
pub fn begin_struct(out: &mut Vec<u8>, version: u64) {
    put_varint(out, version);
}

/// Ends a struct that has no tagged fields to write.
pub fn end_struct(out: &mut Vec<u8>) {
    put_varint(out, 0);
}

/// Writes one struct at version 0 whose fields `fields` writes, with no tagged fields: for types
/// the macros below cannot name the fields of.
pub fn encode_struct(out: &mut Vec<u8>, fields: impl FnOnce(&mut Vec<u8>)) {
    begin_struct(out, 0);
    fields(out);
    end_struct(out);
}

/// Writes one enum variant: its kind, then the variant as a struct.
pub fn encode_variant(out: &mut Vec<u8>, kind: u64, fields: impl FnOnce(&mut Vec<u8>)) {
    put_varint(out, kind);
    encode_struct(out, fields);
}

/// Reads a struct written by [`encode_struct`] (version 0, unknown tags skipped).
pub fn decode_struct<T>(
    reader: &mut Reader<'_>,
    type_name: &'static str,
    fields: impl FnOnce(&mut Reader<'_>) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    reader.struct_version(type_name, 0)?;
    let value = fields(reader)?;
    reader.skip_tagged_fields()?;
    Ok(value)
}

/// Shorthand for `T::decode`, for hand-written decoders.
pub fn get<T: Decode>(reader: &mut Reader<'_>) -> Result<T, DecodeError> {
    T::decode(reader)
}

/// A cursor over bytes being decoded.
#[derive(Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Ends decoding: an error if bytes are left over.
    pub fn finish(self) -> Result<(), DecodeError> {
        match self.rest.len() {
            0 => Ok(()),
            left => Err(DecodeError::TrailingBytes(left)),
        }
    }

    pub fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if len > self.rest.len() {
            return Err(DecodeError::Truncated {
                what,
                needed: len as u64,
                remaining: self.rest.len(),
            });
        }
        let (head, tail) = self.rest.split_at(len);
        self.rest = tail;
        Ok(head)
    }

    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>("a byte")?[0])
    }

    /// A length-prefixed byte string, copied in one step (the encoding of `Vec<u8>`).
    pub fn byte_vec(&mut self) -> Result<Vec<u8>, DecodeError> {
        let len = self.len("bytes")?;
        Ok(self.take(len, "bytes")?.to_vec())
    }

    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for position in 0..10 {
            let byte = self.u8().map_err(|_| DecodeError::Truncated {
                what: "a varint",
                needed: position + 1,
                remaining: 0,
            })?;
            if position == 9 && byte > 1 {
                return Err(DecodeError::Invalid("varint longer than 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << (7 * position);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::Invalid("varint longer than 64 bits"))
    }

    /// A length or count, which can never exceed the bytes that remain (every item takes at
    /// least one byte).
    pub fn len(&mut self, what: &'static str) -> Result<usize, DecodeError> {
        let len = self.varint()?;
        if len > self.rest.len() as u64 {
            return Err(DecodeError::Truncated {
                what,
                needed: len,
                remaining: self.rest.len(),
            });
        }
        Ok(len as usize)
    }

    /// Reads a struct's version; refuses one above `max`.
    pub fn struct_version(
        &mut self,
        type_name: &'static str,
        max: u64,
    ) -> Result<u64, DecodeError> {
        let version = self.varint()?;
        if version > max {
            return Err(DecodeError::UnknownVersion {
                type_name,
                version,
                max,
            });
        }
        Ok(version)
    }

    /// Skips a struct's tagged fields (none is known yet to any type).
    pub fn skip_tagged_fields(&mut self) -> Result<(), DecodeError> {
        let count = self.len("tagged fields")?;
        for _ in 0..count {
            let _tag = self.varint()?;
            let len = self.len("a tagged field")?;
            self.take(len, "a tagged field")?;
        }
        Ok(())
    }
}

/// Preallocation for `count` decoded items: bounded, the vector grows as items actually decode.
fn capacity(count: usize) -> usize {
    count.min(1024)
}

macro_rules! fixed_int {
    ($($ty:ty),*) => {$(
        impl Encode for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }
        }
        impl Decode for $ty {
            fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
                Ok(<$ty>::from_be_bytes(reader.array(stringify!($ty))?))
            }
        }
    )*};
}

fixed_int!(u8, i8, u16, i16, u32, i32, u64, i64);

impl Encode for f64 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.to_bits().encode(out);
    }
}

impl Decode for f64 {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(f64::from_bits(u64::decode(reader)?))
    }
}

impl Encode for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

impl Decode for bool {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match reader.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError::Invalid("boolean")),
        }
    }
}

impl Encode for str {
    fn encode(&self, out: &mut Vec<u8>) {
        put_len(out, self.len());
        out.extend_from_slice(self.as_bytes());
    }
}

impl Encode for String {
    fn encode(&self, out: &mut Vec<u8>) {
        self.as_str().encode(out);
    }
}

impl Decode for String {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = reader.len("a string")?;
        let bytes = reader.take(len, "a string")?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| DecodeError::Invalid("UTF-8 string"))
    }
}

impl Encode for Bytes {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, self);
    }
}

impl Decode for Bytes {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = reader.len("bytes")?;
        Ok(Bytes::copy_from_slice(reader.take(len, "bytes")?))
    }
}

impl Encode for uuid::Uuid {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
}

impl Decode for uuid::Uuid {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(uuid::Uuid::from_bytes(reader.array("a uuid")?))
    }
}

/// Items of a sequence. A `Vec<u8>` is a sequence of one-byte items, so it encodes exactly as
/// [`put_bytes`] writes it.
impl<T: Encode> Encode for [T] {
    fn encode(&self, out: &mut Vec<u8>) {
        put_len(out, self.len());
        for item in self {
            item.encode(out);
        }
    }
}

impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.as_slice().encode(out);
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let count = reader.len("a sequence")?;
        let mut items = Vec::with_capacity(capacity(count));
        for _ in 0..count {
            items.push(T::decode(reader)?);
        }
        Ok(items)
    }
}

impl<T: Encode> Encode for BTreeSet<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        put_len(out, self.len());
        for item in self {
            item.encode(out);
        }
    }
}

impl<T: Decode + Ord> Decode for BTreeSet<T> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let count = reader.len("a set")?;
        let mut items = BTreeSet::new();
        for _ in 0..count {
            items.insert(T::decode(reader)?);
        }
        Ok(items)
    }
}

impl<K: Encode, V: Encode> Encode for BTreeMap<K, V> {
    fn encode(&self, out: &mut Vec<u8>) {
        put_len(out, self.len());
        for (key, value) in self {
            key.encode(out);
            value.encode(out);
        }
    }
}

impl<K: Decode + Ord, V: Decode> Decode for BTreeMap<K, V> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let count = reader.len("a map")?;
        let mut items = BTreeMap::new();
        for _ in 0..count {
            let key = K::decode(reader)?;
            items.insert(key, V::decode(reader)?);
        }
        Ok(items)
    }
}

impl<T: Encode> Encode for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(value) => {
                out.push(1);
                value.encode(out);
            }
        }
    }
}

impl<T: Decode> Decode for Option<T> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match reader.u8()? {
            0 => Ok(None),
            1 => Ok(Some(T::decode(reader)?)),
            _ => Err(DecodeError::Invalid("option marker")),
        }
    }
}

impl<T: Encode, E: Encode> Encode for Result<T, E> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Ok(value) => {
                out.push(0);
                value.encode(out);
            }
            Err(err) => {
                out.push(1);
                err.encode(out);
            }
        }
    }
}

impl<T: Decode, E: Decode> Decode for Result<T, E> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match reader.u8()? {
            0 => Ok(Ok(T::decode(reader)?)),
            1 => Ok(Err(E::decode(reader)?)),
            _ => Err(DecodeError::Invalid("result marker")),
        }
    }
}

impl<A: Encode, B: Encode> Encode for (A, B) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
    }
}

impl<A: Decode, B: Decode> Decode for (A, B) {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let a = A::decode(reader)?;
        Ok((a, B::decode(reader)?))
    }
}

/// Nothing: the ok side of a `Result<(), E>`.
impl Encode for () {
    fn encode(&self, _out: &mut Vec<u8>) {}
}

impl Decode for () {
    fn decode(_reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(())
    }
}

impl<T: Encode + ?Sized> Encode for &T {
    fn encode(&self, out: &mut Vec<u8>) {
        (**self).encode(out);
    }
}

/// Implements [`Encode`] and [`Decode`] for a struct with named fields, at version 0 with no
/// tagged fields: `versioned_struct!(Endpoint { name, host, port })`. Fields are written in the
/// order listed, which is the wire order.
#[macro_export]
macro_rules! versioned_struct {
    ($ty:ident { $($field:ident),* $(,)? }) => {
        impl $crate::encoding::Encode for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                $crate::encoding::begin_struct(out, 0);
                $( $crate::encoding::Encode::encode(&self.$field, out); )*
                $crate::encoding::end_struct(out);
            }
        }
        impl $crate::encoding::Decode for $ty {
            fn decode(
                reader: &mut $crate::encoding::Reader<'_>,
            ) -> Result<Self, $crate::encoding::DecodeError> {
                reader.struct_version(stringify!($ty), 0)?;
                let value = Self {
                    $( $field: $crate::encoding::Decode::decode(reader)?, )*
                };
                reader.skip_tagged_fields()?;
                Ok(value)
            }
        }
    };
}

/// Implements [`Encode`] and [`Decode`] for an enum: each variant gets a fixed kind number and
/// is encoded as a struct at version 0. Variants are written `3 => Name { field, .. }`,
/// `4 => Name(binding, ..)` or `5 => Name`. Kind numbers are never reused.
#[macro_export]
macro_rules! versioned_enum {
    ($ty:ident {
        $( $kind:literal => $variant:ident
            $( { $($field:ident),* $(,)? } )?
            $( ( $($binding:ident),* $(,)? ) )?
        ),* $(,)?
    }) => {
        impl $crate::encoding::Encode for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                match self {
                    $(
                        Self::$variant $( { $($field),* } )? $( ( $($binding),* ) )? => {
                            $crate::encoding::put_varint(out, $kind);
                            $crate::encoding::begin_struct(out, 0);
                            $( $( $crate::encoding::Encode::encode($field, out); )* )?
                            $( $( $crate::encoding::Encode::encode($binding, out); )* )?
                            $crate::encoding::end_struct(out);
                        }
                    )*
                }
            }
        }
        impl $crate::encoding::Decode for $ty {
            fn decode(
                reader: &mut $crate::encoding::Reader<'_>,
            ) -> Result<Self, $crate::encoding::DecodeError> {
                let kind = reader.varint()?;
                let value = match kind {
                    $(
                        $kind => {
                            reader.struct_version(
                                concat!(stringify!($ty), "::", stringify!($variant)),
                                0,
                            )?;
                            Self::$variant
                                $( { $( $field: $crate::encoding::Decode::decode(reader)? ),* } )?
                                $( ( $( {
                                    let $binding = $crate::encoding::Decode::decode(reader)?;
                                    $binding
                                } ),* ) )?
                        }
                    )*
                    other => {
                        return Err($crate::encoding::DecodeError::UnknownKind {
                            type_name: stringify!($ty),
                            kind: other,
                        })
                    }
                };
                reader.skip_tagged_fields()?;
                Ok(value)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Sample {
        id: i32,
        name: String,
        tags: Vec<String>,
        extra: Option<Bytes>,
    }
    crate::versioned_struct!(Sample {
        id,
        name,
        tags,
        extra
    });

    #[derive(Debug, Clone, PartialEq)]
    enum Shape {
        Empty,
        Pair(i64, bool),
        Named { x: u16, inner: Sample },
    }
    crate::versioned_enum!(Shape {
        0 => Empty,
        1 => Pair(a, b),
        2 => Named { x, inner },
    });

    fn sample() -> Sample {
        Sample {
            id: -7,
            name: "é".into(),
            tags: vec!["a".into(), String::new()],
            extra: Some(Bytes::from_static(b"xyz")),
        }
    }

    #[test]
    fn values_round_trip_and_the_layout_is_stable() {
        let bytes = to_vec(&sample());
        let expected: Vec<u8> = vec![
            0, // version
            0xff, 0xff, 0xff, 0xf9, // id
            2, 0xc3, 0xa9, // name
            2, 1, b'a', 0, // tags
            1, 3, b'x', b'y', b'z', // extra
            0,    // no tagged fields
        ];
        assert_eq!(bytes, expected);
        assert_eq!(from_slice::<Sample>(&bytes).unwrap(), sample());
        for shape in [
            Shape::Empty,
            Shape::Pair(i64::MIN, true),
            Shape::Named {
                x: 9,
                inner: sample(),
            },
        ] {
            assert_eq!(from_slice::<Shape>(&to_vec(&shape)).unwrap(), shape);
        }
        assert_eq!(to_vec(&Shape::Empty), vec![0, 0, 0]);
    }

    #[test]
    fn unknown_tagged_fields_are_skipped_and_newer_versions_refused() {
        let mut bytes = to_vec(&sample());
        bytes.pop();
        // Two tagged fields a newer writer added.
        bytes.extend_from_slice(&[2, 0, 3, 1, 2, 3, 7, 0]);
        assert_eq!(from_slice::<Sample>(&bytes).unwrap(), sample());
        let mut newer = to_vec(&sample());
        newer[0] = 1;
        assert!(matches!(
            from_slice::<Sample>(&newer),
            Err(DecodeError::UnknownVersion { version: 1, .. })
        ));
        assert!(matches!(
            from_slice::<Shape>(&[9, 0, 0]),
            Err(DecodeError::UnknownKind { kind: 9, .. })
        ));
    }

    #[test]
    fn garbage_and_truncation_are_errors() {
        let bytes = to_vec(&sample());
        for cut in 0..bytes.len() {
            assert!(from_slice::<Sample>(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert_eq!(
            from_slice::<Sample>(&trailing),
            Err(DecodeError::TrailingBytes(1))
        );
        // A huge count is refused before anything is allocated.
        assert!(from_slice::<Vec<String>>(&[0xff; 16]).is_err());
        assert!(from_slice::<Vec<u64>>(&[0x80, 0x80, 0x80, 0x80, 0x01]).is_err());
        assert!(from_slice::<u64>(&[1, 2]).is_err());
        assert!(from_slice::<bool>(&[2]).is_err());
        assert!(from_slice::<String>(&[2, 0xff, 0xfe]).is_err());
        assert!(from_slice::<u64>(&[0xff; 11][..]).is_err());
        assert_eq!(
            from_slice::<Vec<String>>(&to_vec(&vec!["a".to_string()])).unwrap(),
            vec!["a".to_string()]
        );
    }

    #[test]
    fn varints_cover_the_whole_range() {
        for value in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            let mut reader = Reader::new(&out);
            assert_eq!(reader.varint().unwrap(), value);
            reader.finish().unwrap();
        }
    }
}
