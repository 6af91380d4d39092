#!/usr/bin/env python3
"""Generate src/codec_generated.rs: typed structs with a decoder and an encoder for the
request and response messages whose newest versions kafka-protocol 0.18 cannot handle.

Usage:
    gen_codec.py <dir with Kafka's common/message/*.json> > src/codec_generated.rs

The specs are Kafka 4.4's (common/message/ in the org.apache.kafka:kafka-clients 4.4.0
jar), the same ones gen_schema.py makes the validator's table from. Kafka's JSON files are
not committed.

Only the messages in CODEC_MESSAGES are generated: those for which Shale serves a version
whose wire layout kafka-protocol's types cannot carry (a field its structs lack, or a
version its decoder refuses). A message version whose layout equals an older one that
kafka-protocol handles is decoded by kafka-protocol at that older version instead (see
src/schema.rs, `wire_alias`), so it needs nothing here. The APIs in CODEC_OWNED_APIS have
both their request and their response generated and are carried by this codec at every
version (src/routes.rs reads the emitted `CODEC_OWNED_APIS` list), not only past
kafka-protocol.

Each generated struct holds every field of every version, with Kafka's defaults; `decode`
reads the fields present at a version and leaves the others at their defaults, `encode`
writes the fields present at a version and, as Kafka's writers do, refuses a field the
version lacks that holds something other than its default, unless the spec marks it
ignorable (then it is left out). The bodies have been walked by the validator
before they are decoded, but the decoder checks every length again (it never trusts one).
Tagged fields: none of these messages declares one (the generator refuses a message that
does), unknown tags are skipped on decode and an empty tagged section is written.
Record sets (`records`) are carried as opaque bytes.
"""

import json
import os
import re
import sys

from gen_schema import parse_versions, strip_comments

MAX = 0x7FFF

# Requests and responses decoded and encoded by this codec, not by kafka-protocol.
CODEC_MESSAGES = [
    # Topic ids instead of names from v10 (KIP-848); kafka-protocol 0.18 decodes up to v9.
    "OffsetCommitRequest",
    "OffsetFetchRequest",
    # Topic ids instead of names from v6 (Kafka 4.4); kafka-protocol 0.18 knows up to v5.
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    # TransactionVersion per marker from v2 (KIP-1228).
    "WriteTxnMarkersRequest",
    # ClusterId and NodeId from v5 (KIP-1242).
    "ApiVersionsRequest",
    # ErrorMessage per group from v3.
    "DeleteGroupsResponse",
    # IsCordoned per log directory from v5.
    "DescribeLogDirsResponse",
]

# APIs whose requests and responses this codec carries at every version, so that the
# broker handles one type per message instead of kafka-protocol's at some versions and
# Shale's at others. Each gains a field kafka-protocol 0.18 lacks in Kafka 4.4.
CODEC_OWNED_APIS = [
    # ShareAcquireMode and IsRenewAck from v2 (KIP-1206, KIP-1222).
    "ShareFetch",
    # IsRenewAck, and AcquisitionLockTimeoutMs in the response, from v2 (KIP-1222).
    "ShareAcknowledge",
    # DeliveryCompleteCount per partition from v1 (KIP-1226).
    "WriteShareGroupState",
    "ReadShareGroupStateSummary",
    # Lag per partition in the response from v1 (KIP-1226).
    "DescribeShareGroupOffsets",
]

# Default expressions equal to the Rust type's own Default.
TYPE_DEFAULTS = {"0", "false", "0.0", "StrBytes::default()", "Bytes::new()", "Uuid::nil()",
                 "Vec::new()", "None"}

RUST_KEYWORDS = {"type", "match", "ref", "mod", "use", "fn", "struct", "enum", "loop"}

