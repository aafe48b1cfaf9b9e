#!/usr/bin/env python3
"""Semantic comparison of two trial dumps (schema "smdebug-trial-dump/v1").

  compare_dumps.py A.json B.json [--rtol 1e-6] [--atol 1e-12] [--ignore GLOB]...
                   [--rtol-at GLOB=RTOL]... [--strict] [--max-diffs 60]

Rules:
* objects key by key, arrays element by element; differences are reported at JSON Pointer
  paths (RFC 6901: "~" is "~0", "/" is "~1"), e.g. /tensors/gradient~1fc.weight/at/3/...
* integers must be equal; when either side is a float, |a - b| <= atol + rtol * |b|;
  "NaN", "Infinity", "-Infinity" are floats and NaN equals NaN; booleans are not numbers;
  --rtol-at GLOB=RTOL sets rtol for the paths GLOB matches (the first such option that
  matches wins);
* ignored unless --strict: /generator and every */error/message (the exception type is
  always compared); --ignore adds fnmatch globs on the path ("*" also matches "/").

Output: one line per difference: "~" changed, "-" only in A, "+" only in B, "#" arrays of
different lengths (with up to 5 items found only on each side).
Exit status: 0 equal, 1 different, 2 unreadable input. Needs only the standard library.
"""

import argparse
import fnmatch
import json
import math
import sys

SCHEMA = "smdebug-trial-dump/v1"
DEFAULT_IGNORES = ["/generator", "/generator/*", "*/error/message"]
SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def pointer_token(key):
    return str(key).replace("~", "~0").replace("/", "~1")


def as_number(x):
    """The value as a float if the schema treats it as a number, else None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str):
        return SPECIAL_FLOATS.get(x)
    return None


class Comparer:
    def __init__(self, rtol=1e-6, atol=1e-12, ignores=DEFAULT_IGNORES, rtol_at=()):
        self.rtol = rtol
        self.rtol_at = list(rtol_at)  # (glob, rtol)
        self.atol = atol
        self.ignores = list(ignores)
        self.diffs = []  # (kind, path, a, b)

    def ignored(self, path):
        return any(fnmatch.fnmatchcase(path, g) for g in self.ignores)

    def rtol_for(self, path):
        return next((r for g, r in self.rtol_at if fnmatch.fnmatchcase(path, g)), self.rtol)

    def numbers_equal(self, a, b, path):
        if type(a) is int and type(b) is int:
            return a == b
        fa, fb = as_number(a), as_number(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        if math.isinf(fa) or math.isinf(fb):
            return fa == fb
        return abs(fa - fb) <= self.atol + self.rtol_for(path) * abs(fb)

    def walk(self, a, b, path=""):
        if self.ignored(path):
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b), key=str):
                p = f"{path}/{pointer_token(k)}"
                if self.ignored(p):
                    continue
                if k not in b:
                    self.diffs.append(("-", p, a[k], None))
                elif k not in a:
                    self.diffs.append(("+", p, None, b[k]))
                else:
                    self.walk(a[k], b[k], p)
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                ja = {json.dumps(x, sort_keys=True) for x in a}
                jb = {json.dumps(x, sort_keys=True) for x in b}
                only_a = [json.loads(x) for x in sorted(ja - jb)][:5]
                only_b = [json.loads(x) for x in sorted(jb - ja)][:5]
                self.diffs.append(("#", path, f"{len(a)} items, only here: {short(only_a)}",
                                   f"{len(b)} items, only here: {short(only_b)}"))
                return
            for i, (x, y) in enumerate(zip(a, b)):
                self.walk(x, y, f"{path}/{i}")
        elif as_number(a) is not None and as_number(b) is not None:
            if not self.numbers_equal(a, b, path):
                self.diffs.append(("~", path, a, b))
        elif type(a) is not type(b) or a != b:
            self.diffs.append(("~", path, a, b))


def short(v, limit=120):
    s = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def compare(a, b, comparer, label_a="A", label_b="B", max_diffs=60, out=sys.stdout):
    """Compare two documents, print the report, return the exit status (0 or 1)."""
    for doc, label in ((a, label_a), (b, label_b)):
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            out.write(f"warning: {label} is not a {SCHEMA} document\n")
    comparer.walk(a, b)
    diffs = comparer.diffs
    if not diffs:
        out.write(f"EQUAL: {label_a} == {label_b}\n")
        return 0
    out.write(f"DIFFERENT: {len(diffs)} difference(s) between {label_a} (A) and {label_b} (B)\n")
    for kind, path, va, vb in diffs[:max_diffs]:
        if kind == "-":
            out.write(f"- {path}\n    only in A: {short(va)}\n")
        elif kind == "+":
            out.write(f"+ {path}\n    only in B: {short(vb)}\n")
        elif kind == "#":
            out.write(f"# {path}\n    A: {va}\n    B: {vb}\n")
        else:
            out.write(f"~ {path}\n    A: {short(va)}\n    B: {short(vb)}\n")
    if len(diffs) > max_diffs:
        out.write(f"... {len(diffs) - max_diffs} more (use --max-diffs)\n")
    return 1


def glob_rtol(text):
    glob, sep, rtol = text.rpartition("=")
    try:
        if not sep or not glob:
            raise ValueError
        return glob, float(rtol)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected GLOB=RTOL, got {text!r}") from None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--atol", type=float, default=1e-12)
    ap.add_argument("--ignore", action="append", default=[], metavar="GLOB")
    ap.add_argument("--rtol-at", action="append", default=[], metavar="GLOB=RTOL",
                    type=glob_rtol)
    ap.add_argument("--strict", action="store_true",
                    help="also compare /generator and error messages")
    ap.add_argument("--max-diffs", type=int, default=60)
    args = ap.parse_args(argv)
    docs = []
    for path in (args.a, args.b):
        try:
            with open(path, encoding="utf-8") as f:
                docs.append(json.load(f))
        except (OSError, ValueError) as e:
            sys.stderr.write(f"error: cannot read {path}: {e}\n")
            return 2
    ignores = ([] if args.strict else DEFAULT_IGNORES) + args.ignore
    comparer = Comparer(rtol=args.rtol, atol=args.atol, ignores=ignores, rtol_at=args.rtol_at)
    return compare(docs[0], docs[1], comparer, args.a, args.b, args.max_diffs)


if __name__ == "__main__":
    sys.exit(main())
