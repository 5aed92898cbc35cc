# SPDX-License-Identifier: BSD-2-Clause
"""A fake vendor for the `learn` tests (test_req_out_learn*.py): a
ThreadingHTTPServer in the test's own process (not under the shim) on
127.0.0.1 that answers each GET as a function of the test says and keeps
what it saw, each request stamped with time.monotonic() at its arrival,
the CLOCK_MONOTONIC sluice holds by."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lib import *


class Vendor:
    """Answers request i (its arrival time t, its path) with
    answer(i, t, path) -> (status, headers) and a 3-byte body; `seen`
    holds (t, path, status) per request, in arrival order."""

    def __init__(self, answer):
        self.seen = []
        self.lock = threading.Lock()
        vendor = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                t = time.monotonic()
                with vendor.lock:
                    status, headers = answer(len(vendor.seen), t, self.path)
                    vendor.seen.append((t, self.path, status))
                body = b"ok\n"
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def log_message(self, *a):
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def paths(self):
        with self.lock:
            return [p for _, p, _ in self.seen]

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def scripted(script):
    """An answer function: script[i] (status, headers) for request i, then
    200s."""
    script = list(script)
    return lambda i, t, path: script.pop(0) if script else (200, {})
