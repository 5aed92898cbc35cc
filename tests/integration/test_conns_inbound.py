# SPDX-License-Identifier: BSD-2-Clause
"""Inbound `conns=3`: a server holding each connection open until the client
closes it (it writes "hello PID" on accept, reads to EOF, then closes with
plain close(), no shutdown first) under `sluice run --in 'port=P conns=3'`.

Asserted, for a threaded server (one process) with action=reject:
  - 3 simultaneous connections from 127.0.0.1 are admitted (each reads its
    hello), the 4th is reset before the program sees it (ECONNRESET, no
    hello), and the refused one takes no place;
  - when a client closes one of the 3 (it half-closes and waits for the
    server's FIN, which the server sends from close(), after sluice has
    given the place back), the very next connection is admitted, at the
    first attempt, and the one after it is reset again (exactly one place
    came back);
  - another peer (source 127.0.0.2) has places of its own: admitted while
    127.0.0.1 is full;
with action=reply, the 4th gets the HTTP 429;
for a pre-fork server (a child per connection, the parent closes its copy
at once, SIGCHLD ignored so children are reaped by the kernel):
  - the children's copies count: 3 held, the 4th reset;
  - a child that closes and exits gives its place back at once (the next
    connection is admitted at the first attempt);
  - a child killed with SIGKILL while holding one: its place comes back
    within 300 ms. No close runs in a killed process, so the place is
    reclaimed by the sweep, which runs when a connection finds the key
    full, at most once every 100 ms: the test retries every 10 ms, so the
    first admission comes at most ~100 ms (sweep interval) + 10 ms (retry
    period) + a connection's round trip after the kill; 300 ms leaves room
    for a loaded machine. (The server ignores SIGCHLD: a killed child that
    its parent never reaps stays a zombie, which the sweep's kill(pid, 0)
    still finds alive, and its place stays taken until it is reaped.)
examples/conns.conf, copied with port 5432 swapped for a free one, admits
its 20 connections from one peer and resets the 21st."""
from lib import *

SERVER = r"""
import os, signal, socket, sys, threading
port, mode = int(sys.argv[1]), sys.argv[2]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(('127.0.0.1', port))
ls.listen(64)
def hold(c):
    c.sendall(b'hello %d\n' % os.getpid())
    while True:
        try:
            d = c.recv(4096)
        except OSError:
            break
        if not d:
            break
    c.close()
if mode == 'fork':
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
while True:
    c, _ = ls.accept()
    if mode == 'thread':
        threading.Thread(target=hold, args=(c,), daemon=True).start()
    else:
        pid = os.fork()
        if pid == 0:
            ls.close()
            hold(c)
            os._exit(0)
        c.close()
"""


def attempt(port, source="127.0.0.1"):
    """Connects and reads the first line. Returns (socket, line) when
    admitted (hello), else (None, 'reset' | 'eof' | first bytes)."""
    s = socket.socket()
    s.settimeout(3)
    s.bind((source, 0))
    try:
        s.connect(("127.0.0.1", port))
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        s.close()
        return None, "reset"
    if data.startswith(b"hello "):
        return s, data.decode().strip()
    s.close()
    return None, data.decode("latin-1") or "eof"


def close_and_wait(s):
    """Half-closes, waits for the server's FIN (sent by its close(), after
    sluice released the place), then closes."""
    s.shutdown(socket.SHUT_WR)
    s.settimeout(3)
    while s.recv(4096):
        pass
    s.close()


def server(port, mode, action="reject", config=None):
    rules = [] if config else [f"port={port} conns=3 action={action}"]
    return Proc(sluice_argv([sys.executable, "-c", SERVER, str(port), mode], ins=rules, config=config),
                cwd="/tmp")


def hold_three(port):
    held = []
    for i in range(3):
        s, line = attempt(port)
        check(s is not None, f"connection {i + 1} of 3 not admitted: {line}")
        held.append((s, int(line.split()[1])))
    return held


