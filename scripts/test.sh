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
