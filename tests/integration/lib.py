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
        self.stderr_path = stderr_path or f"/tmp/sluice-test-{os.getpid()}-{id(self)}.err"
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
    return Proc(argv, env=extra_env, cwd="/tmp")


def http_get(port, host="127.0.0.1", timeout=5.0, path="/"):
    """One request on a new connection. Returns (status, headers dict, body)
    or (None, error name) when the connection was reset or refused."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
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