# 1. threaded server, reject
port = free_port()
with server(port, "thread") as srv:
    wait_listen(port)
    held = hold_three(port)
    s, what = attempt(port)
    check(s is None and what == "reset", f"4th connection: {what}, expected reset")
    s, what = attempt(port)
    check(s is None and what == "reset", f"5th connection (still 3 held): {what}, expected reset")
    other, what = attempt(port, source="127.0.0.2")
    check(other is not None, f"127.0.0.2 refused while 127.0.0.1 is full: {what}")
    print("threaded: 3 admitted, 4th and 5th reset, another peer admitted")
    close_and_wait(held.pop(0)[0])
    s, what = attempt(port)
    check(s is not None, f"after one closed, the next connection was not admitted at once: {what}")
    held.append((s, 0))
    s2, what = attempt(port)
    check(s2 is None and what == "reset", f"one closed, two admitted: {what}")
    print("threaded: after a close, the next admitted at the first attempt, the one after reset")
    for s, _ in held:
        s.close()
    other.close()
    err = srv.stderr()
check("127.0.0.1" in "".join(sluice_lines(err)), "no sluice log line for the refused peer:\n" + err)

# 2. threaded server, reply
port = free_port()
with server(port, "thread", action="reply") as srv:
    wait_listen(port)
    held = hold_three(port)
    s, what = attempt(port)
    check(s is None and what.startswith("HTTP/1.1 429"), f"4th connection with action=reply: {what!r}")
    print("reply: 4th got", what.splitlines()[0])
    for s, _ in held:
        s.close()

# 3. pre-fork server
port = free_port()
with server(port, "fork") as srv:
    wait_listen(port)
    held = hold_three(port)
    pids = [p for _, p in held]
    check(len(set(pids)) == 3 and srv.p.pid not in pids, f"not one child per connection: {pids}")
    s, what = attempt(port)
    check(s is None and what == "reset", f"fork: 4th connection: {what}, expected reset")
    print(f"fork: 3 admitted (children {pids}), 4th reset")

    close_and_wait(held.pop(0)[0])
    s, what = attempt(port)
    check(s is not None, f"fork: after a child closed, the next was not admitted at once: {what}")
    held.append((s, int(what.split()[1])))
    s2, what = attempt(port)
    check(s2 is None and what == "reset", f"fork: one closed, two admitted: {what}")
    print("fork: after a child closed and exited, the next admitted at the first attempt")

    victim_sock, victim = held.pop(0)
    t_kill = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    tries, admitted = 0, None
    while time.monotonic() - t_kill < 3.0:
        tries += 1
        s, what = attempt(port)
        if s is not None:
            admitted = time.monotonic() - t_kill
            held.append((s, 0))
            break
        time.sleep(0.01)
    check(admitted is not None, f"a SIGKILLed child's place never came back in 3 s ({tries} tries)")
    print(f"fork: SIGKILLed child's place back after {admitted * 1000:.0f} ms ({tries} attempts)")
    check(admitted < 0.3, f"SIGKILLed child's place came back after {admitted * 1000:.0f} ms, limit 300")
    s2, what = attempt(port)
    check(s2 is None and what == "reset", f"fork: after the sweep, two admitted: {what}")
    victim_sock.close()
    for s, _ in held:
        s.close()

# 4. examples/conns.conf, run for real
src = open(os.path.join(ROOT, "examples", "conns.conf")).read()
port = free_port()
text = re.sub(r"(?m)^(\s*port\s*=\s*)5432\s*$", rf"\g<1>{port}", src)
check(str(port) in text and re.search(r"(?m)^\s*conns = 20$", text),
      "examples/conns.conf no longer has the port/conns lines this test uses")
with TempDir() as tmp:
    conf = tmp.write("conns.conf", text)
    with server(port, "thread", config=conf) as srv:
        wait_listen(port)
        held = []
        for i in range(20):
            s, what = attempt(port)
            check(s is not None, f"example: connection {i + 1} of 20 not admitted: {what}\n{srv.stderr()}")
            held.append(s)
        s, what = attempt(port)
        check(s is None and what == "reset", f"example: 21st connection: {what}, expected reset")
        print("examples/conns.conf: 20 admitted, the 21st reset")
        for s in held:
            s.close()
print("ok")
