#!/usr/bin/env bash
# The project's test command: formatting, lints, every test of the workspace,
# and the loom models of the runtime's blocking protocols.
set -euo pipefail
cd "$(dirname "$0")/.."

# insta's golden files (monitor/tests/snapshots): a missing or changed
# snapshot fails, and nothing is written (not even a .snap.new), whatever
# the caller's environment says.
export INSTA_UPDATE=no INSTA_FORCE_PASS=0

# What the tests need beyond the Rust toolchain, from Debian's packages when
# missing: valgrind (the memcheck stage) and tmux (the terminal that
# rill-mon watch's live view is tested in).
# OpenMPI and libclang: the cross-rank tests (the mpi feature's bindings
# are generated against mpi.h with libclang).
missing=()
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
[[ -n $(find /usr/include /usr/lib -name mpi.h -path '*openmpi*' -print -quit 2>/dev/null) ]] || missing+=(libopenmpi-dev)
[[ -n $(find /usr/lib /usr/lib64 \( -name 'libclang.so*' -o -name 'libclang-[0-9]*.so*' \) -print -quit 2>/dev/null) ]] || missing+=(libclang-dev)
if (( ${#missing[@]} )); then
  echo "== installing ${missing[*]} (apt-get)"
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "the tests need ${missing[*]}: install them (as root: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  (apt-get update -qq && apt-get install -y -qq "${missing[@]}") >/dev/null
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (all targets, warnings are errors; and with the mpi features)"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p rill -p rill-examples --features rill/mpi,rill-examples/mpi --all-targets -- -D warnings

echo "== cargo doc (workspace, warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

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

echo "== networks across ranks under mpirun (shared memory and tcp, 2 and 3 ranks)"
bash scripts/mpi_tests.sh

echo "== soundness and edge tests under valgrind's memcheck"
if command -v valgrind >/dev/null 2>&1; then
  test_bin() {
    cargo test -p rill --test "$1" --no-run --message-format=json 2>/dev/null |
      grep -o '"executable":"[^"]*"' | sed 's/^"executable":"\(.*\)"$/\1/' | tail -1
  }
  bin=$(test_bin soundness)
  edges=$(test_bin edges)
  [[ -x $bin && -x $edges ]] || { echo "no soundness or edges test executable" >&2; exit 1; }
  # --fair-sched=yes: valgrind runs one thread at a time, and with its
  # default lock a worker that spins keeps it while its peer waits for a
  # message; with a ticket lock the two-worker tests hand messages over
  # in turn (capacity-1 streams: 10.6 s -> 2.4 s, sampled runs 7.7 s ->
  # 3.6 s). The sampled tests sample at a twentieth of their rate under
  # valgrind (tests/common: `sample_hz`), without which fair scheduling
  # made them slower.
  valgrind --quiet --error-exitcode=9 --fair-sched=yes "$bin" --test-threads=1
  # The API's edges (capacities and sizes that would wrap, nested runs,
  # outside feeders). The largest-stack case is left to the plain run: its
  # slabs of 1 GiB stacks take memcheck's leak scan a minute at exit.
  valgrind --quiet --error-exitcode=9 --fair-sched=yes "$edges" --test-threads=1 \
    --skip the_largest_stack_and_spin_run
else
  echo "valgrind is not installed: skipped (apt-get install valgrind)" >&2
  exit 1
fi
