# SPDX-License-Identifier: BSD-2-Clause
"""Hostile HTTP/2 clients against the pairing of HTTP/2 answers with their
requests (core/http/h2resp.c, the HTTP/2 part of core/http/request.c).
nginx `listen ... http2` (h2c) under the shim, with the rules of
test_h2_answers.py: `count_status=401` on /login and /mixed (3 an hour a
user), `req_conns=2` (delay, max_delay 3 s) on /slow, a proxy to a python
server that counts what nginx has open to it per key (WATCHING_SERVER,
0.5 s a request), and on /flood (nginx's own 200). The client is built
here frame by frame (python's h2 and hpack are not installed): HPACK
literals without indexing, and the :status of nginx's answers read as
nginx writes it (an indexed 200, else a literal of three digits). Every
case runs bare, then under sluice: the bare run is what the client does to
nginx alone. Measured (sluice at 91debc9, before the fixes of the two
defects below, and after them):

1. RST_STREAM flood: streams opened (HEADERS with END_STREAM) and reset at
   once (RST_STREAM CANCEL), 20 a round trip (a PING; nginx meets a flood
   written in one go with its own defence: bare, 837 streams then a
   GOAWAY), on one connection.
   a. 3,000 to /open (no rule's route, but read and paired as every
      stream of the connection): nginx answers all 3,000 bare and under
      sluice, and a later stream of the connection gets its 200. The
      worker's VmRSS (sluice lives in it) between the first 1,000 streams
      and 3,000: bare 4,308-4,400 KB, under sluice 5,224-5,272 KB, +0 KB
      in every run. Asserted: under 256 KB (the pairing's state of a
      connection is fixed, a ring of 64 requests: a leak of 128 bytes a
      stream would show 256 KB; nginx and the allocator add 0-20 KB).
   b. 200 wrong logins to /login: bare nginx handles 200; under sluice 3,
      the 4th stream refused (the connection reset: an HTTP/2 denial
      resets). nginx answers each of them (401), so nothing is lost here;
      a stream whose answer never comes keeps its charge (docs/requests.md,
      "a stream whose head sluice could not read keeps its charge"; the
      charge is taken as the request comes and only an answer outside the
      list gives it back, request.c answered()).
   c. Defect A, fixed: 3,000 to /flood (req_conns=2): bare nginx answers
      all; under sluice the connection is refused after 20-700 streams
      (nginx answered every stream it was given). Not the resets: see 4b.
2. The client's GOAWAY, last stream 2^31-1 and then 0, mid-connection,
   and more streams on it: 10 good logins all get their 200 (nothing
   stalls, each 200 gives back its charge), then 5 wrong ones in turn:
   three 401s and the connection refused (bare: five 401s); nginx's log
   has exactly 3. No defect: sluice reads the server's GOAWAY only.
3. Trickled POST /login: the header block in a HEADERS and CONTINUATIONs
   of 5 bytes, the 24-byte body one byte a DATA frame (every third PADDED,
   4 bytes of padding), written 14 bytes a write: 10 good logins pass
   (each counted once, given back by its 200; counted twice, or a DATA
   frame taken as a request, the 4th would be refused), then three 401s
   and the 4th refused. No defect.
4. a. Defect B, fixed: 8 streams of one key to /slow at once; once the
      server holds 2, the client resets the 4 with even places (one of
      them is at the server, nginx drops it and writes nothing for it):
      the server never holds more than 2, the other 4 get their 200 (bare:
      8 at once at the server). Then, the hostile connection still open
      and idle, 2 streams of the same key on a new connection: bare and
      fixed, the server holds both at once; under sluice one after the
      other ([1, 1]): the reset stream's place is held until the hostile
      connection ends.
   b. Defect A, fixed: 40 streams of one key to /flood at once, nothing
      reset (what h2load -m 40 does): bare all 40 answered; under sluice
      4, then the connection is refused at max_delay (h2load: 4 succeeded,
      36 failed in 3.02 s; -m 19 passes).
5. 401s and 200s interleaved on one connection: 3 waves of [good user, bad
   user, good user] at once: the bad user's three 401s are counted (its
   next login, right password, on a new connection, refused), none of the
   good user's six 200s (3 more of its logins at once all pass). No defect.

The defects, found by this test and fixed (each case failed in 5 runs of 5
before):
A. request.c scan() decides every head it reaches, up to SL_REQ_AHEAD (16)
   holds: 2 streams take the places, 16 wait (act() makes each an `ahead`
   with place_rule), and the scan stops. As held heads find places and
   pass, sl_req_passed() drops them from c->ahead, the next scan() goes on
   and decides the next streams, which take the places that are free at
   that moment (sl_req_decide) before the heads still waiting ahead of
   them in the byte stream. Those streams cannot reach nginx until the
   waiting ones pass, and the waiting ones need the places they hold:
   deadlock until max_delay, then place_found() denies the connection.
   Fix: scan() decides no head while one of the connection waits for a
   place (a helper place_awaited(c): any c->ahead[i].place_rule >= 0, in
   the loop's condition), so the heads after it are decided in order.
   With it, 1c and 4b pass (3,000 of 3,000; 40 of 40; h2load -m 40 40 of
   40) and 4a still fails.
B. A stream the client resets is over (RFC 9113 5.4.2: nothing more is
   written to it), but sluice gives its place back only on the server's
   END_STREAM or RST_STREAM, a GOAWAY, the reuse of its ring slot (64
   requests later on the connection, act()) or the connection's end:
   core/http/h2.c frames RST_STREAM and reports nothing of it. Fix: h2.c
   reports a well-formed client RST_STREAM (SL_H2_RESET, the stream and
   where the frame ends); next_head() marks the request's ring slot
   (answer_target.reset_end) and sl_req_passed(), once the program has
   been passed the frame (not as it is scanned: behind a held head it has
   not reached nginx, which still runs the stream), gives back its places
   (places_free) and marks it over; its count_status charge stays until an
   answer gives it back. With it, 4a passes ([1, 2]).
Both fixes together: every case passes.

Nothing is timed: statuses, nginx's access log, the server's counts and
VmRSS; every wait is bounded (max_delay 3 s is the longest).
"""
import select
import struct

