"""Unit tests of the side-by-side benchmark's parsing, pinning and round selection.

Run with `python3 -m unittest discover -s bench/tests` (run-tests.sh does).
"""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sidebyside.loadtools import error_lines, parse_consumer_detailed, parse_producer  # noqa: E402
from sidebyside.machine import (  # noqa: E402
    CLK_TCK, CpuQuota, counters_delta, disk_traffic_mib, parse_cpu_list, pinning, proc_counters, reclaim_delta, taskset_prefix,
    vmstat_counters)
from sidebyside.report import ratio, table  # noqa: E402
from sidebyside.session import RUN_GROUPS, RUNS, median_run  # noqa: E402

PRODUCER_OUTPUT = """\
104939 records sent, 20987.8 records/sec (20.50 MB/sec), 410.2 ms avg latency, 623.0 ms max latency.
200000 records sent, 54734.537493 records/sec (53.45 MB/sec), 32.26 ms avg latency, 623.00 ms max latency, \
10 ms 50th, 108 ms 95th, 124 ms 99th, 140 ms 99.9th.
100000 steady state records sent, 77519.379845 records/sec (75.70 MB/sec), 6.89 ms avg latency, \
34.00 ms max latency, 5 ms 50th, 18 ms 95th, 22 ms 99th, 32 ms 99.9th.
"""

CONSUMER_OUTPUT = """\
time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, \
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-11-30 11:25:05:000, 0, 0.0010, 0.0010, 1, 1.0549, 783, 200, 0.0059, 6.0606
2026-11-30 11:25:06:000, 0, 100.0000, 100.0, 102400, 102400.0, 0, 1000, 100.0, 102400.0
2026-11-30 11:25:07:000, 0, 200.0000, 100.0, 204800, 102400.0, 0, 1000, 100.0, 102400.0
2026-11-30 11:25:07:500, 0, 400.0000, 400.0, 409600, 409600.0, 0, 500, 400.0, 409600.0
"""


class ProducerParsing(unittest.TestCase):
    def test_whole_run_and_steady_lines(self):
        parsed = parse_producer(PRODUCER_OUTPUT)
        self.assertEqual(parsed["records"], 200000)
        self.assertAlmostEqual(parsed["mb_per_s"], 53.45)
        self.assertEqual(parsed["latency_p99_ms"], 124)
        self.assertEqual(parsed["steady_records"], 100000)
        self.assertAlmostEqual(parsed["steady_mb_per_s"], 75.70)
        self.assertEqual(parsed["steady_latency_p99_ms"], 22)

    def test_interval_lines_alone_are_no_result(self):
        self.assertIsNone(parse_producer(PRODUCER_OUTPUT.splitlines()[0]))

    def test_no_steady_line_without_warm_up(self):
        parsed = parse_producer("\n".join(PRODUCER_OUTPUT.splitlines()[:2]))
        self.assertNotIn("steady_mb_per_s", parsed)


class ConsumerParsing(unittest.TestCase):
    def test_steady_rate_starts_at_first_report_past_the_warm_up(self):
        parsed = parse_consumer_detailed(CONSUMER_OUTPUT, warmup_records=150000)
        # From the 200 MB report at 07.000 to the 400 MB report at 07.500.
        self.assertAlmostEqual(parsed["steady_mb_per_s"], 400.0)
        self.assertEqual(parsed["steady_records"], 409600 - 204800)
        self.assertEqual(parsed["rebalance_ms"], 783)
        # 400 MB over the summed fetch time of every report (2.7 s).
        self.assertAlmostEqual(parsed["fetch_mb_per_s"], round(400 / 2.7, 4))

    def test_no_steady_rate_when_the_warm_up_is_never_passed(self):
        parsed = parse_consumer_detailed(CONSUMER_OUTPUT, warmup_records=10_000_000)
        self.assertNotIn("steady_mb_per_s", parsed)

    def test_output_without_the_header_is_no_result(self):
        self.assertIsNone(parse_consumer_detailed("\n".join(CONSUMER_OUTPUT.splitlines()[1:]), 0))

    def test_error_lines_are_kept_once(self):
        output = "ok\nERROR boom\nERROR boom\njava.lang.IllegalStateException: x\n"
        self.assertEqual(error_lines(output), ["ERROR boom", "java.lang.IllegalStateException: x"])


