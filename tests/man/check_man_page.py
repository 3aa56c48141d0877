#!/usr/bin/env python3
"""check_man_page.py TLSFRONT MAN_PAGE [OTHER_PAGE...]: tlsfront(8) matches the binary.

Every subcommand and every option that `tlsfront --help` and each
subcommand's --help print is in the man page, and every option the man page
gives for tlsfront or a subcommand (in SYNOPSIS, OPTIONS and SUBCOMMANDS) is
one the binary prints; `man --warnings` renders it, and each OTHER_PAGE
(tlsfront.toml(5)), without a warning.
"""
import os
import re
import subprocess
import sys

binary, page, others = sys.argv[1], sys.argv[2], sys.argv[3:]
failures = []

# Options as the help and the page write them: -c, --pid-file (not "--json |").
OPTION = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")


def help_text(*args):
    r = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        failures.append(f"tlsfront {' '.join(args)} --help exited {r.returncode}: {r.stderr}")
    return r.stdout


main_help = help_text()
# "Usage: tlsfront --config ..." then "       tlsfront logstats ...": a word
# after "tlsfront " that is no option is a subcommand.
subcommands = sorted(set(re.findall(r"^(?:Usage:)?\s+tlsfront ([a-z][a-z-]+)", main_help, re.M)))
if len(subcommands) < 3:
    failures.append(f"found only {subcommands} as subcommands in tlsfront --help:\n{main_help}")
helps = {"": main_help}
for sub in subcommands:
    helps[sub] = help_text(sub)

# The page as a reader sees it: no hyphenation, no justification, long lines.
env = dict(os.environ, MANWIDTH="250", LC_ALL="C.UTF-8")
render = subprocess.run(["man", "--no-hyphenation", "--no-justification", "-l", page],
                        capture_output=True, text=True, env=env, timeout=60)
if render.returncode != 0:
    failures.append(f"man -l {page} failed: {render.stderr}")
text = render.stdout.replace("\u2010", "-").replace("\u2212", "-")
for p in [page, *others]:
    w = subprocess.run(["man", "--warnings", "-l", p], capture_output=True, text=True, env=env, timeout=60)
    if w.returncode != 0 or w.stderr.strip():
        failures.append(f"man --warnings -l {p} (exit {w.returncode}):\n{w.stderr}")


def section(name, following):
    m = re.search(rf"^{name}\n(.*?)^(?:{following})\n", text, re.M | re.S)
    return m.group(1) if m else ""


page_options = set(OPTION.findall(text))
for sub, h in helps.items():
    where = f"tlsfront {sub} --help" if sub else "tlsfront --help"
    # Lines of options (and the usage), not the prose of a description.
    for opt in sorted(set(OPTION.findall(h))):
        if opt not in page_options:
            failures.append(f"{where} prints {opt}, which the man page does not document")
for sub in subcommands:
    if not re.search(rf"^\s*tlsfront {re.escape(sub)}\b", section("SYNOPSIS", "DESCRIPTION"), re.M):
        failures.append(f"subcommand {sub} is not in the man page's SYNOPSIS")
    if not re.search(rf"^   {re.escape(sub)}$", text, re.M):
        failures.append(f"subcommand {sub} has no section of its own in the man page's SUBCOMMANDS")

# The reverse: what the page offers as tlsfront's options must exist.
known = set()
for h in helps.values():
    known |= set(OPTION.findall(h))
offered = section("SYNOPSIS", "DESCRIPTION") + section("OPTIONS", "SUBCOMMANDS") + section("SUBCOMMANDS", "SIGNALS")
if not offered.strip():
    failures.append("the man page has no SYNOPSIS, OPTIONS or SUBCOMMANDS section")
for opt in sorted(set(OPTION.findall(offered)) - known):
    failures.append(f"the man page documents {opt}, which no --help of tlsfront prints")
for name in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SUBCOMMANDS", "SIGNALS", "FILES", "EXIT STATUS"):
    if not re.search(rf"^{name}$", text, re.M):
        failures.append(f"the man page has no {name} section")

for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print(f"man page ok: {len(subcommands)} subcommands ({', '.join(subcommands)}), "
      f"{len(known)} options checked; {len(others)} other page(s) without a warning")
