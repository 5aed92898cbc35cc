# SPDX-License-Identifier: BSD-2-Clause
"""heads.py - the bench's generated request heads, one generator each:
real_heads (an API's clients: bench/insn.sh's realistic case, and wrk's
heads in bench/requests.sh) and client_heads (one SDK client).

    heads.py real|client COUNT SEED

writes COUNT requests of that generator to stdout for wrk (bench/wrk_real.lua),
each as its length in bytes, a newline, then its bytes."""
import random
import sys

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


def main():
    gens = {"real": real_heads, "client": client_heads}
    if len(sys.argv) != 4 or sys.argv[1] not in gens:
        sys.exit("usage: heads.py real|client COUNT SEED")
    gen, count, seed = gens[sys.argv[1]], int(sys.argv[2]), int(sys.argv[3])
    out = sys.stdout.buffer
    for req in gen(count, seed):
        out.write(b"%d\n" % len(req) + req)


if __name__ == "__main__":
    main()
