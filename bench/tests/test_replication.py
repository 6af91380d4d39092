"""Unit tests of bench/replication.py's failover arithmetic and arguments.

Run with `python3 -m unittest discover -s bench/tests`: no broker, and confluent-kafka stands in
as an empty module when the venv is not the interpreter.
"""

import sys
import types
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

try:
    import confluent_kafka  # noqa: F401
except ImportError:  # only the names replication.py imports are needed here
    fake = types.ModuleType("confluent_kafka")
    fake.KafkaError = fake.Producer = object
    admin = types.ModuleType("confluent_kafka.admin")
    admin.AdminClient = admin.NewTopic = object
    fake.admin = admin
    sys.modules["confluent_kafka"] = fake
    sys.modules["confluent_kafka.admin"] = admin

import replication  # noqa: E402


class Handover(unittest.TestCase):
    def test_first_write_of_the_new_epoch_and_the_longest_silence(self):
        # Signal at t=10. The old leader acks offsets 0-2 until 10.05; then nothing until a
        # late ack of old offset 3 (a retry answered by the new leader's duplicate check) at
        # 10.9, and the first new-epoch write (offset 4) at 11.0.
        acks = [(9.99, 0), (10.02, 1), (10.05, 2), (10.9, 3), (11.0, 4), (11.01, 5)]
        figures = replication.handover(acks, 10.0, 4)
        self.assertEqual(figures["failover_ms"], 1000.0)
        self.assertEqual(figures["longest_gap_ms"], 850.0)
        self.assertEqual(figures["last_old_epoch_ack_ms"], 900.0)
        self.assertEqual(figures["first_new_epoch_acked_offset"], 4)

    def test_silence_from_the_signal_counts(self):
        figures = replication.handover([(9.0, 0), (10.5, 7)], 10.0, 5)
        self.assertEqual(figures["longest_gap_ms"], 500.0)
        self.assertEqual(figures["last_old_epoch_ack_ms"], -1000.0)  # before the signal

    def test_acks_arriving_out_of_offset_order(self):
        # Another client's write took offset 4; this one's first new-epoch ack is offset 6,
        # acknowledged before offset 5 was.
        figures = replication.handover([(10.2, 6), (10.3, 5)], 10.0, 4)
        self.assertEqual(figures["failover_ms"], 200.0)
        self.assertEqual(figures["longest_gap_ms"], 200.0)
        self.assertEqual(figures["first_new_epoch_acked_offset"], 6)

    def test_no_write_of_the_new_epoch_is_no_figure(self):
        self.assertIsNone(replication.handover([(10.1, 1), (10.2, 2)], 10.0, 3))


class ShaleBuilds(unittest.TestCase):
    def test_labels_and_paths(self):
        self.assertEqual(replication.shale_builds(["target/release/shale"]), [("shale", "target/release/shale")])
        self.assertEqual(replication.shale_builds(["hints=a/shale", "nohints=b/shale"]),
                         [("hints", "a/shale"), ("nohints", "b/shale")])
        self.assertEqual(replication.shale_builds(["a/shale", "b/x=y"]), [("shale", "a/shale"), ("shale-2", "b/x=y")])

    def test_a_label_twice_or_kafka_is_refused(self):
        with self.assertRaises(SystemExit):
            replication.shale_builds(["x=a", "x=b"])
        with self.assertRaises(SystemExit):
            replication.shale_builds(["kafka=a"])


class FailoverTable(unittest.TestCase):
    def test_one_row_per_build_and_client(self):
        results = {"failover_signal": "term", "shale_labels": ["hints", "nohints"],
                   "hints": {"failover_median_ms": 110, "failover_max_ms": 130, "longest_gap_median_ms": 100,
                             "longest_gap_max_ms": 120, "java_failover_median_ms": 190, "java_failover_max_ms": 280,
                             "java_longest_gap_median_ms": 180, "java_longest_gap_max_ms": 260,
                             "new_leader_in_metadata_median_ms": 80, "not_leader_rounds": 2,
                             "java_not_leader_rounds": 3, "failover_rounds": [{}] * 7},
                   "nohints": {"failover_median_ms": 1270, "failover_max_ms": 1518,
                               "new_leader_in_metadata_median_ms": 57},
                   "kafka": {}}
        rows = replication.failover_table(results).splitlines()
        self.assertIn("SIGTERM to the first write acknowledged by the new leader", rows[0])
        self.assertEqual(rows[2], "| hints | confluent-kafka (librdkafka) | 110 / 130 | 100 / 120 | 2/7 | 80 |")
        self.assertEqual(rows[3], "| hints | Java (kafka-clients) | 190 / 280 | 180 / 260 | 3/7 | 80 |")
        self.assertEqual(rows[4], "| nohints | confluent-kafka (librdkafka) | 1,270 / 1,518 | n/a / n/a | n/a | 57 |")
        self.assertEqual(len(rows), 5)


if __name__ == "__main__":
    unittest.main()
