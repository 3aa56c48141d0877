#!/usr/bin/env python3
"""The configuration reference against the loader (ctest config_reference).

1. Every key the loader accepts is documented in docs/configuration.md, and
   every key documented there is accepted. The loader's keys come from
   tlsfront_config_keys (config::accepted_keys: the keys each table's
   unknown-key check lets through), run on tests/docs/every_table.toml and
   tls_shorthand.toml, which hold every table. The documented keys are:
   - each table heading, "## [tls.session_cache]" or "## [[listen]]"
     (the table is itself a key of its parent), "## Top-level keys" for the
     root;
   - the first cell of each row of a table whose header row starts with
     "| key |": backquoted names relative to the heading's table
     ("`size`", "`return.status`"), several separated by commas.
2. Every ```toml example in README.md and docs/*.md parses (tomllib), uses
   accepted keys only (the inside of header `set`/`add` maps, which name
   header fields, is not checked), and loads: completed into a whole
   configuration (a listener, a certificate, a catch-all route and a stub
   [[upstream]] for each name its routes use, where it has none) and
   validated by the loader itself (tlsfront_config_keys: every type, range
   and cross-reference; the files it names are not opened, as they are
   only by `tlsfront --test`).
   With --tlsfront and --pki, each of those then passes `tlsfront --test`,
   which opens the files: the files an example names stand for the
   operator's own, so each is replaced by one of the test PKI's (a
   certificate and key of the same kind; the completion's certificate is
   the localhost one), by a certificate the test PKI's intermediate issues
   for a [[certificate]]'s `names`, or made as the docs say (a Redis
   password, a 32-byte wrap key), the access log's directory is a temporary one, and the test
   PKI's root is added as trusted_ca (its chains end at a private root). An
   example naming a file with no stand-in here is not run, and is listed as
   checked by the loader only.
3. The default documented for a key (the third cell of its row, when it
   starts with a TOML value: `"30s"`, 511, true) is the one
   conf/tlsfront.toml documents on its "# key = default" line, which the unit
   test ExampleConfig.DocumentedDefaultsAreTheDefaults checks against the
   loader (keys without such a line, or documented as "none" or "required",
   are not compared).

Exit status 0, or 1 with one line per problem.
"""
import argparse
import copy
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import tomllib

HEADING = re.compile(r"^(#{2,4})\s+(.*?)\s*$")
TABLE_IN_HEADING = re.compile(r"^\[\[?([a-z0-9_.]+)\]\]?")
BACKQUOTED = re.compile(r"`([a-z0-9_.]+)`")
FREE_FORM = ("set", "add")  # header rules: { "Header-Name" = "value" }


