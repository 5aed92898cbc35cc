# SPDX-License-Identifier: BSD-2-Clause
"""PHP's curl extension, which PHP opens with RTLD_DEEPBIND, is paced like
any client (issue 24, item 7; shim/dl.c).

With RTLD_DEEPBIND, libcurl, libssl and libcrypto bind connect, send, poll
and SSL_write in their own scope first, past LD_PRELOAD: before shim/dl.c
nothing was paced and nothing logged. Now sluice's dlopen binds the new
objects' references to the interposed names to sluice.

nginx on loopback, TLS with HTTP/2 (libcurl's default for https) and plain
HTTP; `php -r` calls curl_exec 12 times under
`--out 'to=127.0.0.1 port=P req_rate=5/s req_burst=1 action=delay'`:
  - all 12 answered 200, nginx served 12;
  - the calls take at least (12 - 1) / 5 = 2.2 s (-0.05 s for clock reads)
    and at most that plus the unruled run's time plus 0.5 s (wake-ups), so
    the pacing is sluice's whatever the machine's speed;
  - the log names the RTLD_DEEPBIND library whose references were bound.
Also: a plain dlopen by a bare name that only the calling program's
RUNPATH ($ORIGIN/sub) finds still works under sluice (dlopen is passed on
as a tail call, so glibc sees the program as the caller), and the same
with RTLD_DEEPBIND works too, with a warning naming the library.
"""
import re

from lib import *

N, RATE = 12, 5
DUE = (N - 1) / RATE

PHP = r"""
$t0 = microtime(true); $codes = [];
for ($i = 0; $i < %d; $i++) {
    $c = curl_init($argv[1] . $i);
    curl_setopt($c, CURLOPT_RETURNTRANSFER, true);
    curl_setopt($c, CURLOPT_SSL_VERIFYPEER, false);
    curl_setopt($c, CURLOPT_SSL_VERIFYHOST, false);
    curl_exec($c);
    $codes[] = curl_getinfo($c, CURLINFO_HTTP_CODE);
    curl_close($c);
}
echo json_encode(["codes" => $codes, "took" => microtime(true) - $t0]), "\n";
""" % N

LIB = "int tiny(void) { return 42; }\n"
MAIN = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    void *h = dlopen("libtiny.so", argc > 1 ? RTLD_NOW | RTLD_DEEPBIND : RTLD_NOW);
    int (*f)(void) = h ? (int (*)(void))dlsym(h, "tiny") : NULL;
    printf("%d\n", f ? f() : -1);
    if (!h) fprintf(stderr, "dlopen: %s\n", dlerror());
    return 0;
}
"""

php = shutil.which("php")
check(php is not None, "php is not installed (apt-get install php-cli php-curl)")
with TempDir() as tmp:
    v = NginxVendor(tmp, plain=True, connection=False)
    crt, tport, pport, log, argv = v.crt, v.port, v.plain_port, v.log, v.argv
    served, logged = v.served, v.logged

    def calls(url, rule=None):
        argv = [php, "-r", PHP, url]
        r = run(sluice_argv(argv, outs=[rule]) if rule else argv, timeout=60)
        got = last_json(r.stdout)
        check(got is not None, f"php: {r.stdout} {r.stderr}")
        return got, r.stderr

    with Proc(argv):
        wait_listen(tport)
        wait_listen(pport)
        for scheme, tag, port, proto in (("https", "tls", tport, "HTTP/2.0"),
                                         ("http", "plain", pport, "HTTP/1.1")):
            free, _ = calls(f"{scheme}://127.0.0.1:{port}/free{tag}")
            check(free["codes"] == [200] * N, f"{scheme} without sluice: {free}")
            rule = f"to=127.0.0.1 port={port} req_rate={RATE}/s req_burst=1 action=delay"
            got, err = calls(f"{scheme}://127.0.0.1:{port}/{tag}", rule)
            check(got["codes"] == [200] * N, f"{scheme}: 12 x 200: {got} {err}")
            seen = logged(tag, N)  # "/tls0".., not "/freetls0"..
            check(len(seen) == N and {s[1] for s in seen} == {proto},
                  f"{scheme}: nginx served {N} over {proto}: {seen}")
            check(DUE - 0.05 <= got["took"] <= DUE + free["took"] + 0.5,
                  f"{scheme}: {N} calls at {RATE}/s burst 1 took {got['took']:.2f} s "
                  f"(without a rule {free['took']:.2f} s): {err}")
            check(re.search(r"\.so was opened with RTLD_DEEPBIND: \d+ references", err),
                  f"{scheme}: the log names the rebound library: {err}")
            print(f"{scheme}: {got['took']:.2f} s (due {DUE:.2f})")

    # dlopen by a bare name found only through the caller's RUNPATH
    os.makedirs(tmp.join("sub"))
    r = run(["gcc", "-shared", "-fPIC", "-o", tmp.join("sub/libtiny.so"), tmp.write("tiny.c", LIB)])
    check(r.returncode == 0, r.stderr)
    prog = compile_c(MAIN, tmp, extra=("-ldl", "-Wl,-rpath,$ORIGIN/sub", "-Wl,--enable-new-dtags"))
    rule = f"to=127.0.0.1 port={pport} req_rate=1/s"
    r = run(sluice_argv([prog], outs=[rule]))
    check(r.stdout.strip() == "42", f"dlopen through the caller's RUNPATH: {r.stdout} {r.stderr}")
    r = run(sluice_argv([prog, "deep"], outs=[rule]))
    check(r.stdout.strip() == "42" and "libtiny.so was opened with RTLD_DEEPBIND by a name" in r.stderr,
          f"RTLD_DEEPBIND by a bare name: loaded, and said: {r.stdout} {r.stderr}")
print("ok")
