//! Test-only: random request bodies that follow the schema table, to check the table
//! against kafka-protocol's decoder and encoder and to seed mutation tests.

use bytes::BufMut;

use crate::schema::{request_spec, response_spec, Field, FieldType, MessageSpec};

/// A small deterministic generator (xorshift64*), so failures replay from their seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    fn percent(&mut self, chance: u64) -> bool {
        self.below(100) < chance
    }
}

#[derive(Clone, Copy)]
struct Gen {
    version: i16,
    flexible: bool,
    /// Also emit known and unknown tagged fields.
    tagged: bool,
}

/// A random request body of `api_key` at `api_version` that follows Kafka's spec.
pub(crate) fn random_body(api_key: i16, api_version: i16, tagged: bool, rng: &mut Rng) -> Vec<u8> {
    let spec = request_spec(api_key).unwrap_or_else(|| panic!("no spec for api key {api_key}"));
    random_body_for(spec, api_version, tagged, rng)
}

/// A random response body of `api_key` at `api_version` that follows Kafka's spec.
pub(crate) fn random_response_body(
    api_key: i16,
    api_version: i16,
    tagged: bool,
    rng: &mut Rng,
) -> Vec<u8> {
    let spec = response_spec(api_key).unwrap_or_else(|| panic!("no spec for api key {api_key}"));
    random_body_for(spec, api_version, tagged, rng)
}

fn random_body_for(spec: &MessageSpec, api_version: i16, tagged: bool, rng: &mut Rng) -> Vec<u8> {
    let gen = Gen {
        version: api_version,
        flexible: spec.flexible.contains(api_version),
        tagged,
    };
    let mut out = Vec::new();
    gen_struct(&mut out, spec.fields, gen, rng);
    out
}

fn gen_struct(out: &mut Vec<u8>, fields: &[Field], gen: Gen, rng: &mut Rng) {
    for field in fields
        .iter()
        .filter(|field| field.is_regular_in(gen.version))
    {
        gen_value(
            out,
            &field.ty,
            field.nullable.contains(gen.version),
            gen,
            rng,
        );
    }
    if !gen.flexible {
        return;
    }
    if !gen.tagged {
        out.push(0);
        return;
    }
    let mut known: Vec<&Field> = fields
        .iter()
        .filter(|field| field.is_tagged_in(gen.version) && rng.percent(60))
        .collect();
    known.sort_by_key(|field| field.tag.as_ref().map(|tag| tag.id));
    let unknown = rng.percent(30);
    put_varint(out, (known.len() + usize::from(unknown)) as u32);
    for field in known {
        let mut value = Vec::new();
        gen_value(
            &mut value,
            &field.ty,
            field.nullable.contains(gen.version),
            gen,
            rng,
        );
        put_varint(out, field.tag.as_ref().map_or(0, |tag| tag.id));
        put_varint(out, value.len() as u32);
        out.extend_from_slice(&value);
    }
    if unknown {
        // Above every tag Kafka 4.4 uses in requests.
        put_varint(out, 1_000 + rng.below(100) as u32);
        let len = rng.below(5) as usize;
        put_varint(out, len as u32);
        out.extend((0..len).map(|_| rng.below(256) as u8));
    }
}

fn gen_value(out: &mut Vec<u8>, ty: &FieldType, nullable: bool, gen: Gen, rng: &mut Rng) {
    let is_null = nullable && rng.percent(15);
    match ty {
        FieldType::Bool => out.push(rng.below(2) as u8),
        FieldType::Int8 => out.push(rng.below(256) as u8),
        FieldType::Int16 | FieldType::Uint16 => out.put_u16(rng.below(1 << 16) as u16),
        FieldType::Int32 | FieldType::Uint32 => out.put_u32(rng.next_u64() as u32),
        FieldType::Int64 => out.put_u64(rng.next_u64()),
        // Any bit pattern but NaN round-trips bit-exactly.
        FieldType::Float64 => out.put_f64(rng.below(1_000_000) as f64 / 7.0),
        FieldType::Uuid => {
            out.put_u64(rng.next_u64());
            out.put_u64(rng.next_u64());
        }
        FieldType::String => {
            let text: Vec<u8> = (0..rng.below(9))
                .map(|_| b'a' + rng.below(26) as u8)
                .collect();
            put_len(out, gen, (!is_null).then_some(text.len()), true);
            if !is_null {
                out.extend_from_slice(&text);
            }
        }
        FieldType::Bytes | FieldType::Records => {
            let bytes: Vec<u8> = (0..rng.below(17)).map(|_| rng.below(256) as u8).collect();
            put_len(out, gen, (!is_null).then_some(bytes.len()), false);
            if !is_null {
                out.extend_from_slice(&bytes);
            }
        }
        FieldType::Struct(fields) => {
            if nullable {
                out.push(if is_null { 0xff } else { 1 });
                if is_null {
                    return;
                }
            }
            gen_struct(out, fields, gen, rng);
        }
        FieldType::Array(element) => {
            let count = rng.below(4) as usize;
            put_len(out, gen, (!is_null).then_some(count), false);
            if !is_null {
                for _ in 0..count {
                    gen_value(out, element, false, gen, rng);
                }
            }
        }
    }
}

/// Writes a length or count prefix; `None` writes null.
fn put_len(out: &mut Vec<u8>, gen: Gen, len: Option<usize>, int16: bool) {
    match (gen.flexible, len) {
        (true, None) => out.push(0),
        (true, Some(len)) => put_varint(out, len as u32 + 1),
        (false, None) if int16 => out.put_i16(-1),
        (false, None) => out.put_i32(-1),
        (false, Some(len)) if int16 => out.put_i16(len as i16),
        (false, Some(len)) => out.put_i32(len as i32),
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}
