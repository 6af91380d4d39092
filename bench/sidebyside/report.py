"""The Markdown table of a results JSON: goals first, then the figures without a goal."""

from .session import RUNS


def ratio(shale, kafka):
    if shale is None or kafka is None or kafka == 0:
        return None
    return shale / kafka


def fmt_num(value, digits=1):
    if value is None:
        return "n/a"
    if isinstance(value, int) or value >= 1000:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def get(d, *path):
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def run_value(result, broker, run, key):
    """The figure of a run that finished (even with client errors, which table() marks)."""
    entry = get(result, "brokers", broker, "runs", run)
    if not entry or entry.get("exit_code") is None:
        return None
    return entry.get(key)


def run_flawed(result, broker, run) -> bool:
    entry = get(result, "brokers", broker, "runs", run)
    return bool(entry) and not entry.get("ok")


def round_cells(result, broker, run, key, digits):
    """Every round's value of one figure, "a / b / c", or n/a when the run has none."""
    values = get(result, "brokers", broker, "runs", run, "round_values", key) or []
    return " / ".join(fmt_num(v, digits) for v in values) or "n/a"


def table(result) -> str:
    rows = []

    # (metric, shale, kafka, goal kind, run): "le" = ratio <= 1/20 wanted, "ge" = ratio >= 1.5 wanted.
    def add(metric, shale, kafka, goal, run=None):
        rows.append((metric, shale, kafka, goal, run))

    for key, name in (("ready_line_ms", "Start-up to ready line (ms)"),
                      ("first_metadata_ms", "Start-up to first ApiVersions+Metadata answer (ms)")):
        add(name, get(result, "brokers", "shale", "startup", key), get(result, "brokers", "kafka", "startup", key), "le")
    for key, name in (("idle_rss_mib", "Idle RSS after ~5 s (MiB)"),
                      ("after_topic_rss_mib", "RSS after creating a topic (MiB)")):
        add(name, get(result, "brokers", "shale", "memory", key), get(result, "brokers", "kafka", "memory", key), "le")
    for partitions in (1, 8):
        for acks, acks_name in (("acks1", "acks=1"), ("acksall", "acks=all")):
            run = f"produce-p{partitions}-{acks}"
            for key, unit in (("steady_mb_per_s", "MB/s"), ("steady_records_per_s", "records/s")):
                add(f"Produce 1 KiB, {partitions} partition{'s' if partitions > 1 else ''}, {acks_name} ({unit})",
                    run_value(result, "shale", run, key), run_value(result, "kafka", run, key), "ge", run)
    for partitions in (1, 8):
        run = f"consume-p{partitions}"
        label = f"{partitions} partition{'s' if partitions > 1 else ''}"
        for key, unit in (("steady_mb_per_s", "MB/s"), ("steady_records_per_s", "records/s")):
            add(f"Consume 1 KiB, {label} ({unit})",
                run_value(result, "shale", run, key), run_value(result, "kafka", run, key), "ge", run)

    lines = ["| Metric | Shale | Kafka | Shale/Kafka | Goal | Met? |", "|---|---:|---:|---:|---|---|"]
    met_count = total = 0
    flawed_seen = False
    for metric, shale, kafka, goal, run in rows:
        r = ratio(shale, kafka)
        goal_text = "<= 0.05 (1/20)" if goal == "le" else ">= 1.5"
        flawed = {name: run is not None and run_flawed(result, name, run) for name in ("shale", "kafka")}
        if r is None:
            met = "n/a"
        else:
            ok = (r <= 0.05 if goal == "le" else r >= 1.5) and not any(flawed.values())
            met = "yes" if ok else "**no**"
            met_count += ok
            total += 1
        ratio_text = "n/a" if r is None else (f"{r:.3f}" if r < 0.1 else f"{r:.2f}")
        cells = {}
        for name, value in (("shale", shale), ("kafka", kafka)):
            text = fmt_num(value)
            if flawed[name]:
                text += " †" if value is not None else " (failed †)"
                flawed_seen = True
            cells[name] = text
        lines.append(f"| {metric} | {cells['shale']} | {cells['kafka']} | {ratio_text} | {goal_text} | {met} |")
    lines.append("")
    if flawed_seen:
        lines.append("† the load tool reported errors (see Failures), or timed out; a figure shown is the tool's own"
                     " summary of a run that finished despite them and cannot meet a goal.")
        lines.append("")
    lines.append(f"Goals met: {met_count} of {total} measured.")
    # Information rows without a goal.
    info = ["", "| Other figures (no goal) | Shale | Kafka |", "|---|---:|---:|"]
    info.append(f"| Peak RSS over the run, VmHWM (MiB) | {fmt_num(get(result, 'brokers', 'shale', 'memory', 'peak_rss_mib'))}"
                f" | {fmt_num(get(result, 'brokers', 'kafka', 'memory', 'peak_rss_mib'))} |")
    info.append(f"| Kafka storage format before start (ms, not in start-up) | - | "
                f"{fmt_num(get(result, 'brokers', 'kafka', 'prepare', 'storage_format_ms'))} |")
    for run in RUNS:
        key = "fetch_mb_per_s" if run.startswith("consume") else "mb_per_s"
        what = "fetch MB/s over all printed intervals" if run.startswith("consume") else "MB/s"
        info.append(f"| Whole run incl. warm-up, {run} ({what}) | {fmt_num(run_value(result, 'shale', run, key))}"
                    f" | {fmt_num(run_value(result, 'kafka', run, key))} |")
    for partitions in (1, 8):
        for acks, acks_name in (("acks1", "acks=1"), ("acksall", "acks=all")):
            run = f"produce-p{partitions}-{acks}"
            for key, name in (("latency_avg_ms", "avg"), ("latency_p99_ms", "p99")):
                info.append(f"| Produce {partitions}p {acks_name} latency {name} (ms) | "
                            f"{fmt_num(run_value(result, 'shale', run, key))} | {fmt_num(run_value(result, 'kafka', run, key))} |")
    for run in RUNS:
        info.append(f"| Broker CPU seconds, {run} | {fmt_num(get(result, 'brokers', 'shale', 'runs', run, 'broker_cpu_s'), 2)}"
                    f" | {fmt_num(get(result, 'brokers', 'kafka', 'runs', run, 'broker_cpu_s'), 2)} |")
    for run in RUNS:
        info.append(f"| Client JVM CPU seconds, {run} | {fmt_num(get(result, 'brokers', 'shale', 'runs', run, 'client_cpu_s'), 2)}"
                    f" | {fmt_num(get(result, 'brokers', 'kafka', 'runs', run, 'client_cpu_s'), 2)} |")
    per_round = (
        (("consume-p1", "consume-p8"), "disk_read_mib", 1, "Disk reads during every round, {run} (MiB, whole machine)", True),
        (RUNS, "broker_cpu_s", 2, "Broker CPU seconds in every round, {run}", False),
        (RUNS, "broker_system_cpu_s", 2, "Broker CPU seconds in the kernel in every round, {run}", False),
        (RUNS, "broker_minor_faults", 0, "Broker minor page faults in every round, {run}", False),
        (RUNS, "broker_runqueue_wait_s", 2, "Broker threads' seconds runnable but waiting for a CPU in every round, {run}", False),
        (RUNS, "steal_s", 2, "CPU seconds stolen by the hypervisor during every round, {run}", False),
        (RUNS, "free_mib_before", 0, "Free memory before every round, {run} (MiB, whole machine)", False),
        (RUNS, "pgscan_kswapd", 0, "Pages scanned by kswapd during every round, {run} (whole machine)", False),
        (RUNS, "pgscan_direct", 0, "Pages scanned by direct reclaim during every round, {run} (whole machine)", False),
        (RUNS, "steady_mb_per_s", 1, "Every round, {run} (steady MB/s)", True),
    )
    for runs, key, digits, label, always in per_round:
        for run in runs:
            cells = [round_cells(result, name, run, key, digits) for name in ("shale", "kafka")]
            if always or cells != ["n/a", "n/a"]:
                info.append(f"| {label.format(run=run)} | {cells[0]} | {cells[1]} |")
    shown = {"produce": ("records-per-request-avg", "request-latency-avg", "record-queue-time-avg", "io-wait-ratio"),
             "consume": ("fetch-size-avg", "fetch-latency-avg", "io-wait-ratio")}
    for run in RUNS:
        for metric in shown[run.split("-")[0]]:
            values = [get(result, "brokers", name, "runs", run, "client_metrics", metric) for name in ("shale", "kafka")]
            if any(v is not None for v in values):
                info.append(f"| Client {metric}, {run} | {fmt_num(values[0], 3)} | {fmt_num(values[1], 3)} |")
    for name, other in (("shale", "Kafka"), ("kafka", "Shale")):
        idle = [get(result, "brokers", name, "runs", run, "other_broker_idle_cpu_s") for run in RUNS]
        idle = [v for v in idle if v is not None]
        if idle:
            info.append(f"| Idle {other} broker's CPU seconds during {name.capitalize()}'s median runs (sum) | "
                        f"{fmt_num(sum(idle), 2) if name == 'shale' else '-'} | {fmt_num(sum(idle), 2) if name == 'kafka' else '-'} |")
    return "\n".join(lines + info)
