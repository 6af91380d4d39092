"""Unit tests of bench/groups.py's helpers (bench/groupbench/): what counts as a stable
assignment, the quiet period before a stable state is believed, heartbeat counting from
librdkafka's protocol debug lines, /proc readings and the table.

Run with `python3 -m unittest discover -s bench/tests`: no network, no broker, no venv.
"""

import logging
import os
import sys
import threading
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from groupbench import members as gm  # noqa: E402
from groupbench import procstat, report  # noqa: E402


class FakeMember:
    """What wait_stable and coverage read of a member: its assignment and last change."""

    def __init__(self, partitions, changed_at=None):
        self.assignment = frozenset(partitions)
        self.changed_at = changed_at


class Coverage(unittest.TestCase):
    def test_every_partition_once_and_no_empty_member_is_stable(self):
        stable, summary = gm.coverage([FakeMember({0, 1}), FakeMember({2, 3})], 4)
        self.assertTrue(stable)
        self.assertEqual(summary, {"members_without_partitions": 0, "partitions_unowned": 0,
                                   "partitions_owned_twice": 0})

    def test_a_member_without_partitions_is_not_stable(self):
        stable, summary = gm.coverage([FakeMember({0, 1, 2, 3}), FakeMember(set())], 4)
        self.assertFalse(stable)
        self.assertEqual(summary["members_without_partitions"], 1)

    def test_an_unowned_partition_is_not_stable(self):
        stable, summary = gm.coverage([FakeMember({0, 1}), FakeMember({2})], 4)
        self.assertFalse(stable)
        self.assertEqual(summary["partitions_unowned"], 1)

    def test_a_partition_owned_twice_is_not_stable(self):
        stable, summary = gm.coverage([FakeMember({0, 1, 2}), FakeMember({2, 3})], 4)
        self.assertFalse(stable)
        self.assertEqual(summary["partitions_owned_twice"], 1)


class WaitStable(unittest.TestCase):
    def test_reports_the_last_change_of_a_state_that_held(self):
        since = time.monotonic()
        group = [FakeMember({0}, since + 0.01), FakeMember({1}, since + 0.02)]
        out = gm.wait_stable(group, 2, since, settle_s=0.2, timeout_s=5)
        self.assertAlmostEqual(out["stable_s"], 0.02, places=6)

    def test_a_change_inside_the_quiet_period_restarts_it(self):
        since = time.monotonic()
        a, b = FakeMember({0, 2}, since), FakeMember({1, 3}, since)
        moved = {}

        def reconcile():
            # A stable-looking state, then one more move (the newcomer's second partition).
            time.sleep(0.1)
            a.assignment, b.assignment = frozenset({0}), frozenset({1, 2, 3})
            moved["at"] = time.monotonic()
            a.changed_at = b.changed_at = moved["at"]

        t = threading.Thread(target=reconcile)
        t.start()
        out = gm.wait_stable([a, b], 4, since, settle_s=0.3, timeout_s=5)
        t.join()
        self.assertAlmostEqual(out["stable_s"], moved["at"] - since, places=6)

    def test_times_out_with_what_was_missing(self):
        since = time.monotonic()
        out = gm.wait_stable([FakeMember({0}), FakeMember(set())], 2, since, settle_s=0.1, timeout_s=0.3)
        self.assertIsNone(out["stable_s"])
        self.assertEqual(out["timed_out_after_s"], 0.3)
        self.assertEqual(out["members_without_partitions"], 1)
        self.assertEqual(out["partitions_unowned"], 1)


