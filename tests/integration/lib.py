# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for sluice's integration tests: real programs under the shim,
loopback only, every wait bounded."""
import os
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
SLUICE = os.path.join(BUILD, "sluice")
LIB = os.path.join(BUILD, "libsluice.so")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")

# What this test process leaves behind goes in one temporary directory,
# removed at exit: servers' stderr logs, and the directory http.server
# serves (one small index.html, so a response never depends on what else
# happens to be in /tmp).
import atexit
import shutil
import tempfile
SCRATCH = tempfile.mkdtemp(prefix="sluice-test-")
atexit.register(shutil.rmtree, SCRATCH, True)
SERVE_DIR = os.path.join(SCRATCH, "www")
os.mkdir(SERVE_DIR)
with open(os.path.join(SERVE_DIR, "index.html"), "w") as _f:
    _f.write("<html><body>sluice test server</body></html>\n")


def free_port(host="127.0.0.1"):
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_port(port, host="127.0.0.1", timeout=10.0):
    """Waits until something listens on host:port (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listening on {host}:{port} after {timeout}s")


class Proc:
    """A background program, killed (with its process group) on exit."""

    def __init__(self, argv, env=None, cwd=None, stderr_path=None):
        e = dict(os.environ)
        e.update(env or {})
        self.stderr_path = stderr_path or os.path.join(SCRATCH, f"proc-{id(self)}.err")
        self.err = open(self.stderr_path, "w+")
        self.p = subprocess.Popen(argv, env=e, cwd=cwd, stdout=subprocess.DEVNULL,
                                  stderr=self.err, start_new_session=True)

    def stderr(self):
        self.err.flush()
        with open(self.stderr_path) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait(5)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()


def http_server(port, rules=None, config=None, host="127.0.0.1", extra_env=None):
    argv = [SLUICE, "run"]
    if config:
        argv += ["-c", config]
    for r in rules or []:
        argv += ["--in", r]
    argv += ["--", sys.executable, "-m", "http.server", str(port), "--bind", host]
    return Proc(argv, env=extra_env, cwd=SERVE_DIR)


def http_get(port, host="127.0.0.1", timeout=5.0, path="/", source=None, headers=""):
    """One request on a new connection (from address `source`, with extra
    header lines `headers`). Returns (status, headers dict, body) or
    (None, error name) when the connection was reset or refused."""
    try:
        with socket.create_connection((host, port), timeout=timeout,
                                      source_address=(source, 0) if source else None) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"
                      .encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except (ConnectionResetError, BrokenPipeError, ConnectionRefusedError, ConnectionAbortedError) as e:
        return None, type(e).__name__, b""
    if not data:
        return None, "empty", b""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


# ---------------------------------------------------------------------------
# Added for the outbound, nginx, config and fork tests. Everything below is
# bounded in time and cleans up after itself.

import json
import re
import shutil
import tempfile
import threading


class TempDir:
    """A private directory, removed on exit (even on failure)."""

    def __init__(self, prefix="sluice-it-"):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def join(self, *p):
        return os.path.join(self.path, *p)

    def write(self, name, text, mode=0o644):
        p = self.join(name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)
        return p

    def __enter__(self):
        return self

    def __exit__(self, *a):
        shutil.rmtree(self.path, ignore_errors=True)


def sluice_argv(cmd, config=None, ins=(), outs=(), dry_run=False):
    """argv for `sluice run [-c config] [--in R].. [--out R].. [--dry-run] -- cmd...`."""
    argv = [SLUICE, "run"]
    if config:
        argv += ["-c", config]
    for r in ins:
        argv += ["--in", r]
    for r in outs:
        argv += ["--out", r]
    if dry_run:
        argv.append("--dry-run")
    return argv + ["--"] + list(cmd)


def run(argv, env=None, timeout=30, input=None, cwd="/tmp"):
    """Runs a program to completion (bounded). Returns CompletedProcess with
    text stdout/stderr. A timeout kills the whole process group."""
    e = dict(os.environ)
    e.update(env or {})
    for k, v in list(e.items()):
        if v is None:
            del e[k]
    p = subprocess.Popen(argv, env=e, cwd=cwd, stdin=subprocess.PIPE if input else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"{argv} did not finish in {timeout}s\nstdout:{out}\nstderr:{err}")
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def run_python(code, env=None, timeout=30, **sluice):
    """Runs python3 -c CODE under `sluice run` (keyword args as for sluice_argv)."""
    return run(sluice_argv([sys.executable, "-c", code], **sluice), env=env, timeout=timeout)


def last_json(text):
    """The last line of text that parses as JSON (a client's result)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") or line.startswith("["):
            try:
                return json.loads(line)
            except ValueError:
                pass
    raise AssertionError("no JSON result in output:\n" + text)


def sluice_lines(stderr):
    """The lines sluice wrote (they start with `sluice[PID]:` or `sluice:`)."""
    return [l for l in stderr.splitlines() if re.match(r"sluice(\[\d+\])?:", l)]


def wait_listen(port, host="127.0.0.1", timeout=10.0):
    """Waits until a socket is in LISTEN on host:port, without connecting
    (a probe connection would spend a token of an inbound limit)."""
    want_port = f"{port:04X}"
    want_host = "".join(f"{int(b):02X}" for b in reversed(host.split(".")))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                h, p = local.split(":")
                if state == "0A" and p == want_port and h in (want_host, "00000000"):
                    return
        time.sleep(0.02)
    raise AssertionError(f"nothing in LISTEN on {host}:{port} after {timeout}s")


class TcpServer:
    """A plain TCP server in this (unpreloaded) test process: accepts,
    counts, optionally writes a line, closes. For outbound tests, where
    only the client runs under the shim."""

    def __init__(self, host="127.0.0.1", port=0, reply=b""):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(256)
        self.sock.settimeout(0.2)
        self.host, self.port = self.sock.getsockname()
        self.reply = reply
        self.accepted = 0
        self.times = []
        self._stop = False
        self.t = threading.Thread(target=self._loop, daemon=True)
        self.t.start()

    def _loop(self):
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.accepted += 1
            self.times.append(time.monotonic())
            try:
                if self.reply:
                    c.sendall(self.reply)
            except OSError:
                pass
            c.close()

    def stop(self):
        self._stop = True
        self.t.join(2)
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()


def compile_c(src, tmp, name="prog", extra=("-lpthread",)):
    """Compiles one C file into tmp (a TempDir); returns the binary's path."""
    c = tmp.write(name + ".c", src)
    out = tmp.join(name)
    r = run(["gcc", "-O1", "-Wall", "-o", out, c, *extra], timeout=60)
    check(r.returncode == 0, f"gcc failed:\n{r.stderr}")
    return out


def flood(port, seconds, host="127.0.0.1", threads=1, on_result=None):
    """Opens connections (one request each, http_get) as fast as `threads`
    sequential clients can for `seconds`. Returns (ok, denied, span, results):
    span runs from the first request's start to the last one's start,
    across threads; results is the list of (start_time, http_get result)."""
    results = []
    lock = threading.Lock()
    start = time.monotonic()

    def client():
        while time.monotonic() - start < seconds:
            t = time.monotonic()
            r = http_get(port, host=host)
            with lock:
                results.append((t, r))

    ts = [threading.Thread(target=client) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(seconds + 30)
    ok = sum(1 for _, r in results if r[0] == 200)
    starts = [t for t, _ in results]
    span = max(starts) - min(starts) if starts else 0.0
    return ok, len(results) - ok, span, results


def shm_cleanup(name):
    """Removes a shared table's segment (/dev/shm/sluice.NAME)."""
    try:
        os.unlink(f"/dev/shm/sluice.{name}")
    except FileNotFoundError:
        pass


# ---------------------------------------------------------------------------
# Added for the byte-rate, concurrency and event-loop tests (test_bw_*,
# test_conns_*, test_evloop_*). Bounded, and clean up after themselves.

CLK_TCK = os.sysconf("SC_CLK_TCK")


def make_file(path, size, block=1 << 20):
    """Writes `size` incompressible bytes (a random 1 MiB block repeated)."""
    blk = os.urandom(block)
    with open(path, "wb") as f:
        left = size
        while left > 0:
            f.write(blk[:min(left, block)])
            left -= block
    return path


def curl(url, args=(), wrap=(), timeout=60, env=None):
    """Runs curl (optionally under `wrap`, e.g. sluice_argv prefix) with
    `-w %{json}` and returns curl's own measurements as a dict (time_total,
    size_download, size_upload, size_header, size_request, http_code,
    exitcode, ...). The body goes to /dev/null unless args has -o."""
    argv = list(wrap) + ["curl", "-sS", "-o", "/dev/null", "-w", "%{json}", *args, url]
    r = run(argv, timeout=timeout, env=env)
    res = last_json(r.stdout)
    res["stderr"] = r.stderr
    res["returncode"] = r.returncode
    return res


def cpu_seconds(pid):
    """user + system CPU seconds of one process (all its threads), from
    /proc/PID/stat (resolution 1/CLK_TCK, 10 ms here)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def children(pid):
    """pids of the direct children of pid."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def wait_children(pid, n, timeout=10.0):
    """Waits (bounded) until pid has at least n children; returns them."""
    deadline = time.monotonic() + timeout
    kids = children(pid)
    while len(kids) < n and time.monotonic() < deadline:
        time.sleep(0.05)
        kids = children(pid)
    check(len(kids) >= n, f"pid {pid} has children {kids}, expected {n}")
    return kids


def within(measured, expected, tol):
    """|measured / expected - 1| <= tol."""
    return expected > 0 and abs(measured / expected - 1) <= tol


NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def nginx_config(tmp, http, workers=1, events=""):
    """Writes tmp/nginx.conf for a private nginx: pid, logs and temp paths in
    tmp (readable by workers running as nobody), `http` inside http {}.
    Returns (config path, argv to start it in the foreground)."""
    check(os.path.exists(NGINX), "nginx is not installed (apt-get install nginx-light)")
    os.chmod(tmp.path, 0o755)
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(tmp.join(d), exist_ok=True)
    conf = tmp.write("nginx.conf", f"""
worker_processes {workers};
pid {tmp.join('nginx.pid')};
error_log {tmp.join('error.log')} notice;
events {{ worker_connections 512; {events} }}
http {{
    client_body_temp_path {tmp.join('body')};
    proxy_temp_path {tmp.join('proxy')};
    fastcgi_temp_path {tmp.join('fastcgi')};
    uwsgi_temp_path {tmp.join('uwsgi')};
    scgi_temp_path {tmp.join('scgi')};
{http}
}}
""")
    return conf, [NGINX, "-p", tmp.path, "-e", tmp.join("error.log"), "-c", conf,
                  "-g", "daemon off;"]


def nginx_logged_site(tmp, server, fields, files=("index.html",)):
    """A private nginx (nginx_config) serving `files`, each "ok\n", from
    tmp/www, and logging each request's `fields` (an nginx log_format, e.g.
    '$remote_addr $status $uri') to tmp/access.log. `server` is the text of
    its server {} block less its root. Returns (argv, log path)."""
    www = tmp.join("www")
    os.makedirs(www, exist_ok=True)
    os.chmod(www, 0o755)
    for name in files:
        with open(os.path.join(www, name), "w") as f:
            f.write("ok\n")
    log = tmp.join("access.log")
    _, argv = nginx_config(tmp, f"""
    log_format who '{fields}';
    access_log {log} who;
    server {{
        root {www};
{server}
    }}""")
    return argv, log


def talk(port, data, source="127.0.0.1", tls=None, timeout=4.0, alpn=None):
    """One connection from `source` (over TLS with context `tls`, server
    name localhost, checking the ALPN protocol when `alpn` is given): sends
    data and reads until the server closes or `timeout` passes. A reset
    or a TLS error ends the reading; what was read stays. Returns it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    if tls:
        s = tls.wrap_socket(s, server_hostname="localhost")
        if alpn:
            check(s.selected_alpn_protocol() == alpn, f"ALPN: {s.selected_alpn_protocol()}")
    got = b""
    deadline = time.monotonic() + timeout
    try:
        s.sendall(data)
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            got += chunk
    except OSError:  # a reset after a 429, ssl.SSLError: what was read stays
        pass
    finally:
        s.close()
    return got


def nginx_sendfile_site(tmp, port, files):
    """A private nginx (epoll, sendfile on) serving `files` ({name: size},
    incompressible) from tmp/www on 127.0.0.1:port. Returns its argv."""
    www = tmp.join("www")
    os.mkdir(www)
    os.chmod(www, 0o755)
    for name, size in files.items():
        make_file(os.path.join(www, name), size)
    _, argv = nginx_config(tmp, events="use epoll;", http=f"""
    access_log off;
    sendfile on;
    tcp_nopush on;
    server {{
        listen 127.0.0.1:{port};
        root {www};
    }}""")
    return argv


# ---------------------------------------------------------------------------
# A keep-alive HTTP/1.1 "vendor", API or server: python's
# ThreadingHTTPServer answering every GET and POST (its Content-Length body
# read) with 200 "ok\n" (3 bytes, head and body in one write), on one or
# more loopback ports, optionally over TLS (a certificate and key the test
# made). It can log each request it serves to stderr as "SERVED PATH
# CLIENT_PORT MONOTONIC_TIME X-API-KEY" (`log`; served() reads them, the
# key "-" when none came), and to a file as "200 PATH" (`served_log`, the
# form servers.py's recipes read).

KEEPALIVE_SERVER = r"""
import ssl, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
args, log, served_log, tls = sys.argv[1:], False, None, None
while args[0].startswith("--"):
    if args[0] == "--log":
        log, args = True, args[1:]
    elif args[0] == "--served-log":
        served_log, args = open(args[1], "a", buffering=1), args[2:]
    else:  # --tls CERT KEY
        tls, args = args[1:3], args[3:]
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1
    def do_GET(self):
        if log:
            sys.stderr.write("SERVED %s %d %.6f %s\n" % (self.path, self.client_address[1],
                                                         time.monotonic(),
                                                         self.headers.get("X-API-Key", "-")))
            sys.stderr.flush()
        if served_log:
            served_log.write("200 %s\n" % self.path)
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.do_GET()
    def log_message(self, *a):
        pass
servers = [ThreadingHTTPServer(("127.0.0.1", int(p)), H) for p in args]
if tls:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls[0], tls[1])
    for s in servers:
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
for s in servers[1:]:
    threading.Thread(target=s.serve_forever, daemon=True).start()
servers[0].serve_forever()
"""


def keepalive_argv(*ports, log=False, tls=None, served_log=None):
    """The argv of KEEPALIVE_SERVER on `ports`; tls = (cert, key); served_log:
    a file for "200 PATH" lines."""
    argv = [sys.executable, "-c", KEEPALIVE_SERVER] + (["--log"] if log else [])
    if served_log:
        argv += ["--served-log", served_log]
    if tls:
        argv += ["--tls", tls[0], tls[1]]
    return argv + [str(p) for p in ports]


def served(proc, prefix="/", key=None):
    """The requests a logging KEEPALIVE_SERVER served whose path starts with
    prefix (and that carried X-API-Key `key`, when given), as (path, client
    port, monotonic time)."""
    out = []
    for l in proc.stderr().splitlines():
        w = l.split()
        if len(w) == 5 and w[0] == "SERVED" and w[1].startswith(prefix) and key in (None, w[4]):
            out.append((w[1], int(w[2]), float(w[3])))
    return out


def make_cert(tmp, cn="127.0.0.1"):
    """A self-signed P-256 certificate and key made by openssl in tmp."""
    key, crt = tmp.join("key.pem"), tmp.join("cert.pem")
    r = run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", key, "-out", crt, "-days", "1", "-subj", f"/CN={cn}"])
    check(r.returncode == 0, f"openssl req: {r.stderr}")
    os.chmod(key, 0o644)  # nginx's workers read it as nobody
    return crt, key


# ---------------------------------------------------------------------------
# An nginx "vendor" over TLS with HTTP/2 (and optionally plain HTTP), logging
# each request it answers as "STATUS PROTOCOL [CONNECTION] URI", for the
# outbound client tests (curl, wget, php, asyncio...).

class NginxVendor:
    """nginx on 127.0.0.1:tls_port (ssl http2) and, with plain=True, on
    plain_port too; `argv` starts it. `served(tag)` are the logged requests
    whose URI contains /tag, split in fields; `logged(tag, n)` waits (5 s at
    most) until n of them are there, since nginx logs after answering."""

    def __init__(self, tmp, plain=False, connection=True, keepalive=30):
        self.crt, self.key = make_cert(tmp)
        self.port = free_port()
        self.plain_port = free_port() if plain else None
        self.log = tmp.join("access.log")
        fields = "$status $server_protocol $connection $uri" if connection else \
            "$status $server_protocol $uri"
        plain_listen = f"listen 127.0.0.1:{self.plain_port};" if plain else ""
        _, self.argv = nginx_config(tmp, events="use epoll;", http=f"""
    log_format brief '{fields}';
    access_log {self.log} brief;
    keepalive_timeout {keepalive};
    server {{
        listen 127.0.0.1:{self.port} ssl http2;
        {plain_listen}
        ssl_certificate {self.crt};
        ssl_certificate_key {self.key};
        location / {{ return 200 "ok\\n"; }}
    }}
""")

    def served(self, tag):
        try:
            with open(self.log) as f:
                return [l.split() for l in f.read().splitlines() if f"/{tag}" in l]
        except FileNotFoundError:
            return []

    def logged(self, tag, n):
        deadline = time.monotonic() + 5
        while len(self.served(tag)) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.served(tag)


# One Go HTTP client for the tests that need one (test_go_proxy.py,
# test_client_coverage.py): `goclient URL N [h1]` GETs URL0..URL(N-1) one
# after another and prints each status (or "ERR ..."); the proxy comes from
# the environment (Go never proxies loopback literals or localhost); h2 is
# offered over TLS unless "h1" is given.
GO_CLIENT = """package main

import (
\t"crypto/tls"
\t"fmt"
\t"io"
\t"net/http"
\t"os"
\t"strconv"
\t"time"
)

func main() {
\tn, _ := strconv.Atoi(os.Args[2])
\tfmt.Fprintln(os.Stderr, "env HTTPS_PROXY="+os.Getenv("HTTPS_PROXY"), "HTTP_PROXY="+os.Getenv("HTTP_PROXY"))
\tt := http.DefaultTransport.(*http.Transport).Clone() // Proxy: http.ProxyFromEnvironment
\tt.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
\tt.ForceAttemptHTTP2 = len(os.Args) < 4 || os.Args[3] != "h1"
\tc := &http.Client{Timeout: 20 * time.Second, Transport: t}
\tfor i := 0; i < n; i++ {
\t\tr, err := c.Get(os.Args[1] + strconv.Itoa(i))
\t\tif err != nil {
\t\t\tfmt.Println("ERR", err)
\t\t\tcontinue
\t\t}
\t\tio.Copy(io.Discard, r.Body)
\t\tr.Body.Close()
\t\tfmt.Println(r.StatusCode)
\t}
}
"""


def go_client_build(tmp):
    """(argv, env, path) that build GO_CLIENT into tmp/goclient, with a Go
    cache that outlives the test (a cold build of net/http takes a
    minute)."""
    os.makedirs(tmp.join("gop"), exist_ok=True)
    src = tmp.write("gop/main.go", GO_CLIENT)
    cache = os.path.join(tempfile.gettempdir(), "sluice-test-gocache")
    env = {"GOCACHE": cache, "GOPATH": tmp.join("gopath"), "HOME": tmp.path,
           "CGO_ENABLED": "1", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    return ["go", "build", "-o", tmp.join("goclient"), src], env, tmp.join("goclient")


def page_poll(url, tmp, script, timeout=10.0):
    """What `script` (JavaScript returning a value, or null until the page
    shows it) returns on the page at url, drawn by headless Chromium (as
    test_live_page.py runs it), polled until it is not null or timeout s
    pass (None then); None without selenium."""
    try:
        try:
            from selenium import webdriver
        except ImportError:  # a python3 other than Debian's
            sys.path.append("/usr/lib/python3/dist-packages")
            from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--user-data-dir={tmp.join('chromium')}"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        drv.set_page_load_timeout(20)
        drv.get(url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = drv.execute_script(script)
            if got:
                return got
            time.sleep(0.1)
        return None
    finally:
        drv.quit()
