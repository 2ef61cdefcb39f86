#!/usr/bin/env bash
# A/B of rill-bench builds: runs a fixed set of rill rows (round trip, yield,
# hand-off, the pipe's three placements, the ring) with each build in turn,
# alternating the order every round, and prints medians (min-max) and each
# build's change against the first. Rows with 16 workers run only where 16
# cores are. On a shared machine, alternate builds like this rather than
# comparing runs made minutes apart.
#
#   scripts/ab.sh ROUNDS NAME=PATH [NAME=PATH ...]
#   e.g. scripts/ab.sh 12 old=/tmp/rill-bench-old new=target/release/rill-bench
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ab_args "$0" "$@"
machine
python3 - "$@" <<'PY'
import json, os, statistics, subprocess, sys
rounds = int(sys.argv[1])
bins = [a.split("=", 1) for a in sys.argv[2:]]
runs = {
    "roundtrip": ["micro", "--rows", "cross_worker_roundtrip"],
    "yield": ["micro", "--rows", "yield"],
    "handoff": ["micro", "--rows", "handoff"],
    "pipe rr W2": ["pipe", "--placement", "rr", "--workers", "2"],
    "pipe const W2": ["pipe", "--placement", "const", "--workers", "2"],
    "pipe parts W2": ["pipe", "--placement", "parts", "--workers", "2"],
    "ring const W2": ["ring", "--placement", "const", "--workers", "2", "--hops", "200000"],
    "ring parts W2": ["ring", "--placement", "parts", "--workers", "2", "--hops", "200000"],
    "ring rr W2": ["ring", "--placement", "rr", "--workers", "2", "--hops", "100000"],
}
if (os.cpu_count() or 1) >= 16:
    runs["pipe rr W16"] = ["pipe", "--placement", "rr", "--workers", "16"]
    runs["ring parts W16"] = ["ring", "--placement", "parts", "--workers", "16", "--hops", "100000"]
res = {(r, b): [] for r in runs for b, _ in bins}
parks = {(r, b): [] for r in runs for b, _ in bins}
for k in range(rounds):
    for r, args in runs.items():
        for b, exe in (bins if k % 2 == 0 else bins[::-1]):
            out = subprocess.run([exe] + args + ["--engine", "rill", "--json"],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"{b} {r} failed:\n{out.stderr[-1000:]}")
            j = json.loads(out.stdout.strip().splitlines()[-1])
            res[(r, b)].append(j["ns_per_op"])
            if "parks" in j:
                parks[(r, b)].append(j["parks"])
    print(f"round {k + 1}/{rounds}", file=sys.stderr, flush=True)
names = [b for b, _ in bins]
print("\n| ns per op | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
for r in runs:
    base = statistics.median(res[(r, names[0])])
    cells = []
    for b in names:
        v = res[(r, b)]
        m = statistics.median(v)
        c = f"{m:.1f} ({min(v):.1f}-{max(v):.1f})"
        if b != names[0]:
            c += f" {m / base * 100 - 100:+.1f}%"
        if parks[(r, b)]:
            c += f", {statistics.median(parks[(r, b)]):.0f} parks"
        cells.append(c)
    print(f"| {r} | " + " | ".join(cells) + " |")
PY
