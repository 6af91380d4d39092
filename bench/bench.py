#!/usr/bin/env python3
"""Side-by-side benchmark of Shale and Apache Kafka on this machine (issue #4).

Started by bench/run.sh, which resolves the Shale binary and the Kafka jars first.
Both brokers run fresh, in temporary directories on free loopback ports, and stay up; every
load run goes to each in turn, for several rounds, alternating which goes first. Each broker
is always stopped (SIGTERM to its own process group, then SIGKILL).

Measured per broker:
  * start-up: process spawn -> ready line, and spawn -> first successful ApiVersions +
    Metadata answer on the listener;
  * resident memory (VmRSS) after ~5 s idle, after creating a topic, and peak (VmHWM) at the end;
  * ProducerPerformance, 1 KiB records, acks=1 and acks=all, 1 and 8 partitions, with the
    tool's own --warmup-records: the steady-state line after the warm-up is the figure, the
    whole-run line is kept beside it;
  * ConsumerPerformance over the same topics, with --show-detailed-stats: the rate after the
    same share of warm-up records is the figure, the whole run's fetch rate is kept beside it;
  * broker CPU seconds used by every load run (from /proc/<pid>/stat).
"""

import argparse
import datetime as dt
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from sidebyside.brokers import KafkaBroker, ShaleBroker
from sidebyside.common import BenchError, log
from sidebyside.loadtools import Tools
from sidebyside.machine import CpuQuota, load_average, machine_facts, pinning
from sidebyside.report import get, table
from sidebyside.session import RUN_GROUPS, Session


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--shale-bin", required=True, type=Path)
    parser.add_argument("--kafka-lib", required=True, type=Path)
    parser.add_argument("--kafka-version", required=True)
    parser.add_argument("--results", required=True, type=Path)
    parser.add_argument("--git-commit", default="unknown")
    parser.add_argument("--only", choices=["shale", "kafka"], help="benchmark one broker only")
    parser.add_argument("--perf", action="store_true", help="profile Shale with perf during every load run")
    parser.add_argument("--records", type=int, help="records per produce run (overrides the mode's default)")
    parser.add_argument("--client-metrics", action="store_true",
                        help="run the load tools with --print-metrics and keep their request/wait metrics in the JSON")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of every load run, alternating the brokers; the median is reported (default 3)")
    parser.add_argument("--pin-client", metavar="CPUS",
                        help="run the load tools on these CPUs only (taskset list, e.g. 0) and both brokers on the"
                             " others: shows what each broker does when it does not share a core with the client")
    parser.add_argument("--broker-cpu-quota", type=float, metavar="CPUS",
                        help="hold each broker to this many CPUs' time (0.25 = a quarter of one) in a cgroup of"
                             " its own, the client unbounded: shows each broker's throughput on the same CPU budget")
    parser.add_argument("--render", type=Path, help="only print the table of an earlier results JSON")
    if "--render" in sys.argv:
        index = sys.argv.index("--render")
        if index + 1 >= len(sys.argv):
            parser.error("--render needs a results JSON")
        print(table(json.loads(Path(sys.argv[index + 1]).read_text())))
        return 0
    cfg = parser.parse_args()
    try:
        pins = pinning(cfg.pin_client)
    except ValueError as err:
        parser.error(f"--pin-client: {err}")
    client_cpus = pins["client_cpus"] if pins else None
    broker_cpus = pins["broker_cpus"] if pins else None

    mode = "quick" if cfg.quick else "full"
    if cfg.records is None:
        cfg.records = 200_000 if cfg.quick else 2_000_000
    cfg.warmup_records = max(10_000, min(cfg.records // 10, 100_000))
    # The client JVMs spend their first seconds compiling (4-13 CPU-s of JIT per run, measured
    # with a flight recording), on the same 2 cores as the broker: the figure is the rate after
    # the first half of each run, the whole-run rate is kept beside it.
    cfg.steady_warmup_records = cfg.records // 2
    # The steady consume rate needs reports after the warm-up half: a quick run's consume
    # lasts about a second.
    cfg.consumer_interval_ms = 100 if cfg.quick else 250
    cfg.idle_s = 5
    cfg.start_timeout_s = 120
    cfg.tool_timeout_s = 60 if cfg.quick else 300
    client_heap = "1g"

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    cfg.results.mkdir(parents=True, exist_ok=True)
    logs = cfg.results / f"{stamp}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    workroot = Path(tempfile.mkdtemp(prefix="shale-bench-"))

    result = {
        "timestamp_utc": stamp,
        "mode": mode,
        "settings": {
            "records_per_produce_run": cfg.records, "record_size_bytes": 1024, "warmup_records": cfg.warmup_records,
            "steady_warmup_records_per_produce_run": cfg.steady_warmup_records,
            "records_per_consume_run": 2 * cfg.records, "idle_s": cfg.idle_s, "client_jvm": f"-Xmx{client_heap} -Xms{client_heap}",
            "kafka_jvm": "-Xmx1g", "tool_timeout_s": cfg.tool_timeout_s, "rounds": cfg.repeat,
            "pinning": pins, "broker_cpu_quota": cfg.broker_cpu_quota,
        },
        "machine": machine_facts(cfg.kafka_lib),
        "shale_git_commit": cfg.git_commit,
        "brokers": {},
    }

    brokers = []

    def on_signal(signum, _frame):
        raise SystemExit(f"interrupted by signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    tools = Tools(cfg.kafka_lib, logs, workroot, client_heap, client_cpus)
    failures = []
    sessions = []
    try:
        order = [("shale", lambda: ShaleBroker(workroot, logs, cfg.shale_bin, broker_cpus)),
                 ("kafka", lambda: KafkaBroker(workroot, logs, cfg.kafka_lib, cfg.kafka_version, broker_cpus))]
        # Both brokers start (one after the other, so each start-up is timed alone) and stay up:
        # the load runs then alternate between them.
        for name, make in order:
            if cfg.only and cfg.only != name:
                continue
            broker = make()
            brokers.append(broker)
            if cfg.broker_cpu_quota:
                try:
                    broker.quota = CpuQuota(f"shale-bench-{stamp}-{name}", cfg.broker_cpu_quota)
                except ValueError as err:
                    raise SystemExit(f"--broker-cpu-quota: {err}")
            session = Session(broker, tools, cfg)
            result["brokers"][name] = session.out
            try:
                session.setup()
                sessions.append(session)
            except BenchError as err:
                log(f"{name}: FAILED: {err}")
                session.out["error"] = str(err)
                failures.append(f"{name}: {err}")
                broker.stop()
        for session in sessions:
            session.others = [other.broker for other in sessions if other is not session]
            session.warm_up()
        for round_index in range(cfg.repeat):
            log(f"round {round_index + 1} of {cfg.repeat}")
            for session in sessions:
                session.begin_round(round_index)
            for group in RUN_GROUPS:
                # Who goes first alternates between rounds.
                turn = sessions if round_index % 2 == 0 else list(reversed(sessions))
                for session in turn:
                    for run in group:
                        session.load_run(run, round_index)
            for session in sessions:
                session.end_round(round_index)
        for session in sessions:
            session.summarize()
            session.finish()
            if session.broker.quota is not None:
                session.out["cpu_quota_stat"] = session.broker.quota.stat()
    finally:
        for broker in brokers:
            broker.stop()
        shutil.rmtree(workroot, ignore_errors=True)

    for name, out in result["brokers"].items():
        for run, entry in (out.get("runs") or {}).items():
            if not entry.get("ok"):
                first = [line[:400] for line in (entry.get("errors") or [])[:2]]
                failures.append(f"{name} {run}: {entry.get('error') or 'client errors'}; first lines: {first}")
    result["machine"]["loadavg_at_end"] = load_average()
    result["failures"] = failures
    result["markdown"] = table(result)
    json_path = cfg.results / f"{stamp}.json"
    json_path.write_text(json.dumps(result, indent=2) + "\n")

    m = result["machine"]
    print()
    print(f"## Shale vs Apache Kafka ({mode} run, {stamp})")
    print()
    print(f"Machine: {m['nproc']} cores ({m['cpu_model']}), {m['memory_gib']} GiB RAM, Linux {m['kernel']}; {m['java']}.")
    print(f"Load average (1 min) at start / end: {m['loadavg_at_start']} / {m['loadavg_at_end']}"
          " (the benchmark needs the machine otherwise idle; a load above ~0.5 makes the figures noisy).")
    print(f"Versions: {get(result, 'brokers', 'shale', 'version') or 'n/a'} (commit {cfg.git_commit}); "
          f"{get(result, 'brokers', 'kafka', 'version') or 'n/a'} (KRaft combined single node, -Xmx1g).")
    print(f"Load: Kafka's ProducerPerformance / ConsumerPerformance, {cfg.records:,} records of 1 KiB per produce run "
          f"(acks=1 then acks=all into the same topic), {2 * cfg.records:,} per consume run; client JVM -Xmx{client_heap}. "
          f"Figures are steady-state rates after the first {cfg.steady_warmup_records:,} records of a produce run "
          f"(--warmup-records) and the first {2 * cfg.steady_warmup_records:,} of a consume run.")
    print(f"Rounds: {cfg.repeat}, alternating the brokers (both stay up); every figure is the median round.")
    if pins:
        print(f"Pinned: the load tools ran on CPUs {client_cpus} only, the brokers on CPUs {broker_cpus}.")
    if cfg.broker_cpu_quota:
        print(f"CPU quota: each broker was held to {cfg.broker_cpu_quota} CPUs' time in a cgroup of its own;"
              " the load tools were not.")
    print()
    print(result["markdown"])
    print()
    if failures:
        print("Failures:")
        for failure in failures:
            print(f"- {failure}")
        print()
    print(f"Results: {json_path}")
    print(f"Logs:    {logs}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
