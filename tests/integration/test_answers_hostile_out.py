# SPDX-License-Identifier: BSD-2-Clause
"""`learn` and token budgets against a hostile vendor (outbound): the
review of the options that read the answers a program gets.

The vendors are servers in this test process (not under the shim) on
127.0.0.1; the client is python's http.client under `sluice run`.

learn (vendorlib's fake vendor, `to=127.0.0.1 port=P req_rate=100/s
req_burst=100 learn=yes`: the rule's own rate holds nothing here). The
vendor stamps each arrival with time.monotonic(); the client makes two
calls on one keep-alive connection; `after` is the second's arrival less
the first's. A learned hold starts when the client reads the answer, after
the vendor sent it: a held call arrives no sooner than the hold (0.1 s
off for timer rounding), and the upper bounds carry 3 s for a loaded
machine (a hold that was not capped would be hours).
1. Retry-After: 10^22 (beyond any clock) with learn_max=2s: not held
   longer than learn_max: after <= 2 + 3 s; the log says why (capped or
   ignored).
2. Retry-After as an HTTP-date in the past: ignored (nothing held: after
   < 1.5 s) and counted in `sluice stats` (learn_ignored 1).
3. two Retry-After fields in one 429 (1 and 3): one of them holds:
   0.9 s <= after <= 3 + 3 s.
4. a 429 with Retry-After: 2 written one byte a send (TCP_NODELAY, 2 ms
   apart): learned as if whole: after >= 1.9 s.
5. a vendor that answers every call 429 with Retry-After: 5 (action=delay,
   max_delay=1s, learn_max=10m, scope=local): the client makes 4 calls;
   each ends (its 429, or sluice's refusal) within max_delay + 3 s, never
   held the 5 s the vendor asks, nor for ever.

Token budgets (the fake LLM endpoint of test_req_out_cost.py: POST
/PATH answers a JSON body, or a stream; rule `per=header:X-User
cost_from=json:usage.total_tokens cost_rate=1000/m cost_burst=1000 cost=7
action=reply`, one table per case). The client reads each answer whole
and prints its sha256, which must be the sha256 of what the endpoint
sent: sluice never changes a byte. Then `sluice stats` says how the call
was charged:
6. total_tokens -5, 2^63, 12.5: not a whole number sluice will charge:
   the rule's cost (7) by the rule of doubt, counted unread; the next
   call of the key passes (a debt of 2^63 would refuse it for ever).
7. a JSON body of 10 MB with usage at its end: past the 64 KiB read: 7 by
   doubt, unread; the program gets its 10 MB unchanged.
8. usage nested 1000 deep: past the 64 levels read: 7 by doubt, unread.
9. an SSE stream that never ends (an event every 2 ms, and one data line
   of 1 MB without an end): the client reads 2 MB of it and hangs up: the
   call is charged 7 by doubt when the connection ends, unread.
Each cause is said once in the log (`could not be read`).
"""
import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lib import *
from vendorlib import Vendor, scripted

SLACK = 3.0

LEARN_CLIENT = r"""
import http.client, json, sys, time
port, calls = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
out = []
for i in range(calls):
    t = time.monotonic()
    try:
        c.request("GET", "/c/%d" % i)
        r = c.getresponse()
        r.read()
        what = r.status
    except Exception as e:
        what = type(e).__name__
        c.close()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    out.append([what, round(time.monotonic() - t, 3)])
print(json.dumps(out))
"""


class Multi(list):
    """Header fields as (name, value) pairs, a name repeated (Vendor sends
    headers.items())."""

    def items(self):
        return self


def rule(port, extra):
    return f"to=127.0.0.1 port={port} req_rate=100/s req_burst=100 learn=yes {extra}"


def learn_case(tmp, tag, script, extra, calls=2, port=None, seen=None):
    """Runs the client under the rule; returns (its results, the vendor's
    arrivals relative to the first, stderr, stats text)."""
    v = None
    if port is None:
        v = Vendor(scripted(script) if isinstance(script, list) else script)
        port = v.port
    name = f"it-hostile-{tag}-{os.getpid()}"
    conf = tmp.write(f"{tag}.conf", f'shared = "{name}"\n')
    try:
        p = run(sluice_argv([sys.executable, "-c", LEARN_CLIENT, str(port), str(calls)],
                            config=conf, outs=[rule(port, extra)]), timeout=90)
        check(p.returncode == 0, f"{tag}: exit {p.returncode}\n{p.stdout}{p.stderr}")
        st = run([SLUICE, "stats", "--shared", name]).stdout
        arrivals = sorted(t for t, _, _ in (v.seen if v else seen))
        return last_json(p.stdout), [round(t - arrivals[0], 3) for t in arrivals[1:]], p.stderr, st
    finally:
        if v:
            v.close()
        shm_cleanup(name)


def stats_row(text, section, rule_name):
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if l.startswith(section):
            head = lines[i + 1].split()
            for x in lines[i + 2:]:
                if x.split()[:1] == [rule_name]:
                    return dict(zip(head[1:], map(int, x.split()[1:len(head)])))
    raise AssertionError(f"no {rule_name} row under {section}:\n{text}")


