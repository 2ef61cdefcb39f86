#!/usr/bin/env bash
# The project's test command: formatting, lints, every test of the workspace,
# and the loom models of the runtime's blocking protocols.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test (workspace)"
cargo test --workspace

echo "== loom models (runtime blocking protocols)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p rill --lib --release loom_models

echo "== stream and stress tests again, with real fences on the fast side (no membarrier)"
RILL_NO_MEMBARRIER=1 cargo test -p rill --test basic --test stress

echo "== liveness: the yielding-neighbour network, 100 rounds of 1,000,000 messages, and the outside writer, 20 rounds (release)"
RILL_LIVENESS_ROUNDS=100 RILL_LIVENESS_MESSAGES=1000000 \
  cargo test -p rill --release --test liveness --test outside_writer

echo "== soundness tests under valgrind's memcheck"
if command -v valgrind >/dev/null 2>&1; then
  bin=$(cargo test -p rill --test soundness --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | sed 's/^"executable":"\(.*\)"$/\1/' | tail -1)
  [[ -x $bin ]] || { echo "no soundness test executable" >&2; exit 1; }
  valgrind --quiet --error-exitcode=9 "$bin" --test-threads=1
else
  echo "valgrind is not installed: skipped (apt-get install valgrind)" >&2
  exit 1
fi
