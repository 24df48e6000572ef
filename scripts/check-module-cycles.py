#!/usr/bin/env python3
"""Fails when the modules of a crate import each other in a circle.

    scripts/check-module-cycles.py [SRC_DIR]      (default: crates/service/src)

Reads every `.rs` file under SRC_DIR as one module (`lib.rs` the crate root, `a/mod.rs` the
module `a`, `a/b.rs` the module `a::b`) and collects the paths it names: `crate::…`,
`super::…`, `self::…`, and a bare `child::…` of one of its own child modules, in `use` lines
(braces expanded) and in code. A path points at the longest module it starts with. Two graphs
are checked, and both must be free of circles:

  - modules: `a::b` imports `c` (a file imports a file);
  - areas:   the first segment of a module (`content`, `mail`, …), so that an area never
             reaches one that reaches it back through other files.

Not counted: the crate root (`lib.rs` holds the shared context and wires the areas together;
every module uses `crate::Ctx`), a module naming itself, comments, and `#[cfg(test)]` modules
(nothing imports tests). Exit status 1 lists every circle with the lines that make it.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self|" + IDENT + r")(?:::" + IDENT + r")+)")
USE = re.compile(r"\buse\s+([^;]*);", re.S)


def module_of(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def strip(text):
    """The code of a file without comments, string literals and its test modules."""
    m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s", text)
    if m:
        text = text[: m.start()]
    text = re.sub(r"/\*.*?\*/", lambda x: "\n" * x.group(0).count("\n"), text, flags=re.S)
    text = re.sub(
        r'(?<![A-Za-z0-9_])r(#*)"(?:.|\n)*?"\1', lambda x: "\n" * x.group(0).count("\n"), text
    )
    text = re.sub(r'"(?:\\.|[^"\\])*"', lambda x: '"' + "\n" * x.group(0).count("\n") + '"', text)
    return re.sub(r"//[^\n]*", "", text)


def expand(tree):
    """`a::{b, c::{d}}` as [`a::b`, `a::c::d`]."""
    tree = re.sub(r"\s+", "", tree)
    i = tree.find("{")
    if i < 0:
        return [tree]
    depth, j = 0, i
    while j < len(tree):
        if tree[j] == "{":
            depth += 1
        elif tree[j] == "}":
            depth -= 1
            if depth == 0:
                break
        j += 1
    prefix, inner = tree[:i], tree[i + 1 : j]
    items, depth, start = [], 0, 0
    for k, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(inner[start:k])
            start = k + 1
    items.append(inner[start:])
    return [p for item in items if item for p in expand(prefix + item)]


def resolve(path, here, modules):
    segs = [s.split(" as ")[0] for s in path.split("::")]
    if segs[0] == "crate":
        base, segs = (), segs[1:]
    elif segs[0] in ("self", "super"):
        base = here
        if segs[0] == "self":
            segs = segs[1:]
        while segs and segs[0] == "super":
            base = base[:-1]
            segs = segs[1:]
    elif here + (segs[0],) in modules:
        base = here
    else:
        return None
    path = base + tuple(segs)
    for n in range(len(path), len(base) - 1, -1):
        if path[:n] in modules:
            return path[:n]
    return base


def cycles(edges):
    """The strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    nodes = set(edges) | {b for bs in edges.values() for b in bs}

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "crates/service/src"
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(root, name)
                files[module_of(os.path.relpath(path, src))] = path
    modules = set(files)
    edges, where = {}, {}
    for here, path in files.items():
        if here == ():
            continue
        with open(path, encoding="utf-8") as f:
            code = strip(f.read())
        found = []
        for m in USE.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            found += [(p, line) for p in expand(m.group(1))]
        code = USE.sub(lambda x: "\n" * x.group(0).count("\n"), code)
        for m in PATH.finditer(code):
            found.append((m.group(1), code.count("\n", 0, m.start()) + 1))
        for p, line in found:
            t = resolve(p, here, modules)
            if t is None or t == () or t == here:
                continue
            edges.setdefault(here, set()).add(t)
            where.setdefault((here, t), f"{path}:{line}")

    name = lambda m: "::".join(m) or "crate"
    failed = False
    for comp in cycles(edges):
        failed = True
        print(f"circle of modules: {', '.join(name(m) for m in comp)}")
        for a in comp:
            for b in sorted(edges.get(a, ())):
                if b in comp:
                    print(f"  {name(a)} -> {name(b)}  ({where[(a, b)]})")
    area_edges, area_where = {}, {}
    for (a, b), w in where.items():
        if a[0] != b[0]:
            area_edges.setdefault(a[0], set()).add(b[0])
            area_where.setdefault((a[0], b[0]), []).append(w)
    for comp in cycles(area_edges):
        failed = True
        print(f"circle of areas: {', '.join(comp)}")
        for a in comp:
            for b in sorted(area_edges.get(a, ())):
                if b in comp:
                    print(f"  {a} -> {b}  ({', '.join(area_where[(a, b)][:3])})")
    if failed:
        print("Modules import each other in a circle: see docs/architecture.md,")
        print('"Areas of the service layer", for which area may use which.')
        return 1
    areas = sorted({m[0] for m in modules if m})
    print(f"{src}: {len(modules) - 1} modules in {len(areas)} areas, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
