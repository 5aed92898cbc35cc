# SPDX-License-Identifier: BSD-2-Clause
"""action=reply: denied connections get the built-in 429 with Retry-After and
the RateLimit-* and X-RateLimit-* fields, computed from the bucket."""
import time
from lib import *

port = free_port()
with http_server(port, [f"port={port} rate=2/s burst=3 action=reply"]) as srv:
    wait_port(port)
    time.sleep(2.0)                      # the probe's token comes back
    results = [http_get(port) for _ in range(8)]
    statuses = [r[0] for r in results]
    print("statuses", statuses)
    check(statuses[:3] == [200, 200, 200], f"burst of 3 not admitted: {statuses}")
    check(statuses.count(429) >= 4, f"expected 429s after the burst: {statuses}")
    st, h, body = next(r for r in results if r[0] == 429)
    print(h)
    check(h.get("retry-after") == "1", f"Retry-After: {h.get('retry-after')}")
    check(h.get("ratelimit-limit") == "3", f"RateLimit-Limit: {h.get('ratelimit-limit')}")
    check(h.get("ratelimit-remaining") == "0", "RateLimit-Remaining")
    # the bucket is empty: whole again after 3 tokens at 2/s = 1.5 s -> 2 s rounded up
    check(h.get("ratelimit-reset") in ("1", "2"), f"RateLimit-Reset: {h.get('ratelimit-reset')}")
    for k in ("limit", "remaining", "reset"):
        check(h.get("x-ratelimit-" + k) == h.get("ratelimit-" + k), "X-RateLimit-" + k)
    check(body == b"Too Many Requests\n", f"body {body!r}")
    check(int(h["content-length"]) == len(body), "Content-Length")
    # after Retry-After, the client is admitted again
    time.sleep(1.0)
    check(http_get(port)[0] == 200, "not admitted after Retry-After")
print("ok")
