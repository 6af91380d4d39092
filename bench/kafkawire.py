"""Just enough of the Kafka wire protocol, from Apache Kafka's message specs, to send raw
Produce (v9-12), Fetch (v12-16) and Metadata (v12) requests and read every field of their
answers, tagged fields included: what bench/leader_hints.py checks and what
bench/replication.py reads back after a failover.

Standard library only (the unit tests in bench/tests import it without the venv). Flexible
versions (KIP-482): compact strings, arrays and bytes carry length + 1 as an unsigned varint,
and every struct ends with its tagged fields: a count, then (tag, size, bytes) each. A decoded
struct keeps the tags it carried in `tags` (tag -> raw bytes), so a caller can tell a tagged
field that is absent from one that holds its default.
"""

import socket
import struct
import uuid

PRODUCE, FETCH, METADATA = 0, 1, 3
REQUEST_HEADER_FLEXIBLE = {PRODUCE: 9, FETCH: 12, METADATA: 9}

ERROR_NAMES = {
    0: "NONE", 3: "UNKNOWN_TOPIC_OR_PARTITION", 6: "NOT_LEADER_OR_FOLLOWER", 2: "CORRUPT_MESSAGE",
    74: "FENCED_LEADER_EPOCH", 75: "UNKNOWN_LEADER_EPOCH", 87: "INVALID_RECORD", 100: "UNKNOWN_TOPIC_ID",
}


def error_name(code):
    return ERROR_NAMES.get(code, f"error {code}")


# ---------------------------------------------------------------------------------------------
# Primitives


def uvarint(value):
    if value < 0:
        raise ValueError("unsigned varint of a negative value")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def varint(value):
    """Signed (zigzag) varint, as record fields use."""
    return uvarint((value << 1) ^ (value >> 63))


def compact_string(value):
    if value is None:
        return uvarint(0)
    raw = value.encode()
    return uvarint(len(raw) + 1) + raw


def compact_bytes(value):
    if value is None:
        return uvarint(0)
    return uvarint(len(value) + 1) + value


def compact_array(items):
    """`items` already encoded, one bytes object each; None is the null array."""
    if items is None:
        return uvarint(0)
    return uvarint(len(items) + 1) + b"".join(items)


def nullable_string(value):
    """Non-compact nullable string (int16 length), as the request header's client id."""
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def tagged_fields(tags=None):
    """`tags`: tag -> encoded bytes; written in ascending tag order as the spec requires."""
    tags = tags or {}
    out = uvarint(len(tags))
    for tag in sorted(tags):
        out += uvarint(tag) + uvarint(len(tags[tag])) + tags[tag]
    return out


class Reader:
    def __init__(self, data, pos=0):
        self.data = bytes(data)
        self.pos = pos

    def take(self, count):
        if self.pos + count > len(self.data):
            raise ValueError(f"truncated: {count} bytes wanted at {self.pos} of {len(self.data)}")
        chunk = self.data[self.pos:self.pos + count]
        self.pos += count
        return chunk

    def unpack(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def int8(self):
        return self.unpack(">b")

    def int16(self):
        return self.unpack(">h")

    def int32(self):
        return self.unpack(">i")

    def int64(self):
        return self.unpack(">q")

    def boolean(self):
        return self.take(1) != b"\x00"

    def uuid(self):
        return uuid.UUID(bytes=self.take(16))

    def uvarint(self):
        shift = value = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def varint(self):
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def compact_string(self):
        size = self.uvarint()
        return None if size == 0 else self.take(size - 1).decode()

    def compact_bytes(self):
        size = self.uvarint()
        return None if size == 0 else self.take(size - 1)

    def compact_array(self, item):
        size = self.uvarint()
        return None if size == 0 else [item(self) for _ in range(size - 1)]

    def tagged_fields(self):
        tags = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            tags[tag] = self.take(self.uvarint())
        return tags

    def at_end(self):
        return self.pos == len(self.data)


# ---------------------------------------------------------------------------------------------
# CRC-32C (Castagnoli), for record batches


def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------
# Record batch v2 (magic 2), uncompressed, no producer id


def record_batch(values, timestamp_ms, key=None):
    records = b""
    for i, value in enumerate(values):
        body = (b"\x00" + varint(0) + varint(i)
                + (varint(-1) if key is None else varint(len(key)) + key)
                + varint(len(value)) + value + varint(0))
        records += varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, timestamp_ms, timestamp_ms, -1, -1, -1, len(values)) + records
    after_length = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def batch_headers(records):
    """(base offset, last offset, partition leader epoch) of each whole batch in a record set
    (a fetched set may end with a partial batch, which is left out)."""
    out = []
    pos = 0
    while pos + 17 <= len(records):
        base_offset, length, leader_epoch, magic = struct.unpack_from(">qiib", records, pos)
        if pos + 12 + length > len(records):
            break
        if magic != 2:
            raise ValueError(f"record batch magic {magic} at {pos}")
        (last_delta,) = struct.unpack_from(">i", records, pos + 23)
        out.append((base_offset, base_offset + last_delta, leader_epoch))
        pos += 12 + length
    return out


