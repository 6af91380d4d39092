#!/usr/bin/env bash
# Shale vs Apache Kafka on this machine, side by side in one run (see bench/README.md).
#
#   bench/run.sh [--quick] [--no-build] [--perf] [--only shale|kafka] [--records N] [--repeat N]
#                [--client-metrics] [--pin-client CPUS] [--broker-cpu-quota CPUS]
#   bench/run.sh --transactions [--no-build] [--only shale|kafka] [--records N]
#
# Environment: SHALE_BIN (use this binary, skip the build), SHALE_COMMIT (label for that binary),
# KAFKA_VERSION (default 4.4.0), CARGO_TARGET_DIR (where cargo builds Shale).
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$BENCH_DIR/.." && pwd)"
DEPS="$BENCH_DIR/.deps"
KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
LOG4J_VERSION="2.25.3"
SLF4J_VERSION="2.0.17"

die() { echo "[bench] ERROR: $*" >&2; exit 1; }
log() { echo "[bench] $*" >&2; }

quick=() build=1 passthrough=() transactions=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    --transactions) transactions=1 ;;
    --no-build) build=0 ;;
    --client-metrics) passthrough+=(--client-metrics) ;;
    --perf) command -v perf >/dev/null || die "--perf needs perf (apt-get install -y linux-perf)"; passthrough+=(--perf) ;;
    --only|--records|--repeat|--pin-client|--broker-cpu-quota) [[ $# -ge 2 ]] || die "$1 needs a value"; passthrough+=("$1" "$2"); shift ;;
    -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option: $1 (try --help)" ;;
  esac
  shift
done

command -v python3 >/dev/null || die "python3 not found (Python 3.9+ is needed to drive the benchmark)"
command -v java >/dev/null || die "java not found: install a JDK 17+ (e.g. apt-get install -y openjdk-17-jdk-headless)"
java_major="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
[[ -n "$java_major" && "$java_major" -ge 17 ]] || die "Java 17+ is needed for Kafka 4.x (found: $(java -version 2>&1 | head -n1))"

# --- Shale ---------------------------------------------------------------------------------
if [[ -n "${SHALE_BIN:-}" ]]; then
  shale_bin="$SHALE_BIN"
else
  target_dir="${CARGO_TARGET_DIR:-$REPO_DIR/target}"
  shale_bin="$target_dir/release/shale"
  if [[ "$build" == 1 ]]; then
    command -v cargo >/dev/null || die "cargo not found (install Rust, or pass SHALE_BIN=/path/to/shale)"
    log "building Shale (cargo build --release -p shale)"
    (cd "$REPO_DIR" && timeout 3600 cargo build --release -p shale) || die "cargo build failed"
  fi
fi
[[ -x "$shale_bin" ]] || die "Shale binary not found at $shale_bin (build it, or pass SHALE_BIN=...)"

# --- Apache Kafka: reuse the compatibility suite's install when present, else install here ----
kafka_lib=""
compat_kafka="$REPO_DIR/compat-tests/.deps/kafka"
if [[ -f "$compat_kafka/.stamp-$KAFKA_VERSION" ]] && ls "$compat_kafka"/lib/kafka-tools-"$KAFKA_VERSION".jar >/dev/null 2>&1; then
  kafka_lib="$compat_kafka/lib"
  log "using the compatibility suite's Apache Kafka $KAFKA_VERSION ($kafka_lib)"
else
  dir="$DEPS/kafka-$KAFKA_VERSION" stamp="$DEPS/kafka-$KAFKA_VERSION/.stamp"
  if [[ ! -f "$stamp" ]]; then
    command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install -y maven) to fetch Apache Kafka $KAFKA_VERSION"
    log "resolving Apache Kafka $KAFKA_VERSION (kafka_2.13 + kafka-tools) with Maven into $dir"
    rm -rf "$dir"; mkdir -p "$dir"
    cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>shale.bench</groupId><artifactId>kafka-dist</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$SLF4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
    if ! (cd "$dir" && timeout 900 mvn -B -q -Dmaven.repo.local="$DEPS/m2" \
        dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime >"$dir/mvn.log" 2>&1); then
      tail -n 30 "$dir/mvn.log" >&2
      die "could not resolve Apache Kafka $KAFKA_VERSION from Maven Central (log: $dir/mvn.log)"
    fi
    ls "$dir"/lib/kafka_2.13-"$KAFKA_VERSION".jar >/dev/null 2>&1 || die "kafka_2.13 jar missing after the Maven resolve"
    touch "$stamp"
  fi
  kafka_lib="$dir/lib"
fi

if [[ -n "${SHALE_COMMIT:-}" ]]; then
  git_commit="$SHALE_COMMIT"
else
  git_commit="$(git -C "$REPO_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  if ! git -C "$REPO_DIR" diff --quiet HEAD -- crates Cargo.toml Cargo.lock 2>/dev/null; then
    git_commit="$git_commit+dirty"
  fi
fi

if [[ "$transactions" == 1 ]]; then
  # Transaction figures (bench/transactions.py) use the compatibility suite's Kafka and venv.
  bash "$REPO_DIR/compat-tests/harness/deps.sh" venv kafka || die "compat-tests dependencies failed"
  exec "$REPO_DIR/compat-tests/.venv/bin/python" "$BENCH_DIR/transactions.py" "${passthrough[@]}" \
    --shale-bin "$shale_bin" --kafka-version "$KAFKA_VERSION"
fi

exec python3 "$BENCH_DIR/bench.py" "${quick[@]}" "${passthrough[@]}" \
  --shale-bin "$shale_bin" --kafka-lib "$kafka_lib" --kafka-version "$KAFKA_VERSION" \
  --results "$BENCH_DIR/results" --git-commit "$git_commit"
