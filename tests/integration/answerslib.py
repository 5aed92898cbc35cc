# SPDX-License-Identifier: BSD-2-Clause
"""The servers the tests of answer-reading rules share (issue 35):
LOGIN_SERVER, a login route for count_status (test_req_count_status.py,
test_answers_hostile.py), and INFLIGHT_SERVER, one that counts the
requests it holds at once per key for req_conns (test_req_conns.py,
test_answers_hostile_conns.py). Both run as `python3 -c SERVER PORT ...`
and log to stderr."""

# PORT [CERT KEY]: GET /login answers 200 with `X-Password: right`, else
# 401; /forbidden 403; anything else 200. Hostile answers: /both (both
# Content-Length and chunked), /garbage (bytes before the status line),
# /bytelogin (a 401 written one byte a write), /slowlogin (a login that
# takes 1 s). Each request is logged "HANDLED PATH USER" (X-User) as it
# arrives. With CERT and KEY: over TLS (python's ssl module, SSL_write on
# a socket BIO).
LOGIN_SERVER = r"""
import sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        sys.stderr.write("HANDLED %s %s\n" % (self.path, self.headers.get("X-User", "-")))
        sys.stderr.flush()
        if self.path == "/both":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n3\r\nok\n\r\n0\r\n\r\n")
            return
        if self.path == "/garbage":
            self.wfile.write(b"\x01\x02garbage\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
            return
        if self.path == "/bytelogin":
            for b in b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\n401\n":
                self.wfile.write(bytes([b]))
                self.wfile.flush()
            return
        if self.path == "/slowlogin":
            time.sleep(1)
        if self.path in ("/login", "/slowlogin"):
            code = 200 if self.headers.get("X-Password") == "right" else 401
        elif self.path == "/forbidden":
            code = 403
        else:
            code = 200
        body = b"%d\n" % code
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
if len(sys.argv) > 3:
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
"""

# PORT SLEEP [STALL]: each GET of key X-Key is logged "IN KEY N" with N the
# requests of that key the server holds at that moment, and answered 200
# after SLEEP s; GET /stall sends its head, then its body after STALL s.
# A listen backlog of 64: connects at once never wait for a resent SYN.
INFLIGHT_SERVER = r"""
import sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
lock = threading.Lock()
now = {}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        key = self.headers.get("X-Key", "-")
        with lock:
            now[key] = now.get(key, 0) + 1
            sys.stderr.write("IN %s %d\n" % (key, now[key]))
            sys.stderr.flush()
        if self.path == "/stall":
            self.send_response(200)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.flush()
            time.sleep(float(sys.argv[3]))
            with lock:
                now[key] -= 1
            self.wfile.write(b"ok\n")
            return
        time.sleep(float(sys.argv[2]))
        with lock:
            now[key] -= 1
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
ThreadingHTTPServer.request_queue_size = 64  # 23 connects at once: none waits for a resent SYN
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""
