"""S3 access with the real smdebug's own S3 code, for the storage conformance tests.

Runs under the peer venv (smdebug 1.0.34 and its boto3). The S3 endpoint and credentials
come from the standard AWS_* environment variables (boto3 reads AWS_ENDPOINT_URL[_S3]).

Commands (objects are addressed as s3://bucket/prefix/key; output is one JSON document):

* ``list s3://bucket/prefix [START_AFTER_KEY]`` — smdebug's ``S3Handler.list_prefix`` with
  ``Prefix="prefix/"`` (as the S3 trial lists) and ``StartAfter="prefix/START_AFTER_KEY"``;
  prints ``[{"key": relative key, "size": n, "sha256": hex}]`` in the order S3 returned them
  (contents fetched with ``S3Handler.get_object``).
* ``ranges s3://bucket/prefix/key START:LENGTH ...`` — smdebug's ranged reads
  (``ReadObjectRequest(path, start, length)`` through ``S3Handler.get_objects``); prints the
  hex of each slice.
* ``write s3://bucket/prefix MANIFEST.json`` — writes ``{"relative key": "hex content"}``
  with smdebug's writer-side ``TSAccessS3`` (buffer, then one upload on close); prints the
  number of objects written.
"""

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import import_smdebug  # noqa: E402


def split(url):
    assert url.startswith("s3://"), url
    bucket, _, prefix = url[len("s3://") :].partition("/")
    return bucket, prefix.strip("/")


def main(argv):
    import_smdebug()
    from smdebug.core.access_layer.s3 import TSAccessS3
    from smdebug.core.access_layer.s3handler import ListRequest, ReadObjectRequest, S3Handler

    cmd = argv[1]
    if cmd == "list":
        bucket, prefix = split(argv[2])
        start_after = f"{prefix}/{argv[3]}" if len(argv) > 3 else ""
        keys = S3Handler.list_prefix(ListRequest(bucket, prefix + "/", StartAfter=start_after))
        out = []
        for key in keys:
            body = S3Handler.get_object(ReadObjectRequest(f"s3://{bucket}/{key}"))
            assert body is not None, key
            out.append(
                {
                    "key": key[len(prefix) + 1 :],
                    "size": len(body),
                    "sha256": hashlib.sha256(body).hexdigest(),
                }
            )
        print(json.dumps(out))
    elif cmd == "ranges":
        path = argv[2]
        requests = []
        for spec in argv[3:]:
            start, length = (int(x) for x in spec.split(":"))
            requests.append(ReadObjectRequest(path, start, length))
        data = S3Handler.get_objects(requests, use_multiprocessing=False)
        print(json.dumps([d.hex() for d in data]))
    elif cmd == "write":
        bucket, prefix = split(argv[2])
        with open(argv[3]) as f:
            manifest = json.load(f)
        for key, hex_content in manifest.items():
            writer = TSAccessS3(bucket, f"{prefix}/{key}", binary=True)
            writer.write(bytes.fromhex(hex_content))
            writer.close()
        print(json.dumps(len(manifest)))
    else:
        sys.exit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv)
