#!/usr/bin/env bash
# The cost of monitoring on the stream benchmarks (issue 3's figures): pipe
# (depth 100, 100,000 messages) and ring (100 tasks) in four builds/modes,
# run after run in turn so that the machine's load hits them alike:
#   out         - rill-bench built with --no-default-features (hooks compiled out)
#   off         - the default build, --monitor off
#   counts      - --monitor map,worker,task,stream (no message traces)
#   full        - --monitor full
# Prints median (min-max) ns per op per mode and the overheads: off against
# out, counts and full against off.
#
#   scripts/monitor_cost.sh [RUNS] [WORKERS]      (defaults: 7 runs, 2 workers)
#   PLACEMENTS="const rr" scripts/monitor_cost.sh  (pipe placements; default const rr parts)
#   RILL_BIN=DIR scripts/monitor_cost.sh           (prebuilt DIR/rill-bench and
#                                                   DIR/nomon/rill-bench; no cargo)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RUNS="${1:-7}"
WORKERS="${2:-2}"
PLACEMENTS="${PLACEMENTS:-const rr parts}"
OUT="$TARGET/rill-report/monitor-cost"
mkdir -p "$OUT"

if [[ -n "${RILL_BIN:-}" ]]; then
    cp "$RILL_BIN/nomon/rill-bench" "$OUT/rill-bench-out"
    cp "$RILL_BIN/rill-bench" "$OUT/rill-bench-hooks"
else
    echo "building rill-bench without monitoring hooks ..." >&2
    CARGO_TARGET_DIR="$TARGET/nomon" cargo build --release -q -p rill-examples --no-default-features >&2
    cp "$TARGET/nomon/release/rill-bench" "$OUT/rill-bench-out"
    echo "building rill-bench with monitoring hooks ..." >&2
    build_release
    cp "$BENCH" "$OUT/rill-bench-hooks"
fi
machine >&2

ROWS="$OUT/rows.jsonl"
: > "$ROWS"
benches=()
for p in $PLACEMENTS; do benches+=("pipe --placement $p"); done
benches+=("ring --placement parts" "ring --placement const")
for run in $(seq 1 "$RUNS"); do
    for b in "${benches[@]}"; do
        for mode in out off counts full; do
            echo "run $run/$RUNS: $b, $mode ..." >&2
            bin="$OUT/rill-bench-hooks"; extra=(--monitor off)
            logs="$OUT/logs"
            rm -rf "$logs"
            case $mode in
                out) bin="$OUT/rill-bench-out"; extra=() ;;
                counts) extra=(--monitor map,worker,task,stream --logs "$logs") ;;
                full) extra=(--monitor full --logs "$logs") ;;
            esac
            # shellcheck disable=SC2086
            "$bin" $b --engine rill --workers "$WORKERS" --json "${extra[@]}" 2>/dev/null |
                python3 -c '
import json, sys
mode, bench = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    if line.strip():
        r = json.loads(line)
        r["mode"], r["label"] = mode, bench
        print(json.dumps(r))
' "$mode" "$b" >> "$ROWS"
        done
    done
done

python3 - "$ROWS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = [r for r in rows if not r.get("verified", True)]
if bad:
    sys.exit(f"{len(bad)} runs did not verify")
by = {}
for r in rows:
    by.setdefault((r["label"], r["mode"]), []).append(r)
labels = list(dict.fromkeys(r["label"] for r in rows))
modes = ["out", "off", "counts", "full"]
def med(xs): return statistics.median(xs)
print(f"{'bench':24} " + " ".join(f"{m + ' ns/op':>22}" for m in modes)
      + f" {'off/out':>8} {'counts/off':>10} {'full/off':>9}")
for lab in labels:
    cells, meds = [], {}
    for m in modes:
        xs = [r["ns_per_op"] for r in by.get((lab, m), [])]
        if xs:
            meds[m] = med(xs)
            cells.append(f"{med(xs):8.2f} ({min(xs):.1f}-{max(xs):.1f})")
        else:
            cells.append("-")
    def ratio(a, b):
        return f"{(meds[a] / meds[b] - 1) * 100:+.1f}%" if a in meds and b in meds else "-"
    print(f"{lab:24} " + " ".join(f"{c:>22}" for c in cells)
          + f" {ratio('off', 'out'):>8} {ratio('counts', 'off'):>10} {ratio('full', 'off'):>9}")
print(f"\n{len(rows)} runs; medians with (min-max); rows in {sys.argv[1]}")
PY
