#!/usr/bin/env bash
# Counts the task bodies of rill-bench (its `call_once` closures) whose code
# takes the thread pointer's address (`mov reg, fs:0x0`): an address kept
# across a suspension is wrong where the task's code goes on on another
# thread (its stack unwinds on the caller of `run` at a run's end;
# runtime/src/tls.rs). Prints the count and bodies; exits 1 if any.
#   scripts/tls_check.sh            build release rill-bench, then check it
#   scripts/tls_check.sh PATH       check the executable at PATH (unstripped)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v objdump >/dev/null || { echo "objdump (binutils) is needed" >&2; exit 2; }
if [[ $# -gt 1 ]]; then
    sed -n '2,8p' "$0" >&2
    exit 2
fi
exe="${1:-}"
if [[ -z $exe ]]; then
    build_release --bin rill-bench
    exe="$BENCH"
fi
[[ -x $exe ]] || { echo "not an executable: $exe" >&2; exit 2; }
# A function starts at `ADDR <NAME>:`; a task body is a `call_once` closure
# (mangled names, so each closure has its own).
objdump -d --no-show-raw-insn -M intel "$exe" | awk '
/^[0-9a-f]+ <.*>:$/ {
    cur = $0
    sub(/^[0-9a-f]+ </, "", cur)
    sub(/>:$/, "", cur)
    body = index(cur, "call_once") > 0
    if (body) bodies[cur] = 1
    next
}
body && /fs:0x0([^0-9A-Za-z_]|$)/ { hits[cur]++ }
END {
    n = 0; for (k in hits) n++
    m = 0; for (k in bodies) m++
    printf "%d of %d task bodies take the thread pointer address\n", n, m
    for (k in hits) printf "  %3d %s\n", hits[k], substr(k, 1, 150) | "sort -k2"
    close("sort -k2")
    exit (n > 0 ? 1 : 0)
}'
