#!/usr/bin/env python3
"""Local links of README.md and docs/*.md resolve (ctest docs_links).

A link [text](target) or <a href="target"> whose target is not a URL
(no scheme, not mailto:) must name an existing file or directory relative to
the linking file; its #anchor, when any, must be a heading of the target
(GitHub's slugs). Exit status 0, or 1 with one line per broken link.
"""
import pathlib
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*```")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    out = set()
    counts = {}
    in_fence = False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = counts.get(base, 0)
            counts[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def main():
    root = pathlib.Path(sys.argv[1])
    files = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    problems = []
    checked = 0
    for f in files:
        in_fence = False
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            line = re.sub(r"`[^`]*`", "", line)  # code spans hold no links
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # https:, mailto:
                checked += 1
                path, _, anchor = target.partition("#")
                dest = (f.parent / path).resolve() if path else f
                if not dest.exists():
                    problems.append(f"{f}:{n}: link to {target!r}: {path} does not exist")
                    continue
                if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    problems.append(f"{f}:{n}: link to {target!r}: no heading #{anchor} in {dest.name}")
    for p in problems:
        print(p)
    print(f"docs_links: {checked} local links in {len(files)} files, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
