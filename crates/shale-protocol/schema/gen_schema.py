#!/usr/bin/env python3
"""Generate src/schema_generated.rs from Apache Kafka's request and response specs.

Usage:
    gen_schema.py <dir with Kafka's common/message/*.json> > src/schema_generated.rs

The specs ship inside the org.apache.kafka:kafka-clients jar (path common/message/).
The table is generated from Kafka 4.4.0's specs, the versions Shale serves. kafka-protocol
0.18 is generated from Kafka 4.1.0: where it decodes a version, the table must agree with
it (tests check this), and the versions it cannot decode are decoded by Shale's own codec
(gen_codec.py, from the same specs) or, when their layout equals one it decodes, by
kafka-protocol at that version. Kafka's JSON files are not committed.

The output is a compact table: one `MessageSpec` per request and response, each field carrying
its type, `versions`, `nullableVersions` and (for tagged fields) its tag and
`taggedVersions`. Struct field lists are emitted as consts so that arrays and nested
structs can point at them.
"""

import json
import os
import re
import sys

MAX = "i16::MAX"
# Request APIs of Kafka 4.4.0 that kafka-protocol 0.18 leaves out of its RequestKind /
# ResponseKind enums (Kafka Streams' KIP-1071 APIs, and APIs newer than Kafka 4.1). They
# stay in the schema table.
NOT_IN_KAFKA_PROTOCOL = {
    "StreamsGroupHeartbeatRequest",
    "StreamsGroupDescribeRequest",
    "StreamsGroupTopologyDescriptionUpdateRequest",
    "UnregisterControllerRequest",
}
PRIMITIVES = {
    "bool": "Bool",
    "int8": "Int8",
    "int16": "Int16",
    "uint16": "Uint16",
    "int32": "Int32",
    "uint32": "Uint32",
    "int64": "Int64",
    "float64": "Float64",
    "uuid": "Uuid",
    "string": "String",
    "bytes": "Bytes",
    "records": "Records",
}


def strip_comments(text):
    """Remove // and /* */ comments that lie outside JSON strings."""
    out = []
    i = 0
    in_string = False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_versions(spec):
    """Kafka version strings: "none", "N", "N+", "N-M". Returns (min, max) as Rust exprs."""
    if spec is None or spec == "none":
        return None
    spec = spec.strip()
    if spec.endswith("+"):
        return (int(spec[:-1]), MAX)
    if "-" in spec:
        lo, hi = spec.split("-", 1)
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def versions_expr(spec):
    parsed = parse_versions(spec)
    if parsed is None:
        return "V::NONE"
    return "V(%s, %s)" % parsed


def const_name(*parts):
    name = "_".join(p for p in parts if p)
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[^A-Za-z0-9_]", "_", name).upper()


class Generator:
    def __init__(self):
        self.consts = []  # (name, body) in dependency order
        self.emitted = set()

    def struct_const(self, message, struct_name, fields, common):
        name = const_name("F", message, struct_name)
        if name in self.emitted:
            # Kafka forbids two different structs of one name in a message; a
            # second sighting must be the same struct (e.g. a common struct).
            return name
        self.emitted.add(name)
        body = [self.field_expr(message, f, common) for f in fields]
        self.consts.append((name, body))
        return name

    def type_expr(self, message, field, common):
        ty = field["type"]
        is_array = ty.startswith("[]")
        inner = ty[2:] if is_array else ty
        if inner in PRIMITIVES:
            if "fields" in field:
                raise ValueError("%s: primitive %s with fields" % (message, field["name"]))
            expr = "T::" + PRIMITIVES[inner]
        else:
            if "fields" in field:
                sub_fields = field["fields"]
            elif inner in common:
                sub_fields = common[inner]
            else:
                raise ValueError("%s: unknown struct type %s" % (message, inner))
            expr = "T::Struct(%s)" % self.struct_const(message, inner, sub_fields, common)
        if is_array:
            return "T::Array(&%s)" % expr
        return expr

    def field_expr(self, message, field, common):
        ty = self.type_expr(message, field, common)
        tag = "None"
        if "tag" in field:
            tag = "Some(Tag { id: %d, versions: %s })" % (
                int(field["tag"]),
                versions_expr(field.get("taggedVersions")),
            )
        elif "taggedVersions" in field:
            raise ValueError("%s: taggedVersions without tag on %s" % (message, field["name"]))
        return "Field { name: %s, ty: %s, versions: %s, nullable: %s, tag: %s }" % (
            json.dumps(field["name"]),
            ty,
            versions_expr(field.get("versions")),
            versions_expr(field.get("nullableVersions")),
            tag,
        )


