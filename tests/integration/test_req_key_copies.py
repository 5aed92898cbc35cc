# SPDX-License-Identifier: BSD-2-Clause
"""A request that carries its key twice is charged for the copy the
application reads (issue 31, item 7; core/http/reqkey.h, per_copy).

PHP's built-in server (`php -S 127.0.0.1:P router.php`; the router prints
the key PHP read and appends it to a log) under
`sluice run --in 'port=P req_rate=1/m req_burst=2 per=header:X-API-Key action=reply'`
(and `per=query:api_key`). 10 requests each, on new connections, whose
copies are `rand-i` then `R`:
  - `X-API-Key: rand-i` and `X_API_KEY: R` (PHP maps both to
    HTTP_X_API_KEY, the last line wins);
  - `?api_key=rand-i&api_key=R` (PHP takes the last) and
    `?api_key=rand-i&api.key=R` (PHP's name mangling: `api.key` is `api_key`).
PHP reads R each time: at most 2 are handled for R (before: 10, sluice
charged rand-i). The control, 10 requests with one copy of a key, is
still exact: 2 handled. Loopback only, every wait bounded.
"""
import os

from lib import *

ROUTER = r"""<?php
$h = $_SERVER['HTTP_X_API_KEY'] ?? '-';
$q = $_GET['api_key'] ?? '-';
file_put_contents(getenv('KEYS_LOG'), "h=$h q=$q\n", FILE_APPEND | LOCK_EX);
header('Content-Type: text/plain');
echo "h=$h q=$q\n";
"""

N = 10


def ask(port, target, headers=""):
    """One GET on a new connection, kept alive as far as the head says
    (the server closes): the status, or None when there was no answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
            data = b""
            while b"\r\n\r\n" not in data or len(data) < 12:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    return int(data.split()[1]) if data.startswith(b"HTTP/") else None


php = shutil.which("php")
check(php is not None, "php is not installed (apt-get install php-cli)")
with TempDir() as tmp:
    router = tmp.write("router.php", ROUTER)
    cases = (
        ("header:X-API-Key", "header",
         lambda i: ("/", f"X-API-Key: rand-{i}\r\nX_API_KEY: R\r\n"),
         lambda i: ("/", "X-API-Key: C\r\n")),
        ("query:api_key", "query",
         lambda i: (f"/?api_key=rand-{i}&api_key=R", ""),
         lambda i: ("/?api_key=C", "")),
        ("query:api_key", "query-mangled",
         lambda i: (f"/?api_key=rand-{i}&api.key=R", ""),
         lambda i: ("/?api_key=C", "")),
    )
    for per, tag, copies, control in cases:
        port = free_port()
        log = tmp.join(f"keys-{tag}.log")
        open(log, "w").close()
        rule = f"port={port} req_rate=1/m req_burst=2 per={per} action=reply"
        argv = sluice_argv([php, "-S", f"127.0.0.1:{port}", router], ins=[rule])
        with Proc(argv, env={"KEYS_LOG": log}, cwd=tmp.path) as p:
            wait_listen(port)
            got = [ask(port, *copies(i)) for i in range(N)]
            ctl = [ask(port, *control(i)) for i in range(N)]
            with open(log) as f:
                read = f.read().splitlines()
            field = "h=" if per.startswith("header") else "q="
            for_r = sum(1 for l in read if f"{field}R " in l + " ")
            for_c = sum(1 for l in read if f"{field}C " in l + " ")
            print(f"{tag}: copies {got}, control {ctl}; PHP read {read}")
            check(all(f"{field}R" in l or f"{field}C" in l for l in read),
                  f"{tag}: PHP read another key than R or C: {read}\n{p.stderr()}")
            check(1 <= for_r <= 2,
                  f"{tag}: {for_r} of {N} handled for R (the key PHP reads), bound 2\n{p.stderr()}")
            check(got.count(429) == N - for_r, f"{tag}: answers {got}")
            check(for_c == 2 and ctl.count(429) == N - 2,
                  f"{tag}: control handled {for_c} (want 2), answers {ctl}\n{p.stderr()}")
print("ok")
