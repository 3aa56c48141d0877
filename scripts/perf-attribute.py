#!/usr/bin/env python3
"""perf-attribute.py [--per N] [--top K] [--by dso|sym] PERF.DATA [PERF.DATA ...]

Flat CPU profile of `perf record` files (scripts/bench.sh BENCH_PERF=DIR
writes them), side by side, one column per file. Debian's OpenSSL has no debug
symbols, so perf shows its internal functions as bare addresses; each such
address is attributed to the nearest exported function at or below it in the
library's dynamic symbol table (`nm -D`) and shown as `~name`. That name is a
neighbourhood, not a proof: an internal function (the P-256 assembly, a
provider's static helper) is listed under the export that precedes it in the
file.

--per N (one N per file, comma-separated) divides each file's CPU time by N
(handshakes, requests) and prints microseconds per unit instead of shares.
"""
import argparse
import bisect
import collections
import re
import subprocess
import sys

_symtabs = {}


def exported(dso_path):
    """Sorted (address, name) of the defined dynamic symbols of DSO_PATH."""
    if dso_path not in _symtabs:
        table = []
        try:
            out = subprocess.run(["nm", "-D", "--defined-only", dso_path], capture_output=True,
                                 text=True, check=False).stdout
        except OSError:
            out = ""
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TtWi":
                table.append((int(parts[0], 16), parts[2].split("@")[0]))
        table.sort()
        _symtabs[dso_path] = table
    return _symtabs[dso_path]


def dso_paths(data):
    """dso short name -> path, from the file's mmap records."""
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "dso", "-v", "-g", "none"],
                         capture_output=True, text=True, check=False).stdout
    paths = {}
    for m in re.finditer(r"(/\S+\.so[.\d]*)", out):
        paths.setdefault(m.group(1).rsplit("/", 1)[1], m.group(1))
    return paths


def profile(data):
    """(total ns, {(dso, symbol): ns}) of one perf.data file."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--stdio", "-g", "none",
                          "--sort", "dso,sym", "-F", "period,dso,sym", "--percent-limit", "0"],
                         capture_output=True, text=True, check=False).stdout
    paths = dso_paths(data)
    found = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+(\S+)\s+\[(.)\]\s+(.*\S)", line)
        if not m:
            continue
        period, dso, sym = int(m.group(1)), m.group(2), m.group(4)
        if sym.startswith("0x") and dso in paths:
            table = exported(paths[dso])
            i = bisect.bisect_right(table, (int(sym, 16), "\xff")) - 1
            if i >= 0:
                sym = "~" + table[i][1]
        found[(dso, sym)] += period
    return sum(found.values()), found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--per", help="comma-separated unit counts, one per file")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--by", choices=["dso", "sym"], default="sym")
    args = ap.parse_args()
    per = [float(x) for x in args.per.split(",")] if args.per else None
    if per and len(per) != len(args.files):
        sys.exit("--per needs one count per file")

    columns = []
    for f in args.files:
        total, found = profile(f)
        if args.by == "dso":
            merged = collections.Counter()
            for (dso, _), v in found.items():
                merged[(dso, "")] += v
            found = merged
        columns.append((total, found))

    keys = collections.Counter()
    for total, found in columns:
        for k, v in found.items():
            keys[k] += v / total if total else 0
    names = [f.rsplit("/", 1)[-1].removesuffix(".data") for f in args.files]
    unit = "us/unit" if per else "% of CPU"
    print("| dso | symbol | " + " | ".join(f"{n} ({unit})" for n in names) + " |")
    print("|---|---|" + "---:|" * len(names))
    row_total = ["total"]
    for i, (total, _) in enumerate(columns):
        row_total.append(f"{total / 1e3 / per[i]:.1f}" if per else "100.0")
    print("| | " + " | ".join(row_total) + " |")
    for (dso, sym), _ in keys.most_common(args.top):
        cells = []
        for i, (total, found) in enumerate(columns):
            v = found.get((dso, sym), 0)
            cells.append(f"{v / 1e3 / per[i]:.1f}" if per else f"{100.0 * v / total:.1f}" if total else "-")
        print(f"| {dso} | {sym} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
