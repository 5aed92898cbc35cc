# SPDX-License-Identifier: BSD-2-Clause
"""Hosts we did not write (issue 21): a STARTTLS upgrade, plaintext first
and TLS on the same connection after, bare and under rules that never
limit (hostlib.MODES: the server under the inbound rule on its port, the
clients under the outbound rule to it).

The server is a small SMTP-like one in python (`ssl.wrap_socket` of the
connected socket after `STARTTLS`: OpenSSL's SSL_set_fd on a descriptor
sluice already read plaintext from); the clients are `openssl s_client
-starttls smtp` and python's smtplib. Cases:
  - s_client: EHLO and STARTTLS by s_client itself, then commands over
    TLS read from its stdin: the transcript it prints;
  - smtplib: ehlo, starttls, ehlo, a command with a 20 KB argument,
    noop, quit: every reply;
  - plaintext commands pipelined in one write, then a half-close: every
    reply;
  - plaintext commands written one byte per segment.
"""
from hostlib import *

OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"

SERVER = r"""
import socket, ssl, sys, threading
port, crt, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(crt, key)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(16)
def serve(c):
    c.sendall(b"220 test ESMTP\r\n")
    buf, tls = b"", False
    while True:
        while b"\r\n" not in buf:
            d = c.recv(4096)
            if not d:
                c.close()
                return
            buf += d
        line, buf = buf.split(b"\r\n", 1)
        cmd = line.split(b" ", 1)[0].upper()
        if cmd in (b"EHLO", b"HELO"):
            c.sendall(b"250-test greets you\r\n250-SIZE 100000\r\n" +
                      (b"250 HELP\r\n" if tls else b"250 STARTTLS\r\n"))
        elif cmd == b"STARTTLS" and not tls:
            c.sendall(b"220 go ahead\r\n")
            buf = b""  # nothing sent before the handshake counts (RFC 3207)
            c = ctx.wrap_socket(c, server_side=True)
            tls = True
        elif cmd == b"ECHO":
            arg = line[5:]
            c.sendall(b"250 %d %s\r\n" % (len(arg), arg[:40]))
        elif cmd == b"NOOP":
            c.sendall(b"250 ok%s\r\n" % (b" tls" if tls else b""))
        elif cmd == b"QUIT":
            c.sendall(b"221 bye\r\n")
            c.close()
            return
        else:
            c.sendall(b"500 what\r\n")
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

SMTPLIB = r"""
import smtplib, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.check_hostname = False
s = smtplib.SMTP("127.0.0.1", int(sys.argv[1]), timeout=5)
out = [s.ehlo("a"), s.starttls(context=ctx), s.ehlo("b"), s.docmd("ECHO", "z" * 20000),
       s.noop(), s.docmd("QUIT")]
print(repr(out))
"""


def cases(mode, tmp):
    crt, key = make_cert(tmp)
    port = free_port()
    outs = out_rules(mode, port)
    out = {}
    with Proc(wrap(mode, [sys.executable, "-c", SERVER, str(port), crt, key],
                   ins=rules(mode, port))) as srv:
        wait_listen(port)
        r = run(wrap(mode, [OPENSSL, "s_client", "-quiet", "-crlf", "-starttls", "smtp",
                            "-connect", f"127.0.0.1:{port}"], outs=outs),
                input="NOOP\nECHO " + "y" * 3000 + "\nEHLO again\nQUIT\n", timeout=20)
        out["openssl s_client -starttls smtp"] = (r.returncode, r.stdout)
        r = run(wrap(mode, [sys.executable, "-c", SMTPLIB, str(port), crt], outs=outs), timeout=20)
        out["smtplib starttls"] = (r.returncode, r.stdout, r.stderr[-300:] if r.returncode else "")
        plain = b"EHLO p\r\nNOOP\r\nECHO abc\r\nNOOP\r\nQUIT\r\n"
        out["pipelined then half-close"] = exchange(port, [plain], shut=True)
        out["one byte per segment"] = exchange(port, bytewise(plain), timeout=10)
        check(srv.p.poll() is None, f"the server under {mode} is still running")
        out["sluice said"] = denials(srv)
        print(mode, "sluice counted", applied(mode, srv, "the STARTTLS server", http=False))
    return out


results = {}
for mode in MODES:
    with TempDir() as tmp:
        results[mode] = cases(mode, tmp)
    print(mode, {k: short(v, 160) for k, v in results[mode].items()})

b = results["bare"]
# s_client exits 1 bare too: the server closes without a close_notify
check("250 ok tls" in b["openssl s_client -starttls smtp"][1],
      f"bare s_client spoke TLS after STARTTLS: {b['openssl s_client -starttls smtp']}")
check("250, b'20000" in b["smtplib starttls"][1], f"bare smtplib: {b['smtplib starttls']}")
bad = compare(results)
check(not bad, "\n".join(bad))
print("ok")
