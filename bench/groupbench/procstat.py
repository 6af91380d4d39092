"""CPU time of a broker process and of its threads, from /proc (Linux)."""
import re
from pathlib import Path

CLK_TCK = 100  # USER_HZ: /proc/<pid>/stat counts CPU time in these ticks on Linux

# The threads a heartbeat passes through, by their (15-character) names: Kafka's network and
# request handler threads ("data-plane-kafka-...") and its group coordinator's event processors.
# Shale serves every request on its runtime's workers, so there every thread counts.
REQUEST_THREADS = {"kafka": ("data-plane-kafk", "group-coordinat"), "shale": ("",)}


def request_thread_cpu(by_thread, broker_name):
    prefixes = REQUEST_THREADS[broker_name]
    return sum(v for k, v in by_thread.items() if k.startswith(prefixes))


def cpu_seconds(pid):
    """utime + stime of the whole process (all threads), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_cpu(pid):
    """CPU seconds per thread name (digits dropped, so a pool's threads add up), from
    /proc/<pid>/task/*/stat; a thread that exits inside a window is missed."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:
            continue
        name = re.sub(r"\d+", "N", text[text.index("(") + 1:text.rindex(")")])
        fields = text.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0) + (int(fields[11]) + int(fields[12])) / CLK_TCK
    return out


def thread_delta(before, after):
    delta = {k: round(v - before.get(k, 0), 2) for k, v in after.items()}
    return dict(sorted(((k, v) for k, v in delta.items() if v > 0), key=lambda kv: -kv[1]))
