"""The Markdown table of bench/groups.py's results: per case the median over its rounds."""
import statistics

LABELS = {"consumer": "consumer protocol", "classic-delay3000": "classic, initial delay 3000 ms",
          "classic-delay0": "classic, initial delay 0 ms"}


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def cpu_points(cases, request_threads):
    """(heartbeats per second, broker CPU seconds per second) of every window of `cases`: the
    idle broker's (no heartbeats) and the idle group's."""
    points = []
    for c in cases:
        cpu = c.get("cpu", {})
        if not cpu.get("heartbeats_counted") or not cpu.get("window_s"):
            continue
        window = cpu["window_s"]
        if request_threads:
            points.append((0.0, cpu["idle_request_threads_cpu_s_same_window"] / window))
            points.append((cpu["heartbeats_counted"] / window, cpu["request_threads_cpu_s"] / window))
        else:
            points.append((0.0, c["idle_broker_cpu_s"] / c["idle_broker_window_s"]))
            points.append((cpu["heartbeats_counted"] / window, cpu["broker_cpu_s"] / window))
    return points


def slope_us(points):
    """Least-squares slope of CPU over heartbeat rate, in µs of CPU per heartbeat: what one more
    heartbeat costs, with the idle broker's own work in the intercept."""
    xs = {x for x, _ in points}
    if len(xs) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    return sxy / sxx * 1e6


def table(results):
    brokers = [b for b in ("shale", "kafka") if b in results]
    versions = {b: results[b].get("version", b) for b in brokers}
    head = ["Shale" if b == "shale" else versions[b].replace("Apache ", "") for b in ("shale", "kafka")]
    lines = [f"| measurement | {head[0]} | {head[1]} |", "|---|---:|---:|"]

    def median(broker, tag, n, get):
        values = sorted(v for c in results.get(broker, {}).get("cases", [])
                        if c["case"] == tag and c["members"] == n for v in [get(c)] if v is not None)
        return statistics.median(values) if values else None

    tags, sizes = [], []
    for b in brokers:
        for c in results[b].get("cases", []):
            if c["case"] not in tags:
                tags.append(c["case"])
            if c["members"] not in sizes:
                sizes.append(c["members"])
    rows = [
        ("stable from a cold start (s)", lambda c: c.get("cold", {}).get("stable_s"), ".2f"),
        ("stable again after one more member joins (s)", lambda c: c.get("join", {}).get("stable_s"), ".2f"),
        ("heartbeats per second, idle group (counted)", lambda c: c.get("cpu", {}).get("heartbeats_per_s"), ".1f"),
        ("broker CPU per heartbeat, idle group, whole process (µs)",
         lambda c: c.get("cpu", {}).get("cpu_us_per_heartbeat"), ",.0f"),
    ]
    for tag in tags:
        for n in sorted(sizes):
            for label, get, spec in rows:
                cells = [fmt(median(b, tag, n, get), spec) for b in ("shale", "kafka")]
                lines.append(f"| {n} members ({2 * n} partitions), {LABELS.get(tag, tag)}: {label} | "
                             f"{cells[0]} | {cells[1]} |")
        for label, request_threads in (("whole process", False), ("request and coordinator threads", True)):
            cells = []
            for b in ("shale", "kafka"):
                cases = [c for c in results.get(b, {}).get("cases", []) if c["case"] == tag]
                cells.append(fmt(slope_us(cpu_points(cases, request_threads)), ",.0f"))
            lines.append(f"| {LABELS.get(tag, tag)}: broker CPU per heartbeat, slope over every idle and "
                         f"group window ({label}, µs) | {cells[0]} | {cells[1]} |")
    cells = [fmt(results.get(b, {}).get("commits_per_s"), ",.0f") for b in ("shale", "kafka")]
    lines.append(f"| synchronous offset commits per second, one member | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)
