#!/usr/bin/env python3
"""Issue 38's rows, alternating run by run: every round runs each row once.

Usage: scripts/placement_rows.py [ROUNDS] [--loaded] [--profile]
                                  [--rows NAME,NAME...]

Runs target/release/rill-bench (build it first), reads `wall_ms` or
`ns_per_op` from each `--json` line, and prints one markdown table row per
program and mapping: median (min-max) over the rounds, and for rill the
messages that crossed workers (the JSON's `crossed`): their median, and
in how many runs any did. Every run must say
"verified": true, or the script stops. `--loaded` starts one busy loop per
core for the spell and stops them at the end. `--profile` adds each
application's second run under `--mapping profile:PATH` (the file written
by a first run before the rounds). `--rows` keeps the rows of the named
programs only (sieve, mc, wordcount, pipe, ring, des, rt, ant).

The rows of one program run one after another, and their order turns by
one row each round, so that no mapping always runs first: on a loaded host
the first run of a program in a round was up to 1.5x slower than the same
run in second place.
"""
import json, os, statistics, subprocess, sys

B = "target/release/rill-bench"
ROWS = [
    # (label, args, engine filter, field)
    ("sieve 2,000 primes, ms", "sieve --workers 2 --engine rill,tokio --mapping adaptive", None, "wall_ms"),
    ("sieve 2,000 primes, ms", "sieve --workers 2 --engine rill --mapping rr", None, "wall_ms"),
    ("sieve 2,000 primes, ms", "sieve --workers 2 --engine rill --mapping manual", None, "wall_ms"),
    ("sieve 2,000 primes, ms", "sieve --workers 2 --engine rill --mapping parts", None, "wall_ms"),
    ("MC 300,000 paths, ms", "mc --paths 300000 --workers 2 --mapping adaptive", None, "wall_ms"),
    ("MC 300,000 paths, ms", "mc --paths 300000 --workers 2 --mapping manual", None, "wall_ms"),
    ("MC 300,000 paths, ms", "mc --paths 300000 --workers 2 --mapping rr", None, "wall_ms"),
    ("word count, ms", "wordcount --workers 2 --engine rill,threads,tokio --mapping adaptive", None, "wall_ms"),
    ("word count, ms", "wordcount --workers 1 --engine rill --mapping adaptive", None, "wall_ms"),
    ("pipe d=100, ns/msg/stage", "pipe --depth 100 --workers 2 --engine rill --mapping adaptive", None, "ns_per_op"),
    ("pipe d=100, ns/msg/stage", "pipe --depth 100 --workers 2 --engine rill --placement parts", None, "ns_per_op"),
    ("ring 100, ns/hop", "ring --size 100 --workers 2 --engine rill --mapping adaptive", None, "ns_per_op"),
    ("ring 100, ns/hop", "ring --size 100 --workers 2 --engine rill --placement const", None, "ns_per_op"),
    ("DES, ms", "des --size 20000000 --workers 2 --mapping adaptive", None, "wall_ms"),
    ("DES, ms", "des --size 20000000 --workers 2 --mapping rr", None, "wall_ms"),
    ("DES, ms", "des --size 20000000 --workers 2 --mapping manual", None, "wall_ms"),
    ("RT, ms", "rt --workers 2 --mapping adaptive", None, "wall_ms"),
    ("RT, ms", "rt --workers 2 --mapping rr", None, "wall_ms"),
    ("RT, ms", "rt --workers 2 --mapping manual", None, "wall_ms"),
    ("ANT, ms", "ant --workers 2 --mapping adaptive", None, "wall_ms"),
    ("ANT, ms", "ant --workers 2 --mapping rr", None, "wall_ms"),
    ("ANT, ms", "ant --workers 2 --mapping manual", None, "wall_ms"),
]

