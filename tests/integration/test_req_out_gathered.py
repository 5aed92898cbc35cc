# SPDX-License-Identifier: BSD-2-Clause
"""Gathered outbound writes are read whole (issue 31, defects 4 and 8).

Before the fix the outbound request scanner read only the first buffer of
a `writev` or `sendmsg` and then let the real call write all of them:
  (a) a request head split across two buffers, its end in the second,
      was never counted: under `req_rate=1/m req_burst=2 action=reject`
      10 of 10 reached the server (bound 2), nothing logged;
  (b) on TLS sluice cannot decrypt (the write-burst count,
      core/http/tlsrec.c), the record walk was fed the whole call's count
      from the first buffer alone: when that buffer ended a page, the
      host died of SIGSEGV, under a rule that never limits.

The server is python's ThreadingHTTPServer (KEEPALIVE_SERVER of lib.py,
logging each request it serves). The client is python's socket module
under the shim, writing each request with os.writev, socket.sendmsg or
sendmmsg (through ctypes; sluice did not interpose sendmmsg before).
  (a) 10 requests, each on a connection of its own, head split inside its
      final CRLFCRLF: the server served exactly 2, and the client saw 8
      refusals (the rule's errno, ECONNREFUSED: the gathered write went
      short before the head's end, and the rest, written as a program
      would, was refused);
  (b) a real ClientHello (made by python's ssl over memory BIOs in this
      process, not under the shim), then application-data records whose
      first buffer (a whole record) ends where a PROT_NONE page begins
      (mmap + mprotect), the second holds another record,
      under `req_rate=1000000/s`: the client exits 0 with every byte
      written (it crashed with SIGSEGV before); the sink read them all.
"""
import ssl

from lib import *

CLIENT = r"""
import ctypes, errno, os, socket, sys
port, how = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_char_p), ("len", ctypes.c_size_t)]
class msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint),
                ("iov", ctypes.POINTER(iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
class mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
def sendmmsg(fd, bufs):
    v = (iovec * len(bufs))(*[iovec(b, len(b)) for b in bufs])
    m = mmsghdr(msghdr(None, 0, v, len(bufs), None, 0, 0), 0)
    if libc.sendmmsg(fd, ctypes.byref(m), 1, 0) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e)) if e != errno.ECONNREFUSED else ConnectionRefusedError()
    return m.len
ok = refused = 0
for i in range(10):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    a = b"GET /g%d HTTP/1.1\r\nHost: x\r\nX-Key: k\r\n\r" % i
    b = b"\n"
    try:
        if how == "writev":
            n = os.writev(s.fileno(), [a, b])
        elif how == "sendmmsg":
            n = sendmmsg(s.fileno(), [a, b])
        else:
            n = s.sendmsg([a, b])
        if n < len(a) + len(b):  # a short write, legal: the rest as a program would
            s.sendall((a + b)[n:])
        data = s.recv(4096)
        ok += data.startswith(b"HTTP/1.1 200")
    except ConnectionRefusedError:
        refused += 1
    s.close()
print("OK", ok, "REFUSED", refused)
"""

# argv: port, the ClientHello in hex; writes it, then 8 application-data
# records in two buffers per sendmsg, the first ending a page
TLS_CLIENT = r"""
import ctypes, mmap, socket, sys
port, hello = int(sys.argv[1]), bytes.fromhex(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
page = mmap.PAGESIZE
m = mmap.mmap(-1, 2 * page)
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
assert libc.mprotect(ctypes.c_void_p(addr + page), page, 0) == 0  # PROT_NONE
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(hello)
total = 0
for i in range(8):
    rec = b"\x17\x03\x03\x00\x20" + bytes([i]) * 32
    m[page - len(rec):page] = rec
    view = memoryview(m)[page - len(rec):page]
    n = s.sendmsg([view, rec])  # the second record's header lies past the page
    assert n == 2 * len(rec), n
    total += n
    s.recv(1)  # the sink's answer: the next record starts a new burst
view.release()
s.close()
print("SENT", total)
"""

SINK = r"""
import socket, sys
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(1)
c, _ = srv.accept()
hello = int(sys.argv[2])
got = b""
c.settimeout(5)
while len(got) < hello:
    got += c.recv(65536)
for i in range(8):
    want = hello + 74 * (i + 1)
    while len(got) < want:
        d = c.recv(65536)
        if not d:
            break
        got += d
    c.sendall(b"!")
sys.stderr.write("READ %d\n" % (len(got) - hello))
"""


def client_hello():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="api.vendor.example")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


port = free_port()
srv = Proc(keepalive_argv(port, log=True))
try:
    wait_listen(port)
    rule = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reject"
    for how in ("writev", "sendmsg", "sendmmsg"):
        before = len(served(srv, "/g"))
        r = run(sluice_argv([sys.executable, "-c", CLIENT, str(port), how], outs=[rule]))
        check(r.returncode == 0, f"{how}: client failed: {r.stdout} {r.stderr}")
        check("OK 2 REFUSED 8" in r.stdout, f"{how}: expected 2 answered, 8 refused: {r.stdout}")
        deadline = time.monotonic() + 5
        while len(served(srv, "/g")) - before < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        n = len(served(srv, "/g")) - before
        check(n == 2, f"{how}: the server served {n} split heads (bound 2)")
        print(f"ok: {how}, a head split across buffers: 2 served, 8 refused")
finally:
    srv.stop()

hello = client_hello()
check(hello[:1] == b"\x16", "python's ssl made no ClientHello")
port = free_port()
sink = Proc([sys.executable, "-c", SINK, str(port), str(len(hello))])
try:
    wait_listen(port)
    rule = f"to=127.0.0.1 port={port} req_rate=1000000/s req_burst=1000"
    r = run(sluice_argv([sys.executable, "-c", TLS_CLIENT, str(port), hello.hex()], outs=[rule]))
    check(r.returncode == 0, f"TLS records from a page-ended buffer: exit {r.returncode} "
          f"(-11 is SIGSEGV): {r.stdout} {r.stderr[-2000:]}")
    check("SENT 592" in r.stdout, f"client did not write every record: {r.stdout}")
    sink.p.wait(5)
    check("READ 592" in sink.stderr(), f"sink: {sink.stderr()}")
    print("ok: records from a buffer that ends a page: no crash, 592 bytes written and read")
finally:
    sink.stop()
print("test_req_out_gathered: ok")
