#!/usr/bin/env bash
# Scaling with the number of workers: the four applications on rill (each
# verifies its result) and the rr pipe and the ring against their peers, for
# W = 1, 2, 4, ... up to the cores available. Prints Markdown; medians with min
# and max; speed-up against W = 1 from the same run.
#
#   scripts/scaling.sh [REPEAT] [MAXW]
#
# RILL_BIN=DIR uses prebuilt binaries from DIR (rill-bench) instead of building,
# for a machine without cargo. JSON lines of every run go to $SCALING_JSON when set.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
R=${1:-3}
MAXW=${2:-$(nproc)}
if [[ -n "${RILL_BIN:-}" ]]; then
    BENCH="$RILL_BIN/rill-bench"
else
    build_release
fi
[[ -x "$BENCH" ]] || { echo "no rill-bench at $BENCH" >&2; exit 2; }
machine
echo
python3 - "$BENCH" "$R" "$MAXW" "${SCALING_JSON:-}" <<'PY'
import json, os, statistics, subprocess, sys
bench, R, maxw, jpath = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
jout = open(jpath, "a") if jpath else None
ws = [w for w in (1, 2, 4, 8, 16, 32, 64) if w <= maxw]

def runs(args, env=None):
    out = subprocess.run([bench] + args + ["--json", "--repeat", str(R)],
                         capture_output=True, text=True,
                         env=dict(os.environ, **(env or {})))
    rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not rows or not all(r.get("verified", True) for r in rows):
        sys.exit(f"failed: {' '.join(args)}\n{out.stderr[-2000:]}")
    if jout:
        for r in rows:
            jout.write(json.dumps(r) + "\n")
    return rows

def stat(v):
    return statistics.median(v), min(v), max(v)

apps = [
    ("des", ["des", "--size", "4000000"]),
    ("mc", ["mc", "--paths", "2000000"]),
    ("rt", ["rt", "--scenes", "200"]),
    ("ant", ["ant", "--iterations", "10"]),
]
print("## Applications on rill: wall ms, median (min-max), speed-up vs 1 worker")
print()
print("| app | mapping | " + " | ".join(f"W={w}" for w in ws) + " |")
print("|---|---|" + "---|" * len(ws))
for name, args in apps:
    for mapping in ("rr", "parts"):
        cells, base = [], None
        for w in ws:
            extra = ["--solvers", str(max(4, w))] if name == "rt" else []
            extra += ["--mapping", mapping, "--workers", str(w)]
            m, lo, hi = stat([r["wall_ms"] for r in runs(args + extra)])
            base = base or m
            cells.append(f"{m:.0f} ({lo:.0f}-{hi:.0f}) x{base / m:.2f}")
            print(f"  {name} {mapping} W={w}: {m:.1f} ms", file=sys.stderr)
        print(f"| {name} | {mapping} | " + " | ".join(cells) + " |", flush=True)
print()
print("The work is the same for every W: rt uses max(4, W) solvers for its fixed scenes,"
      " ant its 45 ants; des and mc default to one pipeline or chain per worker.")
print()
for bench_name, args in [("pipe depth 100, rr placement, ns per message per stage",
                          ["pipe", "--placement", "rr", "--messages", "100000"]),
                         ("ring of 100, 200000 hops, ns per hop (rill: parts placement)",
                          ["ring", "--hops", "200000", "--placement", "parts"])]:
    print(f"## {bench_name}: median (min-max)")
    print()
    print("| engine | " + " | ".join(f"W={w}" for w in ws) + " |")
    print("|---|" + "---|" * len(ws))
    # rill again with a 500 us idle spin (RILL_SPIN_US): whether parking
    # between wakes is what a row costs.
    for eng, env in (("rill", None), ("rill, spin 500 us", {"RILL_SPIN_US": "500"}),
                     ("threads", None), ("tokio", None)):
        cells = []
        for w in ws:
            # One OS thread per ring task whatever W is: run it once.
            if bench_name.startswith("ring") and eng == "threads" and w > 1:
                cells.append("-")
                continue
            rows = runs(args + ["--engine", eng.split(",")[0], "--workers", str(w)], env)
            m, lo, hi = stat([r["ns_per_op"] for r in rows])
            parks = [r["parks"] for r in rows if "parks" in r]
            cells.append(f"{m:.1f} ({lo:.1f}-{hi:.1f})"
                         + (f", {statistics.median(parks):.0f} parks" if parks else ""))
            print(f"  {bench_name.split(',')[0]} {eng} W={w}: {m:.1f}", file=sys.stderr)
        print(f"| {eng} | " + " | ".join(cells) + " |", flush=True)
    print()
PY
