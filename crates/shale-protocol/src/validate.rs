//! The schema-driven request validator: walks a request body exactly as Kafka's spec
//! lays it out and checks that every declared length and count fits in the bytes that
//! remain, before `kafka-protocol` (which trusts declared lengths) sees the body.

use crate::reader::{truncated, Reader};
use crate::schema::{
    min_encoded_bytes, request_spec, response_spec, Field, FieldType, MessageSpec,
};
use crate::ProtocolError;

/// Kafka refuses strings longer than `i16::MAX` bytes, compact ones included.
const MAX_STRING_BYTES: usize = 0x7fff;
/// A tagged field is at least a one-byte tag and a one-byte size.
const MIN_TAGGED_FIELD_BYTES: usize = 2;

#[derive(Clone, Copy)]
struct Walk {
    version: i16,
    flexible: bool,
}

/// Checks that `body` is a well-formed request body for `api_key` at `api_version`
/// according to Kafka 4.4's message spec. Accepting a body guarantees that decoding it
/// never reserves more elements than there are bytes left to hold them.
///
/// Trailing bytes after the last field are tolerated, as Kafka tolerates them.
pub fn validate_request_body(
    api_key: i16,
    api_version: i16,
    body: &[u8],
) -> Result<(), ProtocolError> {
    validate_body(request_spec(api_key), api_key, api_version, body)
}

/// The same check for a response body (responses from peers are untrusted as well).
pub fn validate_response_body(
    api_key: i16,
    api_version: i16,
    body: &[u8],
) -> Result<(), ProtocolError> {
    validate_body(response_spec(api_key), api_key, api_version, body)
}

fn validate_body(
    spec: Option<&MessageSpec>,
    api_key: i16,
    api_version: i16,
    body: &[u8],
) -> Result<(), ProtocolError> {
    let unsupported = ProtocolError::UnsupportedVersion {
        api_key,
        api_version,
    };
    let spec = spec.ok_or(unsupported.clone())?;
    if !spec.valid.contains(api_version) {
        return Err(unsupported);
    }
    let walk = Walk {
        version: api_version,
        flexible: spec.flexible.contains(api_version),
    };
    let mut reader = Reader::new(body);
    walk_struct(&mut reader, spec.fields, walk).map_err(|error| match error {
        ProtocolError::Malformed(detail) => {
            ProtocolError::Malformed(format!("{} v{api_version}: {detail}", spec.name))
        }
        other => other,
    })
}

fn walk_struct(reader: &mut Reader<'_>, fields: &[Field], walk: Walk) -> Result<(), ProtocolError> {
    for field in fields
        .iter()
        .filter(|field| field.is_regular_in(walk.version))
    {
        walk_value(
            reader,
            &field.ty,
            field.nullable.contains(walk.version),
            walk,
            field.name,
        )?;
    }
    if walk.flexible {
        walk_tagged_fields(reader, fields, walk)?;
    }
    Ok(())
}

fn walk_tagged_fields(
    reader: &mut Reader<'_>,
    fields: &[Field],
    walk: Walk,
) -> Result<(), ProtocolError> {
    let count = reader.unsigned_varint("tagged field count")? as usize;
    if count.saturating_mul(MIN_TAGGED_FIELD_BYTES) > reader.remaining() {
        return Err(ProtocolError::Malformed(format!(
            "{count} tagged fields cannot fit in {} bytes",
            reader.remaining()
        )));
    }
    for _ in 0..count {
        let tag = reader.unsigned_varint("tag")?;
        // Tags are non-negative Java ints; kafka-protocol keys unknown ones by i32, and
        // a larger tag would turn negative there and re-encode as garbage.
        if tag > i32::MAX as u32 {
            return Err(ProtocolError::Malformed(format!(
                "tag {tag} above i32::MAX"
            )));
        }
        let size = reader.unsigned_varint("tagged field size")? as usize;
        let value = reader.take(size, "tagged field")?;
        let known = fields.iter().find(|field| {
            field.is_tagged_in(walk.version) && field.tag.as_ref().is_some_and(|t| t.id == tag)
        });
        // Unknown tags are skipped, as Kafka skips them.
        if let Some(field) = known {
            // kafka-protocol decodes a known tagged field from the stream without looking
            // at its size, so the value must fill its declared size exactly.
            let mut value_reader = Reader::new(value);
            walk_value(
                &mut value_reader,
                &field.ty,
                field.nullable.contains(walk.version),
                walk,
                field.name,
            )?;
            if value_reader.remaining() != 0 {
                return Err(ProtocolError::Malformed(format!(
                    "tagged field {}: {} bytes declared, {} used",
                    field.name,
                    size,
                    value_reader.position()
                )));
            }
        }
    }
    Ok(())
}