from lib import *

# PORT SLEEP: as answerslib.INFLIGHT_SERVER, but a request whose
# connection nginx closes (its client reset the stream) stops at once, as
# an upstream that watches its socket does. Logs "IN KEY N PATH" as a
# request comes (N: requests of KEY held at that moment), then "OUT KEY"
# as it answers or "GONE KEY" when nginx went away first. So N counts what
# nginx has open to the server, which req_conns bounds (INFLIGHT_SERVER
# counts a dropped request until its sleep ends, which no limit in front
# of nginx can see).
WATCHING_SERVER = r"""
import select, socket, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
lock = threading.Lock()
now = {}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        key = self.headers.get("X-Key", "-")
        with lock:
            now[key] = now.get(key, 0) + 1
            sys.stderr.write("IN %s %d %s\n" % (key, now[key], self.path))
            sys.stderr.flush()
        end, gone = time.monotonic() + float(sys.argv[2]), False
        while not gone and time.monotonic() < end:
            if select.select([self.connection], [], [], end - time.monotonic())[0]:
                gone = self.connection.recv(1, socket.MSG_PEEK) == b""
                if not gone:
                    time.sleep(max(0, end - time.monotonic()))
        with lock:
            now[key] -= 1
            sys.stderr.write("%s %s\n" % ("GONE" if gone else "OUT", key))
            sys.stderr.flush()
        if gone:
            return
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
ThreadingHTTPServer.request_queue_size = 64
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""

LOGIN = "req_rate=3/h per=header:X-User count_status=401 action=reply"
CONNS = "req_conns=2 per=header:X-User action=delay max_delay=3s"

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST, SETTINGS, PUSH, PING, GOAWAY, WINDOW, CONT = range(10)
END_STREAM, ACK, END_HEADERS, PADDED = 0x1, 0x1, 0x4, 0x8
# nginx writes :status indexed for these (ngx_http_v2_filter_module.c)
STATIC_STATUS = {0x88: 200, 0x89: 204, 0x8A: 206, 0x8B: 304, 0x8C: 400, 0x8D: 404, 0x8E: 500}


def frame(kind, flags, stream, payload=b""):
    return (len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big")
            + payload)


def hpack_int(n):
    """RFC 7541 5.1, a 7-bit prefix."""
    if n < 127:
        return bytes([n])
    out, n = [127], n - 127
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    return bytes(out + [n])


def hpack_block(fields):
    """Literal fields without indexing, new names, no Huffman (RFC 7541 6.2.2)."""
    out = b""
    for k, v in fields:
        k, v = k.encode(), v.encode()
        out += b"\x00" + hpack_int(len(k)) + k + hpack_int(len(v)) + v
    return out


class H2:
    """A raw HTTP/2 client on one connection: frames written as given, the
    server's read as they come (SETTINGS and PING answered)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.status, self.ended, self.resets, self.goaway = {}, set(), {}, None
        self.whole = set()  # streams the server ended with END_STREAM
        self.closed, self.pongs, self.next = False, 0, 1
        self.send(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 1 << 30))
                  + frame(WINDOW, 0, 0, struct.pack(">I", 1 << 30)))

    def send(self, data):
        try:
            self.s.sendall(data)
        except OSError:
            self.closed = True

    def stream(self):
        sid, self.next = self.next, self.next + 2
        return sid

    @staticmethod
    def request(path, headers=(), method="GET"):
        return hpack_block([(":method", method), (":scheme", "http"),
                            (":authority", "127.0.0.1"), (":path", path)] + list(headers))

    def get(self, sid, path, headers=()):
        return frame(HEADERS, END_HEADERS | END_STREAM, sid, self.request(path, headers))

    @staticmethod
    def rst(sid, code=8):  # CANCEL
        return frame(RST, 0, sid, struct.pack(">I", code))

    def _frames(self):
        while len(self.buf) >= 9 and len(self.buf) >= 9 + int.from_bytes(self.buf[:3], "big"):
            n = int.from_bytes(self.buf[:3], "big")
            kind, flags = self.buf[3], self.buf[4]
            sid = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            p, self.buf = self.buf[9:9 + n], self.buf[9 + n:]
            if kind == SETTINGS and not flags & ACK:
                self.send(frame(SETTINGS, ACK, 0))
            elif kind == PING:
                if flags & ACK:
                    self.pongs += 1
                else:
                    self.send(frame(PING, ACK, 0, p))
            elif kind == HEADERS and sid not in self.status:
                if p[0] in STATIC_STATUS:
                    self.status[sid] = STATIC_STATUS[p[0]]
                elif p[:2] == b"\x48\x03":  # :status, a literal with indexing
                    self.status[sid] = int(p[2:5])
                else:
                    self.status[sid] = -1
            elif kind == RST:
                self.resets[sid] = int.from_bytes(p[:4], "big")
                self.ended.add(sid)
            elif kind == GOAWAY:
                self.goaway = int.from_bytes(p[:4], "big") & 0x7FFFFFFF
            if kind in (HEADERS, DATA) and flags & END_STREAM:
                self.ended.add(sid)
                self.whole.add(sid)

    def pump(self, until, timeout=5.0):
        """Reads until until(), the connection's end, or timeout s; until()."""
        deadline = time.monotonic() + timeout
        while not until() and not self.closed:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.s], [], [], left)[0]:
                break
            try:
                d = self.s.recv(1 << 16)
            except OSError:
                d = b""
            if not d:
                self.closed = True
            self.buf += d
            self._frames()
        return until()

    def round_trip(self):
        """A PING and its answer: nginx has read what was sent before it."""
        want = self.pongs + 1
        self.send(frame(PING, 0, 0, b"sluice!!"))
        return self.pump(lambda: self.pongs >= want)

    def answer(self, sid, timeout=5.0):
        """The status of stream sid once the server ended it (None: the
        connection ended, or the stream was reset, before its answer)."""
        self.pump(lambda: sid in self.ended, timeout)
        return self.status.get(sid) if sid in self.whole else None

    def close(self):
        self.s.close()


