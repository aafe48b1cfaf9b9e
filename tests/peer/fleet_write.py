#!/usr/bin/env python3
"""Write a fleet of trials with the REAL smdebug 1.0.34 in one process, for
tests/conformance/fleet.rs (one fixture.py process per trial would pay the import of
smdebug, about a second, per trial).

  fleet_write.py PLAN.json
  fleet_write.py --upload DIR s3://bucket/prefix

PLAN.json is a list of {"out": trial directory, "recipe": recipe file}; each trial is
written by fixture.py's own main (`fixture.py OUT --recipe FILE --force -q`), in plan order.
Prints {"written": n}.

--upload copies every file below DIR to s3://bucket/prefix/<path relative to DIR> with
boto3 (endpoint and credentials from the standard AWS_* environment variables, as the
conformance tests set them for the S3 test server). Prints {"uploaded": n}.

Exit status: 0 ok, 1 error, 3 smdebug cannot be imported.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import peer_common as pc  # noqa: E402


def write(plan_file):
    with open(plan_file, encoding="utf-8") as f:
        plan = json.load(f)
    for item in plan:
        code = fixture.main([item["out"], "--recipe", item["recipe"], "--force", "-q"])
        if code:
            raise SystemExit(f"error: fixture.py failed ({code}) for {item['out']}")
    print(json.dumps({"written": len(plan)}))


def upload(local, url):
    import boto3

    if not url.startswith("s3://"):
        raise SystemExit(f"error: not an s3:// URL: {url}")
    bucket, _, prefix = url[len("s3://"):].partition("/")
    prefix = prefix.strip("/")
    s3 = boto3.client("s3")
    n = 0
    for root, dirs, files in os.walk(local):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, local).replace(os.sep, "/")
            s3.upload_file(path, bucket, f"{prefix}/{rel}" if prefix else rel)
            n += 1
    print(json.dumps({"uploaded": n}))


def main(argv):
    if len(argv) == 2:
        pc.import_smdebug()
        write(argv[1])
    elif len(argv) == 4 and argv[1] == "--upload":
        upload(argv[2], argv[3])
    else:
        sys.stderr.write(__doc__)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
