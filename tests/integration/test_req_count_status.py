# SPDX-License-Identifier: BSD-2-Clause
"""count_status: an inbound budget taken only by the answers of some
statuses (issue 35, item 5): ten wrong passwords, then 429.

The server is python's ThreadingHTTPServer (HTTP/1.1 keep-alive) with a
login route: GET /login answers 401 when the X-Password header is not
"right", 200 when it is; every other path answers 200. It logs one line per
request it handles, so the test knows which requests reached it.

Under `per=header:X-User req_rate=3/h count_status=401 action=reply`, each
user has a budget of 3 failed logins an hour (req_burst defaults to 3), and
nothing else takes from it (one refills in 20 minutes: none during the
test, so the counts are exact, whatever the machine's load):
1. user alice: 3 wrong passwords answer 401 (the server says so), then her
   next request, with the right password, is refused by sluice (429) and
   never reaches the server; so is her next one, on a new connection.
2. user bob, meanwhile: 6 right passwords answer 200 (200s take nothing:
   without count_status the 4th would be a 429), then a wrong one answers
   401, then a right one 200: his budget is his own.
3. pipelining: user carol sends 3 wrong passwords in one write: the
   server's three 401s are paired with their requests in order and all
   three count: her next request is a 429.
4. per peer (no per=): under count_status=401,403 a 403 counts too: two
   403s from the peer exhaust a budget of 2 (req_rate=2/h), and the next
   request of the peer is a 429.
5. nginx (2 workers, sendfile on, keep-alive): /login answers 401 unless
   X-Password is "right" (`return 401`, written with writev), /index.html
   is a static file (its body sent with sendfile, which sluice reads back
   from the file to follow the stream). User dave, on one keep-alive
   connection, alternates the static file and wrong passwords: his three
   401s count though a sendfile body lies between each (the responses stay
   paired), and his next login is a 429; user erin, on connections of her
   own, still gets nginx's 200 and 401. nginx's access log has no 429:
   the refused request never reached it.
6. the configuration refuses count_status without req_rate, and outbound.
7. over TLS the server terminates itself (python's ssl module): the
   responses written through SSL_write are read as the plain ones (before,
   they were not: alice's fourth login answered 200).
"""
import socket
import ssl

from lib import *
from answerslib import LOGIN_SERVER



def handled(proc):
    return [l.split()[1:] for l in proc.stderr().splitlines() if l.startswith("HANDLED ")]


def read_response(f):
    """The status of one response from a socket file; None at EOF."""
    line = f.readline()
    if not line:
        return None
    status = int(line.split()[1])
    length = 0
    while True:
        l = f.readline().decode("latin-1").strip()
        if not l:
            break
        k, _, v = l.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    f.read(length)
    return status


def request(user, password, path="/login"):
    u = f"X-User: {user}\r\n" if user else ""
    return f"GET {path} HTTP/1.1\r\nHost: t\r\n{u}X-Password: {password}\r\n\r\n".encode()


class Client:
    """One user's keep-alive connection; a new one after the server (or a
    429) closes it."""

    def __init__(self, port, user, tls=False):
        self.port, self.user, self.s, self.tls = port, user, None, tls

    def login(self, password, path="/login"):
        if self.s is None:
            self.s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            if self.tls:
                self.s = ssl._create_unverified_context().wrap_socket(self.s)
            self.f = self.s.makefile("rb")
        try:
            self.s.sendall(request(self.user, password, path))
            r = read_response(self.f)
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            r = None
        if r is None or r == 429:
            self.s.close()
            self.s = None
        return r


def serve(port, rule, tls=()):
    tmp = TempDir()
    p = Proc(sluice_argv([sys.executable, "-c", LOGIN_SERVER, str(port), *tls], ins=[rule]),
             stderr_path=tmp.join("server.log"))
    wait_port(port)
    return p


