#!/usr/bin/env bash
# What `rill-mon watch` costs the run it watches: runs of
# `rill-bench mc --monitor sample` alone and with the terminal view
# following them (in a detached tmux pane), alternated run by run, and
# the watcher's own CPU time.
#
#   scripts/watch_cost.sh [RUNS] [-- extra rill-bench mc options]
#
# Prints one line per run (variant, wall ms, the watcher's CPU ms up to the
# run's end) and then the
# median, min and max wall time per variant. Needs tmux and release builds
# of rill-bench and rill-mon (built here if missing).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

runs=${1:-7}
shift || true
[[ ${1:-} == "--" ]] && shift
extra=("$@")
(( ${#extra[@]} )) || extra=(--workers 2 --mapping manual --paths 1000000)

command -v tmux >/dev/null || { echo "tmux is not installed" >&2; exit 2; }
MON="$TARGET/release/rill-mon"
[[ -x $BENCH ]] || build_release
[[ -x $MON ]] || cargo build --release -q -p rill-monitor >&2

tmp=$(mktemp -d)
sock="watch-cost-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT

# Wall time (ms) of one run into $1, as rill-bench reports it.
run_mc() {
    "$BENCH" mc --monitor sample --logs "$1" "${extra[@]}" 2>&1 |
        sed -n 's/^run 1: *\([0-9.]*\) ms.*/\1/p'
}

# CPU time (ms) of process $1 so far: user + system, from /proc.
cpu_ms() {
    local f tck
    tck=$(getconf CLK_TCK)
    read -r -a f < <(sed 's/^.*) //' "/proc/$1/stat")
    echo $(( (f[11] + f[12]) * 1000 / tck ))
}

machine
echo "rill-bench mc --monitor sample ${extra[*]}; $runs runs per variant, alternated"
declare -a alone watched
for ((i = 0; i < runs; i++)); do
    logs="$tmp/alone-$i"
    ms=$(run_mc "$logs")
    alone+=("$ms")
    echo "alone    $ms ms"

    logs="$tmp/watched-$i"
    tmux -L "$sock" new-session -d -s w -x 120 -y 40 "$MON watch $logs"
    sleep 0.5
    pid=$(pgrep -f "^$MON watch $logs" | head -1)
    ms=$(run_mc "$logs")
    cpu=$(cpu_ms "$pid")
    tmux -L "$sock" kill-server
    watched+=("$ms")
    echo "watched  $ms ms  (the watcher's CPU from before the run to its end: ${cpu} ms)"
done

stats() {
    sort -n | awk '{v[NR] = $1} END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "median %.1f ms, min %.1f, max %.1f", m, v[1], v[NR]
    }'
}
echo "alone:   $(printf '%s\n' "${alone[@]}" | stats)"
echo "watched: $(printf '%s\n' "${watched[@]}" | stats)"
