"""Unit tests of bench/kafkawire.py (raw Produce, Fetch and Metadata encoding and decoding,
tagged fields included) and of bench/leader_hints.py's judging of answers.

Run with `python3 -m unittest discover -s bench/tests`: no network, no broker, no venv.
"""

import struct
import sys
import unittest
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kafkawire as kw  # noqa: E402
import leader_hints as lh  # noqa: E402


class Primitives(unittest.TestCase):
    def test_unsigned_varints(self):
        self.assertEqual(kw.uvarint(0), b"\x00")
        self.assertEqual(kw.uvarint(127), b"\x7f")
        self.assertEqual(kw.uvarint(128), b"\x80\x01")
        self.assertEqual(kw.uvarint(300), b"\xac\x02")
        for value in (0, 1, 127, 128, 300, 16384, 2**31, 2**63 - 1):
            self.assertEqual(kw.Reader(kw.uvarint(value)).uvarint(), value)

    def test_signed_varints_are_zigzag(self):
        self.assertEqual(kw.varint(0), b"\x00")
        self.assertEqual(kw.varint(-1), b"\x01")
        self.assertEqual(kw.varint(1), b"\x02")
        self.assertEqual(kw.varint(-64), b"\x7f")
        self.assertEqual(kw.varint(64), b"\x80\x01")
        for value in (0, -1, 1, -64, 64, -(2**31), 2**31 - 1):
            self.assertEqual(kw.Reader(kw.varint(value)).varint(), value)

    def test_compact_strings_bytes_and_arrays_carry_length_plus_one(self):
        self.assertEqual(kw.compact_string(None), b"\x00")
        self.assertEqual(kw.compact_string(""), b"\x01")
        self.assertEqual(kw.compact_string("ab"), b"\x03ab")
        self.assertEqual(kw.compact_bytes(b"\x00\x01"), b"\x03\x00\x01")
        self.assertEqual(kw.compact_array([]), b"\x01")
        self.assertEqual(kw.compact_array(None), b"\x00")
        self.assertIsNone(kw.Reader(b"\x00").compact_string())
        self.assertEqual(kw.Reader(b"\x03ab").compact_string(), "ab")
        self.assertIsNone(kw.Reader(b"\x00").compact_array(lambda r: r.int32()))

    def test_non_compact_nullable_string(self):
        self.assertEqual(kw.nullable_string(None), b"\xff\xff")
        self.assertEqual(kw.nullable_string("id"), b"\x00\x02id")

    def test_tagged_fields_are_written_in_tag_order_and_read_back(self):
        raw = kw.tagged_fields({3: b"\x07", 0: b"ab"})
        self.assertEqual(raw, b"\x02" + b"\x00\x02ab" + b"\x03\x01\x07")
        self.assertEqual(kw.Reader(raw).tagged_fields(), {0: b"ab", 3: b"\x07"})
        self.assertEqual(kw.tagged_fields(), b"\x00")

    def test_a_short_buffer_is_an_error_not_a_guess(self):
        with self.assertRaises(ValueError):
            kw.Reader(b"\x00\x00").int32()
        with self.assertRaises(ValueError):
            kw.Reader(b"\x05ab").compact_string()

    def test_crc32c_check_value(self):
        self.assertEqual(kw.crc32c(b"123456789"), 0xE3069283)
        self.assertEqual(kw.crc32c(b""), 0)


