# SPDX-License-Identifier: BSD-2-Clause
"""insn_client.py - a fixed-count HTTP/1.1 client for bench/insn.sh.

    insn_client.py PORT COUNT keepalive|keys|real|client|close

keepalive: COUNT requests over one connection, each sent when the previous
answer is complete; keys: the same, each request with the next of 64 API
keys in turn (a head that never repeats the last one: no memory of a
head or key helps); real: COUNT requests as an API's clients send them
(real_heads: ~300-byte heads, none repeated) over 8 keep-alive
connections in turn, against bench/nginx-api.conf's routes; client: COUNT
requests as one SDK client sends them (client_heads: a trace id and a body
length each, over one connection); close: COUNT connections of one request each
(`Connection: close`). Every request carries an X-API-Key header (the key
of the request rules measured). Waits up to 60 s for the server to listen
(nginx under valgrind starts slowly), then exits 1 on any answer that is
not a 200 with its whole body, so a count of instructions is never taken
from a run that went wrong."""
import random
import socket
import sys
import time

from http_answer import answer

port, count, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
REQ = (b"GET /f HTTP/1.1\r\nHost: localhost\r\nX-API-Key: bench-key\r\n"
       + (b"Connection: close\r\n" if mode == "close" else b"") + b"\r\n")


ROUTES = [
    "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
    "/v1/models/m-small", "/v1/models/m-large", "/v1/files", "/v1/files/file-7Qx2/content",
    "/v1/batches", "/v1/batches/batch_91", "/v1/fine_tuning/jobs", "/v1/fine_tuning/jobs/ft-3/events",
    "/v1/images/generations", "/v1/audio/speech", "/v1/audio/transcriptions", "/v1/moderations",
    "/v1/assistants", "/v1/assistants/asst_12", "/v1/threads", "/v1/threads/thread_8/messages",
    "/v1/threads/thread_8/runs", "/v1/vector_stores", "/v1/vector_stores/vs_5/files", "/v1/uploads",
    "/v1/responses", "/v1/responses/resp_77", "/v2/orders", "/v2/orders/184467",
    "/v2/customers", "/v2/customers/cus_0042/invoices", "/v2/payments", "/v2/refunds",
    "/v2/products", "/v2/products/prod_9/prices", "/v2/events", "/v2/webhooks",
    "/api/search", "/api/users/me", "/api/projects/42/usage", "/healthz",
]
AGENTS = ["OpenAI/Python 1.51.0", "OpenAI/JS 4.67.3", "Go-http-client/1.1"]


def real_heads(count, seed):
    """COUNT requests from a seeded generator (the same on every run, as
    bench/bench_h1.c's): a W3C traceparent unique to each, one of 1,000 API
    keys of skewed use (the square of a uniform draw: a few keys send most),
    40 routes, most GETs with a query string, the headers of three kinds of
    SDK (Python with x-stainless-* lines, Node, Go), 1 in 10 a POST with a
    JSON body. About 300 bytes of head each."""
    rnd = random.Random(seed)
    for _ in range(count):
        post = rnd.randrange(10) == 0
        route = ROUTES[rnd.randrange(40)]
        u = rnd.randrange(1000)
        key = u * u // 1000
        sdk = rnd.randrange(3)
        body = b""
        if post:
            body = b'{"model":"m-small","input":"%s"}\n' % bytes(
                rnd.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randrange(10, 200)))
        target = route
        if not post and rnd.randrange(4):
            target += "?limit=%d&order=desc&after=obj_%06d" % (rnd.randrange(1, 101),
                                                               rnd.randrange(1000000))
        h = ["%s %s HTTP/1.1" % ("POST" if post else "GET", target), "Host: api.example.com",
             "User-Agent: " + AGENTS[sdk], "Accept: application/json"]
        if post:
            h += ["Content-Type: application/json", "Content-Length: %d" % len(body)]
        h.append("X-API-Key: sk-live-%08x%08x" % (key * 2654435761 % 2**32, key ^ 0x5bd1e995))
        if sdk == 0:
            h += ["x-stainless-lang: python", "x-stainless-package-version: 1.51.0"]
        elif sdk == 1:
            h += ["x-stainless-lang: js", "x-stainless-os: Linux"]
        else:
            h.append("Accept-Encoding: gzip")
        h.append("traceparent: 00-%032x-%016x-01" % (rnd.getrandbits(128), rnd.getrandbits(64)))
        yield ("\r\n".join(h) + "\r\n\r\n").encode() + body


def connect():
    deadline = time.monotonic() + 60
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=30)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def client_heads(count, seed):
    """COUNT requests as one SDK client sends them (the Python SDK's
    headers, one API key, POST /v1/chat/completions) over one keep-alive
    connection: a W3C traceparent and a JSON body of 100 to 999 bytes each
    (a Content-Length of three digits), so no head repeats the last one,
    and each differs from it only inside header values."""
    rnd = random.Random(seed)
    for _ in range(count):
        body = b'{"model":"m-small","input":"%s"}\n' % bytes(
            rnd.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randrange(70, 969)))
        h = ["POST /v1/chat/completions HTTP/1.1", "Host: api.example.com",
             "User-Agent: " + AGENTS[0], "Accept: application/json",
             "Content-Type: application/json", "Content-Length: %d" % len(body),
             "X-API-Key: sk-live-5bd1e99500c0ffee", "x-stainless-lang: python",
             "x-stainless-package-version: 1.51.0",
             "traceparent: 00-%032x-%016x-01" % (rnd.getrandbits(128), rnd.getrandbits(64))]
        yield ("\r\n".join(h) + "\r\n\r\n").encode() + body


if mode == "client":
    s = connect()
    buf = b""
    for req in client_heads(count, count):
        s.sendall(req)
        buf = answer(s, buf)
    s.close()
elif mode == "real":
    socks = [connect() for _ in range(8)]
    bufs = [b""] * 8
    for i, req in enumerate(real_heads(count, count)):
        s = socks[i % 8]
        s.sendall(req)
        bufs[i % 8] = answer(s, bufs[i % 8])
    for s in socks:
        s.close()
elif mode in ("keepalive", "keys"):
    s = connect()
    buf = b""
    for i in range(count):
        if mode == "keys":
            s.sendall(b"GET /f HTTP/1.1\r\nHost: localhost\r\nX-API-Key: bench-key-%02d\r\n\r\n"
                      % (i % 64))
        else:
            s.sendall(REQ)
        buf = answer(s, buf)
    s.close()
else:
    for _ in range(count):
        s = connect()
        s.sendall(REQ)
        answer(s, b"")
        s.close()
