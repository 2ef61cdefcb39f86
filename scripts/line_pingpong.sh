#!/usr/bin/env bash
# Runs scripts/line_pingpong.c: ns per round trip of a cache line between
# cores 0 and 1, in its three layouts, three times each.
set -euo pipefail
cd "$(dirname "$0")"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -o "$out/pp" line_pingpong.c -lpthread
for _ in 1 2 3; do
  for m in 0 1 2; do "$out/pp" "$m" "${1:-2000000}"; done
done