# ---------------------------------------------------------------------------------------------
# Requests


def request_frame(api_key, version, correlation_id, client_id, body):
    """Size-prefixed request: header v2 for flexible versions (client id stays a non-compact
    string, then the header's tagged fields), v1 before."""
    header = struct.pack(">hhi", api_key, version, correlation_id) + nullable_string(client_id)
    if version >= REQUEST_HEADER_FLEXIBLE[api_key]:
        header += tagged_fields()
    frame = header + body
    return struct.pack(">i", len(frame)) + frame


def produce_request(version, topic, partition, records, acks=-1, timeout_ms=5000):
    """Produce v9-12 body (flexible, topics by name): one partition of one topic."""
    if not 9 <= version <= 12:
        raise ValueError(f"Produce v{version} is not encoded here (v9-12)")
    partition_data = struct.pack(">i", partition) + compact_bytes(records) + tagged_fields()
    topic_data = compact_string(topic) + compact_array([partition_data]) + tagged_fields()
    return (compact_string(None) + struct.pack(">hi", acks, timeout_ms)
            + compact_array([topic_data]) + tagged_fields())


def fetch_request(version, partition, fetch_offset=0, topic=None, topic_id=None, current_leader_epoch=-1,
                  max_wait_ms=0, max_bytes=1 << 20):
    """A consumer's sessionless Fetch v12-16 body: one partition, by name (v12) or topic id
    (v13+). v15 moved ReplicaId into the ReplicaState tagged field, left out (a consumer)."""
    if not 12 <= version <= 16:
        raise ValueError(f"Fetch v{version} is not encoded here (v12-16)")
    out = b"" if version >= 15 else struct.pack(">i", -1)  # ReplicaId
    # MaxWaitMs, MinBytes, MaxBytes, IsolationLevel, SessionId 0, SessionEpoch -1 (no session)
    out += struct.pack(">iiibii", max_wait_ms, 1, max_bytes, 0, 0, -1)
    fetch_partition = (struct.pack(">iiqiqi", partition, current_leader_epoch, fetch_offset, -1, -1, max_bytes)
                       + tagged_fields())
    if version >= 13:
        if topic_id is None:
            raise ValueError("Fetch v13+ names the topic by id")
        topic_field = uuid.UUID(str(topic_id)).bytes
    else:
        topic_field = compact_string(topic)
    fetch_topic = topic_field + compact_array([fetch_partition]) + tagged_fields()
    out += compact_array([fetch_topic])
    out += compact_array([])  # ForgottenTopicsData
    out += compact_string("")  # RackId
    return out + tagged_fields()


def metadata_request(topics, version=12):
    """Metadata v12 body: the named topics, no auto-creation, no authorized operations."""
    if version != 12:
        raise ValueError("only Metadata v12 is encoded here")
    items = [bytes(16) + compact_string(name) + tagged_fields() for name in topics]
    return compact_array(items) + b"\x00\x00" + tagged_fields()


# ---------------------------------------------------------------------------------------------
# Responses. Every answer is a dict; `tags` lists the tagged fields a struct carried.


def _response_header(reader, api_key, version):
    correlation_id = reader.int32()
    if version >= REQUEST_HEADER_FLEXIBLE[api_key]:
        reader.tagged_fields()  # response header v1
    return correlation_id


def _leader_id_and_epoch(raw):
    r = Reader(raw)
    out = {"leader_id": r.int32(), "leader_epoch": r.int32(), "tags": r.tagged_fields()}
    if not r.at_end():
        raise ValueError("trailing bytes in LeaderIdAndEpoch")
    return out


def _node_endpoints(raw):
    r = Reader(raw)

    def endpoint(rd):
        return {"node_id": rd.int32(), "host": rd.compact_string(), "port": rd.int32(),
                "rack": rd.compact_string(), "tags": rd.tagged_fields()}

    out = r.compact_array(endpoint)
    if not r.at_end():
        raise ValueError("trailing bytes in NodeEndpoints")
    return out


def decode_produce_response(version, payload):
    """Produce v9-12 answer (after the size prefix). CurrentLeader is partition tag 0 (v10+),
    NodeEndpoints top-level tag 0 (v10+); both stay None when absent."""
    r = Reader(payload)
    correlation_id = _response_header(r, PRODUCE, version)

    def partition(rd):
        p = {"index": rd.int32(), "error_code": rd.int16(), "base_offset": rd.int64(),
             "log_append_time_ms": rd.int64(), "log_start_offset": rd.int64()}
        p["record_errors"] = rd.compact_array(lambda x: {"batch_index": x.int32(), "message": x.compact_string(),
                                                         "tags": x.tagged_fields()})
        p["error_message"] = rd.compact_string()
        p["tags"] = rd.tagged_fields()
        p["current_leader"] = (_leader_id_and_epoch(p["tags"][0])
                               if version >= 10 and 0 in p["tags"] else None)
        return p

    def topic(rd):
        return {"name": rd.compact_string(), "partitions": rd.compact_array(partition), "tags": rd.tagged_fields()}

    out = {"correlation_id": correlation_id, "topics": r.compact_array(topic), "throttle_time_ms": r.int32()}
    out["tags"] = r.tagged_fields()
    out["node_endpoints"] = _node_endpoints(out["tags"][0]) if version >= 10 and 0 in out["tags"] else None
    if not r.at_end():
        raise ValueError("trailing bytes after the Produce answer")
    return out


