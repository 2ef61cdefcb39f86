#!/usr/bin/env bash
# Waiting (the paper's MC run with 50 paths on 4 workers): each path is a
# record (--batch 1), so the chains do almost no work and the run is mostly
# tasks waiting for each other. Runs rr and manual mapping with monitoring
# full, RUNS runs each, and prints a Markdown table of wall time and the
# runtime's own idle time and parks, and, read back from each run's monitoring
# logs (rill-mon's summary), the waiting events (WE) and waiting time (WT) of
# each worker: the paper's Table III. Logs stay in $OUT/logs-*.
#
#   scripts/waiting.sh [RUNS]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RUNS="${1:-5}"
OUT="$TARGET/rill-report/waiting"
mkdir -p "$OUT"
build_release
for m in rr manual; do
    echo "MC 50 paths, 4 workers, mapping $m, $RUNS runs ..." >&2
    rm -rf "$OUT/logs-$m"
    "$BENCH" mc --paths 50 --batch 1 --workers 4 --mapping "$m" --monitor full \
        --logs "$OUT/logs-$m" --repeat "$RUNS" --json > "$OUT/waiting-$m.jsonl"
done

python3 - "$OUT" "$RUNS" <<'PY'
import json, os, statistics, sys
out, runs = sys.argv[1], sys.argv[2]
print(f"MC 50 paths (one per record), 4 workers, monitoring full, {runs} runs per mapping, medians.\n")
print("| mapping | wall ms | idle ms (all workers) | parks | WE per worker | WT ms per worker | verified |")
print("|---|---:|---:|---:|---|---|---|")
for m in ("rr", "manual"):
    rs = [json.loads(l) for l in open(os.path.join(out, f"waiting-{m}.jsonl")) if l.strip()]
    med = lambda k: statistics.median([r.get(k, 0) for r in rs])
    ok = "yes" if all(r.get("verified") for r in rs) else "NO"
    # Waiting events/time per worker: from each run's logs (rill-mon summary).
    we = " / ".join(f"{med(f'we_w{w}'):.0f}" for w in range(4))
    wt = " / ".join(f"{med(f'wt_ms_w{w}'):.2f}" for w in range(4))
    print(f"| {m} | {med('wall_ms'):.2f} | {med('idle_ms'):.2f} | {med('parks'):.0f} | {we} | {wt} | {ok} |")
PY
echo
machine
echo "Runs: $RUNS per mapping. Logs: $OUT/logs-rr, $OUT/logs-manual"
