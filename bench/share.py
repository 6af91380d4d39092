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
    python3 bench/share.py --render RESULTS.json

Prints a table and the JSON of the run (also written under bench/results/).
"""
import argparse
import json
import math
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


def measure(perf, args, run_id):
    results = {"throughput": [], "errors": []}
    for partitions in args.partitions:
        topic = f"share-bench-{run_id}-p{partitions}"
        produced = perf.run(f"produce-p{partitions}", "produce", topic, partitions, args.records, args.record_bytes,
                            timeout_s=args.timeout_s)
        print(f"[share] {topic}: {args.records} records written in {produced['seconds']:.1f} s", flush=True)
        for consumers in args.consumers:
            group = f"{topic}-c{consumers}"
            try:
                result = perf.run(f"consume-p{partitions}-c{consumers}", "consume", topic, group, consumers,
                                  args.records, args.timeout_s, timeout_s=args.timeout_s + 60)
            except BenchError as exc:
                results["errors"].append(str(exc))
                print(f"[share] {exc}", flush=True)
                continue
            row = throughput_row(partitions, result, args.record_bytes)
            results["throughput"].append(row)
            print(f"[share] {partitions} partition(s), {consumers} consumer(s): {row['records_per_s']} records/s, "
                  f"{row['redeliveries']} redeliveries", flush=True)
    topic = f"share-bench-{run_id}-ack"
    perf.run("produce-ack", "produce", topic, 1, args.commits + ACK_WARMUP_COMMITS + 10, 100, timeout_s=args.timeout_s)
    try:
        result = perf.run("acklatency", "acklatency", topic, f"{topic}-g", args.commits + ACK_WARMUP_COMMITS,
                          args.timeout_s, timeout_s=args.timeout_s + 60)
        results["ack_latency"] = latency_summary(result["latencies_us"])
    except BenchError as exc:
        results["errors"].append(str(exc))
        print(f"[share] {exc}", flush=True)
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
    where.add_argument("--render", nargs="+", metavar="JSON", help="print the table of earlier runs")
    ap.add_argument("--shale-bin", default=str(ROOT / "target" / "release" / "shale"))
    ap.add_argument("--kafka-lib", default=str(KAFKA_LIB))
    ap.add_argument("--consumers", type=int_list, default=[1, 4, 16])
    ap.add_argument("--partitions", type=int_list, default=[1, 8])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--record-bytes", type=int, default=1024)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--timeout-s", type=int, default=300, help="limit of each SharePerf run")
    args = ap.parse_args()
    if args.render:
        for path in args.render:
            print(table(json.loads(Path(path).read_text())))
        return
    if not args.bootstrap and not args.start:
        ap.error("--bootstrap HOST:PORT or --start kafka|shale")
    if not (Path(args.kafka_lib) / "kafka-clients-4.4.0.jar").exists():
        sys.exit(f"kafka-clients 4.4.0 not in {args.kafka_lib}: run compat-tests/harness/deps.sh kafka")
    logs = Path(tempfile.mkdtemp(prefix="bench-share-"))
    broker = None
    settings = {k: v for k, v in vars(args).items() if k != "render"}
    results = {"settings": settings, "logs": str(logs)}
    try:
        if args.start:
            broker = start_broker(args.start, args.shale_bin, args.kafka_lib, logs)
            bootstrap, results["broker"] = broker.bootstrap, broker.version
        else:
            bootstrap, results["broker"] = args.bootstrap, f"broker at {args.bootstrap}"
        results.update(measure(Perf(bootstrap, args.kafka_lib, logs), args, time.strftime("%H%M%S")))
    finally:
        if broker is not None:
            broker.stop()
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    out_path = out_dir / f"share-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out_path.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    print(f"\nresults: {out_path}\n")
    print(table(results))
    sys.exit(1 if results["errors"] else 0)


if __name__ == "__main__":
    main()
