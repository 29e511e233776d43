#!/usr/bin/env python3
"""Checks the layering of a Rust crate's src/ (by default the runtime's).

The layers are the crate's top-level modules, in the order lib.rs declares
them (`mod NAME;` lines, lowest first): the one place that order is stated.
Each module may import from its own layer and from the layers declared
before it, never from one declared after it. Paths are resolved through
folders and mod.rs: `crate::a::b::c` names the deepest module file it
reaches, `super::x` a sibling; comments are ignored.

Also counts the files that sit in an import cycle (any cycle fails).

usage: layers.py [SRC_DIR]   (default runtime/src)
Prints one line per violation and exits 1 if there is any; on a clean tree
prints the layer order and '0 files in cycles'.
"""
import os
import re
import sys


def usage_error(message):
    print(f"check-layers: {message}", file=sys.stderr)
    sys.exit(2)


def read_modules(src):
    """Module path tuple -> file, for every .rs file below src but lib.rs or main.rs."""
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)[:-3].split(os.sep)
            if rel in (['lib'], ['main']):
                continue
            if rel[-1] == 'mod':
                rel = rel[:-1]
            mods[tuple(rel)] = os.path.join(root, f)
    return mods


def read_layers(lib_rs):
    """The top-level modules in lib.rs's declaration order."""
    text = strip_comments(open(lib_rs).read())
    return re.findall(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;', text, re.M)


def strip_comments(text):
    return re.sub(r'//[^\n]*', '', text)


def references(module, text):
    """Every module path the text names through `crate::` or `super::`."""
    refs = []
    for head, rest in re.findall(r'\b(crate|super)((?:::\w+)+(?:::\{[^}]*\})?)', text):
        base = [] if head == 'crate' else list(module[:-1])
        brace = re.search(r'::\{([^}]*)\}$', rest)
        if brace:
            prefix = base + [p for p in rest[:brace.start()].split('::') if p]
            for item in brace.group(1).split(','):
                item = item.strip()
                if item == 'self':
                    refs.append(prefix)
                elif item and item != '*':
                    refs.append(prefix + [p for p in item.split('::') if p])
        else:
            refs.append(base + [p for p in rest.split('::') if p])
    return refs


def resolve(mods, parts):
    for k in range(len(parts), 0, -1):
        if tuple(parts[:k]) in mods:
            return tuple(parts[:k])
    return None


def sccs(nodes, edges):
    """Tarjan's strongly connected components with more than one node."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
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
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    args = sys.argv[1:]
    if args and args[0] in ('-h', '--help'):
        print(__doc__.strip())
        return 0
    if len(args) > 1:
        usage_error("at most one argument, the src/ folder (see --help)")
    src = args[0] if args else 'runtime/src'
    lib_rs = os.path.join(src, 'lib.rs')
    if not os.path.isfile(lib_rs):
        usage_error(f"no lib.rs in {src}")
    mods = read_modules(src)
    layers = read_layers(lib_rs)
    rank = {name: i for i, name in enumerate(layers)}
    violations = []
    for m in sorted(mods):
        if m[0] not in rank:
            violations.append(f"{mods[m]}: top-level module `{m[0]}` is not declared in {lib_rs}")

    edges = {m: set() for m in mods}
    for m, path in sorted(mods.items()):
        for ref in references(m, strip_comments(open(path).read())):
            target = resolve(mods, ref)
            # A module's own ancestors (its mod.rs files) are not imports of it.
            if target and target != m and m[:len(target)] != target:
                edges[m].add(target)
        for target in sorted(edges[m]):
            if m[0] in rank and target[0] in rank and rank[target[0]] > rank[m[0]]:
                violations.append(
                    f"{path}: layer `{m[0]}` imports `{'::'.join(target)}` from layer "
                    f"`{target[0]}`, which lib.rs declares above it")

    cycles = sccs(mods, edges)
    for comp in cycles:
        names = ' '.join(sorted('::'.join(f) for f in comp))
        violations.append(f"{src}: import cycle among {len(comp)} files: {names}")
    in_cycles = sum(len(c) for c in cycles)

    for line in violations:
        print(line)
    print(f"layers, lowest first: {' < '.join(layers)}; {len(mods)} files; "
          f"{in_cycles} files in cycles; {len(violations)} violations")
    return 1 if violations else 0


if __name__ == '__main__':
    sys.exit(main())