class RecordBatches(unittest.TestCase):
    def test_one_record_batch_layout(self):
        batch = kw.record_batch([b"v"], 1000)
        base_offset, length, leader_epoch, magic, crc = struct.unpack_from(">qiibI", batch, 0)
        self.assertEqual((base_offset, leader_epoch, magic), (0, -1, 2))
        self.assertEqual(length, len(batch) - 12)
        self.assertEqual(crc, kw.crc32c(batch[21:]))
        attributes, last_delta, first_ts, max_ts, pid, pepoch, seq, count = struct.unpack_from(">hiqqqhii", batch, 21)
        self.assertEqual((attributes, last_delta, first_ts, max_ts, pid, pepoch, seq, count),
                         (0, 0, 1000, 1000, -1, -1, -1, 1))
        # length 7: attributes, timestamp delta, offset delta, key -1 (null), value length 1, "v",
        # no headers
        self.assertEqual(batch[61:], b"\x0e\x00\x00\x00\x01\x02v\x00")

    def test_offsets_deltas_of_several_records(self):
        batch = kw.record_batch([b"a", b"b", b"c"], 5)
        self.assertEqual(struct.unpack_from(">i", batch, 23)[0], 2)
        self.assertEqual(kw.batch_headers(batch), [(0, 2, -1)])

    def test_batch_headers_read_epochs_and_leave_out_a_partial_batch(self):
        def stamped(batch, base, epoch):
            return struct.pack(">q", base) + batch[8:12] + struct.pack(">i", epoch) + batch[16:]

        one = kw.record_batch([b"x"], 1)
        two = kw.record_batch([b"x", b"y"], 1)
        records = stamped(one, 0, 3) + stamped(two, 1, 3) + stamped(one, 3, 4)
        self.assertEqual(kw.batch_headers(records), [(0, 0, 3), (1, 2, 3), (3, 3, 4)])
        self.assertEqual(kw.batch_headers(records[:-5]), [(0, 0, 3), (1, 2, 3)])
        self.assertEqual(kw.batch_headers(b""), [])


class Requests(unittest.TestCase):
    def test_flexible_request_header(self):
        frame = kw.request_frame(kw.PRODUCE, 11, 7, "c", b"BODY")
        self.assertEqual(frame, struct.pack(">i", 16) + b"\x00\x00\x00\x0b\x00\x00\x00\x07\x00\x01c\x00BODY")

    def test_non_flexible_request_header_has_no_tagged_fields(self):
        frame = kw.request_frame(kw.FETCH, 11, 7, None, b"")
        self.assertEqual(frame, struct.pack(">i", 10) + b"\x00\x01\x00\x0b\x00\x00\x00\x07\xff\xff")

    def test_produce_v9_to_v12_body(self):
        body = kw.produce_request(11, "t", 0, b"R", acks=-1, timeout_ms=5000)
        expected = (b"\x00"                  # transactional id: null
                    + b"\xff\xff"            # acks -1
                    + b"\x00\x00\x13\x88"    # timeout 5000 ms
                    + b"\x02" + b"\x02t"     # one topic, "t"
                    + b"\x02" + b"\x00\x00\x00\x00" + b"\x02R" + b"\x00"  # partition 0, records, tags
                    + b"\x00" + b"\x00")     # topic tags, request tags
        self.assertEqual(body, expected)
        for version in (9, 10, 12):
            self.assertEqual(kw.produce_request(version, "t", 0, b"R", acks=-1, timeout_ms=5000), expected)
        with self.assertRaises(ValueError):
            kw.produce_request(13, "t", 0, b"R")

    def test_fetch_v16_body_by_topic_id(self):
        topic_id = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
        body = kw.fetch_request(16, 0, fetch_offset=5, topic_id=topic_id, current_leader_epoch=3, max_bytes=1024)
        expected = (struct.pack(">iiibii", 0, 1, 1024, 0, 0, -1)    # no ReplicaId from v15
                    + b"\x02" + topic_id.bytes
                    + b"\x02" + struct.pack(">iiqiqi", 0, 3, 5, -1, -1, 1024) + b"\x00"
                    + b"\x00"                # topic tags
                    + b"\x01"                # no forgotten topics
                    + b"\x01"                # rack id ""
                    + b"\x00")               # request tags (no ClusterId, no ReplicaState)
        self.assertEqual(body, expected)
        self.assertEqual(kw.fetch_request(15, 0, fetch_offset=5, topic_id=topic_id, current_leader_epoch=3,
                                          max_bytes=1024), expected)

    def test_fetch_before_v15_leads_with_the_replica_id_and_v12_names_the_topic(self):
        topic_id = uuid.uuid4()
        v14 = kw.fetch_request(14, 0, topic_id=topic_id)
        self.assertEqual(v14[:4], b"\xff\xff\xff\xff")
        self.assertEqual(v14[4:], kw.fetch_request(15, 0, topic_id=topic_id))
        v12 = kw.fetch_request(12, 0, topic="t")
        self.assertEqual(v12[4 + 21:4 + 21 + 3], b"\x02\x02t")
        with self.assertRaises(ValueError):
            kw.fetch_request(13, 0, topic="t")

    def test_metadata_v12_body(self):
        self.assertEqual(kw.metadata_request(["t"]), b"\x02" + bytes(16) + b"\x02t\x00" + b"\x00\x00" + b"\x00")


