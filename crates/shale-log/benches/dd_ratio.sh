#!/usr/bin/env bash
# Ratio of shale-log's append throughput with 16 KiB batches to `dd bs=16k` writing the same
# number of bytes into the page cache of the same filesystem (goal >= 0.8).
# Usage: crates/shale-log/benches/dd_ratio.sh   (COUNT=<16 KiB blocks>, default 65536 = 1 GiB)
set -euo pipefail
count="${COUNT:-65536}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/dd-ratio.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# The two writers alternate so that both see the same page-cache and writeback state; the
# best of the runs of each is compared.
runs="${RUNS:-3}"
cargo bench -q -p shale-log --bench log_bench --no-run >/dev/null 2>&1
best_dd=0
best_log=0
for _ in $(seq "$runs"); do
  rm -f "$tmp/dd.out"
  line="$(dd if=/dev/zero of="$tmp/dd.out" bs=16k count="$count" 2>&1 | tail -n 1)"
  rm -f "$tmp/dd.out"
  # "<bytes> bytes (...) copied, <secs> s, <rate>"
  rate="$(echo "$line" | awk '{ for (i = 1; i <= NF; i++) if ($i == "s,") secs = $(i-1); printf "%.0f", $1 / secs }')"
  if [ "$rate" -gt "$best_dd" ]; then best_dd="$rate"; fi

  out="$(TMPDIR="$tmp" COUNT="$count" cargo bench -q -p shale-log --bench log_bench -- append_throughput_raw 2>/dev/null | grep '^append_16k_bytes_per_sec')"
  rate="$(echo "$out" | awk '{ print $2 }')"
  if [ "$rate" -gt "$best_log" ]; then best_log="$rate"; fi
done

awk -v d="$best_dd" -v l="$best_log" 'BEGIN {
  printf "dd bs=16k:        %.0f MiB/s\n", d / 1048576
  printf "shale-log append: %.0f MiB/s\n", l / 1048576
  printf "ratio:            %.2f\n", l / d
}'