fn walk_value(
    reader: &mut Reader<'_>,
    ty: &FieldType,
    nullable: bool,
    walk: Walk,
    name: &str,
) -> Result<(), ProtocolError> {
    match ty {
        FieldType::Bool | FieldType::Int8 => reader.skip(1, name),
        FieldType::Int16 | FieldType::Uint16 => reader.skip(2, name),
        FieldType::Int32 | FieldType::Uint32 => reader.skip(4, name),
        FieldType::Int64 | FieldType::Float64 => reader.skip(8, name),
        FieldType::Uuid => reader.skip(16, name),
        FieldType::String => {
            let Some(len) = read_length(reader, walk, nullable, name, Width::Int16)? else {
                return Ok(());
            };
            if len > MAX_STRING_BYTES {
                return Err(ProtocolError::Malformed(format!(
                    "{name}: string of {len} bytes"
                )));
            }
            reader.skip(len, name)
        }
        FieldType::Bytes | FieldType::Records => {
            let Some(len) = read_length(reader, walk, nullable, name, Width::Int32)? else {
                return Ok(());
            };
            reader.skip(len, name)
        }
        FieldType::Struct(fields) => {
            if nullable {
                // kafka-protocol reads any marker other than 1 as null while Kafka reads
                // only negative markers as null; accepting just -1 and 1 keeps both
                // decoders on the same path.
                match reader.i8(name)? {
                    -1 => return Ok(()),
                    1 => {}
                    marker => {
                        return Err(ProtocolError::Malformed(format!(
                            "{name}: struct marker {marker}"
                        )));
                    }
                }
            }
            walk_struct(reader, fields, walk)
        }
        FieldType::Array(element) => {
            let Some(count) = read_length(reader, walk, nullable, name, Width::Int32)? else {
                return Ok(());
            };
            // Kafka itself refuses more elements than remaining bytes; requiring each
            // element's minimum size is stricter and bounds what the decoder reserves.
            let element_bytes = min_encoded_bytes(element, walk.version, walk.flexible).max(1);
            let needed = count.saturating_mul(element_bytes);
            if needed > reader.remaining() {
                return Err(ProtocolError::Malformed(format!(
                    "{name}: array of {count} elements needs at least {needed} bytes, {} remain",
                    reader.remaining()
                )));
            }
            for _ in 0..count {
                walk_value(reader, element, false, walk, name)?;
            }
            Ok(())
        }
    }
}

/// The width of a non-flexible length prefix.
#[derive(Clone, Copy)]
enum Width {
    Int16,
    Int32,
}

/// Reads a length or count prefix: classic (`i16`/`i32`, -1 is null) or compact
/// (unsigned varint of length + 1, 0 is null). `None` means null.
fn read_length(
    reader: &mut Reader<'_>,
    walk: Walk,
    nullable: bool,
    name: &str,
    width: Width,
) -> Result<Option<usize>, ProtocolError> {
    let len: i64 = if walk.flexible {
        i64::from(reader.unsigned_varint(name)?) - 1
    } else {
        match width {
            Width::Int16 => i64::from(reader.i16(name)?),
            Width::Int32 => i64::from(reader.i32(name)?),
        }
    };
    match len {
        -1 if nullable => Ok(None),
        -1 => Err(ProtocolError::Malformed(format!(
            "{name}: non-nullable field is null"
        ))),
        len if len < -1 => Err(ProtocolError::Malformed(format!(
            "{name}: negative length {len}"
        ))),
        len => {
            let len = usize::try_from(len)
                .map_err(|_| truncated(name, usize::MAX, reader.remaining()))?;
            Ok(Some(len))
        }
    }
}