class Pinning(unittest.TestCase):
    def test_cpu_lists_in_tasksets_notation(self):
        self.assertEqual(parse_cpu_list("0"), [0])
        self.assertEqual(parse_cpu_list("3,1-2"), [1, 2, 3])

    def test_bad_cpu_lists_are_refused(self):
        for text in ("", "a", "2-1", "-1", "0,"):
            with self.subTest(text=text), self.assertRaises(ValueError):
                parse_cpu_list(text)

    def test_unpinned_means_no_prefix(self):
        self.assertIsNone(pinning(None))
        self.assertEqual(taskset_prefix(None), [])
        self.assertEqual(taskset_prefix([0, 2]), ["taskset", "-c", "0,2"])

    def test_pinning_every_cpu_leaves_none_for_the_brokers(self):
        usable = sorted(os.sched_getaffinity(0))
        with self.assertRaises(ValueError):
            pinning(",".join(str(cpu) for cpu in usable))

    def test_unusable_cpus_are_refused(self):
        with self.assertRaises(ValueError):
            pinning("100000")


class MemoryCounters(unittest.TestCase):
    def test_vmstat_text_is_read_as_counters(self):
        counters = vmstat_counters("pgpgin 10\npgscan_direct 7\nnr_free_pages 99\n")
        self.assertEqual(counters, {"pgpgin": 10, "pgscan_direct": 7, "nr_free_pages": 99})

    def test_reclaim_is_the_growth_of_the_counters_both_readings_have(self):
        before = {"pgscan_direct": 5, "pgscan_kswapd": 100, "allocstall_movable": 1}
        after = {"pgscan_direct": 905, "pgscan_kswapd": 100, "allocstall_movable": 3, "allocstall_normal": 4}
        self.assertEqual(reclaim_delta(before, after),
                         {"pgscan_direct": 900, "pgscan_kswapd": 0, "allocstall_movable": 2})
        self.assertIsNone(reclaim_delta(None, after))

    def test_disk_traffic_is_the_growth_of_pgpgin_and_pgpgout_in_mib(self):
        before = {"pgpgin": 1024, "pgpgout": 0}
        after = {"pgpgin": 1024 + 3 * 1024, "pgpgout": 512}
        self.assertEqual(disk_traffic_mib(before, after), (3.0, 0.5))
        self.assertIsNone(disk_traffic_mib(before, {"pgpgin": 5}))
        self.assertIsNone(disk_traffic_mib(None, after))

    def test_this_machine_has_the_counters(self):
        counters = vmstat_counters()
        if counters is not None:
            self.assertIn("pgpgin", counters)


def fake_proc(root: Path, pid: int, threads):
    """A /proc/<pid> with a stat line (minflt 70, majflt 2, 3 s user, 1 s system) and the given
    threads: (voluntary, involuntary, runqueue wait ns)."""
    base = root / str(pid)
    (base / "task").mkdir(parents=True)
    (base / "stat").write_text(f"{pid} (a b) S 1 1 1 0 -1 0 70 0 2 0 {3 * CLK_TCK} {CLK_TCK} 0 0 20 0 1\n")
    for tid, (voluntary, involuntary, wait_ns) in enumerate(threads, start=pid):
        (base / "task" / str(tid)).mkdir()
        (base / "task" / str(tid) / "status").write_text(
            f"Name:\tx\nvoluntary_ctxt_switches:\t{voluntary}\nnonvoluntary_ctxt_switches:\t{involuntary}\n")
        (base / "task" / str(tid) / "schedstat").write_text(f"123 {wait_ns} 9\n")


