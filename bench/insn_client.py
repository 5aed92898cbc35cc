# SPDX-License-Identifier: BSD-2-Clause
"""insn_client.py - a fixed-count HTTP/1.1 client for bench/insn.sh.

    insn_client.py PORT COUNT keepalive|keys|real|client|close

keepalive: COUNT requests over one connection, each sent when the previous
answer is complete; keys: the same, each request with the next of 64 API
keys in turn (a head that never repeats the last one: no memory of a
head or key helps); real: COUNT requests as an API's clients send them
(heads.py's real_heads: ~300-byte heads, none repeated) over 8 keep-alive
connections in turn, against bench/nginx-api.conf's routes; client: COUNT
requests as one SDK client sends them (heads.py's client_heads: a trace id and a body
length each, over one connection); close: COUNT connections of one request each
(`Connection: close`). Every request carries an X-API-Key header (the key
of the request rules measured). Waits up to 60 s for the server to listen
(nginx under valgrind starts slowly), then exits 1 on any answer that is
not a 200 with its whole body, so a count of instructions is never taken
from a run that went wrong."""
import socket
import sys
import time

from heads import client_heads, real_heads
from http_answer import answer

port, count, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
REQ = (b"GET /f HTTP/1.1\r\nHost: localhost\r\nX-API-Key: bench-key\r\n"
       + (b"Connection: close\r\n" if mode == "close" else b"") + b"\r\n")


def connect():
    deadline = time.monotonic() + 60
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=30)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


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
