#!/usr/bin/env python3
"""callgrind-allocs.py [--top K] DIR

Allocations per request (or handshake) of a `scripts/callgrind.sh --keep DIR`
run: the calls into an allocator's entry points counted by callgrind in the
run with the larger count minus those in the run with the smaller one,
divided by the difference of the counts (so start-up and the connections'
handshakes cancel out, as for the instruction figure).

An allocation is a call of malloc, calloc, realloc, operator new or new[],
CRYPTO_malloc / CRYPTO_zalloc / CRYPTO_realloc (OpenSSL), an nghttp2_mem
function of Nghttp2Memory (nghttp2's), or mi_* entry points, made from a
function that is not itself part of an allocator (so operator new calling
malloc counts once). Frees are not counted. Works for any of the allocators
the binary may have linked (glibc, mimalloc, jemalloc): their own internal
calls are left out by name.

--top K lists the K callers that allocate most per unit.
"""
import argparse
import collections
import pathlib
import re
import sys

ENTRY = re.compile(
    r'^(malloc|calloc|realloc|posix_memalign|aligned_alloc|operator new(\[\])?\(.*|'
    r'CRYPTO_(malloc|zalloc|realloc|clear_realloc|memdup|strdup|strndup)|'
    r'mi_(malloc|calloc|realloc|new|zalloc|new_n|heap_malloc)|'
    r'tlsfront::Nghttp2Memory::Nghttp2Memory\(\)::\{lambda\((unsigned long|void\*, unsigned long), .*)$')
INSIDE = re.compile(
    r'^(operator new|CRYPTO_|OPENSSL_|mi_|_mi_|je_|malloc|calloc|realloc|posix_memalign|aligned_alloc|'
    r'tlsfront::Nghttp2Memory|tlsfront::\(anonymous namespace\)::heap_)')


def calls(path):
    """(caller, callee) -> calls into an allocator entry from outside one."""
    names = {}

    def name(token):
        m = re.match(r'\((\d+)\)(?: (.*))?$', token)
        if not m:
            return token
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), '?')

    fn = cfn = None
    out = collections.Counter()
    with open(path, errors='replace') as f:
        for line in f:
            if line.startswith('fn='):
                fn = name(line[3:].rstrip('\n'))
            elif line.startswith('cfn='):
                cfn = name(line[4:].rstrip('\n'))
            elif line.startswith('calls='):
                if cfn and ENTRY.match(cfn) and not INSIDE.match(fn or ''):
                    out[(fn, cfn)] += int(line[6:].split()[0])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--top', type=int, default=0)
    ap.add_argument('dir')
    a = ap.parse_args()
    runs = {}
    for p in pathlib.Path(a.dir).glob('cg.*.*'):
        runs.setdefault(p.name.split('.')[1], []).append((int(p.name.split('.')[2]), p))
    if not runs:
        sys.exit(f'no callgrind.out files (cg.B.COUNT) in {a.dir}: run scripts/callgrind.sh --keep {a.dir}')
    for b, files in sorted(runs.items()):
        files.sort()
        (lo_n, lo), (hi_n, hi) = files[0], files[-1]
        if hi_n == lo_n:
            sys.exit(f'{a.dir}: binary {b} has one count only')
        lo_c, hi_c = calls(lo), calls(hi)
        per = collections.Counter({k: (hi_c[k] - lo_c.get(k, 0)) / (hi_n - lo_n) for k in hi_c})
        print(f'binary {b}: allocations_per_unit={sum(per.values()):.2f} ({lo_n} -> {hi_n})')
        for (caller, callee), n in per.most_common(a.top):
            print(f'  {n:6.2f}  {caller[:100]} -> {callee[:40]}')


if __name__ == '__main__':
    main()