def endpoints_tag(endpoints):
    return kw.compact_array([struct.pack(">i", node) + kw.compact_string(host) + struct.pack(">i", port)
                             + kw.compact_string(rack) + kw.tagged_fields() for node, host, port, rack in endpoints])


def produce_answer(partition_tags=None, top_tags=None, error=6):
    partition = (struct.pack(">ihqqq", 0, error, -1, -1, -1) + kw.compact_array([]) + kw.compact_string(None)
                 + kw.tagged_fields(partition_tags))
    topic = kw.compact_string("t") + kw.compact_array([partition]) + kw.tagged_fields()
    return (struct.pack(">i", 9) + kw.tagged_fields() + kw.compact_array([topic]) + struct.pack(">i", 0)
            + kw.tagged_fields(top_tags))


def fetch_answer(version, partition_tags=None, top_tags=None, error=6, records=None, topic_id=None):
    partition = (struct.pack(">ihqqq", 0, error, -1, -1, -1) + kw.compact_array(None) + struct.pack(">i", -1)
                 + kw.compact_bytes(records) + kw.tagged_fields(partition_tags))
    topic_field = (topic_id or uuid.UUID(int=1)).bytes if version >= 13 else kw.compact_string("t")
    topic = topic_field + kw.compact_array([partition]) + kw.tagged_fields()
    return (struct.pack(">i", 9) + kw.tagged_fields() + struct.pack(">ihi", 0, 0, 0) + kw.compact_array([topic])
            + kw.tagged_fields(top_tags))


LEADER_2_EPOCH_5 = struct.pack(">ii", 2, 5) + b"\x00"


