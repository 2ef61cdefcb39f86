#!/usr/bin/env bash
# The cross-rank checks under mpirun (called by scripts/test.sh): random
# networks over 2 and 3 ranks, over shared memory and over TCP (the
# transport between nodes), with monitoring off and on (the ranks' logs read
# back as one run by rill-mon); a panic on the last rank ending every rank
# with its name; a killed rank ending the job instead of hanging it.
set -euo pipefail
cd "$(dirname "$0")/.."

MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
cargo build --release -q -p rill --features mpi --example mpi_net
bin=target/release/examples/mpi_net
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run_random() { # label, mpirun args..., -- program args...
  local label=$1; shift
  echo "-- random network: $label"
  if ! timeout 600 "${MPIRUN[@]}" "$@" >"$out/log" 2>&1; then
    cat "$out/log" >&2
    echo "mpi: random network ($label) failed" >&2
    exit 1
  fi
  grep '^rank' "$out/log"
}

run_random "2 ranks, shared memory, 10^6 messages" -n 2 "$bin" random --seed 1 --messages 1000000
run_random "3 ranks, shared memory" -n 3 "$bin" random --seed 2 --messages 200000
run_random "2 ranks, tcp" --mca btl tcp,self -n 2 "$bin" random --seed 3 --messages 200000
run_random "3 ranks, tcp, monitoring on" --mca btl tcp,self -n 3 "$bin" random --seed 4 --messages 100000 --monitor "$out/logs"

echo "-- rill-mon reads the three ranks' logs as one run"
cargo run -q -p rill-monitor --bin rill-mon -- summary "$out/logs" >"$out/summary" 2>&1 || {
  cat "$out/summary" >&2; echo "mpi: rill-mon summary failed" >&2; exit 1; }
grep -q '^ranks:' "$out/summary" || { cat "$out/summary" >&2; echo "mpi: the summary names no ranks" >&2; exit 1; }
grep -q '⇄' "$out/summary" || { cat "$out/summary" >&2; echo "mpi: no cross-rank stream is marked" >&2; exit 1; }
grep '^ranks:' "$out/summary"

for n in 2 3; do
  echo "-- a panic on rank $((n - 1)) of $n ends every rank with its name"
  timeout 120 "${MPIRUN[@]}" -x RUST_BACKTRACE=0 -n "$n" "$bin" panic >"$out/log" 2>&1 || true
  for r in $(seq 0 $((n - 1))); do
    grep -q "^rank $r: .*rank $((n - 1)): task 'boom'.*planted failure" "$out/log" || {
      cat "$out/log" >&2; echo "mpi: rank $r did not report the panic of rank $((n - 1))" >&2; exit 1; }
  done
done

echo "-- a deadlock across 3 ranks is reported on every rank"
timeout 120 "${MPIRUN[@]}" -n 3 "$bin" deadlock >"$out/log" 2>&1 || true
grep -q "^rank 0: deadlock across ranks.*left" "$out/log" &&
  grep -q "^rank 2: deadlock across ranks.*right" "$out/log" &&
  grep -q "^rank 1: deadlock across ranks" "$out/log" || {
  cat "$out/log" >&2; echo "mpi: the deadlock across ranks was not reported on every rank" >&2; exit 1; }
grep '^rank 0' "$out/log" | cut -c1-300

echo "-- rill-bench mpi: the stream rows beside raw MPI, DES and Monte Carlo across 2 ranks (each checks its results)"
cargo build --release -q -p rill-examples --features mpi --bin rill-bench
bench=target/release/rill-bench
for args in "mpi --quick --json" "mpi des --bytes 2000000 --rounds 1" "mpi mc --paths 60000 --rounds 1"; do
  # shellcheck disable=SC2086
  timeout 300 "${MPIRUN[@]}" -n 2 "$bench" $args >"$out/log" 2>&1 || {
    cat "$out/log" >&2; echo "mpi: rill-bench $args failed" >&2; exit 1; }
  grep -E '^\{|^(des|mc) ' "$out/log"
done

echo "-- a killed rank ends the job instead of hanging it"
timeout 120 "${MPIRUN[@]}" -n 2 "$bin" stuck >"$out/log" 2>&1 &
job=$!
for _ in $(seq 1 100); do
  [[ $(grep -c running "$out/log" 2>/dev/null || true) -ge 2 ]] && break
  sleep 0.2
done
victim=$(pgrep -f "examples/mpi_net stuck" | tail -1)
kill -9 "$victim"
start=$SECONDS
if ! wait "$job"; then :; fi
took=$((SECONDS - start))
if (( took > 30 )); then
  cat "$out/log" >&2; echo "mpi: the job outlived its killed rank by ${took} s" >&2; exit 1
fi
echo "the job ended ${took} s after the kill"
