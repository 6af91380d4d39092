"""What every part of the side-by-side benchmark shares: its error, its log line, free ports."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "compat-tests"))
# Ports outside the ephemeral range, and the Kafka node both the suite and the benchmark start.
from harness.brokers import free_port, kafka_combined_node  # noqa: E402,F401


class BenchError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

