"""Re-serializes JSON documents with Python's json.dumps defaults, as smdebug writes index files.

Usage: index_dumps.py FILE

FILE holds one JSON document per line (UTF-8). For each line, prints
json.dumps(json.loads(line)) on its own line: the exact text smdebug's Index.to_json()
(core/tfevent/index_file_writer.py) produces for that content, since dicts keep the key order
they were loaded in. Lines are read as UTF-8 and written as ASCII (ensure_ascii=True).
"""

import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    out = []
    with open(sys.argv[1], "r", encoding="utf-8", newline="\n") as f:
        for line in f.read().split("\n"):
            if line:
                out.append(json.dumps(json.loads(line)))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