class HeartbeatCounting(unittest.TestCase):
    def log(self, handler, message):
        handler.emit(logging.LogRecord("probe", logging.DEBUG, __file__, 0, "%s", (message,), None))

    def test_counts_sent_requests_by_name_inside_the_window(self):
        handler = gm.RequestLog()
        before = time.monotonic()
        self.log(handler, "SEND [rdkafka#consumer-1] 127.0.0.1:9092/1: Sent ConsumerGroupHeartbeatRequest "
                          "(v1, 120 bytes @ 0, CorrId 7)")
        self.log(handler, "SEND [rdkafka#consumer-1] 127.0.0.1:9092/1: Sent HeartbeatRequest (v4, 90 bytes @ 0, CorrId 8)")
        self.log(handler, "SEND [rdkafka#consumer-1] 127.0.0.1:9092/1: Sent FetchRequest (v15, 90 bytes @ 0, CorrId 9)")
        self.log(handler, "RECV [rdkafka#consumer-1] 127.0.0.1:9092/1: Received HeartbeatResponse (v4, 10 bytes)")
        after = time.monotonic() + 1e-6
        self.assertEqual(handler.between(before, after), {"ConsumerGroupHeartbeat": 1, "Heartbeat": 1, "Fetch": 1})
        self.assertEqual(handler.between(after, after + 1), {})

    def test_heartbeat_counts_split_heartbeats_from_other_requests(self):
        class Probe:
            requests = gm.RequestLog()

        probe = Probe()
        start = time.monotonic()
        for line in ("Sent ConsumerGroupHeartbeatRequest (v1, 1 bytes)",
                     "Sent ConsumerGroupHeartbeatRequest (v1, 1 bytes)", "Sent MetadataRequest (v12, 1 bytes)"):
            self.log(probe.requests, line)
        end = time.monotonic() + 1e-6
        self.assertEqual(gm.heartbeat_counts([probe], start, end), [(2, {"Metadata": 1})])


class ProcStat(unittest.TestCase):
    def test_thread_names_lose_their_digits_and_add_up(self):
        ready, done = threading.Event(), threading.Event()

        def worker():
            ready.set()
            done.wait(5)

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        ready.wait(5)
        by_name = procstat.thread_cpu(os.getpid())
        done.set()
        for t in threads:
            t.join()
        self.assertTrue(all(not any(ch.isdigit() for ch in name) for name in by_name))
        self.assertAlmostEqual(sum(by_name.values()), procstat.cpu_seconds(os.getpid()), delta=0.5)

    def test_thread_delta_keeps_what_grew_largest_first(self):
        delta = procstat.thread_delta({"a": 1.0, "b": 2.0}, {"a": 1.5, "b": 2.0, "c": 0.7})
        self.assertEqual(list(delta.items()), [("c", 0.7), ("a", 0.5)])

    def test_request_threads_are_kafkas_network_handler_and_coordinator_threads(self):
        by_thread = {"data-plane-kafk": 0.2, "group-coordinat": 0.1, "CN CompilerThre": 5.0}
        self.assertAlmostEqual(procstat.request_thread_cpu(by_thread, "kafka"), 0.3)
        self.assertAlmostEqual(procstat.request_thread_cpu({"shale": 0.4, "tokio": 0.1}, "shale"), 0.5)


class Table(unittest.TestCase):
    def test_medians_per_case_and_a_dash_for_the_broker_not_run(self):
        def case(stable_s):
            return {"case": "consumer", "members": 10, "cold": {"stable_s": stable_s},
                    "join": {"stable_s": 5.0}, "cpu": {"cpu_us_per_heartbeat": 100.0}}

        results = {"kafka": {"version": "Apache Kafka 4.4.0", "commits_per_s": 1234.0,
                             "cases": [case(5.0), case(7.0), case(6.0)]}}
        text = report.table(results)
        self.assertIn("| measurement | Shale | Kafka 4.4.0 |", text)
        self.assertIn("| 10 members (20 partitions), consumer protocol: stable from a cold start (s) | - | 6.00 |", text)
        self.assertIn("broker CPU per heartbeat, idle group, whole process (µs) | - | 100 |", text)
        self.assertIn("| synchronous offset commits per second, one member | - | 1,234 |", text)

    def test_the_slope_is_the_cost_of_one_more_heartbeat(self):
        # Idle: 0.02 CPU-s/s. 10 and 40 heartbeats/s at 100 µs each on top of it.
        def case(hb_per_s):
            return {"case": "consumer", "members": hb_per_s, "idle_broker_cpu_s": 0.6, "idle_broker_window_s": 30.0,
                    "cpu": {"window_s": 30.0, "heartbeats_counted": hb_per_s * 30.0,
                            "broker_cpu_s": 30.0 * (0.02 + hb_per_s * 100e-6),
                            "request_threads_cpu_s": 30.0 * (0.01 + hb_per_s * 80e-6),
                            "idle_request_threads_cpu_s_same_window": 0.3}}

        cases = [case(10), case(40)]
        self.assertAlmostEqual(report.slope_us(report.cpu_points(cases, False)), 100.0)
        self.assertAlmostEqual(report.slope_us(report.cpu_points(cases, True)), 80.0)
        self.assertIsNone(report.slope_us([(0.0, 0.1), (0.0, 0.2)]))


if __name__ == "__main__":
    unittest.main()
