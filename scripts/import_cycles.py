#!/usr/bin/env python3
"""Largest import circle of a crate: modules that reach each other through
`crate::`/`super::`/`self::` paths (use declarations and paths in code).

usage: scripts/import_cycles.py SRC_DIR [--all]

Prints the size of the largest strongly connected component of the module
graph and its members (with --all, every component of more than one module).
A module is a file: `a.rs` or `a/mod.rs` is `a`, `a/b.rs` is `a::b`; a path
names the longest module prefix that exists. Test modules inside a file
(`#[cfg(test)] mod tests`) count as their file.
"""
import os
import re
import sys


def modules(src):
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            mods["::".join(parts)] = os.path.join(root, f)
    return mods


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand(prefix, body):
    """Expand a `use` tree `{a, b::{c, d}}` into full paths."""
    out, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    paths = []
    for item in out:
        item = item.strip()
        if not item:
            continue
        m = re.match(r"^([\w:]*?)(?:::)?\{(.*)\}$", item, flags=re.S)
        if m:
            head = m.group(1)
            paths += expand(prefix + ([head] if head else []), m.group(2))
        else:
            paths.append("::".join(prefix + [item.split(" as ")[0].strip()]))
    return paths


def refs(text):
    text = strip_comments(text)
    found = []
    for m in re.finditer(r"\b(crate|super|self)((?:::\w+)*)::\{", text):
        start = m.end()
        depth, i = 1, start
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        head = [m.group(1)] + [p for p in m.group(2).split("::") if p]
        found += expand(head, text[start:i - 1])
    for m in re.finditer(r"\b(crate|super|self)((?:::\w+)+)", text):
        found.append(m.group(1) + m.group(2))
    return found


def resolve(path, here, mods, is_dir_mod):
    parts = path.split("::")
    base = here.split("::") if here else []
    if parts[0] == "crate":
        cur = []
        parts = parts[1:]
    elif parts[0] == "self":
        cur = list(base)
        parts = parts[1:]
    else:
        # `super` in module a::b (a/b.rs or a/b/mod.rs alike) is a.
        cur = list(base)
        while parts and parts[0] == "super":
            cur = cur[:-1]
            parts = parts[1:]
    best = None
    for i in range(len(parts) + 1):
        cand = "::".join(cur + parts[:i])
        if cand in mods:
            best = cand
    return best


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        print(__doc__)
        sys.exit(2)
    src = args[0]
    mods = modules(src)
    graph = {m: set() for m in mods}
    for m, path in mods.items():
        is_dir_mod = os.path.basename(path) in ("mod.rs", "lib.rs", "main.rs")
        with open(path) as fh:
            text = fh.read()
        for r in refs(text):
            t = resolve(r, m, mods, is_dir_mod)
            if t is not None and t != m and t != "":
                graph[m].add(t)
    # Tarjan's strongly connected components.
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    comps.sort(key=len, reverse=True)
    big = comps[0] if comps else []
    print(f"{src}: {len(mods)} modules, largest import circle {len(big) if len(big) > 1 else 0}")
    for c in comps:
        if len(c) > 1:
            print(f"  {len(c)}: {', '.join(c)}")
            if "--all" not in sys.argv:
                break


main()
