# SPDX-License-Identifier: BSD-2-Clause
"""conn_mem_client.py - idle keep-alive connections for bench/conn_mem.sh.

    conn_mem_client.py PORT COUNT [partial]

Opens COUNT connections to 127.0.0.1:PORT, sends one keep-alive request on
each (with the X-API-Key header the measured rule keys on) and reads its
whole answer (with "partial", then sends the first lines of a second head
and never its end: a connection holding an unfinished head), then prints
"ready" and keeps every connection open, idle, until its standard input
closes. Exits 1 if any answer is not a 200, so a
measurement is never taken from a run that went wrong."""
import resource
import socket
import sys

from http_answer import answer

port, count = int(sys.argv[1]), int(sys.argv[2])
partial = sys.argv[3:] == ["partial"]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < count + 64:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 64), hard))

REQ = (b"GET /f HTTP/1.1\r\nHost: localhost\r\nX-API-Key: key-%d\r\n\r\n")
conns = []
for i in range(count):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(REQ % (i % 100))
    answer(s)
    if partial:
        s.sendall(b"GET /f HTTP/1.1\r\nHost: localhost\r\nX-API-Key: key-%d\r\nAccept: */*\r\n" % (i % 100))
    conns.append(s)
print("ready", flush=True)
sys.stdin.read()
