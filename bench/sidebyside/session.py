"""One broker's measurements: set-up, start-up and memory, the rounds of load runs, the median."""

import os
import re
import signal
import subprocess
import time

from .brokers import Broker, _kill_group
from .common import BenchError, log
from .loadtools import Tools, error_lines, parse_client_metrics, parse_consumer_detailed, parse_producer
from .machine import (MIB, PAGE_BYTES, counters_delta, disk_traffic_mib, load_average, proc_counters, reclaim_delta,
                      steal_seconds, vmstat_counters)


# ---------------------------------------------------------------------------------------------
# Optional profiling of Shale with perf (bench/run.sh --perf)


def start_profiler(broker: Broker, label: str):
    data = broker.log_path.parent / f"{broker.name}-{label}.perf.data"
    cmd = ["perf", "record", "-F", "499", "-g", "-p", str(broker.proc.pid), "-o", str(data)]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as err:
        log(f"perf not started: {err}")
        return None
    return proc, data


def finish_profiler(profiler, broker: Broker, label: str):
    proc, data = profiler
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        _kill_group(proc, grace_s=5)
    report = broker.log_path.parent / f"{broker.name}-{label}.perf.txt"
    with open(report, "wb") as out:
        try:
            subprocess.run(["perf", "report", "--stdio", "--no-children", "--percent-limit", "1.5",
                            "-g", "none", "-i", str(data)],
                           stdout=out, stderr=subprocess.DEVNULL, timeout=180)
        except (OSError, subprocess.TimeoutExpired) as err:
            out.write(f"perf report failed: {err}\n".encode())


# ---------------------------------------------------------------------------------------------
# One broker's measurements. Both brokers are started first; every group of load runs (see
# RUN_GROUPS) then alternates between them (Shale then Kafka, Kafka then Shale in the next
# round) and is repeated `--repeat` times, so that drifting load on the machine and the client
# JVM's noise treat both alike; the report shows the median of the rounds.