def load_specs(spec_dir, kind):
    suffix = "Request.json" if kind == "request" else "Response.json"
    specs = []
    for file_name in sorted(os.listdir(spec_dir)):
        if not file_name.endswith(suffix):
            continue
        with open(os.path.join(spec_dir, file_name), encoding="utf-8") as handle:
            spec = json.loads(strip_comments(handle.read()))
        if spec.get("type") != kind:
            continue
        # APIs removed from Kafka 4 (ZooKeeper-era controller APIs) keep their files
        # with validVersions "none"; there is nothing to validate.
        if parse_versions(spec["validVersions"]) is None:
            continue
        specs.append(spec)
    specs.sort(key=lambda s: int(s["apiKey"]))
    return specs


def message_line(gen, spec):
    name = spec["name"]
    common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
    fields_const = gen.struct_const(name, "", spec.get("fields", []), common)
    return (
        "    MessageSpec { api_key: %d, name: %s, valid: %s, latest_unstable: %s, flexible: %s, fields: %s },"
        % (
            int(spec["apiKey"]),
            json.dumps(name),
            versions_expr(spec["validVersions"]),
            "true" if spec.get("latestVersionUnstable", False) else "false",
            versions_expr(spec.get("flexibleVersions", "none")),
            fields_const,
        )
    )


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    spec_dir = sys.argv[1]
    requests = load_specs(spec_dir, "request")
    responses = load_specs(spec_dir, "response")

    gen = Generator()
    request_lines = [message_line(gen, spec) for spec in requests]
    response_lines = [message_line(gen, spec) for spec in responses]

    out = sys.stdout
    out.write("// @generated by crates/shale-protocol/schema/gen_schema.py from Apache Kafka 4.4.0's\n")
    out.write("// message specs (common/message/*Request.json and *Response.json in kafka-clients 4.4.0).\n")
    out.write("// Do not edit by hand: regenerate with\n")
    out.write("//   python3 schema/gen_schema.py <spec dir> > src/schema_generated.rs\n\n")
    out.write("use kafka_protocol::messages::ResponseKind;\n")
    out.write("use kafka_protocol::protocol::Message;\n")
    out.write("#[cfg(test)]\n")
    out.write("use kafka_protocol::messages::RequestKind;\n\n")
    out.write("use crate::schema::{Field, FieldType as T, MessageSpec, Tag, Versions as V};\n\n")
    for name, body in gen.consts:
        out.write("const %s: &[Field] = &[\n" % name)
        for line in body:
            out.write("    %s,\n" % line)
        out.write("];\n\n")
    out.write("/// Every request API in Kafka 4.4.0, sorted by API key.\n")
    out.write("pub(crate) static REQUESTS: &[MessageSpec] = &[\n")
    for line in request_lines:
        out.write(line + "\n")
    out.write("];\n\n")
    out.write("/// Every response in Kafka 4.4.0, sorted by API key.\n")
    out.write("pub(crate) static RESPONSES: &[MessageSpec] = &[\n")
    for line in response_lines:
        out.write(line + "\n")
    out.write("];\n\n")

    variants = [
        (int(spec["apiKey"]), spec["name"][: -len("Request")])
        for spec in requests
        if spec["name"] not in NOT_IN_KAFKA_PROTOCOL
    ]
    out.write("/// The API key a response answers (kafka-protocol's enum does not say).\n")
    out.write("pub(crate) fn response_api_key(response: &ResponseKind) -> Option<i16> {\n")
    out.write("    match response {\n")
    for key, variant in variants:
        out.write("        ResponseKind::%s(_) => Some(%d),\n" % (variant, key))
    out.write("        _ => None,\n    }\n}\n\n")
    for kind in ("request", "response"):
        suffix = kind.capitalize()
        out.write("/// The %s versions kafka-protocol's own %s types encode and decode.\n" % (kind, kind))
        out.write("pub(crate) fn kafka_protocol_%s_versions(api_key: i16) -> Option<V> {\n" % kind)
        out.write("    let range = match api_key {\n")
        for key, variant in variants:
            out.write("        %d => <kafka_protocol::messages::%s%s as Message>::VERSIONS,\n"
                      % (key, variant, suffix))
        out.write("        _ => return None,\n    };\n")
        out.write("    Some(V(range.min, range.max))\n}\n\n")
    out.write("/// A default-valued request of every API, for round-trip tests.\n")
    out.write("#[cfg(test)]\n")
    out.write("pub(crate) fn default_request(api_key: i16) -> Option<RequestKind> {\n")
    out.write("    match api_key {\n")
    for key, variant in variants:
        out.write("        %d => Some(RequestKind::%s(Default::default())),\n" % (key, variant))
    out.write("        _ => None,\n    }\n}\n")


if __name__ == "__main__":
    main()
