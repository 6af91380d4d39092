#!/usr/bin/env python3
"""Share-group (KIP-932) figures against one broker: consume throughput of 1, 4 and 16 share
consumers on a topic of one partition and of eight, and the latency of an acknowledgement
(commitSync of one accepted record) at the 50th and 99th percentiles.

The client is bench/SharePerf.java (kafka-clients' KafkaShareConsumer, run with the single-file
source launcher against the jars compat-tests installs). For each partition count one topic is
filled once (`--records` records of `--record-bytes`); each consumer count then reads all of it
with a group of its own (share.auto.offset.reset=earliest), the consumers as threads of one JVM.

    python3 bench/share.py --bootstrap HOST:PORT [--consumers 1,4,16] [--partitions 1,8]
        [--records 100000] [--record-bytes 1024] [--commits 1000]
    python3 bench/share.py --start kafka|shale [--shale-bin PATH]   # a broker started here,
        with compat-tests' settings (harness/brokers.py), stopped at the end
    python3 bench/share.py --compare [--rounds 3] [--warmup-rounds 1] [--shale-bin PATH]   # both
        brokers started here with the same settings, measured in alternating rounds after
        unreported warm-up rounds; the medians side by side
    python3 bench/share.py --render RESULTS.json

Prints a table and the JSON of the run (also written under bench/results/).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KAFKA_LIB = ROOT / "compat-tests" / ".deps" / "kafka" / "lib"
PERF_SOURCE = ROOT / "bench" / "SharePerf.java"
RESULT_PREFIX = "RESULT "
# Acknowledgement latencies of the first commits (connections, the share session) are left out.
ACK_WARMUP_COMMITS = 20


class BenchError(RuntimeError):
    pass


def int_list(text):
    """"1,4,16" -> [1, 4, 16]; every value a positive integer."""
    values = [int(v) for v in text.split(",") if v.strip()]
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"positive integers separated by commas: {text!r}")
    return values


def parse_result(stdout):
    """The JSON of SharePerf's last `RESULT {...}` line."""
    lines = [line[len(RESULT_PREFIX):] for line in stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if not lines:
        raise BenchError("no RESULT line in SharePerf's output")
    return json.loads(lines[-1])


def percentile(values, p):
    """The nearest-rank percentile `p` (0 < p <= 100) of `values`; None for no values."""
    if not values:
        return None
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} outside (0, 100]")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def latency_summary(latencies_us, warmup=ACK_WARMUP_COMMITS):
    """p50, p99, mean and max in milliseconds of the commits after the first `warmup`."""
    kept = latencies_us[warmup:] if len(latencies_us) > warmup else []
    if not kept:
        return {"commits": 0, "p50_ms": None, "p99_ms": None, "mean_ms": None, "max_ms": None}
    return {"commits": len(kept), "p50_ms": round(percentile(kept, 50) / 1000, 3),
            "p99_ms": round(percentile(kept, 99) / 1000, 3), "mean_ms": round(sum(kept) / len(kept) / 1000, 3),
            "max_ms": round(max(kept) / 1000, 3)}


def throughput_row(partitions, result, record_bytes):
    """A consume run's figures: records/s and MB/s (10^6 bytes of values) from the first record
    to the last, the whole run from the first subscribe, and redeliveries."""
    active_s = result["seconds_first_to_last"]
    rate = result["distinct"] / active_s if active_s > 0 else None
    per = result["per_consumer"]
    return {
        "partitions": partitions,
        "consumers": result["consumers"],
        "records": result["distinct"],
        "complete": result["distinct"] >= result["records"],
        "records_per_s": round(rate) if rate else None,
        "mb_per_s": round(rate * record_bytes / 1e6, 1) if rate else None,
        "seconds_first_to_last": round(active_s, 2),
        "seconds_from_subscribe": round(result["seconds_from_subscribe"], 2),
        "redeliveries": result["deliveries"] - result["distinct"],
        "per_consumer_min": min(per) if per else 0,
        "per_consumer_max": max(per) if per else 0,
    }


