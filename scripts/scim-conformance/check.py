"""Runs every check of scim2-tester against a Coffer SCIM endpoint.

Usage: check.py BASE_URL TOKEN   (BASE_URL like http://127.0.0.1:8080/rest/scim)
Prints one line per check and exits non-zero when any check ends in ERROR or CRITICAL.
"""

import sys
from collections import Counter

from httpx2 import Client
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server

FAILING = {Status.ERROR, Status.CRITICAL}


def main() -> int:
    base_url, token = sys.argv[1], sys.argv[2]
    http = Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    scim = SyncSCIMClient(http)
    # No tag filter: every check the tester has.
    results = check_server(scim)
    counts = Counter(r.status.name for r in results)
    for r in results:
        where = f" [{r.resource_type}]" if r.resource_type else ""
        line = f"{r.status.name:10} {r.title}{where}"
        if r.status in FAILING:
            line += f": {r.reason}"
        print(line)
    print("summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if not results:
        print("no check ran", file=sys.stderr)
        return 1
    return 1 if any(r.status in FAILING for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
