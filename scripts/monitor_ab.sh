#!/usr/bin/env bash
# A/B of rill-bench builds in the monitoring modes: each round runs every row
# (pipe rr/const/parts, ring const at 50,000 and 500,000 hops; two workers)
# in each mode (off, counts = map,worker,task,stream, full) with each build,
# alternating the builds' order every round, and prints medians (min-max) per
# build and each build's overheads against its own off. The way to judge a
# change to the monitoring on a shared machine.
#
#   scripts/monitor_ab.sh ROUNDS NAME=PATH [NAME=PATH ...]
#   MODES=counts ROWS="pipe const,ring const 500k" scripts/monitor_ab.sh 5 old=A new=B
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ab_args "$0" "$@"
machine
python3 - "$@" <<'PY'
import json, os, shutil, statistics, subprocess, sys, tempfile
rounds = int(sys.argv[1])
bins = [a.split("=", 1) for a in sys.argv[2:]]
rows = {
    "pipe rr": ["pipe", "--placement", "rr"],
    "pipe const": ["pipe", "--placement", "const"],
    "pipe parts": ["pipe", "--placement", "parts"],
    "ring const 50k": ["ring", "--placement", "const"],
    "ring const 500k": ["ring", "--placement", "const", "--hops", "500000"],
}
if os.environ.get("ROWS"):
    want = [r.strip() for r in os.environ["ROWS"].split(",")]
    bad = [r for r in want if r not in rows]
    if bad:
        sys.exit(f"unknown rows {bad}; rows are {list(rows)}")
    rows = {r: rows[r] for r in want}
names = {"off": "off", "counts": "map,worker,task,stream", "full": "full"}
modes = os.environ.get("MODES", "off,counts,full").split(",")
if any(m not in names for m in modes):
    sys.exit(f"MODES takes a comma list of {list(names)}")
logs = tempfile.mkdtemp()
res = {}
try:
    for k in range(rounds):
        print(f"round {k + 1}/{rounds}", file=sys.stderr)
        for r, args in rows.items():
            for m in modes:
                for name, exe in (bins if k % 2 == 0 else bins[::-1]):
                    shutil.rmtree(f"{logs}/l", ignore_errors=True)
                    out = subprocess.run(
                        [exe, *args, "--engine", "rill", "--workers", "2", "--json",
                         "--monitor", names[m], "--logs", f"{logs}/l"],
                        capture_output=True, text=True, check=True).stdout
                    res.setdefault((r, m, name), []).append(json.loads(out.splitlines()[0])["ns_per_op"])
finally:
    shutil.rmtree(logs, ignore_errors=True)
print("\n| row | mode | " + " | ".join(n for n, _ in bins) + " |")
print("|---|---|" + "---|" * len(bins))
for r in rows:
    for m in modes:
        cells = []
        for name, _ in bins:
            v = res[(r, m, name)]
            cells.append(f"{statistics.median(v):.2f} ({min(v):.1f}-{max(v):.1f})")
        print(f"| {r} | {m} | " + " | ".join(cells) + " |")
if "off" in modes and len(modes) > 1:
    print("\n| row | build | " + " | ".join(f"{m}/off" for m in modes if m != "off") + " |")
    print("|---|---|" + "---|" * (len(modes) - 1))
    for r in rows:
        for name, _ in bins:
            off = statistics.median(res[(r, "off", name)])
            cells = [f"{statistics.median(res[(r, m, name)]) / off - 1:+.1%}" for m in modes if m != "off"]
            print(f"| {r} | {name} | " + " | ".join(cells) + " |")
PY