class TrickleVendor:
    """Answers the first request with a 429 (Retry-After: 2) written one
    byte a send, 2 ms apart; later ones with a 200 at once."""

    def __init__(self):
        self.seen = []
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while True:
            try:
                s, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.conn, args=(s,), daemon=True).start()

    def conn(self, s):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(30)
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    d = s.recv(4096)
                    if not d:
                        return
                    buf += d
                _, _, buf = buf.partition(b"\r\n\r\n")
                self.seen.append((time.monotonic(), "", 0))
                if len(self.seen) == 1:
                    for b in (b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\n"
                              b"Content-Length: 3\r\n\r\nno\n"):
                        s.send(bytes([b]))
                        time.sleep(0.002)
                else:
                    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
        except OSError:
            return
        finally:
            s.close()

    def close(self):
        # The accept is woken (a shut listener fails it) and its thread
        # waited for before the descriptor is closed: a closed number is
        # reused by the next socket (the token cases' endpoint), which an
        # accept reading the number late would take connections from.
        try:
            self.ls.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.t.join(5)
        self.ls.close()


BIG = 10 * 1024 * 1024
STREAM_HEAD = b"data: " + b"y" * (1 << 20) + b"\n\n"


def body_of(path):
    """The endpoint's body for a path (None: a stream)."""
    if path == "/neg":
        return json.dumps({"usage": {"total_tokens": -5}}).encode()
    if path == "/huge":
        return b'{"usage": {"total_tokens": 9223372036854775808}}'
    if path == "/frac":
        return b'{"usage": {"total_tokens": 12.5}}'
    if path == "/ok":
        return b'{"usage": {"total_tokens": 10}}'
    if path == "/big":
        pad = b'{"pad": "' + b"x" * (BIG - 64) + b'", '
        return pad + b'"usage": {"total_tokens": 10}}'
    if path == "/deep":
        return b'{"a": ' + b"[" * 1000 + b"1" + b"]" * 1000 + b', "usage": {"total_tokens": 10}}'
    return None


class Endpoint:
    def __init__(self):
        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                b = body_of(self.path)
                if b is not None:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(b)))
                    self.end_headers()
                    self.wfile.write(b)
                    return
                # a stream that never ends (bounded: 30 s, or the client's hang-up)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                end = time.monotonic() + 30
                ev = b'data: {"choices": [{"delta": {"content": "%s"}}]}\n\n' % (b"x" * 4000)
                try:
                    self.wfile.write(STREAM_HEAD)  # a data line of 1 MB
                    while time.monotonic() < end:
                        self.wfile.write(ev)
                        self.wfile.flush()
                        time.sleep(0.002)
                except OSError:
                    pass
                self.close_connection = True

            def log_message(self, *a):
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


# argv: port, then paths; each called once as user "u" on a new
# connection; prints per call its status, the sha256 and length of what it
# read (a stream: its first 2 MB, then a hang-up).
COST_CLIENT = r"""
import hashlib, http.client, json, sys
port, paths = int(sys.argv[1]), sys.argv[2:]
out = []
for p in paths:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", p, body=b"{}", headers={"X-User": "u"})
    r = c.getresponse()
    if p == "/stream":
        got = b""
        while len(got) < 2 * 1024 * 1024:
            d = r.read1(65536) if hasattr(r, "read1") else r.read(65536)
            if not d:
                break
            got += d
    else:
        got = r.read()
    c.close()
    if p == "/stream":  # what the endpoint wrote first: its 1 MB line
        got_sha = hashlib.sha256(got[:(1 << 20) + 8]).hexdigest()
    else:
        got_sha = hashlib.sha256(got).hexdigest()
    out.append([p, r.status, got_sha, len(got)])
print(json.dumps(out))
"""


def cost_case(tmp, ep, tag, paths):
    name = f"it-hostile-{tag}-{os.getpid()}"
    conf = tmp.write(f"{tag}.conf", f"""
shared = "{name}"
outbound "llm" {{
    to         = "127.0.0.1"
    port       = {ep.port}
    per        = "header:X-User"
    cost_from  = "json:usage.total_tokens"
    cost_rate  = "1000/m"
    cost_burst = 1000
    cost       = 7
    action     = "reply"
}}
""")
    try:
        p = run(sluice_argv([sys.executable, "-c", COST_CLIENT, str(ep.port), *paths],
                            config=conf), timeout=90)
        check(p.returncode == 0, f"{tag}: exit {p.returncode}\n{p.stdout}{p.stderr}")
        st = run([SLUICE, "stats", "-c", conf]).stdout
        return last_json(p.stdout), stats_row(st, "tokens (", "llm"), p.stderr
    finally:
        shm_cleanup(name)