class Responses(unittest.TestCase):
    def test_produce_answer_with_hints(self):
        raw = produce_answer({0: LEADER_2_EPOCH_5}, {0: endpoints_tag([(2, "127.0.0.1", 9092, None)])})
        answer = kw.decode_produce_response(11, raw)
        p = answer["topics"][0]["partitions"][0]
        self.assertEqual(answer["correlation_id"], 9)
        self.assertEqual(p["error_code"], 6)
        self.assertEqual((p["current_leader"]["leader_id"], p["current_leader"]["leader_epoch"]), (2, 5))
        self.assertEqual([(e["node_id"], e["host"], e["port"], e["rack"]) for e in answer["node_endpoints"]],
                         [(2, "127.0.0.1", 9092, None)])

    def test_a_literal_produce_v11_answer(self):
        raw = bytes.fromhex(
            "00000009" "00"                       # correlation id, header tags
            "02" "0274"                           # one topic "t"
            "02" "00000000" "0006"                # partition 0, NOT_LEADER_OR_FOLLOWER
            "ffffffffffffffff" "ffffffffffffffff" "ffffffffffffffff"
            "01" "00"                             # no record errors, null error message
            "01" "00" "09" "00000003" "00000007" "00"   # tag 0: leader 3, epoch 7
            "00"                                  # topic tags
            "00000000"                            # throttle
            "01" "00" "15" "02" "00000003" "0a3132372e302e302e31" "00002384" "00" "00")
        summary = lh.produce_summary(kw.decode_produce_response(11, raw))
        self.assertEqual(summary, {"error": 6, "current_leader": [3, 7],
                                   "node_endpoints": [[3, "127.0.0.1", 9092, None]],
                                   "partition_tags": [0], "top_tags": [0]})

    def test_produce_v9_answer_without_tags(self):
        answer = kw.decode_produce_response(9, produce_answer())
        self.assertEqual(lh.produce_summary(answer), lh.unhinted(6))

    def test_produce_v9_leaves_tag_0_undecoded(self):
        # Tag 0 means nothing before v10: kept as raw bytes, so the check sees a tag where none belongs.
        answer = kw.decode_produce_response(9, produce_answer({0: LEADER_2_EPOCH_5}))
        self.assertIsNone(answer["topics"][0]["partitions"][0]["current_leader"])
        self.assertEqual(lh.produce_summary(answer)["partition_tags"], [0])

    def test_unknown_tags_are_skipped_and_kept(self):
        raw = produce_answer({0: LEADER_2_EPOCH_5, 9: b"zz"}, {5: b"\x01\x02\x03"})
        answer = kw.decode_produce_response(11, raw)
        self.assertEqual(answer["tags"], {5: b"\x01\x02\x03"})
        self.assertIsNone(answer["node_endpoints"])
        self.assertEqual(answer["topics"][0]["partitions"][0]["tags"][9], b"zz")

    def test_trailing_bytes_are_an_error(self):
        with self.assertRaises(ValueError):
            kw.decode_produce_response(11, produce_answer() + b"\x00")

    def test_fetch_v16_answer_with_hints_and_other_tags(self):
        diverging = struct.pack(">iq", 4, 100) + b"\x00"
        raw = fetch_answer(16, {0: diverging, 1: LEADER_2_EPOCH_5},
                           {0: endpoints_tag([(2, "h", 1, "r1"), (3, "k", 2, None)])}, error=74)
        answer = kw.decode_fetch_response(16, raw)
        summary = lh.fetch_summary(answer)
        self.assertEqual(summary["error"], 74)
        self.assertEqual(summary["current_leader"], [2, 5])
        self.assertEqual(summary["node_endpoints"], [[2, "h", 1, "r1"], [3, "k", 2, None]])
        self.assertEqual(summary["partition_tags"], [0, 1])
        self.assertEqual(answer["topics"][0]["topic_id"], uuid.UUID(int=1))

    def test_fetch_v15_top_level_tag_0_is_not_node_endpoints(self):
        raw = fetch_answer(15, top_tags={0: endpoints_tag([(2, "h", 1, None)])})
        answer = kw.decode_fetch_response(15, raw)
        self.assertIsNone(answer["node_endpoints"])
        self.assertEqual(lh.fetch_summary(answer)["top_tags"], [0])

    def test_fetch_v12_answer_names_the_topic_and_keeps_the_records(self):
        records = kw.record_batch([b"x"], 1)
        answer = kw.decode_fetch_response(12, fetch_answer(12, error=0, records=records))
        self.assertEqual(answer["topics"][0]["name"], "t")
        self.assertEqual(answer["topics"][0]["partitions"][0]["records"], records)

    def test_metadata_v12_answer(self):
        topic_id = uuid.uuid4()
        broker = struct.pack(">i", 1) + kw.compact_string("127.0.0.1") + struct.pack(">i", 9092) \
            + kw.compact_string(None) + kw.tagged_fields()
        ids = kw.compact_array([struct.pack(">i", i) for i in (1, 2, 3)])
        partition = struct.pack(">hiii", 0, 0, 1, 4) + ids + kw.compact_array([struct.pack(">i", 1)]) \
            + kw.compact_array([]) + kw.tagged_fields()
        topic = struct.pack(">h", 0) + kw.compact_string("t") + topic_id.bytes + b"\x00" \
            + kw.compact_array([partition]) + struct.pack(">i", -(2**31)) + kw.tagged_fields()
        raw = (struct.pack(">i", 9) + kw.tagged_fields() + struct.pack(">i", 0) + kw.compact_array([broker])
               + kw.compact_string("cluster") + struct.pack(">i", 2) + kw.compact_array([topic]) + kw.tagged_fields())
        answer = kw.decode_metadata_response(raw)
        self.assertEqual(answer["controller_id"], 2)
        p = answer["topics"][0]["partitions"][0]
        self.assertEqual((p["leader_id"], p["leader_epoch"], p["replicas"], p["isr"]), (1, 4, [1, 2, 3], [1]))
        self.assertEqual(answer["topics"][0]["topic_id"], topic_id)