class Session:
    def __init__(self, broker: Broker, tools: Tools, cfg):
        self.broker = broker
        self.tools = tools
        self.cfg = cfg
        self.out = {}
        self.samples = {}
        self.others = []
        self.round_error = None

    def setup(self):
        broker, out = self.broker, self.out
        out["version"] = broker.version
        log(f"{broker.name}: preparing")
        out["prepare"] = broker.prepare()
        log(f"{broker.name}: starting")
        out["startup"] = broker.start(timeout_s=self.cfg.start_timeout_s)
        log(f"{broker.name}: ready {out['startup']}; idling {self.cfg.idle_s}s")
        time.sleep(self.cfg.idle_s)
        memory = {"idle_rss_mib": broker.rss_mib()}
        out["memory"] = memory
        self.create("bench-rss", 1)
        time.sleep(2)
        memory["after_topic_rss_mib"] = broker.rss_mib()
        self.create("bench-warmup", 1)
        log(f"{broker.name}: memory {memory}")
        out["runs"] = {}
        out["samples"] = self.samples

    def topic(self, partitions, round_index):
        return f"bench-p{partitions}-r{round_index + 1}"

    def begin_round(self, round_index):
        """Every round writes into topics of its own, deleted when it ends: the disk holds one
        round's data, and no round reads another's. Without its topics the round's runs are
        failed rounds: producing anyway would auto-create them with one partition."""
        self.round_error = None
        try:
            for partitions in (1, 8):
                self.create(self.topic(partitions, round_index), partitions)
        except BenchError as err:
            self.round_error = f"round {round_index + 1}: {err}"
            log(f"{self.broker.name}: {self.round_error}")

    def end_round(self, round_index):
        for partitions in (1, 8):
            topic = self.topic(partitions, round_index)
            code, output, _ = self.tools.run(
                f"{self.broker.name}-delete-{topic}", "org.apache.kafka.tools.TopicCommand",
                ["--bootstrap-server", self.broker.bootstrap, "--delete", "--topic", topic], timeout_s=120)
            if code != 0:
                log(f"{self.broker.name}: deleting {topic} failed (exit {code}); its data stays on disk")

    def create(self, topic, partitions):
        code, output, _ = self.tools.run(
            f"{self.broker.name}-create-{topic}", "org.apache.kafka.tools.TopicCommand",
            ["--bootstrap-server", self.broker.bootstrap, "--create", "--topic", topic,
             "--partitions", str(partitions), "--replication-factor", "1"],
            timeout_s=120,
        )
        if code != 0:
            raise BenchError(f"{self.broker.name}: creating {topic} failed (exit {code}):\n"
                             + "\n".join(output.splitlines()[-20:]))

    def warm_up(self):
        """Not reported: the broker's JIT (Kafka) and page cache see load before the rounds."""
        self.produce("warmup", "bench-warmup", "1", self.cfg.warmup_records, record=False)

    def measured(self, label, fn, record=True):
        broker = self.broker
        if not broker.alive():
            result = {"ok": False, "error": "broker not running", "broker_log_tail": broker.tail()}
            self.samples.setdefault(label, []).append(result)
            return
        # Write back what earlier runs (of either broker) left dirty, so that this run does not
        # pay for their writeback; the flush is not part of the run.
        os.sync()
        steal_before = steal_seconds()
        vmstat_before = vmstat_counters()
        counters_before = proc_counters(broker.proc.pid)
        others_before = [other.cpu_seconds() for other in self.others]
        started = time.monotonic()
        # One profile per round (round 1 is the first sample of the label), not one overwritten
        # by the next: rounds of the same run can cost the broker very different CPU.
        profile_label = f"{label}-r{len(self.samples.get(label, [])) + 1}" if record else label
        profiler = start_profiler(broker, profile_label) if self.cfg.perf and broker.name == "shale" else None
        try:
            result = fn()
        finally:
            if profiler is not None:
                finish_profiler(profiler, broker, profile_label)
        result["wall_s"] = round(time.monotonic() - started, 2)
        counters = counters_delta(counters_before, proc_counters(broker.proc.pid))
        if counters is not None:
            result["broker_cpu_s"] = round(counters["user_cpu_s"] + counters["system_cpu_s"], 2)
            result.update({f"broker_{name}": value for name, value in counters.items()})
        # The other broker idles meanwhile; what it costs is kept beside the run.
        idle = [after - before for before, after in zip(others_before, (o.cpu_seconds() for o in self.others))
                if before is not None and after is not None]
        if idle:
            result["other_broker_idle_cpu_s"] = round(sum(idle), 2)
        vmstat_after = vmstat_counters()
        disk = disk_traffic_mib(vmstat_before, vmstat_after)
        if disk is not None:
            # Reads mean the page cache no longer held the data; both count every process.
            result["disk_read_mib"], result["disk_written_mib"] = disk
        steal_after = steal_seconds()
        if steal_before is not None and steal_after is not None:
            result["steal_s"] = round(steal_after - steal_before, 2)
        reclaim = reclaim_delta(vmstat_before, vmstat_after)
        if reclaim is not None:
            result["reclaim"] = reclaim
            result["pgscan_direct"] = reclaim.get("pgscan_direct")
            result["pgscan_kswapd"] = reclaim.get("pgscan_kswapd")
        if vmstat_before is not None and "nr_free_pages" in vmstat_before:
            # Where the page cache the run writes comes from: free memory, or memory reclaimed.
            result["free_mib_before"] = round(vmstat_before["nr_free_pages"] * PAGE_BYTES / MIB)
        result["broker_rss_mib_after"] = broker.rss_mib()
        # Other work on the 2-core machine moves every figure: keep the load beside each run.
        result["loadavg_1m_after"] = load_average()
        if not broker.alive():
            result["ok"] = False
            result["error"] = f"broker exited with code {broker.proc.returncode}"
            result["broker_log_tail"] = broker.tail()
        summary = {k: result.get(k) for k in ("ok", "steady_mb_per_s", "mb_per_s", "fetch_mb_per_s", "broker_cpu_s", "client_cpu_s",
                                              "wall_s", "disk_read_mib", "steal_s", "pgscan_direct",
                                              "loadavg_1m_after")}
        log(f"{broker.name}: {label} {summary}")
        if record:
            self.samples.setdefault(label, []).append(result)

    def produce(self, label, topic, acks, records, record=True):
        broker, cfg, tools = self.broker, self.cfg, self.tools

        def go():
            warmup = cfg.steady_warmup_records if record else 0
            code, output, client_cpu = tools.run(
                f"{broker.name}-{label}", "org.apache.kafka.tools.ProducerPerformance",
                ["--topic", topic, "--num-records", str(records), "--record-size", "1024",
                 "--throughput", "-1", "--producer-props", f"bootstrap.servers={broker.bootstrap}", f"acks={acks}",
                 *(["--warmup-records", str(warmup)] if warmup else []),
                 *(["--print-metrics"] if cfg.client_metrics else [])],
                timeout_s=cfg.tool_timeout_s,
            )
            parsed = parse_producer(output)
            errors = error_lines(output)
            ok = (code == 0 and parsed is not None and parsed["records"] == records and not errors
                  and (not warmup or "steady_mb_per_s" in parsed))
            result = {"ok": ok, "exit_code": code, "errors": errors, "client_cpu_s": client_cpu, **(parsed or {})}
            if cfg.client_metrics:
                result["client_metrics"] = parse_client_metrics(output)
            if code is None:
                result["error"] = f"timed out after {cfg.tool_timeout_s}s"
            return result
        self.measured(label, go, record)

    def end_offsets_total(self, topic):
        """Records in the topic (sum of log-end offsets), so a short produce run cannot stall the consumer."""
        code, output, _ = self.tools.run(
            f"{self.broker.name}-offsets-{topic}", "org.apache.kafka.tools.GetOffsetShell",
            ["--bootstrap-server", self.broker.bootstrap, "--topic", topic, "--time", "-1"], timeout_s=60,
        )
        total = 0
        found = False
        for line in output.splitlines():
            match = re.fullmatch(rf"{re.escape(topic)}:\d+:(\d+)", line.strip())
            if match:
                total += int(match.group(1))
                found = True
        return total if code == 0 and found else None

    def consume(self, label, topic, wanted):
        broker, cfg, tools = self.broker, self.cfg, self.tools
        held = self.end_offsets_total(topic) if broker.alive() else None
        records = wanted if held is None else min(held, wanted)
        if records < wanted:
            log(f"{broker.name}: {topic} holds {records} records, not {wanted}; consuming {records}")

        def go():
            code, output, client_cpu = tools.run(
                f"{broker.name}-{label}", "org.apache.kafka.tools.ConsumerPerformance",
                ["--bootstrap-server", broker.bootstrap, "--topic", topic, "--num-records", str(records),
                 "--timeout", "30000", "--group", f"bench-{label}-{time.time_ns()}",
                 "--show-detailed-stats", "--reporting-interval", str(cfg.consumer_interval_ms),
                 *(["--print-metrics"] if cfg.client_metrics else [])],
                timeout_s=cfg.tool_timeout_s,
            )
            # The consumer warms up over the same share of its records as the producers do.
            warmup = records * cfg.steady_warmup_records // cfg.records
            parsed = parse_consumer_detailed(output, warmup)
            errors = error_lines(output)
            # The tool exits 0 after its --timeout with a warning (an error line) when it read
            # fewer records than asked.
            ok = code == 0 and parsed is not None and "steady_mb_per_s" in parsed and not errors
            result = {"ok": ok, "exit_code": code, "errors": errors, "records_wanted": records,
                      "client_cpu_s": client_cpu, **(parsed or {})}
            if cfg.client_metrics:
                result["client_metrics"] = parse_client_metrics(output)
            if records < wanted:
                result["note"] = f"topic held {records} of the {wanted} records produced into it"
            if code is None:
                result["error"] = f"timed out after {cfg.tool_timeout_s}s"
            return result
        self.measured(label, go)

    def load_run(self, label, round_index):
        """One round of one load run (see RUNS)."""
        if self.round_error is not None:
            self.samples.setdefault(label, []).append({"ok": False, "error": self.round_error})
            return
        n = self.cfg.records
        partitions = int(label.split("-")[1][1:])
        topic = self.topic(partitions, round_index)
        if label.startswith("produce-"):
            acks = label.split("-")[2]
            self.produce(label, topic, "1" if acks == "acks1" else "all", n)
        else:
            # Every round reads its two produce runs back, with a new group.
            self.consume(label, topic, 2 * n)

    def summarize(self):
        """The median round of every load run becomes its reported figure."""
        runs = self.out["runs"]
        for label, samples in self.samples.items():
            runs[label] = median_run(samples)

    def finish(self):
        broker, out = self.broker, self.out
        out.setdefault("memory", {})
        out["memory"]["peak_rss_mib"] = broker.hwm_mib()
        out["memory"]["final_rss_mib"] = broker.rss_mib()
        out["broker_alive_at_end"] = broker.alive()
        out["broker_cpu_s_total"] = broker.cpu_seconds()
        out["broker_error_lines"] = error_lines(broker.log_path.read_text(errors="replace"), limit=30)