def site(tmp, port, back):
    log = tmp.join(f"access-{port}.log")
    _, argv = nginx_config(tmp, f"""
    log_format brief '$status $uri $http_x_user';
    access_log {log} brief;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port} http2;
        location ~ ^/(login|mixed)$ {{
            if ($http_x_password != "right") {{ return 401; }}
            return 200 "welcome\\n";
        }}
        location = /open {{ return 200 "ok\\n"; }}
        location = /flood {{ return 200 "ok\\n"; }}
        location = /slow {{
            proxy_pass http://127.0.0.1:{back};
            proxy_set_header X-Key $http_x_user;
        }}
    }}
""", events="use epoll;")
    return argv, log


def logged(log, status, uri, user):
    """Lines of nginx's access log of uri and user, with status (None: any)
    (a short wait: nginx logs after the answer)."""
    time.sleep(0.3)
    with open(log) as f:
        return sum(1 for l in f
                   if l.split()[1:3] == [uri, user] and status in (None, l.split()[0]))


def worker(pid):
    """The nginx worker among pid's descendants."""
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if b"worker process" in f.read():
                    return p
        except OSError:
            pass
        todo += children(p)
    raise AssertionError(f"no nginx worker under {pid}")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def flood(c, path, headers, n):
    """n streams each reset as soon as opened, 20 a round trip: how many
    were sent before the connection ended."""
    for i in range(n):
        sid = c.stream()
        c.send(c.get(sid, path, headers) + c.rst(sid))
        if i % 20 == 19 and not c.round_trip():
            return i + 1
    return n


