#!/usr/bin/env bash
# The cross-rank checks under mpirun (called by scripts/test.sh): random
# networks over 2 and 3 ranks, over shared memory and over TCP (the
# transport between nodes), with monitoring off and on (the ranks' logs read
# back as one run by rill-mon); a panic on the last rank ending every rank
# with its name; a killed rank ending the job instead of hanging it; the
# applications across ranks under each --mapping (parts over 3 ranks, auto's
# pilot on every rank and its plan shared), each verified.
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

echo "-- rill-bench mpi: the stream rows beside raw MPI (each row checks its messages)"
cargo build --release -q -p rill-examples --features mpi --bin rill-bench
bench=target/release/rill-bench
timeout 300 "${MPIRUN[@]}" -n 2 "$bench" mpi --quick --json >"$out/log" 2>&1 || {
  cat "$out/log" >&2; echo "mpi: rill-bench mpi --quick failed" >&2; exit 1; }
grep -E '^\{' "$out/log"

echo "-- the applications across 2 ranks (rill-bench APP under mpirun), each beside 1 rank x 2 workers and verified"
apps=(
  "pipe --depth 12 --messages 20000 --rounds 1"
  "pipe --depth 12 --messages 5000 --rounds 1 --mapping rr"
  "ring --size 10 --hops 5000 --rounds 1"
  "ring --size 10 --hops 2000 --rounds 1 --mapping $out/ring.map"
  "des --bytes 2000000 --rounds 1"
  "mpi des --bytes 500000 --rounds 1"
  "mc --paths 60000 --rounds 1"
  "mc --paths 20000 --rounds 1 --mapping parts"
  "wordcount --bytes 1000000 --rounds 1"
  "rt --scenes 12 --width 64 --height 48 --rounds 1"
  "ant --jobs 60 --ants 6 --iterations 3 --rounds 1"
  "ant --jobs 60 --ants 6 --iterations 3 --rounds 1 --mapping parts"
  "des --bytes 1000000 --rounds 1 --mapping parts"
)
printf 'ring/0 = 1:0\nring/5 = 1:0\nring/check = 0:0\n' >"$out/ring.map"
for args in "${apps[@]}"; do
  # shellcheck disable=SC2086
  timeout 300 "${MPIRUN[@]}" -n 2 "$bench" $args >"$out/log" 2>&1 || {
    cat "$out/log" >&2; echo "mpi: rill-bench $args failed" >&2; exit 1; }
  [[ $(grep -c 'verified true$' "$out/log") -eq 2 ]] || {
    cat "$out/log" >&2; echo "mpi: rill-bench $args: two verified rows expected" >&2; exit 1; }
  [[ $(wc -l <"$out/log") -eq 3 ]] || {
    cat "$out/log" >&2; echo "mpi: rill-bench $args: rank 0's title and two rows expected, nothing else" >&2; exit 1; }
  cat "$out/log"
done
timeout 120 "${MPIRUN[@]}" -n 2 "$bench" pipe --depth 4 --rounds 1 --json >"$out/log" 2>&1 || {
  cat "$out/log" >&2; echo "mpi: rill-bench pipe --json failed" >&2; exit 1; }
[[ $(grep -c '"ranks":2,.*"verified":true' "$out/log") -eq 1 && $(grep -c '"mapping":"default"' "$out/log") -eq 2 ]] || {
  cat "$out/log" >&2; echo "mpi: rill-bench pipe --json: rows with ranks, mapping and verified expected" >&2; exit 1; }

echo "-- parts across 3 ranks: DES's pipelines and MC's chains cut whole, verified"
for args in "des --bytes 1000000 --rounds 1 --mapping parts" "mc --paths 20000 --rounds 1 --mapping parts"; do
  # shellcheck disable=SC2086
  timeout 300 "${MPIRUN[@]}" -n 3 "$bench" $args >"$out/log" 2>&1 || {
    cat "$out/log" >&2; echo "mpi: rill-bench $args on 3 ranks failed" >&2; exit 1; }
  [[ $(grep -c 'verified true$' "$out/log") -eq 2 ]] || {
    cat "$out/log" >&2; echo "mpi: rill-bench $args on 3 ranks: two verified rows expected" >&2; exit 1; }
  cat "$out/log"
done

