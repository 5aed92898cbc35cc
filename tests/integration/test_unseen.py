# SPDX-License-Identifier: BSD-2-Clause
"""sluice says what it cannot see (issue 24, item 8).

  (a) a statically linked program (gcc -static, built here, connecting to
      a local port): `sluice run` warns once, before it starts, naming the
      file and "statically linked"; the program still runs. A dynamically
      linked one gets no warning.
  (b) Go, when the `go` command is installed (golang-go): a CGO_ENABLED=0
      build (static) and a default build (dynamic, cgo) both get the
      warning naming "Go program"; the dynamic one started without
      `sluice run` (plain LD_PRELOAD) gets it from the library.
  (c) node (v20 from nodesource, OpenSSL in the binary): under a request
      rule `sluice run` warns "TLS in the binary"; under a connection rule
      it does not (its connections are limited).
  (d) python asyncio over https (OpenSSL over memory BIOs, tied to its
      socket by shim/tlsbio.c) under a request rule: no warning at all.
  (e) `sluice check` names the clients an outbound rule will not see (on
      stderr: stdout stays a valid file); an inbound rule gets no note.
"""
from lib import *

CONNECT = r"""
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
int main(int argc, char **argv)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    printf("connect %d\n", connect(s, (struct sockaddr *)&a, sizeof a));
    return 0;
}
"""

GO = """package main

import (
\t"fmt"
\t"net"
\t"os"
)

func main() {
\tc, err := net.Dial("tcp", "127.0.0.1:"+os.Args[1])
\tif err == nil {
\t\tc.Close()
\t}
\tfmt.Println("dialed", err == nil)
}
"""

ASYNCIO = r"""
import asyncio, ssl, sys
async def main():
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    r, w = await asyncio.open_connection("127.0.0.1", int(sys.argv[1]), ssl=ctx)
    for i in range(2):
        w.write(b"GET /a%d HTTP/1.1\r\nHost: x\r\n\r\n" % i); await w.drain()
        head = await r.readuntil(b"\r\n\r\n")
        n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
        await r.readexactly(n)
    w.close()
    print("done")
asyncio.run(main())
"""

with TempDir() as tmp:
    port = free_port()
    with Proc(keepalive_argv(port)):
        wait_listen(port)
        conn_rule = f"to=127.0.0.1 port={port} rate=100/s"
        req_rule = f"to=127.0.0.1 port={port} req_rate=100/s"

        # (a)
        static = compile_c(CONNECT, tmp, "static_connect", extra=("-static",))
        r = run(sluice_argv([static, str(port)], outs=[conn_rule]))
        warned = [l for l in r.stderr.splitlines() if "statically linked" in l]
        check(r.stdout.strip() == "connect 0", f"(a) the static program runs: {r.stdout} {r.stderr}")
        check(len(warned) == 1 and static in warned[0], f"(a) warned once, naming it: {r.stderr}")
        dynamic = compile_c(CONNECT, tmp, "dynamic_connect", extra=())
        r = run(sluice_argv([dynamic, str(port)], outs=[conn_rule]))
        check(r.stdout.strip() == "connect 0" and "warning" not in r.stderr,
              f"(a) a dynamic program: no warning: {r.stdout} {r.stderr}")

        # (b)
        go = shutil.which("go")
        if go:
            os.makedirs(tmp.join("gop"))
            src = tmp.write("gop/main.go", GO)
            env = {"GOCACHE": tmp.join("gocache"), "GOPATH": tmp.join("gopath"), "HOME": tmp.path}
            for name, cgo in (("go_static", "0"), ("go_cgo", "1")):
                r = run([go, "build", "-o", tmp.join(name), src], env=dict(env, CGO_ENABLED=cgo),
                        cwd=tmp.join("gop"), timeout=300)
                check(r.returncode == 0, f"(b) go build: {r.stderr}")
                r = run(sluice_argv([tmp.join(name), str(port)], outs=[conn_rule]))
                warned = [l for l in r.stderr.splitlines() if "a Go program" in l]
                check(r.stdout.strip() == "dialed true" and len(warned) == 1 and name in warned[0],
                      f"(b) {name}: warned once by sluice run: {r.stdout} {r.stderr}")
            r = run([tmp.join("go_cgo"), str(port)],
                    env={"LD_PRELOAD": os.path.join(BUILD, "libsluice.so"),
                         "SLUICE_RULES": "out " + conn_rule})
            check(re.search(r"sluice\[\d+\]: warning: .*go_cgo: a Go program", r.stderr),
                  f"(b) the library warns in a cgo Go program: {r.stderr}")
        else:
            print("(b) SKIP: no go command (apt-get install golang-go)")

        # (c)
        node = shutil.which("node")
        if node and "libssl" not in run(["ldd", node]).stdout:
            r = run(sluice_argv([node, "-e", "1"], outs=[req_rule]))
            check("TLS in the binary" in r.stderr, f"(c) node under a request rule: {r.stderr}")
            r = run(sluice_argv([node, "-e", "1"], outs=[conn_rule]))
            check("warning" not in r.stderr, f"(c) node under a connection rule: {r.stderr}")
        else:
            print("(c) SKIP: no node with OpenSSL inside")

    # (d)
    crt, key = make_cert(tmp)
    tport = free_port()
    with Proc(keepalive_argv(tport, tls=(crt, key))):
        wait_listen(tport)
        r = run(sluice_argv([sys.executable, "-c", ASYNCIO, str(tport)],
                            outs=[f"to=127.0.0.1 port={tport} req_rate=100/s"]))
        check(r.stdout.strip() == "done", f"(d) asyncio client: {r.stdout} {r.stderr}")
        check("warning" not in r.stderr, f"(d) asyncio's requests are seen: {r.stderr}")

    # (e)
    r = run([SLUICE, "check", "--out", "to=127.0.0.1 port=443 req_rate=5/s"])
    check(r.returncode == 0 and r.stdout.startswith("") and "Go programs" in r.stderr
          and "JSSE" in r.stderr and "inside the program's binary" in r.stderr,
          f"(e) check names the unseen clients: {r.stderr}")
    r = run([SLUICE, "check", "--in", "port=80 rate=20/s"])
    check(r.returncode == 0 and r.stderr.strip() == "", f"(e) an inbound rule: no note: {r.stderr}")
print("ok")
