#!/usr/bin/env bash
# Who makes the bridge's passes, measured: idle workers and the bridge
# thread (the default) against the bridge thread alone
# (RILL_WORKERS_CARRY=0), alternating invocation by invocation, each
# invocation measuring rill beside raw MPI in the same run. Prints, per row,
# the median (min-max) of rill/raw-MPI ratios for each mode.
#
#   scripts/mpi_carry_ab.sh [ROUNDS]     # default 5 rounds, 2 ranks
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
cargo build --release -q -p rill-examples --features mpi --bin rill-bench
bench=target/release/rill-bench
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -n 2)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  for carry in 1 0; do
    RILL_WORKERS_CARRY=$carry "${MPIRUN[@]}" -x RILL_WORKERS_CARRY "$bench" mpi --json \
      | grep '^{' | sed "s/^{/{\"carry\":$carry,/" >>"$out/rows"
    echo "round $r, carry $carry done" >&2
  done
done
python3 - "$out/rows" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["verified"] for r in rows), "a row was not verified"
keys = sorted({(r["row"], r["bytes"]) for r in rows})
def cell(v):
    return f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" if v else "-"
def med(v):
    return f"{statistics.median(v):.1f}" if v else "-"
print(f"{'row':12} {'bytes':>8}  {'workers carry: rill/mpi':>26} {'rill':>9} {'mpi':>9}  {'bridge alone: rill/mpi':>26} {'rill':>9} {'mpi':>9}")
for k in keys:
    line = f"{k[0]:12} {k[1]:>8}"
    for carry in (1, 0):
        sel = [r for r in rows if (r["row"], r["bytes"]) == k and r["carry"] == carry]
        line += f"  {cell([r['ratio'] for r in sel]):>26} {med([r['rill'] for r in sel]):>9} {med([r['mpi'] for r in sel]):>9}"
    print(line)
print("ratio: throughput rill/MPI (MB/s; higher is better), round trip rill/MPI (ns; lower is better); medians (min-max) over the rounds")
PY