echo "-- --mapping auto across 2 ranks: the pilot on every rank, rank 0's plan broadcast, the run under it (verified)"
for args in "pipe --depth 12 --messages 20000" "des --bytes 2000000" "mc --paths 60000"; do
  app=${args%% *}
  logs="$out/auto-$app"
  # shellcheck disable=SC2086
  timeout 300 "${MPIRUN[@]}" -n 2 "$bench" $args --rounds 1 --mapping auto --logs "$logs" >"$out/log" 2>&1 || {
    cat "$out/log" >&2; echo "mpi: rill-bench $args --mapping auto failed" >&2; exit 1; }
  [[ $(grep -c 'pilot [0-9.]* ms (run [0-9.]* + plan [0-9.]*), total [0-9.]* ms  verified true$' "$out/log") -eq 2 &&
     $(wc -l <"$out/log") -eq 3 ]] || {
    cat "$out/log" >&2; echo "mpi: rill-bench $args --mapping auto: a title and two verified rows with pilot and total expected" >&2; exit 1; }
  for r in 0 1; do
    [[ -s $logs/pilot/rank-$r/rank.json && -n $(find "$logs/pilot/rank-$r" -name 'worker-*.rlog' -size +0) ]] || {
      ls -R "$logs" >&2; echo "mpi: $app --mapping auto: no pilot logs of rank $r in $logs/pilot/rank-$r" >&2; exit 1; }
  done
  # The plan names network tasks with RANK:WORKER lines, every one a place
  # of the 2 ranks x 1 worker. (Not necessarily on both ranks: where
  # crossing ranks costs more than the second rank gains, as for a
  # fine-grained pipe's pilot on a loaded machine, one rank is the right
  # plan; the run under it must still verify, above.)
  grep -q '^"[^"]*" = [01]:0$' "$logs/auto.map" && ! grep -v '^#' "$logs/auto.map" | grep '=' | grep -qv '= [01]:0$' || {
    cat "$logs/auto.map" >&2; echo "mpi: $app --mapping auto: the plan has a line that is not a place of 2 ranks x 1 worker" >&2; exit 1; }
  [[ -s $logs/one-rank/auto.map ]] || { echo "mpi: $app --mapping auto: no one-rank plan" >&2; exit 1; }
  cat "$out/log"
done
timeout 300 "${MPIRUN[@]}" -n 2 "$bench" pipe --depth 6 --messages 5000 --rounds 2 --mapping auto --logs "$out/auto-json" --json >"$out/log" 2>&1 || {
  cat "$out/log" >&2; echo "mpi: rill-bench pipe --mapping auto --json failed" >&2; exit 1; }
[[ $(grep -c '"mapping":"auto".*"pilot_ms":.*"total_ms":.*"verified":true' "$out/log") -eq 2 &&
   -s $out/auto-json/run-1/auto.map ]] || {
  cat "$out/log" >&2; echo "mpi: rill-bench pipe --mapping auto --json: rows with pilot_ms and total_ms, a plan per round expected" >&2; exit 1; }

echo "-- auto: a rank's pilot logs that rank 0 cannot read (another --logs, as on a node without a shared filesystem) are sent to it"
rm -rf "$out/auto-a" "$out/auto-b"
timeout 300 "${MPIRUN[@]}" -n 1 "$bench" pipe --depth 8 --messages 5000 --rounds 1 --mapping auto --logs "$out/auto-a" : \
  -n 1 "$bench" pipe --depth 8 --messages 5000 --rounds 1 --mapping auto --logs "$out/auto-b" >"$out/log" 2>&1 || {
  cat "$out/log" >&2; echo "mpi: auto with the ranks' logs apart failed" >&2; exit 1; }
[[ $(grep -c 'verified true$' "$out/log") -eq 2 ]] &&
  cmp -s "$out/auto-a/pilot/rank-1/rank.json" "$out/auto-b/pilot/rank-1/rank.json" &&
  [[ ! -e $out/auto-a/pilot/rank-1/rill.lock ]] || {
  cat "$out/log" >&2; ls -R "$out/auto-a" >&2; echo "mpi: auto: rank 1's pilot logs did not reach rank 0's directory" >&2; exit 1; }
echo "rank 1's pilot logs reached rank 0's directory; the plan and the run verified"

echo "-- under mpirun, the commands that do not run across ranks are refused"
if timeout 60 "${MPIRUN[@]}" -n 2 "$bench" sieve >"$out/log" 2>&1; then
  cat "$out/log" >&2; echo "mpi: rill-bench sieve ran under mpirun" >&2; exit 1; fi
grep -q "'sieve' does not run across ranks" "$out/log" || {
  cat "$out/log" >&2; echo "mpi: rill-bench sieve under mpirun: no clear error" >&2; exit 1; }

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