def table(results):
    """The Markdown table of a run."""
    out = [f"Broker: {results.get('broker', '?')}; {results['settings']['records']} records of "
           f"{results['settings']['record_bytes']} bytes per topic.", "",
           "| partitions | consumers | records/s | MB/s | first to last (s) | from subscribe (s) | redeliveries "
           "| records per consumer (min-max) |",
           "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in results.get("throughput", []):
        rate = "-" if row["records_per_s"] is None else f"{row['records_per_s']:,}"
        mb = "-" if row["mb_per_s"] is None else f"{row['mb_per_s']}"
        incomplete = "" if row["complete"] else f" (only {row['records']:,})"
        out.append(f"| {row['partitions']} | {row['consumers']} | {rate}{incomplete} | {mb} | "
                   f"{row['seconds_first_to_last']} | {row['seconds_from_subscribe']} | {row['redeliveries']} | "
                   f"{row['per_consumer_min']:,}-{row['per_consumer_max']:,} |")
    ack = results.get("ack_latency")
    if ack:
        if ack["commits"]:
            out += ["", f"Acknowledgement (commitSync of one accepted record, {ack['commits']} commits after "
                        f"{ACK_WARMUP_COMMITS} warm-up): p50 {ack['p50_ms']} ms, p99 {ack['p99_ms']} ms, "
                        f"mean {ack['mean_ms']} ms, max {ack['max_ms']} ms."]
        else:
            out += ["", "Acknowledgement latency: no commits measured."]
    return "\n".join(out)


class Perf:
    """SharePerf.java runs, each a JVM logging into `logs`."""

    def __init__(self, bootstrap, kafka_lib, logs):
        self.bootstrap, self.kafka_lib, self.logs = bootstrap, Path(kafka_lib), logs
        self.log4j = logs / "log4j2.properties"
        self.log4j.write_text("rootLogger.level=WARN\nrootLogger.appenderRef.err.ref=ERR\n"
                              "appender.err.type=Console\nappender.err.name=ERR\nappender.err.target=SYSTEM_ERR\n"
                              "appender.err.layout.type=PatternLayout\nappender.err.layout.pattern=%p %c{1} %m%n\n")

    def run(self, name, *args, timeout_s):
        cmd = ["java", "-Xmx1g", "-Xms1g", f"-Dlog4j2.configurationFile={self.log4j}", "-cp", f"{self.kafka_lib}/*",
               str(PERF_SOURCE), args[0], self.bootstrap, *[str(a) for a in args[1:]]]
        log_path = self.logs / f"{name}.log"
        with open(log_path, "w") as err:
            err.write("$ " + " ".join(cmd) + "\n")
            err.flush()
            try:
                proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired as exc:
                raise BenchError(f"{name}: SharePerf ran past {timeout_s} s (log {log_path})") from exc
        if proc.returncode != 0:
            raise BenchError(f"{name}: SharePerf exited {proc.returncode}; log {log_path}:\n"
                             + "\n".join(log_path.read_text().splitlines()[-10:]))
        return parse_result(proc.stdout)


def proc_cpu_seconds(pid):
    """User plus system CPU seconds of process `pid` (all its threads); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # utime and stime are the 14th and 15th fields of stat(5); the split starts at the 3rd.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average():
    return float(Path("/proc/loadavg").read_text().split()[0])


class BrokerCpu:
    """The broker's CPU seconds over one load run; None when no broker process is known."""

    def __init__(self, pid):
        self.pid = pid
        self.before = proc_cpu_seconds(pid) if pid else None

    def seconds(self):
        after = proc_cpu_seconds(self.pid) if self.pid else None
        return None if after is None or self.before is None else round(after - self.before, 2)


def measure(perf, args, run_id, broker_pid=None, skip=frozenset()):
    """Every configuration of `args` once against `perf`'s broker. A configuration in `skip`
    ("p1-c16", "ack") is not run; one that fails is named in `failed`."""
    results = {"throughput": [], "errors": [], "failed": [], "loadavg_1m_before": load_average()}
    for partitions in args.partitions:
        topic = f"share-bench-{run_id}-p{partitions}"
        wanted = [c for c in args.consumers if f"p{partitions}-c{c}" not in skip]
        if not wanted:
            continue
        try:
            produced = perf.run(f"produce-p{partitions}", "produce", topic, partitions, args.records,
                                args.record_bytes, timeout_s=args.timeout_s)
        except BenchError as exc:
            results["errors"].append(str(exc))
            results["failed"] += [f"p{partitions}-c{c}" for c in wanted]
            print(f"[share] {exc}", flush=True)
            continue
        print(f"[share] {topic}: {args.records} records written in {produced['seconds']:.1f} s", flush=True)
        for consumers in wanted:
            group = f"{topic}-c{consumers}"
            cpu = BrokerCpu(broker_pid)
            try:
                result = perf.run(f"consume-p{partitions}-c{consumers}", "consume", topic, group, consumers,
                                  args.records, args.timeout_s, timeout_s=args.timeout_s + 60)
            except BenchError as exc:
                results["errors"].append(str(exc))
                results["failed"].append(f"p{partitions}-c{consumers}")
                print(f"[share] {exc}", flush=True)
                continue
            row = throughput_row(partitions, result, args.record_bytes)
            row["broker_cpu_s"] = cpu.seconds()
            results["throughput"].append(row)
            if not row["complete"]:
                results["failed"].append(f"p{partitions}-c{consumers}")
                results["errors"].append(f"p{partitions}-c{consumers}: {row['records']} of {args.records} "
                                         f"records delivered within {args.timeout_s} s")
            print(f"[share] {partitions} partition(s), {consumers} consumer(s): {row['records_per_s']} records/s, "
                  f"{row['redeliveries']} redeliveries, broker CPU {row['broker_cpu_s']} s", flush=True)
    if "ack" in skip:
        return results
    topic = f"share-bench-{run_id}-ack"
    try:
        perf.run("produce-ack", "produce", topic, 1, args.commits + ACK_WARMUP_COMMITS + 10, 100,
                 timeout_s=args.timeout_s)
        cpu = BrokerCpu(broker_pid)
        result = perf.run("acklatency", "acklatency", topic, f"{topic}-g", args.commits + ACK_WARMUP_COMMITS,
                          args.timeout_s, timeout_s=args.timeout_s + 60)
        results["ack_latency"] = latency_summary(result["latencies_us"])
        results["ack_latency"]["broker_cpu_s"] = cpu.seconds()
        if results["ack_latency"]["commits"] < args.commits:
            results["failed"].append("ack")
            results["errors"].append(f"ack: {results['ack_latency']['commits']} of {args.commits} commits "
                                     f"within {args.timeout_s} s")
    except BenchError as exc:
        results["errors"].append(str(exc))
        results["failed"].append("ack")
        print(f"[share] {exc}", flush=True)
    return results


def median_or_none(values):
    return statistics.median(values) if values else None


def summarize(rounds):
    """The medians of one broker's rounds (results of `measure`): per (partitions, consumers) the
    records/s and broker CPU seconds of the complete runs, with every round's rate; the ack
    latency's p50 and p99. A configuration that failed in any round is marked failed."""
    failed = {name for r in rounds for name in r.get("failed", [])}
    rows = {}
    for r in rounds:
        for row in r.get("throughput", []):
            entry = rows.setdefault((row["partitions"], row["consumers"]), {"rates": [], "cpu": []})
            if row["complete"] and row["records_per_s"] is not None:
                entry["rates"].append(row["records_per_s"])
                if row.get("broker_cpu_s") is not None:
                    entry["cpu"].append(row["broker_cpu_s"])
    throughput = {}
    for (partitions, consumers), entry in rows.items():
        throughput[f"p{partitions}-c{consumers}"] = {
            "partitions": partitions, "consumers": consumers, "rounds": entry["rates"],
            "records_per_s": median_or_none(entry["rates"]), "broker_cpu_s": median_or_none(entry["cpu"]),
            "failed": f"p{partitions}-c{consumers}" in failed}
    for name in failed - set(throughput) - {"ack"}:
        partitions, consumers = (int(x[1:]) for x in name.split("-"))
        throughput[name] = {"partitions": partitions, "consumers": consumers, "rounds": [],
                            "records_per_s": None, "broker_cpu_s": None, "failed": True}
    acks = [r["ack_latency"] for r in rounds if r.get("ack_latency", {}).get("commits")]
    ack = {"rounds_p50_ms": [a["p50_ms"] for a in acks], "rounds_p99_ms": [a["p99_ms"] for a in acks],
           "p50_ms": median_or_none([a["p50_ms"] for a in acks]),
           "p99_ms": median_or_none([a["p99_ms"] for a in acks]), "failed": "ack" in failed}
    return {"throughput": throughput, "ack_latency": ack, "rounds": len(rounds)}


def ratio(shale, kafka):
    return None if not shale or not kafka else round(shale / kafka, 2)


def compare_table(summaries, record_bytes):
    """The Markdown table of Shale's and Kafka's medians (`summarize`) and Shale / Kafka."""
    shale, kafka = summaries["shale"], summaries["kafka"]

    def rate(entry):
        if entry is None:
            return "-"
        if entry["failed"]:
            return "failed" if entry["records_per_s"] is None else f"{entry['records_per_s']:,.0f} (failed once)"
        return "-" if entry["records_per_s"] is None else f"{entry['records_per_s']:,.0f}"

    def rounds(entry):
        return "-" if not entry or not entry["rounds"] else ", ".join(f"{v:,}" for v in entry["rounds"])

    def cpu(entry):
        return "-" if not entry or entry["broker_cpu_s"] is None else f"{entry['broker_cpu_s']:.2f}"

    out = ["| partitions | consumers | Shale records/s | Kafka records/s | Shale / Kafka | Shale MB/s | Kafka MB/s "
           "| Shale rounds | Kafka rounds | broker CPU s, Shale / Kafka |",
           "|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
    keys = sorted(set(shale["throughput"]) | set(kafka["throughput"]),
                  key=lambda k: tuple(int(x[1:]) for x in k.split("-")))
    for key in keys:
        s, k = shale["throughput"].get(key), kafka["throughput"].get(key)
        any_entry = s or k
        s_rate = s["records_per_s"] if s and not s["failed"] else None
        k_rate = k["records_per_s"] if k and not k["failed"] else None
        mb = [("-" if r is None else f"{r * record_bytes / 1e6:.1f}") for r in (s_rate, k_rate)]
        shown_ratio = ratio(s_rate, k_rate)
        out.append(f"| {any_entry['partitions']} | {any_entry['consumers']} | {rate(s)} | {rate(k)} | "
                   f"{'-' if shown_ratio is None else shown_ratio} | {mb[0]} | {mb[1]} | {rounds(s)} | {rounds(k)} | "
                   f"{cpu(s)} / {cpu(k)} |")
    out += ["", "| acknowledgement (commitSync of one record) | Shale | Kafka | Shale / Kafka | Shale rounds "
                "| Kafka rounds |", "|---|---:|---:|---:|---|---|"]
    for label, field in (("p50 (ms)", "p50_ms"), ("p99 (ms)", "p99_ms")):
        s, k = shale["ack_latency"], kafka["ack_latency"]
        values = []
        for a in (s, k):
            shown = "-" if a[field] is None else f"{a[field]:.2f}"
            values.append(f"{shown} (failed)" if a["failed"] else shown)
        s_ok = None if s["failed"] else s[field]
        k_ok = None if k["failed"] else k[field]
        shown_ratio = ratio(s_ok, k_ok)
        out.append(f"| {label} | {values[0]} | {values[1]} | {'-' if shown_ratio is None else shown_ratio} | "
                   f"{', '.join(str(v) for v in s['rounds_' + field]) or '-'} | "
                   f"{', '.join(str(v) for v in k['rounds_' + field]) or '-'} |")
    return "\n".join(out)


def compare(args, logs, run_id):
    """Shale and Kafka started side by side with the same settings; `args.warmup_rounds` unreported
    rounds, then `args.rounds` rounds of every configuration on each, the first broker
    alternating, each round on topics and groups of its own. A configuration that failed on a
    broker is not run on it again."""
    results = {"warmup": {"shale": [], "kafka": []}, "rounds": {"shale": [], "kafka": []}, "errors": [],
               "brokers": {}}
    brokers = {}
    try:
        for kind in ("shale", "kafka"):
            brokers[kind] = start_broker(kind, args.shale_bin, args.kafka_lib, logs)
            results["brokers"][kind] = {"version": brokers[kind].version, "workdir": str(brokers[kind].workdir)}
        order = ["shale", "kafka"]
        # Warm-up rounds first (not in the medians): Kafka's JIT made its first round up to
        # twice as slow as its third.
        plan = [(f"w{n}", n, "warmup") for n in range(1, args.warmup_rounds + 1)]
        plan += [(f"r{n}", n, "rounds") for n in range(1, args.rounds + 1)]
        for label, number, kept in plan:
            for kind in (order if number % 2 else order[::-1]):
                broker = brokers[kind]
                if not broker.alive():
                    results["errors"].append(f"{kind} round {label}: the broker is not running")
                    continue
                skip = frozenset(name for stage in ("warmup", "rounds") for r in results[stage][kind]
                                 for name in r["failed"])
                round_logs = logs / f"{kind}-{label}"
                round_logs.mkdir()
                print(f"[share] round {label}: {kind} ({broker.bootstrap})", flush=True)
                result = measure(Perf(broker.bootstrap, args.kafka_lib, round_logs), args,
                                 f"{run_id}-{kind}-{label}", broker.proc.pid, skip)
                result["skipped"] = sorted(skip)
                result["loadavg_1m_after"] = load_average()
                result["broker_alive_after"] = broker.alive()
                results["errors"] += [f"{kind} round {label}: {e}" for e in result["errors"]]
                if not broker.alive():
                    results["errors"].append(f"{kind} round {label}: the broker exited; last log lines:\n"
                                             + broker.tail())
                results[kept][kind].append(result)
    finally:
        for broker in brokers.values():
            broker.stop()
    results["summary"] = {kind: summarize(rounds) for kind, rounds in results["rounds"].items()}
    return results


def start_broker(kind, shale_bin, kafka_lib, logs):
    sys.path.insert(0, str(ROOT / "compat-tests" / "harness"))
    from brokers import KafkaBroker, ShaleBroker  # noqa: E402
    if kind == "kafka":
        broker = KafkaBroker(logs / "kafka.log", Path(kafka_lib), "4.4.0")
    else:
        broker = ShaleBroker(logs / "shale.log", Path(shale_bin))
    broker.start()
    return broker


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--bootstrap", help="HOST:PORT of the broker to measure")
    where.add_argument("--start", choices=["kafka", "shale"], help="start this broker here (compat-tests' harness)")
    where.add_argument("--compare", action="store_true",
                       help="start Shale and Kafka here and measure both in alternating rounds")
    where.add_argument("--render", nargs="+", metavar="JSON", help="print the table of earlier runs")
    ap.add_argument("--shale-bin", default=str(ROOT / "target" / "release" / "shale"))
    ap.add_argument("--kafka-lib", default=str(KAFKA_LIB))
    ap.add_argument("--consumers", type=int_list, default=[1, 4, 16])
    ap.add_argument("--partitions", type=int_list, default=[1, 8])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--record-bytes", type=int, default=1024)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3, help="rounds per broker with --compare (the median is shown)")
    ap.add_argument("--warmup-rounds", type=int, default=1, help="unreported rounds per broker before them")
    ap.add_argument("--timeout-s", type=int, default=300, help="limit of each SharePerf run")
    args = ap.parse_args()
    if args.render:
        for path in args.render:
            results = json.loads(Path(path).read_text())
            if "summary" in results:
                print(compare_table(results["summary"], results["settings"]["record_bytes"]))
            else:
                print(table(results))
        return
    if not args.bootstrap and not args.start and not args.compare:
        ap.error("--bootstrap HOST:PORT, --start kafka|shale or --compare")
    if args.rounds < 1 or args.warmup_rounds < 0:
        ap.error("--rounds must be at least 1, --warmup-rounds at least 0")
    if not (Path(args.kafka_lib) / "kafka-clients-4.4.0.jar").exists():
        sys.exit(f"kafka-clients 4.4.0 not in {args.kafka_lib}: run compat-tests/harness/deps.sh kafka")
    logs = Path(tempfile.mkdtemp(prefix="bench-share-"))
    broker = None
    settings = {k: v for k, v in vars(args).items() if k != "render"}
    results = {"settings": settings, "logs": str(logs), "loadavg_1m_at_start": load_average(),
               "cpus": os.cpu_count()}
    run_id = time.strftime("%H%M%S")
    try:
        if args.compare:
            results.update(compare(args, logs, run_id))
        elif args.start:
            broker = start_broker(args.start, args.shale_bin, args.kafka_lib, logs)
            bootstrap, results["broker"] = broker.bootstrap, broker.version
            results.update(measure(Perf(bootstrap, args.kafka_lib, logs), args, run_id, broker.proc.pid))
        else:
            bootstrap, results["broker"] = args.bootstrap, f"broker at {args.bootstrap}"
            results.update(measure(Perf(bootstrap, args.kafka_lib, logs), args, run_id))
    finally:
        if broker is not None:
            broker.stop()
    results["loadavg_1m_at_end"] = load_average()
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    out_path = out_dir / f"share-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out_path.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    print(f"\nresults: {out_path}\n")
    if args.compare:
        print(compare_table(results["summary"], args.record_bytes))
        print(f"\nLoad average (1 min) at start / end: {results['loadavg_1m_at_start']} / "
              f"{results['loadavg_1m_at_end']}")
        if results["errors"]:
            print("\nErrors:\n" + "\n".join(results["errors"]))
    else:
        print(table(results))
    sys.exit(1 if results["errors"] else 0)


if __name__ == "__main__":
    main()
