#!/usr/bin/env python3
"""The server's share of opening an S3 trial: list the trial's index files and GET each of
them, THREADS at a time, with boto3 and nothing else (no parsing, no smdebug).

  s3_raw_gets.py s3://BUCKET/PREFIX [THREADS]

Prints one JSON object: {"seconds": wall seconds of the listing and the GETs,
"objects": N, "bytes": N}. No reader of the trial can open it faster than the server
answers these requests, so `cargo xtask bench` divides Python smdebug's open time by this
to get the ceiling of the open ratio on this server. The endpoint comes from
AWS_ENDPOINT_URL (the test server's environment).
Exit status: 0 ok, 2 usage.
"""

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def main():
    if len(sys.argv) not in (2, 3) or not sys.argv[1].startswith("s3://"):
        print(__doc__, file=sys.stderr)
        return 2
    threads = int(sys.argv[2]) if len(sys.argv) == 3 else 32
    bucket, _, prefix = sys.argv[1][len("s3://"):].partition("/")
    import boto3
    from botocore.config import Config

    s3 = boto3.client(
        "s3",
        endpoint_url=os.environ.get("AWS_ENDPOINT_URL"),
        config=Config(max_pool_connections=threads),
    )
    start = time.perf_counter()
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix.rstrip("/") + "/index/"
    ):
        keys.extend(o["Key"] for o in page.get("Contents", []))

    def get(key):
        return len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())

    with ThreadPoolExecutor(threads) as pool:
        total = sum(pool.map(get, keys))
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "objects": len(keys), "bytes": total}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