# (Rust type, decode call, encode call, Default expression) for each primitive.
PRIMITIVES = {
    "bool": ("bool", "d.bool({what})", "e.bool({value})", "false"),
    "int8": ("i8", "d.i8({what})", "e.i8({value})", "0"),
    "int16": ("i16", "d.i16({what})", "e.i16({value})", "0"),
    "uint16": ("u16", "d.u16({what})", "e.u16({value})", "0"),
    "int32": ("i32", "d.i32({what})", "e.i32({value})", "0"),
    "uint32": ("u32", "d.u32({what})", "e.u32({value})", "0"),
    "int64": ("i64", "d.i64({what})", "e.i64({value})", "0"),
    "float64": ("f64", "d.f64({what})", "e.f64({value})", "0.0"),
    "uuid": ("Uuid", "d.uuid({what})", "e.uuid({value})", "Uuid::nil()"),
    "string": ("StrBytes", "d.string(flexible, {what})", "e.string(flexible, {value}, {what})?",
               "StrBytes::default()"),
    "bytes": ("Bytes", "d.bytes(flexible, {what})", "e.bytes(flexible, {value}, {what})?",
              "Bytes::new()"),
    # A record set travels as bytes; the log layer parses its batches.
    "records": ("Bytes", "d.bytes(flexible, {what})", "e.bytes(flexible, {value}, {what})?",
                "Bytes::new()"),
}
NULLABLE_PRIMITIVES = {
    "string": ("d.nullable_string(flexible, {what})",
               "e.nullable_string(flexible, {value}, {what})?"),
    "bytes": ("d.nullable_bytes(flexible, {what})", "e.nullable_bytes(flexible, {value}, {what})?"),
    "records": ("d.nullable_bytes(flexible, {what})",
                "e.nullable_bytes(flexible, {value}, {what})?"),
}
# The Decoder/Encoder method family of each length-prefixed primitive.
LENGTH_PREFIXED = {"string": "string", "bytes": "bytes", "records": "bytes"}


def snake(name):
    out = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    out = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", "_", out).lower()
    return "r#" + out if out in RUST_KEYWORDS else out


def versions_of(spec, valid):
    """A field's versions clipped to the message's valid versions: (lo, hi) or None."""
    parsed = parse_versions(spec)
    if parsed is None:
        return None
    lo, hi = parsed
    hi = MAX if hi == "i16::MAX" else hi
    lo, hi = max(lo, valid[0]), min(hi, valid[1])
    return (lo, hi) if lo <= hi else None


def condition(rng, valid):
    """A Rust condition on `version` for a clipped range; None when always true."""
    if rng is None:
        return "false"
    lo, hi = rng
    if lo <= valid[0] and hi >= valid[1]:
        return None
    if hi >= valid[1]:
        return "version >= %d" % lo
    if lo <= valid[0]:
        return "version <= %d" % hi
    if lo == hi:
        return "version == %d" % lo
    return "(%d..=%d).contains(&version)" % (lo, hi)


def default_literal(field, rust_ty, nullable_any):
    default = field.get("default")
    ty = field["type"]
    if ty.startswith("[]"):
        return "None" if nullable_any and default == "null" else (
            "Some(Vec::new())" if nullable_any else "Vec::new()")
    if nullable_any:
        if default not in (None, "null"):
            raise ValueError("%s: nullable default %r" % (field["name"], default))
        return "None"
    if ty in ("string",):
        if default in (None, ""):
            return "StrBytes::default()"
        return "StrBytes::from_static_str(%s)" % json.dumps(default)
    if ty == "bool":
        if default in (None, False, "false"):
            return "false"
        if default in (True, "true"):
            return "true"
        raise ValueError("%s: bool default %r" % (field["name"], default))
    if ty in PRIMITIVES and ty not in ("uuid", "bytes", "records"):
        if default is None:
            return PRIMITIVES[ty][3]
        return str(int(str(default), 0))
    if ty in PRIMITIVES:
        if default not in (None, ""):
            raise ValueError("%s: %s default %r" % (field["name"], ty, default))
        return PRIMITIVES[ty][3]
    return "%s::default()" % rust_ty


def non_default(place, default):
    """A Rust condition: the field at `place` differs from its Kafka default."""
    if default == "None":
        return "%s.is_some()" % place
    if default in ("Vec::new()", "Bytes::new()", "StrBytes::default()"):
        return "!%s.is_empty()" % place
    if default == "false":
        return place
    if default == "true":
        return "!%s" % place
    if default == "Uuid::nil()":
        return "!%s.is_nil()" % place
    return "%s != %s" % (place, default)


def mark_unused_version(out, signature):
    """Renames the `version` parameter of the function starting at out[signature] when its
    body never reads it (a struct whose fields travel in every version)."""
    body = "\n".join(out[signature + 1:])
    if not re.search(r"\bversion\b", body):
        out[signature] = out[signature].replace("version: i16", "_version: i16")


