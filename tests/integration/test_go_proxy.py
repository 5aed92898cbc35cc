# SPDX-License-Identifier: BSD-2-Clause
"""A Go program is paced through the proxy variables it honours (issue 34,
item 5).

Go makes its system calls itself: libsluice.so sees none of them. Under an
outbound rule `sluice run` starts a local forwarding proxy that runs under
the shim with the same rules, and names it in HTTP_PROXY/HTTPS_PROXY (and
ALL_PROXY, each also lowercase): Go's net/http sends its requests through
it, and the proxy's connects and writes are decided as any client's.

A Go client (built here with the `go` command, stdlib only) makes 12 GETs
one after another to `http://vendor:PORT/iN`. Go never uses a proxy for
`localhost` or a loopback IP literal, hence the name `vendor`, resolved to
127.0.0.1 for the proxy (and for Go itself before the proxy existed) by
glibc's HOSTALIASES when that works here (it needs a DNS server that
answers `localhost`), else by a private mount namespace whose /etc/hosts
has a `vendor` line (root and unshare(1)); neither: SKIP.

  (a) plain HTTP under `req_rate=5/s req_burst=1 action=delay`: all 12
      answered 200, and the vendor (KEEPALIVE_SERVER, logging the time it
      handles each request) saw them over at least 2.2 s - 0.2 s. The
      limiter gives each request its turn 0.2 s after the previous one's,
      so request 11 cannot reach the vendor before 2.2 s after request 0
      left the proxy; the span the vendor measures is shorter than that only
      by the delivery time of request 0 (proxy to vendor, on loopback: far
      below one interval, 0.2 s). A slow machine delays later requests as
      much as the first, or more: it lengthens the span, never shortens it.
      Before the proxy the vendor saw the 12 over 0.002 s (not paced; over
      TLS 0.05 s; measured here, as with NO_PROXY=* today). `sluice run`
      warned once, naming the proxy; the program exits at once when done
      (the proxy does not hold it, nor its output pipes), and the proxy is
      gone after it.
  (b) the same over TLS (python's https server, a certificate made here, Go
      with InsecureSkipVerify and HTTP/1.1): CONNECT through the proxy, the
      TLS records counted by write bursts: 12 x 200 over at least 2.0 s.
  (c) a proxy variable the user set is kept as it is, and sluice says so;
      the others are still named (the plain requests are still paced).
"""
from lib import *

N = 12
DUE = (N - 1) / 5  # 2.2 s at 5/s, burst 1
FLOOR = DUE - 0.2  # the docstring says why


def build_go(tmp):
    argv, env, path = go_client_build(tmp)
    r = run(argv, env=env, timeout=240, cwd=tmp.join("gop"))
    check(r.returncode == 0, f"go build: {r.stderr}")
    return path


def vendor_name(tmp):
    """(argv prefix, env) under which `vendor` resolves to 127.0.0.1, or None."""
    aliases = tmp.write("hostaliases", "vendor localhost\n")
    r = run(["getent", "ahosts", "vendor"], env={"HOSTALIASES": aliases}, timeout=15)
    if r.returncode == 0 and "127.0.0.1" in r.stdout:
        return [], {"HOSTALIASES": aliases}
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    with open("/etc/hosts") as f:
        hosts = tmp.write("hosts", f.read() + "\n127.0.0.1 vendor\n")
    wrap = ["unshare", "-m", "sh", "-c", f'mount --bind {hosts} /etc/hosts && exec "$@"', "sh"]
    r = run(wrap + ["getent", "ahosts", "vendor"], timeout=15)
    if r.returncode == 0 and "127.0.0.1" in r.stdout:
        return wrap, {}
    return None


def paced_run(name, wrap, env, goclient, url, port, vendor, tag, extra_env=None):
    rule = f"to=127.0.0.1 port={port} req_rate=5/s req_burst=1 action=delay"
    t0 = time.monotonic()
    r = run(wrap + sluice_argv([goclient, url, str(N), "h1"], outs=[rule]),
            env=dict(env, **(extra_env or {})), timeout=60)
    wall = time.monotonic() - t0
    codes = r.stdout.split()
    times = [t for _, _, t in served(vendor, "/" + tag)]
    span = max(times) - min(times) if times else 0.0
    print(f"{name}: {len(times)} served over {span:.3f} s (floor {FLOOR:.1f} s), "
          f"the run took {wall:.3f} s")
    check(codes == ["200"] * N, f"{name}: all answered 200: {r.stdout}\n{r.stderr}")
    check(len(times) == N, f"{name}: the vendor saw {len(times)} of {N}: {r.stderr}")
    check(span >= FLOOR, f"{name}: paced over {span:.2f} s, not at least {FLOOR:.1f} s:\n{r.stderr}")
    check(span <= DUE + 5 and wall <= span + 10,
          f"{name}: no longer than pacing needs ({span:.2f} s, run {wall:.2f} s)")
    return r


def main():
    if not shutil.which("go"):
        print("SKIP: no go command (apt-get install golang-go)")
        return
    with TempDir() as tmp:
        named = vendor_name(tmp)
        if named is None:
            print("SKIP: cannot make `vendor` resolve to 127.0.0.1 (no DNS answering localhost "
                  "for HOSTALIASES, and no unshare as root)")
            return
        wrap, env = named
        goclient = build_go(tmp)
        port, tport = free_port(), free_port()
        crt, key = make_cert(tmp)
        with Proc(keepalive_argv(port, log=True)) as plain, \
                Proc(keepalive_argv(tport, log=True, tls=(crt, key))) as tls:
            wait_listen(port)
            wait_listen(tport)

            # (a)
            r = paced_run("(a) http", wrap, env, goclient, f"http://vendor:{port}/i", port, plain, "i")
            warned = [l for l in r.stderr.splitlines() if "a Go program" in l]
            check(len(warned) == 1 and "proxy" in warned[0] and "HTTPS_PROXY" in warned[0],
                  f"(a) warned once, naming the proxy: {r.stderr}")
            m = re.search(r"http://127\.0\.0\.1:(\d+)", warned[0])
            check(m and f"HTTP_PROXY={m.group(0)}" in r.stderr,
                  f"(a) the program was given the proxy: {r.stderr}")
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # its listening socket went with it
                try:
                    socket.create_connection(("127.0.0.1", int(m.group(1))), timeout=1).close()
                except OSError:
                    break
                time.sleep(0.05)
            else:
                check(False, f"(a) the proxy at {m.group(0)} outlived the program")

            # (b)
            paced_run("(b) https", wrap, env, goclient, f"https://vendor:{tport}/t", tport, tls, "t")

            # (c)
            r = paced_run("(c) http", wrap, env, goclient, f"http://vendor:{port}/c", port, plain, "c",
                          extra_env={"HTTPS_PROXY": "http://127.0.0.1:9"})
            check("HTTPS_PROXY=http://127.0.0.1:9 " in r.stderr and
                  re.search(r"HTTPS_PROXY.*already set.*left as it is", r.stderr),
                  f"(c) the user's HTTPS_PROXY kept, and said: {r.stderr}")
    print("ok")


main()
