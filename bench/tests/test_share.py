"""Unit tests of bench/share.py's pure parts: argument lists, SharePerf's RESULT line, the
percentiles, the figures of a consume run, the table, and the medians and side-by-side table of
--compare.

Run with `python3 -m unittest discover -s bench/tests`: no network, no broker, no JVM.
"""

import argparse
import os
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import share  # noqa: E402


def consume_result(**over):
    result = {"mode": "consume", "consumers": 4, "records": 1000, "distinct": 1000, "deliveries": 1003,
              "seconds_from_subscribe": 2.5, "seconds_first_to_last": 0.5, "per_consumer": [200, 300, 250, 253]}
    result.update(over)
    return result


class IntList(unittest.TestCase):
    def test_commas(self):
        self.assertEqual(share.int_list("1,4,16"), [1, 4, 16])

    def test_zero_and_empty_are_refused(self):
        for text in ("0", "1,-2", ""):
            with self.assertRaises(argparse.ArgumentTypeError):
                share.int_list(text)


class ParseResult(unittest.TestCase):
    def test_the_last_result_line_counts(self):
        out = "noise\nRESULT {\"mode\": \"produce\", \"seconds\": 1}\nRESULT {\"mode\": \"consume\"}\n"
        self.assertEqual(share.parse_result(out), {"mode": "consume"})

    def test_no_result_line_is_an_error(self):
        with self.assertRaises(share.BenchError):
            share.parse_result("Exception in thread main\n")


class Percentile(unittest.TestCase):
    def test_nearest_rank(self):
        values = list(range(1, 101))
        self.assertEqual(share.percentile(values, 50), 50)
        self.assertEqual(share.percentile(values, 99), 99)
        self.assertEqual(share.percentile(values, 100), 100)

    def test_order_of_the_input_does_not_matter(self):
        self.assertEqual(share.percentile([5, 1, 3], 50), 3)

    def test_one_value_and_none(self):
        self.assertEqual(share.percentile([7], 99), 7)
        self.assertIsNone(share.percentile([], 50))

    def test_out_of_range(self):
        with self.assertRaises(ValueError):
            share.percentile([1], 0)


class LatencySummary(unittest.TestCase):
    def test_warm_up_commits_are_left_out(self):
        latencies = [1_000_000.0] * 2 + [1000.0, 2000.0, 3000.0, 4000.0]
        summary = share.latency_summary(latencies, warmup=2)
        self.assertEqual(summary, {"commits": 4, "p50_ms": 2.0, "p99_ms": 4.0, "mean_ms": 2.5, "max_ms": 4.0})

    def test_too_few_commits(self):
        self.assertEqual(share.latency_summary([1000.0], warmup=20)["commits"], 0)
        self.assertIsNone(share.latency_summary([], warmup=0)["p50_ms"])


class ThroughputRow(unittest.TestCase):
    def test_rates_from_first_to_last_record(self):
        row = share.throughput_row(8, consume_result(), 1024)
        self.assertEqual(row["records_per_s"], 2000)
        self.assertEqual(row["mb_per_s"], 2.0)
        self.assertEqual(row["redeliveries"], 3)
        self.assertEqual((row["per_consumer_min"], row["per_consumer_max"]), (200, 300))
        self.assertTrue(row["complete"])
        self.assertEqual(row["partitions"], 8)

    def test_a_run_without_records(self):
        row = share.throughput_row(1, consume_result(distinct=0, deliveries=0, seconds_first_to_last=0,
                                                     per_consumer=[0]), 1024)
        self.assertIsNone(row["records_per_s"])
        self.assertFalse(row["complete"])


class Table(unittest.TestCase):
    def results(self):
        return {"broker": "Apache Kafka 4.4.0", "settings": {"records": 1000, "record_bytes": 1024},
                "throughput": [share.throughput_row(1, consume_result(), 1024),
                               share.throughput_row(8, consume_result(distinct=900), 1024)],
                "ack_latency": share.latency_summary([1000.0] * 30)}

    def test_rows_and_latency(self):
        text = share.table(self.results())
        self.assertIn("| 1 | 4 | 2,000 | 2.0 | 0.5 | 2.5 | 3 | 200-300 |", text)
        self.assertIn("(only 900)", text)
        self.assertIn("p50 1.0 ms, p99 1.0 ms", text)
        self.assertIn("Apache Kafka 4.4.0", text)

    def test_without_latency(self):
        results = self.results()
        del results["ack_latency"]
        self.assertNotIn("Acknowledgement", share.table(results))


