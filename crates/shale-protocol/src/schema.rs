//! The shape of the generated request schema table (`schema_generated.rs`), mirroring
//! the semantics of Kafka's JSON message specs.

use crate::schema_generated::{REQUESTS, RESPONSES};

/// An inclusive version range; `Versions::NONE` is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Versions(pub i16, pub i16);

impl Versions {
    pub(crate) const NONE: Versions = Versions(1, 0);

    pub(crate) const fn contains(self, version: i16) -> bool {
        version >= self.0 && version <= self.1
    }
}

/// A tagged field's tag and the versions in which it travels in the tagged section.
#[derive(Debug)]
pub(crate) struct Tag {
    pub id: u32,
    pub versions: Versions,
}

#[derive(Debug)]
pub(crate) struct Field {
    pub name: &'static str,
    pub ty: FieldType,
    pub versions: Versions,
    pub nullable: Versions,
    pub tag: Option<Tag>,
}

impl Field {
    /// Present in the tagged-fields section at this version.
    pub(crate) fn is_tagged_in(&self, version: i16) -> bool {
        self.versions.contains(version)
            && self
                .tag
                .as_ref()
                .is_some_and(|tag| tag.versions.contains(version))
    }

    /// Present in the regular field sequence at this version.
    pub(crate) fn is_regular_in(&self, version: i16) -> bool {
        self.versions.contains(version) && !self.is_tagged_in(version)
    }
}

#[derive(Debug)]
pub(crate) enum FieldType {
    Bool,
    Int8,
    Int16,
    Uint16,
    Int32,
    // No Kafka 4.1 request uses uint32 yet; the generator maps it for future specs.
    #[allow(dead_code)]
    Uint32,
    Int64,
    Float64,
    Uuid,
    String,
    Bytes,
    /// A record set: length-prefixed opaque bytes here; the log layer parses batches.
    Records,
    Struct(&'static [Field]),
    Array(&'static FieldType),
}

#[derive(Debug)]
pub(crate) struct MessageSpec {
    pub api_key: i16,
    pub name: &'static str,
    pub valid: Versions,
    /// Kafka marks the newest version as still in development; kafka-protocol's
    /// decoders refuse it although `ApiKey::valid_versions` lists it.
    pub latest_unstable: bool,
    pub flexible: Versions,
    pub fields: &'static [Field],
}

/// The request spec of an API key, if Kafka 4.1 defines one.
pub(crate) fn request_spec(api_key: i16) -> Option<&'static MessageSpec> {
    find_spec(REQUESTS, api_key)
}

/// The response spec of an API key, if Kafka 4.1 defines one.
pub(crate) fn response_spec(api_key: i16) -> Option<&'static MessageSpec> {
    find_spec(RESPONSES, api_key)
}

fn find_spec(table: &'static [MessageSpec], api_key: i16) -> Option<&'static MessageSpec> {
    table
        .binary_search_by_key(&api_key, |spec| spec.api_key)
        .ok()
        .and_then(|index| table.get(index))
}

/// The request versions of `api_key` that both the schema table and kafka-protocol's
/// decoder accept: Kafka's valid versions without an unstable latest version.
pub(crate) fn decodable_versions(api_key: i16) -> Option<Versions> {
    let key = kafka_protocol::messages::ApiKey::try_from(api_key).ok()?;
    let spec = request_spec(api_key)?;
    let known = key.valid_versions();
    let spec_max = if spec.latest_unstable {
        spec.valid.1 - 1
    } else {
        spec.valid.1
    };
    let range = Versions(known.min.max(spec.valid.0), known.max.min(spec_max));
    (range.0 <= range.1).then_some(range)
}

/// The response versions of `api_key` that both the schema table and kafka-protocol's
/// decoder accept (response decoders include the unstable latest versions).
pub(crate) fn decodable_response_versions(api_key: i16) -> Option<Versions> {
    let key = kafka_protocol::messages::ApiKey::try_from(api_key).ok()?;
    let spec = response_spec(api_key)?;
    let known = key.valid_versions();
    let range = Versions(known.min.max(spec.valid.0), known.max.min(spec.valid.1));
    (range.0 <= range.1).then_some(range)
}

/// The smallest number of bytes a value of `ty` can occupy (never null: array
/// elements cannot be null).
pub(crate) fn min_encoded_bytes(ty: &FieldType, version: i16, flexible: bool) -> usize {
    match ty {
        FieldType::Bool | FieldType::Int8 => 1,
        FieldType::Int16 | FieldType::Uint16 => 2,
        FieldType::Int32 | FieldType::Uint32 => 4,
        FieldType::Int64 | FieldType::Float64 => 8,
        FieldType::Uuid => 16,
        FieldType::String if flexible => 1,
        FieldType::String => 2,
        FieldType::Bytes | FieldType::Records | FieldType::Array(_) if flexible => 1,
        FieldType::Bytes | FieldType::Records | FieldType::Array(_) => 4,
        FieldType::Struct(fields) => {
            let regular: usize = fields
                .iter()
                .filter(|field| field.is_regular_in(version))
                .map(|field| match field.ty {
                    // A nullable struct may be a lone null marker.
                    FieldType::Struct(_) if field.nullable.contains(version) => 1,
                    ref ty => min_encoded_bytes(ty, version, flexible),
                })
                .sum();
            regular + usize::from(flexible)
        }
    }
}
