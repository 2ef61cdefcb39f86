# Shared by the scripts: where the release rill-bench is, how to build it,
# and what the machine is. Source it; do not run it.

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
TARGET="${CARGO_TARGET_DIR:-target}"
BENCH="$TARGET/release/rill-bench"

build_release() {
    cargo build --release -q -p rill-examples "$@" >&2
}

machine() {
    local model
    model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
    echo "Machine: $(nproc) cores available ($(nproc --all) in all), ${model:-unknown CPU}; load average $(cut -d' ' -f1-3 /proc/loadavg)."
}
