# SPDX-License-Identifier: BSD-2-Clause
"""Requests written through GnuTLS are counted and paced like OpenSSL's
(issue 24, item 2; shim/gnutls.c).

nginx on loopback with TLS (`listen ... ssl http2`, so each client gets
the protocol it offers) under
`--out 'to=127.0.0.1 port=P req_rate=5/s req_burst=1 action=delay'`:
  - wget (GnuTLS, HTTP/1.1, one keep-alive connection) with 12 URLs: all
    saved, nginx served 12, and the run takes at least (12 - 1) / 5 = 2.2 s
    (-0.05 s for clock reads) and at most that plus the unruled run's time
    plus 1 s (wake-ups: only the last held request's lateness adds to the
    run, since each later one is due from the schedule, not from when the
    previous one woke; 1 s covers a wake-up delayed by a loaded 2-CPU
    machine, 0.83 s measured with eight test suites beside it); before shim/gnutls.c it took the unruled time
    and the log said its requests were not counted;
  - libcurl3-gnutls (libcurl-gnutls.so.4 through python's ctypes: HTTP/2
    over GnuTLS on a non-blocking socket, its own push function, so the
    session is tied to its socket by the handshake's first send): 12
    transfers on one handle, all 200, paced the same;
  - reject (req_rate=1/m req_burst=2): wget --tries=1 gets 2 of 12, nginx
    serves 2, and the log names the limited requests;
  - reply (the same rate): nginx serves 2, wget reads 10 429s (swallowed
    by gnutls_record_send, read through gnutls_record_recv).
"""
import re

from lib import *

N, RATE = 12, 5
DUE = (N - 1) / RATE

CURL_GNUTLS = r"""
import ctypes, json, sys, time
lib = ctypes.CDLL("libcurl-gnutls.so.4")
lib.curl_easy_init.restype = ctypes.c_void_p
lib.curl_easy_setopt.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
lib.curl_easy_perform.argtypes = [ctypes.c_void_p]
lib.curl_easy_getinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
SINK = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t,
                        ctypes.c_void_p)(lambda p, s, n, u: s * n)
URL, WRITEFUNCTION, SSL_VERIFYPEER, SSL_VERIFYHOST = 10002, 20011, 64, 81
RESPONSE_CODE, HTTP_VERSION = 0x200002, 0x20002E
h = lib.curl_easy_init()
codes, versions, t0 = [], set(), time.monotonic()
for i in range(int(sys.argv[2])):
    lib.curl_easy_setopt(h, URL, ctypes.c_char_p((sys.argv[1] + str(i)).encode()))
    lib.curl_easy_setopt(h, WRITEFUNCTION, ctypes.cast(SINK, ctypes.c_void_p))
    lib.curl_easy_setopt(h, SSL_VERIFYPEER, ctypes.c_void_p(0))
    lib.curl_easy_setopt(h, SSL_VERIFYHOST, ctypes.c_void_p(0))
    rc = lib.curl_easy_perform(h)
    code, ver = ctypes.c_long(0), ctypes.c_long(0)
    lib.curl_easy_getinfo(h, RESPONSE_CODE, ctypes.byref(code))
    lib.curl_easy_getinfo(h, HTTP_VERSION, ctypes.byref(ver))
    codes.append(code.value if rc == 0 else -rc)
    versions.add(ver.value)
print(json.dumps({"codes": codes, "versions": sorted(versions), "took": time.monotonic() - t0}))
"""

check(shutil.which("wget") is not None, "wget is not installed")
with TempDir() as tmp:
    v = NginxVendor(tmp)
    crt, port, log, argv = v.crt, v.port, v.log, v.argv
    served, logged = v.served, v.logged

    def wget(tag, rule=None, extra=()):
        urls = [f"https://127.0.0.1:{port}/{tag}{i}" for i in range(N)]
        argv = ["wget", "-q", "--no-check-certificate", "-O", "/dev/null", *extra, *urls]
        t0 = time.monotonic()
        r = run(sluice_argv(argv, outs=[rule]) if rule else argv, timeout=60)
        return r, time.monotonic() - t0

    def curl_gnutls(tag, rule=None):
        argv = ["/usr/bin/python3", "-c", CURL_GNUTLS, f"https://127.0.0.1:{port}/{tag}", str(N)]
        r = run(sluice_argv(argv, outs=[rule]) if rule else argv, timeout=60)
        got = last_json(r.stdout)
        check(got is not None, f"libcurl-gnutls: {r.stdout} {r.stderr}")
        return got, r.stderr

    delay = f"to=127.0.0.1 port={port} req_rate={RATE}/s req_burst=1 action=delay max_delay=10s"
    with Proc(argv):
        wait_listen(port)
        r, free = wget("wfree")
        check(r.returncode == 0, f"wget without sluice: {r.returncode} {r.stderr}")
        r, took = wget("wpaced", delay)
        got = logged("wpaced", N)
        check(r.returncode == 0 and len(got) == N and {g[0] for g in got} == {"200"},
              f"wget: {N} served: {r.returncode} {got} {r.stderr}")
        check("not counted" not in r.stderr, f"wget's requests are counted: {r.stderr}")
        check(DUE - 0.05 <= took <= DUE + free + 1.0,
              f"wget: {N} at {RATE}/s burst 1 took {took:.2f} s (without a rule {free:.2f} s)")
        print(f"wget: {took:.2f} s (due {DUE:.2f}, without a rule {free:.2f})")

        free = curl_gnutls("cfree")[0]
        check(free["codes"] == [200] * N, f"libcurl-gnutls without sluice: {free}")
        got, err = curl_gnutls("cpaced", delay)
        check(got["codes"] == [200] * N, f"libcurl-gnutls: {N} x 200: {got} {err}")
        check(DUE - 0.05 <= got["took"] <= DUE + free["took"] + 1.0,
              f"libcurl-gnutls: took {got['took']:.2f} s (without a rule {free['took']:.2f} s)")
        check(len(logged("cpaced", N)) == N, f"nginx served {N}: {served('cpaced')}")
        print(f"libcurl-gnutls (HTTP versions {got['versions']}): {got['took']:.2f} s")

        rule = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reject"
        r, _ = wget("wrj", rule, extra=("--tries=1",))
        check(len(logged("wrj", 2)) == 2, f"reject: nginx served {served('wrj')}: {r.stderr}")
        check(r.returncode != 0 and re.search(r"limited request GET /wrj2", r.stderr),
              f"reject: wget fails, the log names the request: {r.returncode} {r.stderr}")

        # reply: gnutls_record_send swallows the requests over the limit and
        # gnutls_record_recv reads their 429s through the gate (shim/gate.h,
        # sl_gate_read_replies); without them wget would wait for answers
        # that never come
        rule = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reply"
        urls = [f"https://127.0.0.1:{port}/wrp{i}" for i in range(N)]
        r = run(sluice_argv(["wget", "--no-check-certificate", "--tries=1", "-O", "/dev/null", *urls],
                            outs=[rule]), timeout=60)
        check(len(logged("wrp", 2)) == 2, f"reply: nginx served {served('wrp')}: {r.stderr}")
        got = re.findall(r"ERROR 429", r.stderr)
        check(len(got) == N - 2, f"reply: wget reads {N - 2} x 429: {len(got)}: {r.stderr}")
        print(f"reply: nginx served 2, wget read {len(got)} x 429")
print("ok")