# The profile-guided form: the file is written by one run before the
# rounds (`--mapping profile:PATH` writes it when missing), then loaded.
PROFILED = [
    ("sieve 2,000 primes, ms", "sieve --workers 2 --engine rill"),
    ("MC 300,000 paths, ms", "mc --paths 300000 --workers 2"),
    ("word count, ms", "wordcount --workers 2 --engine rill"),
    ("DES, ms", "des --size 20000000 --workers 2"),
    ("RT, ms", "rt --workers 2"),
    ("ANT, ms", "ant --workers 2"),
]


def key(rec, args):
    mapping = rec.get("mapping") or rec.get("placement") or "?"
    if mapping.startswith("profile"):
        mapping = "profile"
    if "--placement" in args:
        mapping = args.split("--placement ")[1].split()[0]
    return f'{rec.get("engine", "rill")}, {mapping}, {rec.get("workers", "?")}w'


def main():
    if "--help" in sys.argv or "-h" in sys.argv:
        print(__doc__.strip())
        return
    args_in = list(sys.argv[1:])
    keep = None
    if "--rows" in args_in:
        i = args_in.index("--rows")
        if i + 1 >= len(args_in):
            sys.exit("--rows needs a list of programs; see --help")
        keep = set(args_in[i + 1].split(","))
        del args_in[i:i + 2]
    known = ("--loaded", "--profile")
    unknown = [a for a in args_in if a.startswith("-") and a not in known]
    if unknown:
        sys.exit(f"unknown option {unknown[0]}; see --help")
    argv = [a for a in args_in if not a.startswith("--")]
    rounds = int(argv[0]) if argv else 7
    loops = []
    if "--loaded" in sys.argv:
        for _ in range(os.cpu_count() or 2):
            loops.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
    rows = list(ROWS)
    if "--profile" in sys.argv:
        for label, args in PROFILED:
            path = f"/tmp/rill-profile-{args.split()[0]}.map"
            if os.path.exists(path):
                os.remove(path)
            made = subprocess.run([B] + args.split() + ["--mapping", f"profile:{path}"], capture_output=True, text=True)
            if made.returncode != 0 or not os.path.exists(path):
                sys.exit(f"{args}: the profile run did not write {path}\n{made.stderr}")
            rows.append((label, f"{args} --mapping profile:{path}", None, "wall_ms"))
    if keep is not None:
        rows = [r for r in rows if r[1].split()[0] in keep]
        if not rows:
            sys.exit(f"--rows {','.join(sorted(keep))}: no such rows; see --help")
    groups = {}
    for r in rows:
        groups.setdefault(r[1].split()[0], []).append(r)
    results = {}
    crossed = {}
    order = []
    try:
        for r in range(rounds):
            print(f"round {r + 1}/{rounds}, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
            turned = []
            for g in groups.values():
                k = r % len(g)
                turned += g[k:] + g[:k]
            for label, args, _, field in turned:
                out = subprocess.run([B] + args.split() + ["--json"], capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"{args}: exit {out.returncode}\n{out.stderr}")
                for line in out.stdout.splitlines():
                    if not line.startswith("{"):
                        continue
                    rec = json.loads(line)
                    if rec.get("verified") is not True:
                        sys.exit(f"{args}: not verified: {line}")
                    k = (label, key(rec, args))
                    if k not in results:
                        results[k] = []
                        order.append(k)
                    results[k].append(rec[field])
                    if "crossed" in rec:
                        crossed.setdefault(k, []).append(rec["crossed"])
    finally:
        for p in loops:
            p.kill()
    print("| program | run | median (min-max) | messages crossed: median (runs with any) |")
    print("| --- | --- | --- | --- |")
    for k in order:
        v = results[k]
        c = crossed.get(k)
        where = f"{statistics.median(c):.0f} ({sum(1 for x in c if x)} of {len(c)})" if c else ""
        print(f"| {k[0]} | {k[1]} | {statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f}) | {where} |")


if __name__ == "__main__":
    main()
