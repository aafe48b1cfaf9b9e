"""Creates a blob container in an Azure Storage emulator (Azurite), signed with the
emulator's well-known development account key (SharedKey), with the standard library only.
object_store cannot create containers, and the emulator refuses unsigned requests.

usage: azure_container.py ENDPOINT CONTAINER   (ENDPOINT = http://127.0.0.1:PORT)
"""
import base64
import hashlib
import hmac
import sys
import urllib.error
import urllib.request
from email.utils import formatdate

ACCOUNT = "devstoreaccount1"
# Azurite's published development key (the same constant object_store uses).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
VERSION = "2021-08-06"


def main(endpoint, container):
    date = formatdate(usegmt=True)
    # Verb, 11 standard headers (all empty here), canonical x-ms headers, canonical resource.
    to_sign = "\n".join(
        ["PUT"] + [""] * 11
        + [f"x-ms-date:{date}", f"x-ms-version:{VERSION}",
           f"/{ACCOUNT}/{ACCOUNT}/{container}\nrestype:container"]
    )
    sig = base64.b64encode(
        hmac.new(base64.b64decode(KEY), to_sign.encode(), hashlib.sha256).digest()
    ).decode()
    req = urllib.request.Request(
        f"{endpoint}/{ACCOUNT}/{container}?restype=container",
        method="PUT",
        headers={
            "x-ms-date": date,
            "x-ms-version": VERSION,
            "Authorization": f"SharedKey {ACCOUNT}:{sig}",
            "Content-Length": "0",
        },
    )
    try:
        urllib.request.urlopen(req).read()
    except urllib.error.HTTPError as e:
        # 409 ContainerAlreadyExists: a server kept from an earlier run.
        if e.code != 409:
            sys.exit(f"creating container {container}: HTTP {e.code}: {e.read().decode()}")


if __name__ == "__main__":
    main(*sys.argv[1:])
