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
objdump -d --no-show-raw-insn -M intel "$exe" | python3 -c '
import re, sys
cur, bodies, hits = None, set(), {}
for line in sys.stdin:
    m = re.match(r"^([0-9a-f]+) <(.*)>:", line)
    if m:
        # Mangled names: the closures share one demangled name.
        cur = m.group(2)
        if "call_once" in cur:
            bodies.add(cur)
        continue
    if cur in bodies and re.search(r"fs:0x0\b", line):
        hits[cur] = hits.get(cur, 0) + 1
print(f"{len(hits)} of {len(bodies)} task bodies take the thread pointer address")
for name, n in sorted(hits.items()):
    print(f"  {n:3} {name[:150]}")
sys.exit(1 if hits else 0)
'