class ProcessCounters(unittest.TestCase):
    def test_threads_are_summed_and_the_process_line_read_past_its_name(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_proc(Path(tmp), 42, [(10, 1, 500_000_000), (5, 2, 250_000_000)])
            self.assertEqual(proc_counters(42, Path(tmp)), {
                "user_cpu_s": 3.0, "system_cpu_s": 1.0, "minor_faults": 70, "major_faults": 2,
                "voluntary_switches": 15, "involuntary_switches": 3, "runqueue_wait_s": 0.75})

    def test_a_gone_process_has_no_counters(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertIsNone(proc_counters(42, Path(tmp)))

    def test_delta_is_the_growth_of_each_counter(self):
        before = {"minor_faults": 10, "runqueue_wait_s": 0.5, "system_cpu_s": 1.0}
        after = {"minor_faults": 25, "runqueue_wait_s": 0.75, "system_cpu_s": 1.5}
        self.assertEqual(counters_delta(before, after),
                         {"minor_faults": 15, "runqueue_wait_s": 0.25, "system_cpu_s": 0.5})
        self.assertIsNone(counters_delta(None, after))

    def test_this_process_has_counters(self):
        counters = proc_counters(os.getpid())
        self.assertIsNotNone(counters)
        self.assertGreater(counters["minor_faults"], 0)
        self.assertTrue(all(value >= 0 for value in counters.values()))


class CpuQuotas(unittest.TestCase):
    def test_cgroup_v2_gets_cpu_max(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "cgroup.controllers").write_text("cpuset cpu io memory\n")
            quota = CpuQuota("b", 0.25, v2_root=root, v1_root=root / "none")
            self.assertEqual((root / "cgroup.subtree_control").read_text(), "+cpu")
            self.assertEqual((root / "b" / "cpu.max").read_text(), "25000 100000")
            self.assertEqual(quota.prefix()[-1], str(root / "b" / "cgroup.procs"))
            # Not a cgroup file system: files in it keep the directory, which is reported.
            self.assertFalse(quota.remove(wait_s=0))

    def test_cgroup_v1_gets_a_cfs_quota(self):
        with tempfile.TemporaryDirectory() as tmp:
            v1 = Path(tmp) / "cpu"
            v1.mkdir()
            (v1 / "cpu.cfs_quota_us").write_text("-1\n")
            CpuQuota("b", 1.5, v2_root=Path(tmp) / "none", v1_root=v1)
            self.assertEqual((v1 / "b" / "cpu.cfs_quota_us").read_text(), "150000")
            self.assertEqual((v1 / "b" / "cpu.cfs_period_us").read_text(), "100000")

    def test_no_controller_or_a_bad_share_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(ValueError):
                CpuQuota("b", 0.25, v2_root=Path(tmp), v1_root=Path(tmp))
            with self.assertRaises(ValueError):
                CpuQuota("b", 0, v2_root=Path(tmp), v1_root=Path(tmp))

    def test_a_quota_that_cannot_be_set_leaves_no_cgroup_behind(self):
        with tempfile.TemporaryDirectory() as tmp:
            v1 = Path(tmp) / "cpu"
            v1.mkdir()
            (v1 / "cpu.cfs_quota_us").write_text("-1\n")
            real_write = Path.write_text

            def refuse_quota(path, text, *args, **kwargs):
                if path.name == "cpu.cfs_period_us" and path.parent.name == "b":
                    raise PermissionError("refused")
                return real_write(path, text, *args, **kwargs)

            with mock.patch.object(Path, "write_text", refuse_quota):
                with self.assertRaisesRegex(ValueError, "cannot set the CPU quota"):
                    CpuQuota("b", 0.25, v2_root=Path(tmp) / "none", v1_root=v1)
            self.assertFalse((v1 / "b").exists())

    def test_a_root_that_cannot_enable_the_controller_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "cgroup.controllers").write_text("cpu\n")
            (root / "cgroup.subtree_control").mkdir()  # writing it fails
            with self.assertRaisesRegex(ValueError, "cannot create"):
                CpuQuota("b", 0.25, v2_root=root, v1_root=root / "none")
            self.assertFalse((root / "b").exists())

    def test_the_prefix_moves_the_command_into_the_cgroup(self):
        with tempfile.TemporaryDirectory() as tmp:
            v1 = Path(tmp) / "cpu"
            v1.mkdir()
            (v1 / "cpu.cfs_quota_us").write_text("-1\n")
            quota = CpuQuota("b", 0.5, v2_root=Path(tmp) / "none", v1_root=v1)
            out = subprocess.run(quota.prefix() + ["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
            self.assertEqual((v1 / "b" / "cgroup.procs").read_text().strip(), out.stdout.strip())


class Rounds(unittest.TestCase):
    def test_median_round_is_reported_with_every_round(self):
        samples = [{"ok": True, "steady_mb_per_s": v, "wall_s": w} for v, w in ((300.0, 3), (100.0, 1), (200.0, 2))]
        chosen = median_run(samples)
        self.assertEqual(chosen["steady_mb_per_s"], 200.0)
        self.assertEqual(chosen["round_values"]["steady_mb_per_s"], [300.0, 100.0, 200.0])
        self.assertTrue(chosen["ok"])

    def test_a_failed_round_counts_lowest_and_flaws_the_figure(self):
        samples = [{"ok": True, "steady_mb_per_s": 300.0}, {"ok": False, "error": "boom"},
                   {"ok": True, "steady_mb_per_s": 200.0}]
        chosen = median_run(samples)
        self.assertEqual(chosen["steady_mb_per_s"], 200.0)
        self.assertFalse(chosen["ok"])
        self.assertIn("boom", chosen["error"])

    def test_ratio_needs_both_figures(self):
        self.assertIsNone(ratio(None, 2.0))
        self.assertIsNone(ratio(1.0, 0))
        self.assertAlmostEqual(ratio(3.0, 2.0), 1.5)


class RoundOrder(unittest.TestCase):
    def test_groups_hold_every_run_once(self):
        flat = [run for group in RUN_GROUPS for run in group]
        self.assertEqual(sorted(flat), sorted(RUNS))
        self.assertEqual(len(flat), len(set(flat)))

    def test_a_consume_run_directly_follows_its_topics_produce_runs(self):
        for group in RUN_GROUPS:
            partitions = {run.split("-")[1] for run in group}
            self.assertEqual(len(partitions), 1, group)
            self.assertTrue(group[-1].startswith("consume-"), group)
            self.assertTrue(all(run.startswith("produce-") for run in group[:-1]), group)


class Report(unittest.TestCase):
    def run_entry(self, mb):
        return {"ok": True, "exit_code": 0, "steady_mb_per_s": mb, "steady_records_per_s": mb * 1000}

    def test_goals_are_counted_from_the_ratios(self):
        runs = {"produce-p1-acks1": (150.0, 100.0), "consume-p8": (140.0, 100.0)}
        result = {"brokers": {
            name: {"startup": {"ready_line_ms": 5.0 if name == "shale" else 1000.0},
                   "runs": {run: self.run_entry(pair[index]) for run, pair in runs.items()}}
            for index, name in enumerate(("shale", "kafka"))}}
        text = table(result)
        self.assertIn("| Produce 1 KiB, 1 partition, acks=1 (MB/s) | 150.0 | 100.0 | 1.50 | >= 1.5 | yes |", text)
        self.assertIn("| Consume 1 KiB, 8 partitions (MB/s) | 140.0 | 100.0 | 1.40 | >= 1.5 | **no** |", text)
        self.assertIn("| Start-up to ready line (ms) | 5.0 | 1,000 | 0.005 | <= 0.05 (1/20) | yes |", text)
        # Ready line, produce (MB/s and records/s) and consume (both): three goals of five met.
        self.assertIn("Goals met: 3 of 5 measured.", text)


if __name__ == "__main__":
    unittest.main()
