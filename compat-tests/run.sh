#!/usr/bin/env bash
# Compatibility suite: real Kafka clients against Shale (default) or Apache Kafka.
#   compat-tests/run.sh [--against shale|kafka] [--fast] [--clients a,b] [--scenarios x,y]
# See compat-tests/README.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 2; }
exec python3 "$here/harness/run.py" "$@"
