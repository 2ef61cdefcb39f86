#!/usr/bin/env bash
# A/B of rill-bench builds in the monitoring modes: each round runs every row
# (pipe rr/const/parts, ring const at 50,000 and 500,000 hops; WORKERS, 2 by
# default) in each mode (off, counts = map,worker,task,stream, full) with each
# build, alternating the builds' order every round. Prints medians (min-max)
# per build, each build's overheads against its own off, and the later
# builds against the first; ratios are medians of per-round ratios.
#   scripts/monitor_ab.sh ROUNDS NAME=PATH [NAME=PATH ...]
#   MODES=counts ROWS="pipe const,ring const 500k" scripts/monitor_ab.sh 5 old=A new=B
#   WORKERS=1 MODES=off scripts/monitor_ab.sh 9 hooks=A nohooks=B
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
workers = os.environ.get("WORKERS", "2")
if not workers.isdigit() or int(workers) < 1:
    sys.exit("WORKERS takes a positive integer")
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
                        [exe, *args, "--engine", "rill", "--workers", workers, "--json",
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
def ratio(a, b):
    """Median (min-max) over the rounds of a's time over b's, in percent."""
    q = [x / y - 1 for x, y in zip(res[a], res[b])]
    return f"{statistics.median(q):+.1%} ({min(q):+.0%}..{max(q):+.0%})"
if "off" in modes and len(modes) > 1:
    print("\n| row | build | " + " | ".join(f"{m}/off" for m in modes if m != "off") + " |")
    print("|---|---|" + "---|" * (len(modes) - 1))
    for r in rows:
        for name, _ in bins:
            cells = [ratio((r, m, name), (r, "off", name)) for m in modes if m != "off"]
            print(f"| {r} | {name} | " + " | ".join(cells) + " |")
if len(bins) > 1:
    first = bins[0][0]
    print(f"\n| row | mode | " + " | ".join(f"{n}/{first}" for n, _ in bins[1:]) + " |")
    print("|---|---|" + "---|" * (len(bins) - 1))
    for r in rows:
        for m in modes:
            cells = [ratio((r, m, n), (r, m, first)) for n, _ in bins[1:]]
            print(f"| {r} | {m} | " + " | ".join(cells) + " |")
PY