def decode_fetch_response(version, payload):
    """Fetch v12-16 answer. Partition tags: 0 DivergingEpoch, 1 CurrentLeader, 2 SnapshotId
    (all v12+); NodeEndpoints is top-level tag 0 (v16+). Record sets are kept as bytes."""
    r = Reader(payload)
    correlation_id = _response_header(r, FETCH, version)
    out = {"correlation_id": correlation_id, "throttle_time_ms": r.int32(), "error_code": r.int16(),
           "session_id": r.int32()}

    def partition(rd):
        p = {"index": rd.int32(), "error_code": rd.int16(), "high_watermark": rd.int64(),
             "last_stable_offset": rd.int64(), "log_start_offset": rd.int64()}
        p["aborted_transactions"] = rd.compact_array(lambda x: (x.int64(), x.int64(), x.tagged_fields()))
        p["preferred_read_replica"] = rd.int32()
        p["records"] = rd.compact_bytes()
        p["tags"] = rd.tagged_fields()
        p["current_leader"] = _leader_id_and_epoch(p["tags"][1]) if 1 in p["tags"] else None
        return p

    def topic(rd):
        t = {"topic_id": rd.uuid()} if version >= 13 else {"name": rd.compact_string()}
        t["partitions"] = rd.compact_array(partition)
        t["tags"] = rd.tagged_fields()
        return t

    out["topics"] = r.compact_array(topic)
    out["tags"] = r.tagged_fields()
    out["node_endpoints"] = _node_endpoints(out["tags"][0]) if version >= 16 and 0 in out["tags"] else None
    if not r.at_end():
        raise ValueError("trailing bytes after the Fetch answer")
    return out


def decode_metadata_response(payload, version=12):
    r = Reader(payload)
    correlation_id = _response_header(r, METADATA, version)
    out = {"correlation_id": correlation_id, "throttle_time_ms": r.int32()}
    out["brokers"] = r.compact_array(lambda x: {"node_id": x.int32(), "host": x.compact_string(), "port": x.int32(),
                                                "rack": x.compact_string(), "tags": x.tagged_fields()})
    out["cluster_id"] = r.compact_string()
    out["controller_id"] = r.int32()

    def ids(rd):
        return rd.compact_array(lambda x: x.int32())

    def partition(rd):
        return {"error_code": rd.int16(), "index": rd.int32(), "leader_id": rd.int32(), "leader_epoch": rd.int32(),
                "replicas": ids(rd), "isr": ids(rd), "offline": ids(rd), "tags": rd.tagged_fields()}

    def topic(rd):
        return {"error_code": rd.int16(), "name": rd.compact_string(), "topic_id": rd.uuid(),
                "is_internal": rd.boolean(), "partitions": rd.compact_array(partition),
                "authorized_operations": rd.int32(), "tags": rd.tagged_fields()}

    out["topics"] = r.compact_array(topic)
    out["tags"] = r.tagged_fields()
    if not r.at_end():
        raise ValueError("trailing bytes after the Metadata answer")
    return out


# ---------------------------------------------------------------------------------------------
# One request, one answer


def _recv_exact(sock, count):
    buf = bytearray()
    while len(buf) < count:
        chunk = sock.recv(count - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


_next_correlation = [1000]


def call(port, api_key, version, body, host="127.0.0.1", timeout=15, client_id="leader-hints-check"):
    """Sends one request on a fresh connection; returns the answer's payload (header included)."""
    _next_correlation[0] += 1
    correlation_id = _next_correlation[0]
    frame = request_frame(api_key, version, correlation_id, client_id, body)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(frame)
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        payload = _recv_exact(sock, size)
    (got,) = struct.unpack_from(">i", payload, 0)
    if got != correlation_id:
        raise ValueError(f"correlation id {got}, sent {correlation_id}")
    return payload


def metadata(port, topics):
    return decode_metadata_response(call(port, METADATA, 12, metadata_request(topics)))


def partition_state(port, topic, partition=0):
    """(leader id, leader epoch, isr, topic id) of one partition as the broker on `port` sees it;
    None when it does not know the partition."""
    for t in metadata(port, [topic])["topics"] or []:
        if t["name"] == topic and t["error_code"] == 0:
            for p in t["partitions"] or []:
                if p["index"] == partition:
                    return p["leader_id"], p["leader_epoch"], sorted(p["isr"] or []), t["topic_id"]
    return None
