# SPDX-License-Identifier: BSD-2-Clause
"""http_answer.py - reads one HTTP/1.1 answer from a socket for the bench
clients (insn_client.py, conn_mem_client.py): exits 1 on anything but a
200 with its whole body, so a figure is never taken from a run that went
wrong."""


def answer(s, buf=b""):
    """Reads one whole answer from socket s (buf: what was read past the
    previous one); returns what followed it."""
    while b"\r\n\r\n" not in buf:
        got = s.recv(65536)
        if not got:
            raise SystemExit("connection closed before an answer")
        buf += got
    head, _, rest = buf.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("not a 200: %r" % head[:80])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        got = s.recv(65536)
        if not got:
            raise SystemExit("connection closed inside a body")
        rest += got
    return rest[length:]
