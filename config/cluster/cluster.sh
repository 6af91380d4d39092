#!/usr/bin/env bash
# A local three-node Shale cluster (config/cluster/node-{1,2,3}.properties), run from the
# repository root with data under ./data/node-N.
#
#   config/cluster/cluster.sh start    format on the first run (one shared cluster id), start all
#   config/cluster/cluster.sh stop     SIGTERM all three and wait
#   config/cluster/cluster.sh status   which nodes run, and who leads the metadata quorum
#   config/cluster/cluster.sh kill N   kill -9 node N (to watch the others carry on)
#   config/cluster/cluster.sh start N  start node N again after a kill
#
# SHALE points at the binary (default: target/release/shale, built if missing).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SHALE="${SHALE:-target/release/shale}"
NODES=(1 2 3)

need_binary() {
  if [[ ! -x "$SHALE" ]]; then
    cargo build --release -p shale
    SHALE="${CARGO_TARGET_DIR:-target}/release/shale"
  fi
}

start_one() {
  local n="$1"
  "$SHALE" serve --config "config/cluster/node-$n.properties" >>"data/node-$n.log" 2>&1 &
  echo $! >"data/node-$n.pid"
  for _ in $(seq 1 600); do
    grep -q "Shale server started" "data/node-$n.log" && { echo "node $n: started"; return; }
    kill -0 "$(cat "data/node-$n.pid")" 2>/dev/null || { tail -20 "data/node-$n.log"; exit 1; }
    sleep 0.1
  done
  echo "node $n: not ready after 60 s (see data/node-$n.log)" >&2
  exit 1
}

kill_one() {
  local n="$1"
  [[ -f "data/node-$n.pid" ]] || { echo "node $n is not running" >&2; exit 1; }
  kill -KILL "$(cat "data/node-$n.pid")" 2>/dev/null || true
  rm -f "data/node-$n.pid"
  echo "node $n: killed"
}

start() {
  need_binary
  mkdir -p data
  if [[ ! -f data/node-1/meta.properties ]]; then
    local id
    id="$("$SHALE" random-uuid)"
    for n in "${NODES[@]}"; do
      "$SHALE" format --config "config/cluster/node-$n.properties" --cluster-id "$id"
    done
  fi
  # All three start at once: each waits for a majority of voters before it is ready.
  for n in "${NODES[@]}"; do
    "$SHALE" serve --config "config/cluster/node-$n.properties" >"data/node-$n.log" 2>&1 &
    echo $! >"data/node-$n.pid"
  done
  for n in "${NODES[@]}"; do
    for _ in $(seq 1 600); do
      grep -q "Shale server started" "data/node-$n.log" && break
      kill -0 "$(cat "data/node-$n.pid")" 2>/dev/null || { cat "data/node-$n.log"; exit 1; }
      sleep 0.1
    done
    echo "node $n: $(grep -o 'Shale server started.*' "data/node-$n.log" | head -1)"
  done
  echo "bootstrap servers: 127.0.0.1:9092,127.0.0.1:9094,127.0.0.1:9096"
}

stop() {
  for n in "${NODES[@]}"; do
    [[ -f "data/node-$n.pid" ]] && kill -TERM "$(cat "data/node-$n.pid")" 2>/dev/null || true
  done
  for n in "${NODES[@]}"; do
    if [[ -f "data/node-$n.pid" ]]; then
      while kill -0 "$(cat "data/node-$n.pid")" 2>/dev/null; do sleep 0.1; done
      rm -f "data/node-$n.pid"
    fi
  done
}

status() {
  for n in "${NODES[@]}"; do
    if [[ -f "data/node-$n.pid" ]] && kill -0 "$(cat "data/node-$n.pid")" 2>/dev/null; then
      echo "node $n: running (pid $(cat "data/node-$n.pid"))"
    else
      echo "node $n: stopped"
    fi
  done
  grep -h "the metadata quorum has a leader" data/node-*.log 2>/dev/null | sort | tail -1 || true
}

case "${1:-}" in
  start) if [[ -n "${2:-}" ]]; then need_binary; start_one "$2"; else start; fi ;;
  kill) kill_one "${2:?node number}" ;;
  stop) stop ;;
  status) status ;;
  *) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
