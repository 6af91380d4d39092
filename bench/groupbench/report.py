"""The Markdown table of bench/groups.py's results: per case the median over its rounds."""
import statistics

LABELS = {"consumer": "consumer protocol", "classic-delay3000": "classic, initial delay 3000 ms",
          "classic-delay0": "classic, initial delay 0 ms"}


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


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
        ("broker CPU per heartbeat, whole process (µs)",
         lambda c: c.get("cpu", {}).get("cpu_us_per_heartbeat"), ",.0f"),
        ("broker CPU per heartbeat, request and coordinator threads net of the idle broker's (µs)",
         lambda c: c.get("cpu", {}).get("request_threads_cpu_us_per_heartbeat_net_of_idle"), ",.0f"),
    ]
    for tag in tags:
        for n in sorted(sizes):
            for label, get, spec in rows:
                cells = [fmt(median(b, tag, n, get), spec) for b in ("shale", "kafka")]
                lines.append(f"| {n} members ({2 * n} partitions), {LABELS.get(tag, tag)}: {label} | "
                             f"{cells[0]} | {cells[1]} |")
    cells = [fmt(results.get(b, {}).get("commits_per_s"), ",.0f") for b in ("shale", "kafka")]
    lines.append(f"| synchronous offset commits per second, one member | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)
