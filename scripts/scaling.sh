#!/usr/bin/env bash
# Scaling with the number of workers, which `rill-bench ab` keeps fixed: for
# W = 1, 2, 4, ... up to the cores available, the four applications on rill
# (rr and parts mapping; wall ms, median (min-max) of REPEAT runs, and the
# speed-up against W = 1 from the same invocation), and the rr pipe and the
# ring beside their peers (rill-bench's own tables), with rill again at a
# 500 us idle spin (RILL_SPIN_US) to show whether parking is what a row
# costs; the ring on rr placement beside tokio; what one cache line's round
# trip between cores 0 and 1 costs (the floor under a crossing); and sample
# mode's cost by rate on the most workers. Prints Markdown.
#
#   scripts/scaling.sh [REPEAT] [MAXW]
#
# RILL_BIN=DIR uses a prebuilt DIR/rill-bench instead of building, for a
# machine without cargo.
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
WS=()
for w in 1 2 4 8 16 32 64; do (( w <= MAXW )) && WS+=("$w"); done
machine
echo
echo "## One cache line's round trip between cores 0 and 1 (scripts/line_pingpong.c)"
echo
echo '```'
cc -O2 -o "${TMPDIR:-/tmp}/line_pingpong" "$(dirname "$0")/line_pingpong.c" -lpthread &&
    for m in 0 1 2; do "${TMPDIR:-/tmp}/line_pingpong" "$m" 2000000; done
echo '```'
echo

# The median, min and max wall ms of an application's runs, from its JSON lines.
wall_stats() {
    grep -o '"wall_ms":[0-9.e+-]*' | cut -d: -f2 | sort -g |
        awk '{ v[NR] = $1 } END {
            m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'
}

echo "## Applications on rill: wall ms, median (min-max), speed-up against 1 worker"
echo
echo "The work is the same for every W: rt uses max(4, W) solvers for its fixed"
echo "scenes, ant its 45 ants; des and mc default to one pipeline or chain per worker."
echo
printf '| app | mapping |'; printf ' W=%s |' "${WS[@]}"; echo
printf '|---|---|'; printf -- '---|%.0s' "${WS[@]}"; echo
for app in "des --size 4000000" "mc --paths 2000000" "rt --scenes 200" "ant --iterations 10"; do
    for mapping in rr parts; do
        line="| ${app%% *} | $mapping |"
        base=""
        for w in "${WS[@]}"; do
            extra=()
            [[ $app == rt* ]] && extra=(--solvers $(( w > 4 ? w : 4 )))
            # shellcheck disable=SC2086
            read -r med lo hi < <("$BENCH" $app "${extra[@]}" --mapping "$mapping" --workers "$w" \
                --repeat "$R" --json 2>/dev/null | wall_stats)
            base=${base:-$med}
            line+=" $med ($lo-$hi) x$(awk -v b="$base" -v m="$med" 'BEGIN { printf "%.2f", b / m }') |"
            echo "  ${app%% *} $mapping W=$w: $med ms" >&2
        done
        echo "$line"
    done
done

for w in "${WS[@]}"; do
    echo
    echo "## W=$w: pipe depth 100, rr placement, 100000 messages; ns per message per stage"
    echo
    echo '```'
    "$BENCH" pipe --placement rr --messages 100000 --workers "$w" --repeat "$R" 2>/dev/null
    echo -n "rill, spin 500 us: "
    RILL_SPIN_US=500 "$BENCH" pipe --engine rill --placement rr --messages 100000 \
        --workers "$w" --repeat "$R" 2>/dev/null | tail -1
    echo '```'
    echo
    echo "## W=$w: ring of 100, 200000 hops, rill's parts placement; ns per hop"
    echo
    # One OS thread per ring task whatever W is: threads run at W = 1 only.
    engines=rill,tokio
    (( w == 1 )) && engines=all
    echo '```'
    "$BENCH" ring --placement parts --hops 200000 --engine "$engines" --workers "$w" \
        --repeat "$R" 2>/dev/null
    echo -n "rill, spin 500 us: "
    RILL_SPIN_US=500 "$BENCH" ring --engine rill --placement parts --hops 200000 \
        --workers "$w" --repeat "$R" 2>/dev/null | tail -1
    echo '```'
    echo
    echo "## W=$w: ring of 100, 100000 hops, rr placement (every hop crosses); ns per hop"
    echo
    echo '```'
    "$BENCH" ring --placement rr --hops 100000 --engine rill,tokio --workers "$w" \
        --repeat "$R" 2>/dev/null
    echo '```'
done

W=${WS[-1]}
echo
echo "## W=$W: sample mode's cost by rate (rill-bench ab, $R rounds)"
echo
echo '```'
"$BENCH" ab --monitor off,sample:250,sample,sample:4000 --rows pipe-rr,ring-parts \
    --workers "$W" --rounds "$R" 2>/dev/null | grep '^|'
echo '```'