def measured(rates, ack_p50=1.0, ack_p99=5.0, failed=()):
    """A result of share.measure: one complete row per ((partitions, consumers), records/s)."""
    rows = []
    for (partitions, consumers), rate in rates.items():
        row = share.throughput_row(partitions, consume_result(consumers=consumers, distinct=1000,
                                                             seconds_first_to_last=1000 / rate), 1024)
        row["broker_cpu_s"] = 2.0
        rows.append(row)
    return {"throughput": rows, "failed": list(failed),
            "ack_latency": {"commits": 1000, "p50_ms": ack_p50, "p99_ms": ack_p99}}


class Summarize(unittest.TestCase):
    def test_medians_of_the_rounds(self):
        summary = share.summarize([measured({(1, 4): 1000}, ack_p50=1.0), measured({(1, 4): 3000}, ack_p50=3.0),
                                   measured({(1, 4): 2000}, ack_p50=2.0)])
        entry = summary["throughput"]["p1-c4"]
        self.assertEqual((entry["records_per_s"], entry["rounds"], entry["failed"]), (2000, [1000, 3000, 2000], False))
        self.assertEqual(summary["ack_latency"]["p50_ms"], 2.0)
        self.assertEqual(summary["rounds"], 3)

    def test_a_failed_configuration_is_marked_and_its_incomplete_run_left_out(self):
        first = measured({(8, 16): 1000})
        first["throughput"][0]["complete"] = False
        first["failed"] = ["p8-c16", "p1-c1", "ack"]
        summary = share.summarize([first, measured({})])
        self.assertEqual(summary["throughput"]["p8-c16"]["rounds"], [])
        self.assertTrue(summary["throughput"]["p8-c16"]["failed"])
        self.assertIsNone(summary["throughput"]["p1-c1"]["records_per_s"])
        self.assertTrue(summary["ack_latency"]["failed"])


class CompareTable(unittest.TestCase):
    def test_ratio_and_failures(self):
        shale = share.summarize([measured({(1, 1): 3000, (8, 16): 500}, ack_p50=1.0), measured({(1, 1): 3000})])
        shale["throughput"]["p8-c16"]["failed"] = True
        kafka = share.summarize([measured({(1, 1): 1000, (8, 16): 400}, ack_p50=4.0)])
        text = share.compare_table({"shale": shale, "kafka": kafka}, 1000)
        self.assertIn("| 1 | 1 | 3,000 | 1,000 | 3.0 | 3.0 | 1.0 | 3,000, 3,000 | 1,000 | 2.00 / 2.00 |", text)
        self.assertIn("| 8 | 16 | 500 (failed once) | 400 | - |", text)
        self.assertIn("| p50 (ms) | 1.00 | 4.00 | 0.25 |", text)

    def test_rows_come_in_partition_then_consumer_order(self):
        summary = share.summarize([measured({(8, 1): 10, (1, 16): 10, (1, 4): 10})])
        lines = [line for line in share.compare_table({"shale": summary, "kafka": summary}, 1).splitlines()
                 if line.startswith("| 1 ") or line.startswith("| 8 ")]
        self.assertEqual([line.split("|")[1:3] for line in lines],
                         [[" 1 ", " 4 "], [" 1 ", " 16 "], [" 8 ", " 1 "]])


class ProcCpuSeconds(unittest.TestCase):
    def test_this_process_and_a_missing_one(self):
        self.assertGreaterEqual(share.proc_cpu_seconds(os.getpid()), 0)
        self.assertIsNone(share.proc_cpu_seconds(2 ** 31 - 1))


if __name__ == "__main__":
    unittest.main()
