#!/usr/bin/env bash
# The runtime and monitoring figures of the issues, each beside its peer in the
# same run: micro rows, pipe (three placements), ring, monitoring overhead on
# the pipe (compiled out / off / full without message order / full), log
# bytes per event. Prints Markdown. Usage: scripts/figures.sh [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-5}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg); repeat $R"
# RILL_BIN=DIR takes prebuilt binaries (DIR/rill-bench, DIR/rill-mon, and
# DIR/nomon/rill-bench built with --no-default-features) instead of cargo.
if [[ -n "${RILL_BIN:-}" ]]; then
  B=$RILL_BIN/rill-bench; MON=$RILL_BIN/rill-mon; NOMON=$RILL_BIN/nomon/rill-bench
else
  cargo build --release -q -p rill-examples -p rill-monitor
  mkdir -p target/nomon
  cargo build --release -q -p rill-examples --no-default-features --target-dir target/nomon
  B=target/release/rill-bench; MON=target/release/rill-mon; NOMON=target/nomon/release/rill-bench
fi
echo; echo "## micro (rill, threads, tokio)"; $B micro --repeat "$R" 2>/dev/null
for pl in const rr parts; do
  echo; echo "## pipe depth 100, 100000 messages, placement $pl"; $B pipe --placement "$pl" --repeat "$R" --workers 2 2>/dev/null
done
echo; echo "## ring 100 tasks, 200000 hops (rill placements parts/rr/const; peers place their own)"
$B ring --hops 200000 --repeat "$R" --workers 2 2>/dev/null
for pl in rr const; do $B ring --engine rill --placement "$pl" --hops 200000 --repeat "$R" --workers 2 2>/dev/null | tail -1 | sed "s/^/$pl: /"; done
echo; echo "## monitoring overhead: pipe depth 100 rr, rill, alternating builds/modes, medians of ns/op"
python3 - "$R" "$B" "$MON" "$NOMON" <<'PY'
import json, subprocess, statistics, sys, shutil
R, B, MON, NOMON = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
modes = [("compiled out", NOMON, "off"),
         ("off", B, "off"),
         ("full, no message order", B, "map,worker,task,stream"),
         ("full", B, "full")]
res = {m[0]: [] for m in modes}
logb = {}
for r in range(R):
    for name, exe, mon in modes:
        shutil.rmtree("target/fig-logs", ignore_errors=True)
        out = subprocess.run([exe, "pipe", "--engine", "rill", "--placement", "rr", "--workers", "2",
                              "--monitor", mon, "--logs", "target/fig-logs", "--json"],
                             capture_output=True, text=True, check=True).stdout
        j = json.loads(out.strip().splitlines()[-1])
        res[name].append(j["ns_per_op"])
        if mon != "off" and r == R - 1:
            s = json.loads(subprocess.run([MON, "summary", "target/fig-logs", "--json"],
                                          capture_output=True, text=True, check=True).stdout)
            logb[name] = (s["bytes"], s["events"], s["bytes_per_event"])
base = statistics.median(res["off"])
print("| build / mode | median ns/op | min | max | vs off |")
print("|---|---|---|---|---|")
for name, _, _ in modes:
    v = res[name]
    print(f"| {name} | {statistics.median(v):.1f} | {min(v):.1f} | {max(v):.1f} | {statistics.median(v)/base*100-100:+.1f}% |")
print()
print("| mode | log bytes | events | bytes/event |")
print("|---|---|---|---|")
for k, (b, e, bpe) in logb.items():
    print(f"| {k} | {b} | {e} | {bpe:.2f} |")
PY
