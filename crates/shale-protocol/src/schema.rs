//! The shape of the generated request schema table (`schema_generated.rs`), mirroring
//! the semantics of Kafka's JSON message specs.

use crate::schema_generated::{
    kafka_protocol_request_versions, kafka_protocol_response_versions, REQUESTS, RESPONSES,
};

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
    // No Kafka 4.4 request uses uint32 yet; the generator maps it for future specs.
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
    /// Kafka marks the newest version as still in development (not advertised by a
    /// default Kafka broker).
    pub latest_unstable: bool,
    pub flexible: Versions,
    pub fields: &'static [Field],
}

impl MessageSpec {
    /// Whether `version` is Kafka's unstable latest version.
    pub(crate) fn latest_unstable_at(&self, version: i16) -> bool {
        self.latest_unstable && version == self.valid.1
    }
}

/// The request spec of an API key, if Kafka 4.4 defines one.
pub(crate) fn request_spec(api_key: i16) -> Option<&'static MessageSpec> {
    find_spec(REQUESTS, api_key)
}

/// The response spec of an API key, if Kafka 4.4 defines one.
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
/// decoder accept. kafka-protocol refuses Kafka 4.1's unstable latest versions, and knows
/// nothing of versions added after 4.1.
pub(crate) fn decodable_versions(api_key: i16) -> Option<Versions> {
    intersect(
        request_spec(api_key)?.valid,
        kafka_protocol_request_versions(api_key)?,
    )
}

/// The response versions of `api_key` that both the schema table and kafka-protocol's
/// encoder and decoder accept.
pub(crate) fn decodable_response_versions(api_key: i16) -> Option<Versions> {
    intersect(
        response_spec(api_key)?.valid,
        kafka_protocol_response_versions(api_key)?,
    )
}

fn intersect(a: Versions, b: Versions) -> Option<Versions> {
    let range = Versions(a.0.max(b.0), a.1.min(b.1));
    (range.0 <= range.1).then_some(range)
}

/// The newest version that kafka-protocol handles whose wire layout equals `version`'s,
/// for a version newer than any it handles. A Kafka version that only changes semantics
/// (ListOffsets 11's new timestamp) or only the other direction's layout (DeleteGroups 3
/// adds a response field) travels exactly as an older one, and kafka-protocol's types at
/// that older version carry all of it.
pub(crate) fn wire_alias(spec: &MessageSpec, handled: Versions, version: i16) -> Option<i16> {
    let newest = handled.1;
    let is_newer = version > newest && spec.valid.contains(version);
    (is_newer
        && !spec.latest_unstable_at(version)
        && spec.flexible.contains(version) == spec.flexible.contains(newest)
        && same_layout(spec.fields, version, newest))
    .then_some(newest)
}

/// A request version past kafka-protocol that travels exactly as one it decodes.
pub(crate) fn request_wire_alias(api_key: i16, version: i16) -> Option<i16> {
    wire_alias(
        request_spec(api_key)?,
        decodable_versions(api_key)?,
        version,
    )
}

/// A response version past kafka-protocol that travels exactly as one it encodes.
pub(crate) fn response_wire_alias(api_key: i16, version: i16) -> Option<i16> {
    wire_alias(
        response_spec(api_key)?,
        decodable_response_versions(api_key)?,
        version,
    )
}

/// Whether versions `a` and `b` put the same fields on the wire, in the same order, with
/// the same nullability and tags.
pub(crate) fn same_layout(fields: &[Field], a: i16, b: i16) -> bool {
    fields.iter().all(|field| {
        let present = field.versions.contains(a);
        if present != field.versions.contains(b) {
            return false;
        }
        !present
            || (field.is_tagged_in(a) == field.is_tagged_in(b)
                && field.nullable.contains(a) == field.nullable.contains(b)
                && same_type_layout(&field.ty, a, b))
    })
}

fn same_type_layout(ty: &FieldType, a: i16, b: i16) -> bool {
    match ty {
        FieldType::Struct(fields) => same_layout(fields, a, b),
        FieldType::Array(element) => same_type_layout(element, a, b),
        _ => true,
    }
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
