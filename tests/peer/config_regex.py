"""Match matrix of Python `re.search` for the smdebug-config conformance tests.

Reads JSON {"patterns": [...], "names": [...]} on stdin and prints
[[bool for each name] for each pattern]; a pattern Python cannot compile gives null.
"""
import json
import re
import sys


def main():
    req = json.load(sys.stdin)
    out = []
    for p in req["patterns"]:
        try:
            rx = re.compile(p)
        except re.error:
            out.append(None)
            continue
        out.append([rx.search(n) is not None for n in req["names"]])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
