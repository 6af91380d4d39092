#!/usr/bin/env bash
# Idempotent, quiet installers for every client and for the Apache Kafka reference.
# Each function installs into compat-tests/.deps (or a venv / node_modules inside compat-tests)
# and leaves a stamp so that a re-run only checks the stamp.
set -euo pipefail

COMPAT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="$COMPAT_DIR/.deps"
mkdir -p "$DEPS"

# Pinned versions (also printed in the matrix and listed in README.md).
KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
LOG4J_VERSION="2.25.3"
SLF4J_VERSION="2.0.17"
KAFKA_PYTHON_VERSION="3.0.12"
AIOKAFKA_VERSION="0.14.0"
CONFLUENT_KAFKA_VERSION="2.16.1"
FRANZ_GO_VERSION="v1.22.3"
KAFKAJS_VERSION="2.2.4"

log() { echo "[deps] $*" >&2; }
die() { echo "[deps] ERROR: $*" >&2; exit 1; }

# run_quiet LOGFILE CMD...: run CMD, keep its output in LOGFILE, show the tail on failure.
run_quiet() {
  local logfile="$1"; shift
  if ! "$@" >"$logfile" 2>&1; then
    echo "[deps] command failed: $*" >&2
    tail -n 30 "$logfile" >&2
    return 1
  fi
}

deps_kafka() {
  local dir="$DEPS/kafka" stamp="$DEPS/kafka/.stamp-$KAFKA_VERSION"
  [[ -f "$stamp" ]] && return 0
  command -v mvn >/dev/null || die "mvn not found (apt-get install -y maven)"
  command -v java >/dev/null || die "java not found (a JDK 17+ is needed)"
  log "resolving Apache Kafka $KAFKA_VERSION with Maven"
  rm -rf "$dir/lib"; mkdir -p "$dir"
  cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>shale.compat</groupId><artifactId>kafka-dist</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$SLF4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
  (cd "$dir" && run_quiet "$dir/mvn.log" timeout 900 mvn -B -q -Dmaven.repo.local="$DEPS/m2" \
      dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime) \
    || die "could not resolve Kafka $KAFKA_VERSION (see $dir/mvn.log)"
  ls "$dir/lib"/kafka_2.13-*.jar >/dev/null 2>&1 || die "kafka_2.13 jar missing after resolve"
  touch "$stamp"
}

deps_kcat() {
  command -v kcat >/dev/null && return 0
  log "installing kcat (Debian package)"
  run_quiet "$DEPS/apt.log" bash -c 'timeout 300 apt-get update -q && DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q kcat' \
    || die "apt-get install kcat failed (see $DEPS/apt.log)"
}

deps_venv() {
  local venv="$COMPAT_DIR/.venv"
  local want="kafka-python==$KAFKA_PYTHON_VERSION aiokafka==$AIOKAFKA_VERSION confluent-kafka==$CONFLUENT_KAFKA_VERSION"
  local stamp="$venv/.stamp-$(echo "$want" | md5sum | cut -c1-12)"
  [[ -f "$stamp" ]] && return 0
  log "creating Python venv with $want"
  [[ -x "$venv/bin/python" ]] || run_quiet "$DEPS/venv.log" python3 -m venv "$venv" || die "python3 -m venv failed"
  # shellcheck disable=SC2086
  run_quiet "$DEPS/pip.log" timeout 600 "$venv/bin/pip" install -q --disable-pip-version-check $want \
    python-snappy lz4 zstandard cramjam \
    || die "pip install failed (see $DEPS/pip.log)"
  touch "$stamp"
}

deps_java() {
  deps_kafka
  local out="$DEPS/java-classes" src=("$COMPAT_DIR"/java/*.java)
  local stamp="$out/.stamp-$(cat "${src[@]}" | md5sum | cut -c1-12)-$KAFKA_VERSION"
  [[ -f "$stamp" ]] && return 0
  log "compiling java/*.java against kafka-clients $KAFKA_VERSION"
  rm -rf "$out"; mkdir -p "$out"
  run_quiet "$DEPS/javac.log" javac -nowarn -d "$out" -cp "$DEPS/kafka/lib/*" "${src[@]}" \
    || die "javac failed (see $DEPS/javac.log)"
  touch "$stamp"
}

deps_go() {
  command -v go >/dev/null || die "go not found"
  local bin="$DEPS/go-bin/compat-franz"
  local stamp="$DEPS/go-bin/.stamp-$(cat "$COMPAT_DIR"/go/*.go "$COMPAT_DIR/go/go.mod" | md5sum | cut -c1-12)"
  [[ -f "$stamp" && -x "$bin" ]] && return 0
  log "building the franz-go client ($FRANZ_GO_VERSION)"
  mkdir -p "$DEPS/go-bin" "$DEPS/gopath"
  (cd "$COMPAT_DIR/go" && GOPATH="$DEPS/gopath" GOMODCACHE="$DEPS/gopath/pkg/mod" GOFLAGS=-mod=mod \
    run_quiet "$DEPS/go.log" timeout 900 go build -o "$bin" .) || die "go build failed (see $DEPS/go.log)"
  touch "$stamp"
}

deps_node() {
  command -v node >/dev/null || die "node not found"
  local stamp="$COMPAT_DIR/node/node_modules/.stamp-$(cat "$COMPAT_DIR/node/package.json" | md5sum | cut -c1-12)"
  [[ -f "$stamp" ]] && return 0
  log "installing kafkajs $KAFKAJS_VERSION"
  (cd "$COMPAT_DIR/node" && run_quiet "$DEPS/npm.log" timeout 600 npm install --no-audit --no-fund --silent) \
    || die "npm install failed (see $DEPS/npm.log)"
  touch "$stamp"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  for what in "$@"; do "deps_$what"; done
fi
