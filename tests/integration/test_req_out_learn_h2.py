# SPDX-License-Identifier: BSD-2-Clause
"""`learn` over HTTP/2 (issue 35, item 1): the vendor's rate-limit fields
are read from HTTP/2 response heads too (core/http/h2resp.c), paired with
their requests by stream.

The vendor is nginx (one worker) answering every request 429 with
`Retry-After: 2`, over TLS with HTTP/2 (ALPN) and over h2c, logging each
request's arrival ($msec). The client is curl asking for /a then /b on one
HTTP/2 connection (one after the other: curl waits for /a's answer) under
`sluice run --out 'to=127.0.0.1 port=P req_rate=100/s req_burst=100
learn=yes ...'`: the rule's own rate holds nothing, only what is learned
does.

1. TLS, `action=delay max_delay=10s`: /b reaches nginx no sooner than 2 s
   after /a did, less 0.1 s: the hold starts when curl reads /a's answer,
   which is after nginx logged /a, so a slow machine makes the gap longer,
   never shorter; 0.1 s covers nginx's millisecond log stamp and timer
   rounding. The upper bound (6 s) is loose: a held call still goes.
2. h2c, `action=reject`, /a and /b asked by two curls one after the
   other in one program (`sh -c`): what the first learned refuses the
   second's call, which never reaches nginx (the table is the program's).
   Two curls: curl 7.88 does not reuse an h2c connection (bare, its second
   transfer fails: exit 16). Not `delay`: curl over h2c fails a write
   that must wait (exit 55; over TLS sluice keeps curl's held HTTP/2
   bytes and reports them written, over h2c not yet: issue 35's note).
The controls, the same without `learn`: /b follows /a at once (under 1 s)
and reaches nginx. Before h2resp.c, HTTP/2 answers taught nothing (the
controls' results).
"""
from lib import *

if "asan" in os.environ.get("SLUICE_BUILD", ""):
    print("SKIP: curl hangs under a preloaded ASan runtime, with or without sluice")
    sys.exit(0)


def arrivals(log, tag):
    with open(log) as f:
        rows = [l.split() for l in f if f" /{tag}/" in l]
    return {r[2].rsplit("/", 1)[1]: float(r[0]) for r in rows}


with TempDir() as tmp:
    crt, key = make_cert(tmp)
    plain, tls = free_port(), free_port()
    argv, log = nginx_logged_site(tmp, f"""
        listen 127.0.0.1:{plain} http2;
        listen 127.0.0.1:{tls} ssl http2;
        ssl_certificate {crt};
        ssl_certificate_key {key};
        location / {{
            add_header Retry-After 2 always;
            return 429 "slow down\\n";
        }}""", "$msec $status $uri")
    with Proc(argv) as ng:
        wait_listen(plain)
        wait_listen(tls)
        cases = (("tls", f"https://127.0.0.1:{tls}", ["-k", "--http2"], tls, False),
                 ("h2c", f"http://127.0.0.1:{plain}", ["--http2-prior-knowledge"], plain, True))
        for name, url, flags, port, apart in cases:
            for learn in (True, False):
                tag = f"{name}-{'learn' if learn else 'control'}"
                action = "reject" if apart else "delay max_delay=10s"
                rule = (f"to=127.0.0.1 port={port} req_rate=100/s req_burst=100 action={action}"
                        + (" learn=yes" if learn else ""))
                curl = ["curl", "-s", "-w", "%{http_code}\\n", *flags]
                a, b = f"{url}/{tag}/a", f"{url}/{tag}/b"
                if apart:
                    cmd = ["sh", "-c", " ".join(curl + ["-o /dev/null", a, ";"] + curl + ["-o /dev/null", b]).replace("%{http_code}\\n", "'%{http_code}\\n'")]
                else:
                    cmd = curl + ["-o", "/dev/null", "-o", "/dev/null", a, b]
                r = run(sluice_argv(cmd, outs=[rule]), timeout=60)
                codes = r.stdout.split()
                check(codes[:1] == ["429"], f"{tag}: curl: {r.stdout!r} {r.stderr[-1500:]}")
                want = 1 if learn and apart else 2
                deadline = time.monotonic() + 5  # nginx logs after answering
                while len(arrivals(log, tag)) < want and time.monotonic() < deadline:
                    time.sleep(0.05)
                at = arrivals(log, tag)
                print(f"{tag}: curl read {codes}, nginx saw {sorted(at)}"
                      + (f", /b {at['b'] - at['a']:.3f} s after /a" if len(at) == 2 else ""))
                if learn:
                    said = [l for l in sluice_lines(r.stderr) if "learned from retry-after" in l]
                    check(said, f"{tag}: the hold is logged: {r.stderr[-1500:]}")
                if learn and apart:
                    check(sorted(at) == ["a"], f"{tag}: /b refused, never sent: nginx saw {at}")
                    continue
                check(sorted(at) == ["a", "b"] and codes == ["429", "429"], f"{tag}: {codes} {at}")
                gap = at["b"] - at["a"]
                if learn:
                    check(1.9 <= gap <= 6.0, f"{tag}: /b held by the learned Retry-After: {gap:.3f} s")
                else:
                    check(gap < 1.0, f"{tag}: the control holds nothing: {gap:.3f} s")
print("ok")
