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

# The arguments of an A/B script (ab.sh, monitor_ab.sh): ROUNDS, a positive
# integer, then one or more NAME=PATH builds, each an executable. Otherwise
# prints the script's usage (its header comment, lines 2-10) or what is
# wrong, and exits 2. Call as: ab_args "$0" "$@"
ab_args() {
    local script=$1 arg
    shift
    if [[ $# -lt 2 || ! $1 =~ ^[1-9][0-9]*$ ]]; then
        sed -n '2,10p' "$script" >&2
        exit 2
    fi
    shift
    for arg in "$@"; do
        if [[ $arg != *=* || ! -x ${arg#*=} || -d ${arg#*=} ]]; then
            echo "${arg%%=*}: ${arg#*=} is not an executable (want NAME=PATH)" >&2
            exit 2
        fi
    done
}
