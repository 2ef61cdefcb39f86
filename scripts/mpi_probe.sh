#!/usr/bin/env bash
# Raw MPI point-to-point on this machine, the peer of a cross-rank rill
# stream: the 8-byte round trip, one-way throughput from 8 B to 1 MiB, and
# what a waiting rank costs in CPU (blocking receive, or probing with a
# sleep), each over shared memory and over TCP (`--mca btl tcp,self`, the
# transport between nodes). Needs `apt-get install openmpi-bin
# libopenmpi-dev libclang-dev`; runs as root with --allow-run-as-root.
set -euo pipefail
cd "$(dirname "$0")/mpi_probe"
command -v mpirun >/dev/null || { echo "mpirun not found: apt-get install openmpi-bin libopenmpi-dev libclang-dev" >&2; exit 2; }
cargo build --release -q
run() { mpirun --allow-run-as-root --oversubscribe -n 2 "$@"; }
for t in "" "--mca btl tcp,self"; do
  echo "== transport: ${t:-default (shared memory)}"
  # shellcheck disable=SC2086
  run $t target/release/mpi-probe
  # shellcheck disable=SC2086
  run $t target/release/idle
done
echo "== shared memory, mpi_yield_when_idle 1"
run --mca mpi_yield_when_idle 1 target/release/idle