def loader_keys(binary, source_dir):
    files = [source_dir / "tests/docs/every_table.toml", source_dir / "tests/docs/tls_shorthand.toml"]
    out = subprocess.run([binary, *map(str, files)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("config_reference: tlsfront_config_keys failed: " + out.stderr.strip())
    return set(out.stdout.split())


def key_rows(doc):
    """(key path, line number, cells) of each key-table row of docs/configuration.md."""
    rows = []
    headings = {}
    table = None  # None: not in a documented table yet
    in_key_table = False
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        m = HEADING.match(line)
        if m:
            in_key_table = False
            title = m.group(2)
            if title == "Top-level keys":
                table = ""
            else:
                t = TABLE_IN_HEADING.match(title)
                if t:
                    table = t.group(1)
                    headings.setdefault(table, n)
                elif len(m.group(1)) == 2:
                    table = None  # a section that documents no table
            continue
        if line.startswith("| key |"):
            in_key_table = True
            continue
        if not line.startswith("|"):
            in_key_table = False
            continue
        if not in_key_table or line.startswith("|---"):
            continue
        if table is None:
            print(f"{doc}:{n}: a key table outside a table's section")
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for name in BACKQUOTED.findall(cells[0]):
            rows.append((f"{table}.{name}" if table else name, n, cells))
    return rows, headings


def documented_keys(doc):
    """{key path: line number} of docs/configuration.md: table headings and key rows."""
    rows, headings = key_rows(doc)
    keys = dict(headings)
    for key, n, _ in rows:
        keys.setdefault(key, n)
    return keys


def toml_literal(text):
    """The TOML value `text` starts with (`"30s"`, 511, true, [...]), or None."""
    m = re.match(r"^`([^`]*)`", text)
    candidates = [m.group(1)] if m else [text.split(" ")[0]] if text else []
    for c in candidates:
        try:
            return tomllib.loads("v = " + c)["v"]
        except tomllib.TOMLDecodeError:
            return None
    return None


def example_defaults(conf):
    """{key path: value} of the "# key = default" lines of conf/tlsfront.toml,
    outside its commented-out example tables (as ExampleConfig reads them)."""
    out = {}
    table = ""
    in_example = False
    for line in conf.read_text().splitlines():
        if line.startswith("# [["):
            in_example = True
        if not line.startswith("#"):
            in_example = False
        m = re.match(r"^\[\[?([a-z0-9_.]+)\]\]?\s*(#.*)?$", line)
        if m:
            table = m.group(1)
            continue
        m = re.match(r"^# ([a-z_]+) = (.*)$", line)
        if m and not in_example:
            try:
                out[f"{table}.{m.group(1)}" if table else m.group(1)] = tomllib.loads("v = " + m.group(2))["v"]
            except tomllib.TOMLDecodeError:
                pass
    return out


def check_defaults(doc, conf):
    problems = []
    shipped = example_defaults(conf)
    rows, _ = key_rows(doc)
    for key, n, cells in rows:
        if key not in shipped or len(cells) < 3:
            continue
        documented = toml_literal(cells[2])
        if documented is not None and documented != shipped[key]:
            problems.append(f"{doc}:{n}: documents the default of {key!r} as {documented!r}; "
                            f"{conf.name} (checked against the loader) says {shipped[key]!r}")
    return problems


def example_key_paths(value, prefix):
    """Dotted paths (no indices) of every key in a parsed TOML value."""
    if isinstance(value, list):
        for element in value:
            if isinstance(element, dict):
                yield from example_key_paths(element, prefix)
        return
    if not isinstance(value, dict):
        return
    for key, child in value.items():
        path = f"{prefix}.{key}" if prefix else key
        yield path
        if key in FREE_FORM:
            continue
        yield from example_key_paths(child, path)


STUB_SERVERS = ["127.0.0.1:8080"]


def completed(fragment):
    """`fragment` with what a whole configuration needs and it lacks."""
    cfg = copy.deepcopy(fragment)
    cfg.setdefault("listen", [{"address": "127.0.0.1:8443"}])
    tls = cfg.setdefault("tls", {})
    if "certificate" not in cfg and "certificate" not in tls:
        tls["certificate"] = "example.pem"
        tls["key"] = "example.key"
    cfg.setdefault("route", [{"path_prefix": "/", "upstream": "app"}])
    upstreams = cfg.setdefault("upstream", [])
    names = {u.get("name") for u in upstreams}
    used = [r["upstream"] for r in cfg["route"] if "upstream" in r]
    used += [l["acme_upstream"] for l in cfg["listen"] if "acme_upstream" in l]
    for name in used:
        if name not in names:
            upstreams.append({"name": name, "servers": STUB_SERVERS})
            names.add(name)
    return cfg


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def toml_key(k):
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def to_toml(cfg):
    out = [f"{toml_key(k)} = {toml_value(v)}" for k, v in cfg.items()
           if not isinstance(v, dict) and not (isinstance(v, list) and v and isinstance(v[0], dict))]
    for k, v in cfg.items():
        if isinstance(v, dict):
            out.append(f"[{toml_key(k)}]")
            out += [f"{toml_key(kk)} = {toml_value(vv)}" for kk, vv in v.items()]
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for table in v:
                out.append(f"[[{toml_key(k)}]]")
                out += [f"{toml_key(kk)} = {toml_value(vv)}" for kk, vv in table.items()]
    return "\n".join(out) + "\n"


def loads_in_loader(binary, cfg):
    """None, or the loader's error for the configuration `cfg`."""
    with tempfile.NamedTemporaryFile("w", suffix=".toml", prefix="example-") as f:
        f.write(to_toml(cfg))
        f.flush()
        out = subprocess.run([binary, f.name], capture_output=True, text=True)
    return None if out.returncode == 0 else out.stderr.strip().replace(f.name, "example")


# The files the examples name, by the test PKI file that stands for each.
PKI_STAND_INS = {
    "/tmp/pki/localhost.chain.pem": "localhost.chain.pem",  # README: scripts/gen-test-pki.sh's names
    "/tmp/pki/localhost.key": "localhost.key",
    "/tmp/pki/root.pem": "root.pem",
    "example.pem": "localhost.chain.pem",  # completed()'s
    "example.key": "localhost.key",
    "/etc/tlsfront/site.pem": "localhost.chain.pem",
    "/etc/tlsfront/site.key": "localhost.key",
    "/etc/tlsfront/api.ecdsa.pem": "localhost.chain.pem",
    "/etc/tlsfront/api.ecdsa.key": "localhost.key",
    "/etc/tlsfront/api.rsa.pem": "rsa.chain.pem",
    "/etc/tlsfront/api.rsa.key": "rsa.key",
    "/etc/tlsfront/internal-ca.pem": "root.pem",
}
# Made in the temporary directory, as the docs say to make them.
SECRET_STAND_INS = {
    "/etc/tlsfront/redis.pass": b"example-password\n",
    "/etc/tlsfront/stek-wrap.key": bytes(range(32)),  # head -c 32 /dev/urandom
}
# Directories the package and the unit make (LogsDirectory, StateDirectory).
DIR_STAND_INS = ("/var/log/tlsfront/", "/var/lib/tlsfront/")


def with_stand_ins(value, pki, tmp, missing):
    """`value` with every file path replaced by its stand-in; paths that have
    none are added to `missing`."""
    if isinstance(value, dict):
        return {k: with_stand_ins(v, pki, tmp, missing) for k, v in value.items()}
    if isinstance(value, list):
        return [with_stand_ins(v, pki, tmp, missing) for v in value]
    if not isinstance(value, str) or value.startswith(str(tmp)):  # made here already
        return value
    if value in PKI_STAND_INS:
        return str(pki / PKI_STAND_INS[value])
    if value in SECRET_STAND_INS:
        path = tmp / pathlib.Path(value).name
        path.write_bytes(SECRET_STAND_INS[value])
        path.chmod(0o600)
        return str(path)
    for d in DIR_STAND_INS:
        if value.startswith(d):
            path = tmp / value.lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            return str(path)
    if value.startswith("/etc/") or value.endswith((".pem", ".key")):
        missing.append(value)
    return value


def issue_for_names(pki, tmp, table, n):
    """Points a [[certificate]] table with `names` at a new ECDSA certificate
    for those names, issued by the test PKI's intermediate."""
    key, csr, pem = (tmp / f"names{n}.{ext}" for ext in ("key", "csr", "pem"))
    san = tmp / f"names{n}.ext"
    san.write_text("subjectAltName=" + ",".join("DNS:" + name for name in table["names"]) + "\n")
    for cmd in (["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", key, "-subj", "/CN=" + table["names"][0], "-out", csr],
                ["openssl", "x509", "-req", "-in", csr, "-CA", pki / "intermediate.pem", "-CAkey",
                 pki / "intermediate.key", "-days", "2", "-extfile", san, "-out", pem]):
        subprocess.run(list(map(str, cmd)), check=True, capture_output=True)
    pem.write_text(pem.read_text() + (pki / "intermediate.pem").read_text())
    table["cert"], table["key"] = str(pem), str(key)


def passes_test(tlsfront, pki, cfg):
    """None, "" (not run: a file without a stand-in, named in `skipped`), or
    `tlsfront --test`'s error for the configuration `cfg` with stand-ins."""
    with tempfile.TemporaryDirectory(prefix="example-") as d:
        tmp = pathlib.Path(d)
        missing = []
        for n, table in enumerate(cfg.get("certificate", [])):
            if table.get("names"):
                issue_for_names(pki, tmp, table, n)
        cfg = with_stand_ins(cfg, pki, tmp, missing)
        if missing:
            return "", missing
        cfg["tls"].setdefault("trusted_ca", str(pki / "root.pem"))
        path = tmp / "tlsfront.toml"
        path.write_text(to_toml(cfg))
        out = subprocess.run([tlsfront, "--test", "--config", str(path)], capture_output=True, text=True)
        if out.returncode == 0:
            return None, []
        lines = [l for l in out.stderr.splitlines() if "test failed" not in l and "warning" not in l]
        return (lines[-1] if lines else out.stderr.strip()).replace(d, "TMP"), []


def check_examples(files, accepted, binary, tlsfront=None, pki=None, report=None):
    problems = []
    for f in files:
        lines = f.read_text().splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() == "```toml":
                start = i + 1
                j = start
                while j < len(lines) and lines[j].strip() != "```":
                    j += 1
                block = "\n".join(lines[start:j])
                try:
                    parsed = tomllib.loads(block)
                except tomllib.TOMLDecodeError as e:
                    problems.append(f"{f}:{start}: example is not valid TOML: {e}")
                else:
                    unknown = [p for p in example_key_paths(parsed, "") if p not in accepted]
                    for path in unknown:
                        problems.append(f"{f}:{start}: example uses {path!r}, which the loader does not accept")
                    if not unknown:
                        error = loads_in_loader(binary, completed(parsed))
                        if error:
                            problems.append(f"{f}:{start}: example does not load: {error}")
                        elif tlsfront:
                            error, missing = passes_test(tlsfront, pki, completed(parsed))
                            if error:
                                problems.append(f"{f}:{start}: example fails tlsfront --test: {error}")
                            elif missing:
                                report.append(f"{f}:{start}: loaded only (no stand-in for {', '.join(missing)})")
                            else:
                                report.append(f"{f}:{start}: passes tlsfront --test")
                i = j
            i += 1
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys-binary", required=True)
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    parser.add_argument("--tlsfront", help="the tlsfront binary: run each example through --test")
    parser.add_argument("--pki", type=pathlib.Path, help="the test PKI (scripts/gen-test-pki.sh), with --tlsfront")
    args = parser.parse_args()
    src = args.source_dir
    doc = src / "docs/configuration.md"

    accepted = loader_keys(args.keys_binary, src)
    documented = documented_keys(doc)
    problems = []
    for key in sorted(accepted - documented.keys()):
        problems.append(f"{doc}: key {key!r} is accepted by the loader but not documented "
                        "(add a row to its table's \"| key |\" table)")
    for key in sorted(documented.keys() - accepted):
        problems.append(f"{doc}:{documented[key]}: documents {key!r}, which the loader does not accept "
                        "(or a table missing from tests/docs/every_table.toml)")
    problems += check_defaults(doc, src / "conf/tlsfront.toml")
    report = []
    problems += check_examples([src / "README.md", *sorted((src / "docs").glob("*.md"))], accepted,
                               args.keys_binary, args.tlsfront, args.pki.resolve() if args.pki else None, report)
    for line in report:
        print(line)
    for p in problems:
        print(p)
    print(f"config_reference: {len(accepted)} keys accepted by the loader, {len(documented)} documented, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