port = free_port()
with serve(port, f"port={port} req_rate=3/h per=header:X-User count_status=401 action=reply") as srv:
    alice, bob = Client(port, "alice"), Client(port, "bob")
    # 1 and 2, interleaved: bob's answers are the server's whatever alice does
    a = [alice.login("wrong") for _ in range(3)]
    b = [bob.login("right") for _ in range(6)]
    a += [alice.login("right"), alice.login("right")]
    b += [bob.login("wrong"), bob.login("right")]
    print(f"alice: {a}; bob: {b}")
    check(a == [401, 401, 401, 429, 429], f"alice: three 401s, then 429s: {a}")
    check(b == [200] * 6 + [401, 200], f"bob: the server's own answers: {b}")

    # 3. pipelined
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"".join(request("carol", "wrong") for _ in range(3)))
    f = s.makefile("rb")
    c = [read_response(f) for _ in range(3)]
    s.close()
    c.append(Client(port, "carol").login("right"))
    print(f"carol (pipelined): {c}")
    check(c == [401, 401, 401, 429], f"carol: three pipelined 401s count, then 429: {c}")

    time.sleep(0.3)  # the server's log lines
    seen = handled(srv)
    check(seen.count(["/login", "alice"]) == 3, f"alice's 429s never reached the server: {seen}")
    check(seen.count(["/login", "bob"]) == 8, f"every one of bob's reached it: {seen}")
    check(seen.count(["/login", "carol"]) == 3, f"carol's fourth did not: {seen}")

# 7. over TLS
with TempDir() as tmp:
    port = free_port()
    with serve(port, f"port={port} req_rate=3/h per=header:X-User count_status=401 action=reply",
               tls=make_cert(tmp)) as srv:
        alice, bob = Client(port, "alice", tls=True), Client(port, "bob", tls=True)
        a = [alice.login("wrong") for _ in range(3)] + [alice.login("right")]
        b = [bob.login("right"), bob.login("wrong")]
        print(f"over TLS: alice: {a}; bob: {b}")
        check(a == [401, 401, 401, 429], f"over TLS: alice: three 401s, then 429: {a}")
        check(b == [200, 401], f"over TLS: bob: the server's own answers: {b}")

# 4. per peer, two statuses
port = free_port()
with serve(port, f"port={port} req_rate=2/h req_burst=2 count_status=401,403 action=reply") as srv:
    cl = Client(port, None)
    p = [cl.login("right", "/"), cl.login("x", "/forbidden"), cl.login("right", "/"),
         cl.login("x", "/forbidden"), cl.login("right", "/")]
    print(f"peer: {p}")
    check(p == [200, 403, 200, 403, 429], f"the peer: two 403s spend its budget of 2: {p}")

# 5. nginx
with TempDir() as tmp:
    port = free_port()
    log = tmp.join("access.log")
    www = tmp.join("www")
    os.makedirs(www)
    with open(os.path.join(www, "index.html"), "w") as f:
        f.write("x" * 20000 + "\n")  # a body larger than one sendfile call might move
    os.chmod(www, 0o755)
    os.chmod(os.path.join(www, "index.html"), 0o644)
    _, argv = nginx_config(tmp, f"""
    log_format brief '$status $uri $http_x_user';
    access_log {log} brief;
    sendfile on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {www};
        location = /login {{
            if ($http_x_password != "right") {{ return 401; }}
            return 200 "welcome\n";
        }}
    }}
""", workers=2, events="use epoll;")
    rule = f"port={port} req_rate=3/h per=header:X-User count_status=401 action=reply"
    with Proc(sluice_argv(argv, ins=[rule])) as ng:
        wait_listen(port)
        dave, erin = Client(port, "dave"), Client(port, "erin")
        d = []
        for _ in range(3):
            d += [dave.login("x", "/index.html"), dave.login("wrong")]
        d += [dave.login("right")]
        e = [erin.login("right"), erin.login("wrong"), erin.login("right"),
             erin.login("x", "/index.html")]
        print(f"nginx: dave {d}; erin {e}")
        check(d == [200, 401] * 3 + [429], f"dave: three 401s between static files, then 429: {d}")
        check(e == [200, 401, 200, 200], f"erin: nginx's own answers: {e}")
        time.sleep(0.3)  # nginx logs after the response
        with open(log) as f:
            lines = [l.split() for l in f if l.strip()]
        check(not any(l[0] == "429" for l in lines), f"nginx never answered 429: {lines}")
        check(sum(1 for l in lines if l[1:] == ["/login", "dave"]) == 3,
              f"dave's fourth login never reached nginx: {lines}")
        check(ng.p.poll() is None, "nginx is still running")

# 6. refused where it cannot apply
for flag, rule, why in (("--in", "port=1 count_status=401", "needs req_rate"),
                        ("--out", "to=127.0.0.1:1 req_rate=1/s count_status=401",
                         "only for inbound")):
    r = run([SLUICE, "check", flag, rule])
    check(r.returncode != 0 and why in r.stderr, f"{rule}: refused ({why}): {r.stderr}")
print("ok")