class Judging(unittest.TestCase):
    def test_a_matching_answer_has_no_differences(self):
        expected = lh.hinted(6, 2, 5, "127.0.0.1", 9092)
        self.assertEqual(lh.differences(expected, dict(expected)), [])

    def test_every_differing_field_is_named_with_both_values(self):
        expected = lh.hinted(6, 2, 5, "127.0.0.1", 9092, fetch=True)
        answered = dict(lh.unhinted(0, fetch=True))
        diff = lh.differences(expected, answered)
        self.assertEqual(diff[0], "error: expected NOT_LEADER_OR_FOLLOWER (6), answered NONE (0)")
        self.assertIn('current_leader: expected [2, 5], answered null', diff)
        self.assertIn('node_endpoints: expected [[2, "127.0.0.1", 9092, null]], answered null', diff)
        self.assertEqual(len(diff), 5)

    def test_an_empty_endpoint_list_is_not_an_absent_one(self):
        answered = dict(lh.unhinted(6), node_endpoints=[], top_tags=[0])
        self.assertEqual(len(lh.differences(lh.unhinted(6), answered)), 2)

    def test_fetch_hints_live_in_partition_tag_1(self):
        self.assertEqual(lh.hinted(74, 1, 2, "h", 3, fetch=True)["partition_tags"], [1])
        self.assertEqual(lh.hinted(6, 1, 2, "h", 3)["partition_tags"], [0])

    def test_describe(self):
        self.assertEqual(lh.describe(lh.hinted(6, 2, 5, "127.0.0.1", 9092)),
                         "NOT_LEADER_OR_FOLLOWER, current_leader (id 2, epoch 5), node_endpoints [2 127.0.0.1:9092]")
        self.assertEqual(lh.describe(lh.unhinted(74)), "FENCED_LEADER_EPOCH, no hint, no tagged fields")

    def test_answers_of_two_clusters_compare_by_role(self):
        roles_a = {"ids": {2: "leader"}, "epochs": {5: "epoch"}, "ports": {9092: "leader port"}}
        roles_b = {"ids": {3: "leader"}, "epochs": {1: "epoch"}, "ports": {7000: "leader port"}}
        a = lh.normalized(lh.hinted(6, 2, 5, "127.0.0.1", 9092), roles_a)
        b = lh.normalized(lh.hinted(6, 3, 1, "127.0.0.1", 7000), roles_b)
        self.assertEqual(a, b)
        self.assertEqual(a["current_leader"], ["leader", "epoch"])
        rows = [{"key": "k", "broker": "shale", "normalized": a, "answered": {}},
                {"key": "k", "broker": "kafka", "normalized": b, "answered": {}},
                {"key": "j", "broker": "shale", "normalized": lh.unhinted(6), "answered": {}},
                {"key": "j", "broker": "kafka", "normalized": lh.unhinted(0), "answered": {}}]
        self.assertEqual([key for key, _, _ in lh.compare(rows)], ["j"])


if __name__ == "__main__":
    unittest.main()