RUNS = ("produce-p1-acks1", "produce-p1-acksall", "produce-p8-acks1", "produce-p8-acksall", "consume-p1", "consume-p8")

# The order of a round: one broker does a whole group, then the other. A consume run follows its
# topic's produce runs directly, so that the data it reads is at most two produce runs old. Kept
# in the order of the reports above (RUNS) when the groups are joined. Why: on a machine whose
# kernel pages out memory left unread for a minute (DAMON's pageout scheme on some VMs), data
# written four runs earlier was read back from disk, and the consume figure measured the disk.
RUN_GROUPS = (("produce-p1-acks1", "produce-p1-acksall", "consume-p1"),
              ("produce-p8-acks1", "produce-p8-acksall", "consume-p8"))


def median_run(samples):
    """The round with the median throughput (a failed round counts as the lowest), with every
    round's throughput beside it; failed rounds make the figure flawed."""
    key = "steady_mb_per_s"

    def value(sample):
        return sample.get(key) if sample.get("ok") and sample.get(key) is not None else float("-inf")

    ordered = sorted(samples, key=value)
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["rounds"] = len(samples)
    chosen["round_values"] = {k: [s.get(k) for s in samples] for k in ("steady_mb_per_s", "mb_per_s", "fetch_mb_per_s",
                                                                       "broker_cpu_s", "client_cpu_s", "wall_s",
                                                                       "disk_read_mib", "steal_s", "pgscan_direct",
                                                                       "pgscan_kswapd", "free_mib_before",
                                                                       "broker_system_cpu_s", "broker_minor_faults",
                                                                       "broker_runqueue_wait_s",
                                                                       "broker_involuntary_switches")
                              if any(k in s for s in samples)}
    if not all(s.get("ok") for s in samples):
        chosen["ok"] = False
        chosen.setdefault("error", "a round failed: " + "; ".join(
            str(s.get("error") or "client errors") for s in samples if not s.get("ok")))
    return chosen
