# Shared by the experiment scripts: where the binaries are, what the machine
# is, and a JSON-lines helper. Source it; do not run it.

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
TARGET="${CARGO_TARGET_DIR:-target}"
BENCH="$TARGET/release/rill-bench"

command -v python3 >/dev/null || { echo "python3 is needed to parse the JSON output" >&2; exit 2; }

build_release() {
    cargo build --release -q -p rill-examples "$@" >&2
}

machine() {
    local model
    model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
    echo "Machine: $(nproc) cores available ($(nproc --all) in all), ${model:-unknown CPU}; load average $(cut -d' ' -f1-3 /proc/loadavg)."
}