def server_lines(srv, key):
    return [l.split() for l in srv.stderr().splitlines() if l.split()[1:2] == [key]]


def server_idle(srv, key):
    """Waits (bounded) until the server holds nothing of key: every IN has
    its OUT or GONE."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        ls = server_lines(srv, key)
        if sum(l[0] == "IN" for l in ls) == sum(l[0] in ("OUT", "GONE") for l in ls):
            return
        time.sleep(0.02)


GOOD = [("x-password", "right")]
BAD = [("x-password", "wrong")]


def case_flood(port, log, ng, mode):
    c = H2(port)
    user = f"f{mode}"
    sent = flood(c, "/open", [("x-user", user)], 1000)
    before = rss_kb(worker(ng.p.pid))
    sent += flood(c, "/open", [("x-user", user)], 2000)
    after = rss_kb(worker(ng.p.pid))
    sid = c.stream()
    c.send(c.get(sid, "/open", [("x-user", user)]))
    later = c.answer(sid)
    print(f"{mode} 1a: {sent} streams reset at once to /open: {len(c.status)} answered, "
          f"a later one {later}; worker VmRSS {before} KB after 1,000, {after} KB after 3,000")
    check(sent == 3000 and later == 200, f"{mode}: nginx serves on: {sent} sent, later {later}")
    check(after - before < 256, f"{mode}: VmRSS grew {after - before} KB over 2,000 streams")
    c.close()

    user = f"fw{mode}"
    c = H2(port)
    sent = flood(c, "/login", [("x-user", user)] + BAD, 200)
    reached = logged(log, None, "/login", user)
    print(f"{mode} 1b: 200 wrong logins reset at once: {sent} sent, {len(c.status)} answered "
          f"({sorted(set(c.status.values()))}), nginx handled {reached}, connection "
          f"{'ended' if c.closed else 'open'}")
    check(reached == (200 if mode == "bare" else 3), f"{mode}: wrong logins handled: {reached}")
    c.close()


def case_flood_places(port, mode):
    """1c: True when every stream of the flood was answered."""
    c = H2(port)
    user = f"fp{mode}"
    sent = flood(c, "/flood", [("x-user", user)], 3000)
    sid = c.stream()
    c.send(c.get(sid, "/flood", [("x-user", user)]))
    later = c.answer(sid)
    print(f"{mode} 1c: {sent} streams reset at once to /flood (req_conns=2): "
          f"{len(c.status)} answered, a later one {later}, connection "
          f"{'ended' if c.closed else 'open'}")
    c.close()
    return sent == 3000 and later == 200


def case_goaway(port, log, mode):
    c = H2(port)
    good, bad = f"gg{mode}", f"gb{mode}"
    first = c.stream()
    c.send(c.get(first, "/login", [("x-user", good)] + GOOD))
    got = [c.answer(first)]
    c.send(frame(GOAWAY, 0, 0, struct.pack(">II", 0x7FFFFFFF, 0)))
    for _ in range(5):
        sid = c.stream()
        c.send(c.get(sid, "/login", [("x-user", good)] + GOOD))
        got.append(c.answer(sid))
    c.send(frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)))
    for _ in range(4):
        sid = c.stream()
        c.send(c.get(sid, "/login", [("x-user", good)] + GOOD))
        got.append(c.answer(sid))
    wrong = []
    for _ in range(5):
        sid = c.stream()
        c.send(c.get(sid, "/login", [("x-user", bad)] + BAD))
        wrong.append(c.answer(sid))
    reached = logged(log, "401", "/login", bad)
    print(f"{mode} 2: GOAWAY last 2^31-1, then 0: good logins {got}; wrong ones {wrong}, "
          f"nginx answered {reached} 401s")
    check(got == [200] * 10, f"{mode}: good logins after GOAWAYs: {got}")
    want = [401] * 5 if mode == "bare" else [401] * 3 + [None] * 2
    check(wrong == want and reached == want.count(401), f"{mode}: wrong: {wrong}, {reached}")
    c.close()


def trickled(c, sid, user, password):
    """POST /login: its header block in a HEADERS and CONTINUATIONs of 5
    bytes, its 24-byte body a byte a DATA frame, every third one padded."""
    body = f"user={user}&password={password}".encode()[:24].ljust(24, b".")
    blk = c.request("/login", [("x-user", user), ("x-password", password),
                               ("content-length", str(len(body)))], method="POST")
    out = frame(HEADERS, 0, sid, blk[:5])
    for i in range(5, len(blk), 5):
        out += frame(CONT, END_HEADERS if i + 5 >= len(blk) else 0, sid, blk[i:i + 5])
    for i, b in enumerate(body):
        end = END_STREAM if i == len(body) - 1 else 0
        if i % 3 == 0:
            out += frame(DATA, PADDED | end, sid, bytes([4, b]) + b"\0" * 4)
        else:
            out += frame(DATA, end, sid, bytes([b]))
    return out


def case_trickle(port, log, mode):
    c = H2(port)
    good, bad = f"tg{mode}", f"tb{mode}"
    got, wrong = [], []
    for _ in range(10):
        sid = c.stream()
        frames = trickled(c, sid, good, "right")
        for i in range(0, len(frames), 14):  # a write a frame or so
            c.send(frames[i:i + 14])
        got.append(c.answer(sid))
    for _ in range(5):
        sid = c.stream()
        c.send(trickled(c, sid, bad, "wrong"))
        wrong.append(c.answer(sid))
    reached = logged(log, "401", "/login", bad)
    print(f"{mode} 3: trickled POSTs: good {got}; wrong {wrong}, nginx answered {reached} 401s")
    check(got == [200] * 10, f"{mode}: trickled good logins: {got}")
    want = [401] * 5 if mode == "bare" else [401] * 3 + [None] * 2
    check(wrong == want and reached == want.count(401), f"{mode}: wrong: {wrong}, {reached}")
    c.close()


def case_reset_waiting(port, srv, mode):
    """4a: True when the places of the reset streams came back."""
    key = f"rw{mode}"
    c = H2(port)
    sids = [c.stream() for _ in range(8)]
    c.send(b"".join(c.get(s, "/slow", [("x-user", key)]) for s in sids))
    deadline = time.monotonic() + 5
    while len(server_lines(srv, key)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    c.send(b"".join(c.rst(s) for s in sids[1::2]))
    kept = sids[0::2]
    c.pump(lambda: all(s in c.ended for s in kept), timeout=10)
    got = [c.status.get(s) if s in c.whole else None for s in kept]
    c.round_trip()  # nginx has read the resets
    server_idle(srv, key)
    seen = [int(l[2]) for l in server_lines(srv, key) if l[0] == "IN"]
    print(f"{mode} 4a: 8 streams of one key, 4 reset while waiting: the others {got}, "
          f"connection {'ended' if c.closed else 'open'}; the server held {seen}")
    check(got == [200] * 4, f"{mode}: the streams not reset are answered: {got}")
    if mode != "bare":
        check(max(seen) <= 2, f"{mode}: at most 2 of the key at the server: {seen}")
    # the hostile connection open and idle: 2 more of the key on a new one
    d = H2(port)
    ds = [d.stream(), d.stream()]
    d.send(b"".join(d.get(s, "/slow?later", [("x-user", key)]) for s in ds))
    d.pump(lambda: all(s in d.ended for s in ds), timeout=10)
    burst = [d.status.get(s) if s in d.whole else None for s in ds]
    after = [int(l[2]) for l in server_lines(srv, key) if l[0] == "IN" and l[3] == "/slow?later"]
    print(f"{mode} 4a: then 2 of the key on a new connection: {burst}, the server held {after}")
    d.close()
    c.close()
    return burst == [200, 200] and after == [1, 2]


def case_burst(port, mode):
    """4b: True when all 40 streams of one key sent at once were answered."""
    c = H2(port)
    sids = [c.stream() for _ in range(40)]
    c.send(b"".join(c.get(s, "/flood", [("x-user", f"b{mode}")]) for s in sids))
    c.pump(lambda: all(s in c.ended for s in sids), timeout=10)
    got = [c.status.get(s) for s in sids if s in c.whole]
    print(f"{mode} 4b: 40 streams of one key at once to /flood (req_conns=2): {got.count(200)} "
          f"answered 200, connection {'ended' if c.closed else 'open'}")
    c.close()
    return got == [200] * 40


def case_interleaved(port, mode):
    c = H2(port)
    good, bad = f"ig{mode}", f"ib{mode}"
    got = []
    for _ in range(3):
        sids = [c.stream() for _ in range(3)]
        users = [(good, GOOD), (bad, BAD), (good, GOOD)]
        c.send(b"".join(c.get(s, "/mixed", [("x-user", u)] + p) for s, (u, p) in zip(sids, users)))
        c.pump(lambda: all(s in c.ended for s in sids), timeout=5)
        got.append([c.status.get(s) for s in sids])
    c.close()
    d = H2(port)
    ds = [d.stream() for _ in range(3)]
    d.send(b"".join(d.get(s, "/mixed", [("x-user", good)] + GOOD) for s in ds))
    d.pump(lambda: all(s in d.ended for s in ds), timeout=5)
    more = [d.status.get(s) for s in ds]
    d.close()
    e = H2(port)
    sid = e.stream()
    e.send(e.get(sid, "/mixed", [("x-user", bad)] + GOOD))
    nxt = e.answer(sid)
    e.close()
    print(f"{mode} 5: waves [good, bad, good] on one connection: {got}; 3 more good at once "
          f"{more}; the bad user's right password next: {nxt}")
    check(got == [[200, 401, 200]] * 3, f"{mode}: the waves: {got}")
    check(more == [200] * 3, f"{mode}: the good user's 200s were not counted: {more}")
    check(nxt == (200 if mode == "bare" else None), f"{mode}: the bad user's 3 401s counted: {nxt}")


def main():
    found = {}
    with TempDir() as tmp:
        back = free_port()
        with Proc(["/usr/bin/python3", "-c", WATCHING_SERVER, str(back), "0.5"]) as srv:
            wait_listen(back)
            for mode in ("bare", "sluice"):
                port = free_port()
                argv, log = site(tmp, port, back)
                ins = [f"port={port} route=/login {LOGIN}", f"port={port} route=/mixed {LOGIN}",
                       f"port={port} route=/slow {CONNS}", f"port={port} route=/flood {CONNS}"]
                if mode == "sluice":
                    argv = sluice_argv(argv, ins=ins)
                with Proc(argv) as ng:
                    wait_listen(port)
                    case_flood(port, log, ng, mode)
                    case_goaway(port, log, mode)
                    case_trickle(port, log, mode)
                    case_interleaved(port, mode)
                    found[mode, "A 1c"] = case_flood_places(port, mode)
                    found[mode, "A 4b"] = case_burst(port, mode)
                    found[mode, "B 4a"] = case_reset_waiting(port, srv, mode)
                    check(ng.p.poll() is None, f"{mode}: nginx is still running")
    check(all(v for (mode, _), v in found.items() if mode == "bare"), f"bare: {found}")
    check(all(found.values()), f"A (1c, 4b) and B (4a): {found}")


main()
