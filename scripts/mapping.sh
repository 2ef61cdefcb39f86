#!/usr/bin/env bash
# Mapping matters (the paper's MC experiment): Monte Carlo on 2 workers with
# round-robin and with manual mapping, RUNS runs of each, alternating; a
# Markdown table, the speedup of manual, and an SVG plot of every run.
#
#   scripts/mapping.sh [RUNS] [mc options...]   e.g. scripts/mapping.sh 5 --paths 200000
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RUNS="${1:-5}"; shift || true
OUT="$TARGET/rill-report/mapping"
mkdir -p "$OUT"
build_release
echo "MC rr vs manual, $RUNS runs each ..." >&2
"$BENCH" compare mc --workers 2 --repeat "$RUNS" --json "$@" > "$OUT/mapping.jsonl"

python3 - "$OUT" "$RUNS" <<'PY'
import json, os, statistics, sys
out, runs = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(os.path.join(out, "mapping.jsonl")) if l.strip()]
summary = rows[-1]
runs_ = [r for r in rows[:-1]]
first = runs_[0]
print(f"MC {first.get('paths')} paths x {first.get('steps')} steps, {first.get('batch')} paths per record, "
      f"{first.get('chains')} chains, 2 workers, {runs} runs of each mapping (alternating).\n")
print("| mapping | median ms | min ms | max ms | idle ms (median) | parks (median) | cross-worker links | verified |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
by = {}
for m in ("rr", "manual"):
    rs = [r for r in runs_ if r["mapping"] == m]
    by[m] = rs
    w = [r["wall_ms"] for r in rs if r.get("verified")]
    med = lambda k: statistics.median([r.get(k, 0) for r in rs])
    ok = "yes" if all(r.get("verified") for r in rs) else "NO"
    print(f"| {m} | {statistics.median(w):.1f} | {min(w):.1f} | {max(w):.1f} | {med('idle_ms'):.1f} | "
          f"{med('parks'):.0f} | {med('cross_links') * 100:.0f}% | {ok} |")
sp = summary.get("speedup")
print(f"\nSpeedup of manual over round-robin (rr median / manual median): {sp:.2f}x" if sp else "\nSpeedup: n/a")

# A plain SVG: one bar per run, rr and manual side by side.
W, H, pad = 640, 300, 40
walls = [r["wall_ms"] for r in runs_ if "wall_ms" in r]
top = max(walls) * 1.1 if walls else 1
n = max(len(by["rr"]), len(by["manual"]))
bw = (W - 2 * pad) / max(1, n) / 2.5
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<text x="{pad}" y="16">MC wall time per run (ms): rr (grey) vs manual (blue); speedup {sp or 0:.2f}x</text>',
       f'<line x1="{pad}" y1="{H-pad}" x2="{W-pad}" y2="{H-pad}" stroke="black"/>']
for i in range(n):
    for j, (m, col) in enumerate((("rr", "#999"), ("manual", "#36c"))):
        if i < len(by[m]) and "wall_ms" in by[m][i]:
            v = by[m][i]["wall_ms"]
            h = (H - 2 * pad) * v / top
            x = pad + i * bw * 2.5 + j * bw
            svg.append(f'<rect x="{x:.1f}" y="{H-pad-h:.1f}" width="{bw:.1f}" height="{h:.1f}" fill="{col}"/>')
            svg.append(f'<text x="{x:.1f}" y="{H-pad-h-3:.1f}">{v:.0f}</text>')
svg.append("</svg>")
open(os.path.join(out, "mapping.svg"), "w").write("\n".join(svg))
print(f"\nPlot: {os.path.join(out, 'mapping.svg')}")
PY
echo
machine
echo "Runs: $RUNS of each mapping. Raw JSON lines: $OUT/mapping.jsonl"