def main():
    with TempDir() as tmp:
        # 1. Retry-After beyond any clock
        res, after, err, st = learn_case(tmp, "huge", [(429, {"Retry-After": "1" + "0" * 22})],
                                         "learn_max=2s action=delay max_delay=10s")
        said = [l for l in sluice_lines(err) if "retry-after" in l.lower()]
        print("1. Retry-After 10^22:", res, "after", after, said)
        check([r[0] for r in res] == [429, 200], f"huge: {res}\n{err}")
        check(after and after[0] <= 2 + SLACK, f"huge: held {after} s > learn_max 2 s\n{err}")
        check(said and ("capped" in said[0] or "ignored" in said[0]), f"huge: not said:\n{err}")

        # 1b. a year less a little: capped at learn_max, said
        res, after, err, st = learn_case(tmp, "year", [(429, {"Retry-After": "30000000"})],
                                         "learn_max=2s action=delay max_delay=10s")
        said = [l for l in sluice_lines(err) if "retry-after" in l.lower()]
        print("1b. Retry-After 30000000 (347 days):", res, "after", after, said)
        check([r[0] for r in res] == [429, 200], f"year: {res}\n{err}")
        check(after and 1.9 <= after[0] <= 2 + SLACK,
              f"year: held {after} s, not learn_max 2 s\n{err}")
        check(said and "capped" in said[0], f"year: not said capped:\n{err}")

        # 2. an HTTP-date in the past
        res, after, err, st = learn_case(
            tmp, "past", [(429, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})],
            "action=delay max_delay=10s")
        row = stats_row(st, "requests (", "out-1")
        print("2. Retry-After in the past:", res, "after", after, "stats", row)
        check([r[0] for r in res] == [429, 200] and after[0] < 1.5,
              f"past: held {after}\n{err}")
        check(row.get("learn_ignored") == 1 and row.get("learned") == 0, f"past: stats {row}")

        # 3. two conflicting Retry-After fields
        res, after, err, st = learn_case(
            tmp, "two", [(429, Multi([("Retry-After", "1"), ("Retry-After", "3")]))],
            "action=delay max_delay=10s")
        print("3. Retry-After 1 and 3 in one answer:", res, "after", after,
              [l for l in sluice_lines(err) if "learned" in l])
        check([r[0] for r in res] == [429, 200], f"two: {res}\n{err}")
        check(0.9 <= after[0] <= 3 + SLACK, f"two: held {after}\n{err}")

        # 4. a 429 trickled byte by byte
        tv = TrickleVendor()
        try:
            res, after, err, st = learn_case(tmp, "trickle", None, "action=delay max_delay=10s",
                                             port=tv.port, seen=tv.seen)
        finally:
            tv.close()
        print("4. a 429 trickled byte by byte:", res, "after", after)
        check([r[0] for r in res] == [429, 200], f"trickle: {res}\n{err}")
        check(after[0] >= 1.9, f"trickle: the trickled Retry-After held only {after}\n{err}")

        # 5. a vendor that always says 429, Retry-After: 5
        res, after, err, st = learn_case(
            tmp, "always", lambda i, t, p: (429, {"Retry-After": "5"}),
            "learn_max=10m action=delay max_delay=1s scope=local", calls=4)
        print("5. always 429 Retry-After 5, max_delay 1s:", res, "vendor arrivals", after)
        check(len(res) == 4, f"always: {res}\n{err}")
        check(all(w <= 1 + SLACK for _, w in res), f"always: a call waited past max_delay: {res}")
        check(res[0][0] == 429 and all(w in (429, "TimeoutError") for w, _ in res),
              f"always: the vendor's 429 or sluice's refusal: {res}\n{err}")

        # 6-9. token budgets
        ep = Endpoint()
        try:
            expect = {p: hashlib.sha256(body_of(p)).hexdigest() for p in
                      ("/neg", "/huge", "/frac", "/big", "/deep", "/ok")}
            expect["/stream"] = hashlib.sha256(STREAM_HEAD).hexdigest()
            for tag, path in (("neg", "/neg"), ("huge2", "/huge"), ("frac", "/frac"),
                              ("big", "/big"), ("deep", "/deep"), ("stream", "/stream")):
                t = time.monotonic()
                res, row, err = cost_case(tmp, ep, tag, [path, "/ok"])
                print(f"{path}: {[(p, s, n) for p, s, _, n in res]} tokens row {row} "
                      f"({time.monotonic() - t:.1f} s)")
                check([s for _, s, _, _ in res] == [200, 200],
                      f"{path}: the next call of the key passes: {res}\n{err}")
                check(res[0][2] == expect[path], f"{path}: the body changed: {res}")
                if path == "/stream":
                    check(res[0][3] >= 2 * 1024 * 1024, f"{path}: the stream: {res}")
                check(res[1][2] == expect["/ok"], f"/ok after {path}: {res}")
                check(row["calls"] == 2 and row["unread"] == 1 and row["unread_tokens"] == 7
                      and row["tokens"] == 17, f"{path}: charged 7 by doubt, then 10: {row}\n{err}")
                check(sum("could not be read" in l for l in sluice_lines(err)) == 1,
                      f"{path}: said once:\n{err}")
        finally:
            ep.close()
    print("ok")


if __name__ == "__main__":
    main()
