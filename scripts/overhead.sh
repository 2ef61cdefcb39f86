#!/usr/bin/env bash
# The cost of monitoring (the paper's Table II): each application at its
# default (the paper's) size in three builds/modes:
#   hooks out  - rill-bench built with --no-default-features (every hook is an
#                empty inline function),
#   off        - the default build, --monitor off,
#   full       - the default build, --monitor full, logs written.
# RUNS runs of each (default 5); medians, overhead over "hooks out", and the
# size of one run's logs.
#
#   scripts/overhead.sh [RUNS] [APP...]      e.g. scripts/overhead.sh 3 mc rt
#   WORKERS=4 MAPPING=rr scripts/overhead.sh     (defaults: all cores, manual)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RUNS="${1:-5}"; shift || true
APPS=("$@"); [ ${#APPS[@]} -gt 0 ] || APPS=(des mc rt ant)
WORKERS="${WORKERS:-$(nproc)}"
MAPPING="${MAPPING:-manual}"
OUT="$TARGET/rill-report/overhead"
mkdir -p "$OUT"

echo "building rill-bench without monitoring hooks ..." >&2
build_release --no-default-features
cp "$BENCH" "$OUT/rill-bench-nohooks"
echo "building rill-bench with monitoring hooks ..." >&2
build_release
cp "$BENCH" "$OUT/rill-bench-hooks"

# The three modes alternate run by run, so that a change in the machine's
# load during the experiment hits them alike.
for app in "${APPS[@]}"; do
    rm -rf "$OUT/logs-$app"
    for mode in nohooks off full; do : > "$OUT/$app-$mode.jsonl"; done
    for run in $(seq 1 "$RUNS"); do
        for mode in nohooks off full; do
            echo "$app: $mode, run $run/$RUNS ..." >&2
            bin="$OUT/rill-bench-hooks"; extra=(--monitor off)
            case $mode in
                nohooks) bin="$OUT/rill-bench-nohooks" ;;
                full) extra=(--monitor full --logs "$OUT/logs-$app/run-$run") ;;
            esac
            "$bin" "$app" --workers "$WORKERS" --mapping "$MAPPING" --json "${extra[@]}" \
                >> "$OUT/$app-$mode.jsonl" 2>/dev/null
        done
    done
done

python3 - "$OUT" "$RUNS" "$WORKERS" "$MAPPING" "${APPS[@]}" <<'PY'
import json, os, statistics, sys
out, runs, workers, mapping, apps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def load(app, mode):
    with open(os.path.join(out, f"{app}-{mode}.jsonl")) as f:
        rows = [json.loads(l) for l in f if l.strip()]
    bad = [r for r in rows if not r.get("verified")]
    return [r["wall_ms"] for r in rows if r.get("verified")], len(bad)
def size(path):
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total
print(f"Monitoring overhead, {workers} workers, {mapping} mapping, {runs} runs per cell (alternating), medians of the network's wall time.\n")
print("| app | hooks out ms | off ms | full ms | off vs hooks out | full vs hooks out | log size (one run) | unverified |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for app in apps:
    med, bad = {}, 0
    for mode in ("nohooks", "off", "full"):
        walls, b = load(app, mode)
        bad += b
        med[mode] = statistics.median(walls) if walls else float("nan")
    pct = lambda m: f"{(med[m] / med['nohooks'] - 1) * 100:+.1f}%"
    logs = os.path.join(out, f"logs-{app}")
    nruns = len([d for d in os.listdir(logs) if d.startswith("run-")]) if os.path.isdir(logs) else 0
    kib = size(logs) / 1024 / max(1, nruns) if os.path.isdir(logs) else 0
    log = f"{kib:.0f} KiB" if kib else "none written"
    print(f"| {app} | {med['nohooks']:.1f} | {med['off']:.1f} | {med['full']:.1f} | {pct('off')} | {pct('full')} | {log} | {bad} |")
PY
echo
machine
echo "Runs: $RUNS per cell. Raw JSON lines: $OUT/*.jsonl"
