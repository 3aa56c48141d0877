#!/usr/bin/env python3
"""check-layers.py SRC_DIR LAYERS_FILE: the layering of src/ holds.

LAYERS_FILE (written by CMakeLists.txt's tlsfront_layer()) has one line per
library: "<name> <folder>: <layer names it links>". A file in <folder> may
include headers of its own folder and of the folders of the layers it links,
directly or through them; nothing else. Headers must not include each other
in a cycle. Prints each violation as file:line and exits 1 when there is one.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main(src, layers_file):
    folder_of, deps = {}, {}
    for line in open(layers_file):
        line = line.strip()
        if not line:
            continue
        head, _, rest = line.partition(":")
        name, folder = head.split()
        folder_of[name] = folder
        deps[name] = rest.split()

    def closure(name, seen=None):
        seen = set() if seen is None else seen
        for d in deps[name]:
            if d not in seen:
                seen.add(d)
                closure(d, seen)
        return seen

    allowed = {folder_of[n]: {folder_of[d] for d in closure(n)} | {folder_of[n]} for n in deps}
    errors = []
    graph = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith((".h", ".cc")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            folder = os.path.dirname(rel)
            edges = graph.setdefault(rel, [])
            for n, line in enumerate(open(path, encoding="utf-8"), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                edges.append(target)
                if folder == "":  # src/main.cc: the binary may use any layer
                    continue
                if folder not in allowed:
                    errors.append(f"{path}:{n}: folder {folder!r} is not a layer in {layers_file}")
                    break
                tfolder = os.path.dirname(target)
                if tfolder not in allowed[folder]:
                    errors.append(f"{path}:{n}: {folder}/ may not include {target} "
                                  f"({folder}/ depends on: {', '.join(sorted(allowed[folder] - {folder})) or 'nothing'})")

    # Header include cycles (depth-first search, iterative).
    state = {}
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(graph.get(start, [])))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                errors.append("include cycle: " + " -> ".join(cycle))
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(graph.get(nxt, []))))
                path.append(nxt)
    for e in errors:
        print(e)
    print(f"{len(graph)} files checked, {len(errors)} layering violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
