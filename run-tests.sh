#!/usr/bin/env bash
# The whole test suite: formatting and lints, the layering rules, Rust unit, property and
# end-to-end tests (real `shale` processes driven by librdkafka), the benchmark script's unit
# tests, then the fast slice of the client compatibility matrix. Installs what it needs into local folders (cargo's target/, compat-tests/.deps, a venv)
# on first use.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is required (https://rustup.rs)" >&2
    exit 1
fi

for tool in fmt clippy; do
    if ! cargo "$tool" --version >/dev/null 2>&1; then
        component=$([ "$tool" = fmt ] && echo rustfmt || echo clippy)
        rustup component add "$component" || {
            echo "cargo $tool is required: rustup component add $component" >&2
            exit 1
        }
    fi
done

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

# The layering rules (layering.rules) are held by crates/shale-testkit/tests/layering.rs,
# which runs with the rest of the workspace's tests.
echo "== cargo test (workspace)"
cargo test --workspace --no-fail-fast

echo "== bench script unit tests"
python3 -m unittest discover -s bench/tests

if [ -x compat-tests/run.sh ]; then
    echo "== compat-tests (fast slice)"
    # Reuse the binary cargo test just built instead of a second, release build.
    SHALE_BIN="${CARGO_TARGET_DIR:-target}/debug/shale" compat-tests/run.sh --fast --no-build
fi
