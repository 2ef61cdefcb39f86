#!/usr/bin/env bash
# Deterministic hot-path costs: instructions per operation, counted by
# valgrind's callgrind (wall clock on a shared VM swings 2-3x with load; these
# counts do not). Each figure is the marginal count between two run lengths,
# so start-up is cancelled out. Needs valgrind. 1 worker throughout.
#
#   scripts/instructions.sh            # ring hop, yield, handoff, pipe, monitoring modes
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
cargo build --release -q -p rill-examples
B=target/release/rill-bench
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
ic() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/refs:/ {gsub(",", "", $4); print $4}'; }
marginal() { # label ops-delta cmd-short cmd-long
    local label=$1 delta=$2 a b
    a=$(ic $3); b=$(ic $4)
    echo "$label: $(( (b - a) / delta )) instructions"
}
marginal "ring hop (size 2, const)" 200000 \
    "$B ring --placement const --size 2 --hops 100000 --engine rill --workers 1 --json" \
    "$B ring --placement const --size 2 --hops 300000 --engine rill --workers 1 --json"
marginal "pipe, per message per stage (depth 10, const)" 360000 \
    "$B pipe --placement const --depth 10 --messages 20000 --engine rill --workers 1 --json" \
    "$B pipe --placement const --depth 10 --messages 60000 --engine rill --workers 1 --json"
echo "yield (whole run / 5M yields): $(( $(ic $B micro --rows yield --engine rill --workers 1 --json) / 5000000 )) instructions"
echo "handoff (whole run / 5M messages): $(( $(ic $B micro --rows handoff --engine rill --json) / 5000000 )) instructions"
CARGO_TARGET_DIR=target/nomon cargo build --release -q -p rill-examples --no-default-features
echo "pipe rr, 10000 messages, hooks compiled out: $(ic target/nomon/release/rill-bench pipe --engine rill --placement rr --workers 1 --messages 10000 --json) instructions in all"
for m in off map,worker,task,stream full; do
    rm -rf "$LOGS/run"
    echo "pipe rr, 10000 messages, --monitor $m: $(ic $B pipe --engine rill --placement rr --workers 1 --messages 10000 --monitor $m --logs "$LOGS/run" --json) instructions in all"
done
# A task that suspends inside a function call (rather than in its own frame)
# pays about 30 ns per block in mispredicted returns (stream/mod.rs,
# `Reader::read_empty`): list the places where the coroutine library's
# suspend stayed out of line, by the source line of the blocking call.
if command -v objdump >/dev/null && command -v addr2line >/dev/null; then
    echo "suspend left out of line at (want: none that blocks often):"
    objdump -d --no-show-raw-insn "$B" | awk '/call.*Yielder.*suspend/ {sub(":", "", $1); print $1}' |
        while read -r a; do
            addr2line -i -e "$B" "0x$a" | grep -v -e '/rustc/' -e '/runtime/src/' -e '/.cargo/' | head -1
        done | sed "s|$PWD/||" | sort | uniq -c
fi