class Struct:
    def __init__(self, name, fields, about):
        self.name = name
        self.fields = fields
        self.about = about


class MessageGen:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec["name"]
        valid = parse_versions(spec["validVersions"])
        self.valid = (valid[0], MAX if valid[1] == "i16::MAX" else valid[1])
        flexible = parse_versions(spec.get("flexibleVersions", "none"))
        self.flexible = flexible
        self.common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
        self.structs = []
        self.seen = set()
        self.add_struct(self.name, spec.get("fields", []), spec.get("about", ""))

    def add_struct(self, name, fields, about):
        if name in self.seen:
            return
        self.seen.add(name)
        struct = Struct(name, fields, about)
        self.structs.append(struct)
        for field in fields:
            if "tag" in field or "taggedVersions" in field:
                raise ValueError("%s.%s: tagged fields are not supported by this codec"
                                 % (self.name, field["name"]))
            ty = field["type"]
            inner = ty[2:] if ty.startswith("[]") else ty
            if inner not in PRIMITIVES:
                sub = field.get("fields", self.common.get(inner))
                if sub is None:
                    raise ValueError("%s: unknown struct %s" % (self.name, inner))
                self.add_struct(inner, sub, field.get("about", ""))

    def flexible_expr(self):
        if self.flexible is None:
            return "false"
        lo = self.flexible[0]
        return "true" if lo <= self.valid[0] else "version >= %d" % lo

    def field_info(self, field):
        ty = field["type"]
        is_array = ty.startswith("[]")
        inner = ty[2:] if is_array else ty
        present = versions_of(field.get("versions"), self.valid)
        nullable = versions_of(field.get("nullableVersions"), self.valid)
        nullable_any = nullable is not None
        if inner in PRIMITIVES:
            elem = PRIMITIVES[inner][0]
        else:
            elem = inner
        rust = "Vec<%s>" % elem if is_array else elem
        if nullable_any:
            rust = "Option<%s>" % rust
        return is_array, inner, present, nullable, nullable_any, rust

    def element_decode(self, inner, what):
        """A closure body decoding one array element."""
        if inner in PRIMITIVES:
            return PRIMITIVES[inner][1].format(what=what)
        return "%s::decode(d, version)" % inner

    def element_encode(self, inner, what):
        """A closure body encoding one array element `x` (a reference)."""
        if inner in LENGTH_PREFIXED:
            return "e.%s(flexible, x, %s)" % (LENGTH_PREFIXED[inner], what)
        if inner in PRIMITIVES:
            return "{ %s; Ok(()) }" % PRIMITIVES[inner][2].format(value="*x", what=what)
        return "x.encode(e, version)"

    def decode_value(self, field, nullable_now):
        """An expression reading the field (of its Option type when nullable_now)."""
        is_array, inner, _, _, _, _ = self.field_info(field)
        what = json.dumps(field["name"])
        if is_array:
            call = "nullable_array" if nullable_now else "array"
            return "d.%s(flexible, %s, |d| %s)?" % (call, what, self.element_decode(inner, what))
        if inner in PRIMITIVES:
            if nullable_now:
                if inner not in NULLABLE_PRIMITIVES:
                    raise ValueError("%s: nullable %s" % (field["name"], inner))
                return NULLABLE_PRIMITIVES[inner][0].format(what=what) + "?"
            return PRIMITIVES[inner][1].format(what=what) + "?"
        if nullable_now:
            return "d.nullable_struct(%s, |d| %s::decode(d, version))?" % (what, inner)
        return "%s::decode(d, version)?" % inner

    def encode_plain(self, field, reference):
        """A statement writing a non-null value given as a reference expression."""
        is_array, inner, _, _, _, _ = self.field_info(field)
        what = json.dumps(field["name"])
        if is_array:
            return "e.array(flexible, %s, %s, |e, x| %s)?;" % (
                reference, what, self.element_encode(inner, what))
        if inner in LENGTH_PREFIXED:
            return "e.%s(flexible, %s, %s)?;" % (LENGTH_PREFIXED[inner], reference, what)
        if inner in PRIMITIVES:
            value = reference[1:] if reference.startswith("&") else "*" + reference
            return PRIMITIVES[inner][2].format(value=value, what=what) + ";"
        # A method call takes the place itself, not a reference to it.
        place = reference[1:] if reference.startswith("&") else reference
        return "%s.encode(e, version)?;" % place

    def encode_nullable(self, field, place):
        """A statement writing an Option field (null or its value)."""
        is_array, inner, _, _, _, _ = self.field_info(field)
        what = json.dumps(field["name"])
        if is_array:
            return "e.nullable_array(flexible, %s.as_deref(), %s, |e, x| %s)?;" % (
                place, what, self.element_encode(inner, what))
        if inner in NULLABLE_PRIMITIVES:
            return "e.nullable_%s(flexible, %s.as_ref(), %s)?;" % (
                LENGTH_PREFIXED[inner], place, what)
        if inner in PRIMITIVES:
            raise ValueError("%s: nullable %s" % (field["name"], inner))
        return "e.nullable_struct(%s.as_ref(), |e, x| x.encode(e, version))?;" % place

    def emit_struct(self, out, struct):
        out.append("    /// %s" % (struct.about.strip() or struct.name).replace("\n", " "))
        defaults = []
        for field in struct.fields:
            _, _, _, _, nullable_any, rust = self.field_info(field)
            defaults.append((snake(field["name"]), default_literal(field, rust, nullable_any)))
        derived = all(d in TYPE_DEFAULTS or d.endswith("::default()") for _, d in defaults)
        out.append("    #[derive(Debug, Clone, PartialEq%s)]" % (", Default" if derived else ""))
        out.append("    pub struct %s {" % struct.name)
        for field in struct.fields:
            about = field.get("about", "").strip().replace("\n", " ")
            rust = self.field_info(field)[5]
            out.append("        /// %s Versions %s." % (about, field.get("versions")))
            out.append("        pub %s: %s," % (snake(field["name"]), rust))
        out.append("    }")
        out.append("")
        if not derived:
            # Kafka's defaults where they differ from Rust's.
            out.append("    impl Default for %s {" % struct.name)
            out.append("        fn default() -> Self {")
            out.append("            %s {" % struct.name)
            for name, default in defaults:
                out.append("                %s: %s," % (name, default))
            out.append("            }")
            out.append("        }")
            out.append("    }")
            out.append("")
        out.append("    impl %s {" % struct.name)
        # decode
        out.append("        /// Reads the fields present at `version`; the others keep their defaults.")
        out.append("        pub fn decode(d: &mut Decoder, version: i16) -> Result<Self, ProtocolError> {")
        signature = len(out) - 1
        out.append("            let flexible = %s;" % self.flexible_expr())
        names = []
        for field in struct.fields:
            _, _, present, nullable, nullable_any, rust = self.field_info(field)
            name = snake(field["name"])
            names.append(name)
            default = default_literal(field, rust, nullable_any)
            if present is None:
                out.append("            let %s = %s;" % (name, default))
                continue
            if not nullable_any:
                read = self.decode_value(field, False)
            else:
                ncond = condition(nullable, present)
                if ncond is None:
                    read = self.decode_value(field, True)
                else:
                    read = "if %s { %s } else { Some(%s) }" % (
                        ncond, self.decode_value(field, True), self.decode_value(field, False))
            cond = condition(present, self.valid)
            if cond is None:
                out.append("            let %s = %s;" % (name, read))
            else:
                out.append("            let %s = if %s { %s } else { %s };" % (name, cond, read, default))
        out.append("            if flexible {")
        out.append("                d.skip_tagged_fields()?;")
        out.append("            }")
        out.append("            Ok(%s { %s })" % (struct.name, ", ".join(names)))
        out.append("        }")
        mark_unused_version(out, signature)
        out.append("")
        # encode
        out.append("        /// Writes the fields present at `version`.")
        out.append("        pub fn encode(&self, e: &mut Encoder, version: i16) -> Result<(), ProtocolError> {")
        signature = len(out) - 1
        out.append("            let flexible = %s;" % self.flexible_expr())
        for field in struct.fields:
            is_array, inner, present, nullable, nullable_any, rust = self.field_info(field)
            name = snake(field["name"])
            what = json.dumps(field["name"])
            place = "self.%s" % name
            # Kafka refuses to write a field the version lacks unless it holds its default
            # or the spec marks it ignorable.
            guard = None
            if not field.get("ignorable", False):
                changed = non_default(place, default_literal(field, rust, nullable_any))
                guard = "return Err(not_in_version(%s, version));" % what
            if present is None:
                if guard is not None:
                    out.append("            if %s {" % changed)
                    out.append("                %s" % guard)
                    out.append("            }")
                continue
            cond = condition(present, self.valid)
            stmts = []
            if not nullable_any:
                stmts.append(self.encode_plain(field, "&" + place))
            else:
                ncond = condition(nullable, present)
                nullable_stmt = self.encode_nullable(field, place)
                plain = self.encode_plain(
                    field, "non_null(%s.as_ref(), %s)?" % (place, what))
                if ncond is None:
                    stmts.append(nullable_stmt)
                else:
                    stmts.append("if %s { %s } else { %s }" % (ncond, nullable_stmt, plain))
            if cond is None:
                out.extend("            " + s for s in stmts)
            else:
                out.append("            if %s {" % cond)
                out.extend("                " + s for s in stmts)
                if guard is None:
                    out.append("            }")
                else:
                    out.append("            } else if %s {" % changed)
                    out.append("                %s" % guard)
                    out.append("            }")
        out.append("            if flexible {")
        out.append("                e.empty_tagged_fields();")
        out.append("            }")
        out.append("            Ok(())")
        out.append("        }")
        mark_unused_version(out, signature)
        out.append("    }")
        out.append("")

    def emit(self, out):
        module = snake(self.name)
        out.append("/// %s (API key %d), versions %d-%d%s." % (
            self.name, int(self.spec["apiKey"]), self.valid[0], self.valid[1],
            "" if self.flexible is None else ", flexible from %d" % self.flexible[0]))
        out.append("pub mod %s {" % module)
        out.append("    #[allow(unused_imports)]")
        out.append("    use bytes::Bytes;")
        out.append("    use kafka_protocol::protocol::StrBytes;")
        out.append("    #[allow(unused_imports)]")
        out.append("    use uuid::Uuid;")
        out.append("")
        uses_non_null = len(out)
        out.append("    use crate::codec::{non_null, Decoder, Encoder};")
        out.append("    use crate::ProtocolError;")
        out.append("")
        out.append("    /// The API key.")
        out.append("    pub const API_KEY: i16 = %d;" % int(self.spec["apiKey"]))
        out.append("    /// The versions Kafka defines: (lowest, highest).")
        out.append("    pub const VERSIONS: (i16, i16) = (%d, %d);" % self.valid)
        out.append("")
        for struct in self.structs:
            self.emit_struct(out, struct)
        body = out[uses_non_null + 1:]
        helpers = [h for h in ("non_null", "not_in_version")
                   if any(h + "(" in line for line in body)]
        out[uses_non_null] = "    use crate::codec::{%s};" % ", ".join(helpers + ["Decoder", "Encoder"])
        out.append("}")
        out.append("")


def load(spec_dir, name):
    path = os.path.join(spec_dir, name + ".json")
    with open(path, encoding="utf-8") as handle:
        return json.loads(strip_comments(handle.read()))


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    spec_dir = sys.argv[1]
    out = [
        "// @generated by crates/shale-protocol/schema/gen_codec.py from Apache Kafka 4.4.0's",
        "// message specs (common/message/*.json in kafka-clients 4.4.0).",
        "// Do not edit by hand: regenerate with",
        "//   python3 schema/gen_codec.py <spec dir> > src/codec_generated.rs",
        "",
    ]
    owned_keys = []
    for api in CODEC_OWNED_APIS:
        keys = {load(spec_dir, api + kind)["apiKey"] for kind in ("Request", "Response")}
        if len(keys) != 1:
            raise ValueError("%s: request and response disagree on the API key" % api)
        owned_keys.append((int(keys.pop()), api))
    out.append("/// The APIs whose requests and responses this codec carries at every version")
    out.append("/// (`CODEC_OWNED_APIS` in gen_codec.py), sorted by API key.")
    out.append("pub(crate) const CODEC_OWNED_APIS: &[i16] = &[")
    for key, api in sorted(owned_keys):
        out.append("    %d, // %s" % (key, api))
    out.append("];")
    out.append("")
    names = CODEC_MESSAGES + [api + kind for api in CODEC_OWNED_APIS
                              for kind in ("Request", "Response")]
    for name in names:
        MessageGen(load(spec_dir, name)).emit(out)
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
