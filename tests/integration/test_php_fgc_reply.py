# SPDX-License-Identifier: BSD-2-Clause
"""php's `file_get_contents` under outbound `reply` reads its 429 at
once, not when its read timeout ends (issue 34: "php `file_get_contents`
(plain and TLS): each 429 arrives only when PHP's 60 s read timeout
ends").

php's http stream wrapper, with its defaults (HTTP/1.0, `Connection:
close`, one connection per call; TLS through OpenSSL's SSL_write and
SSL_read on the socket, which sluice reads), makes 4 calls one after
another to nginx (lib.NginxVendor, plain and `ssl`), `ignore_errors` so
a 429 is a response, not a failure, under `--out 'to=127.0.0.1 port=P
req_rate=1/m req_burst=2 action=reply'`. php runs with
`default_socket_timeout=10` (its default is 60) so that a call waiting
for it ends within the test's time: a call that waits for the timeout
takes 10 s, five times the 2 s allowed.

  bare    4 x 200, nginx served 4.
  reply   calls 0, 1: 200; calls 2, 3: 429, each read within 2 s of its
          start; nginx served exactly 2.
  reject  calls 0, 1: 200; calls 2, 3 fail (php: false) within 2 s of
          their start; nginx served exactly 2.

Measured before a fix (plain and TLS alike): 200, 200, then each 429
after php's read timeouts (60 s with its default; 20.0 s here, two waits
of 10 s). The cause (strace of php: the 429 is read from sluice at once,
no system call, then poll(POLLIN) on the socket times out, twice, and php
closes): sluice swallows the request and gives php the 429 with a
Content-Length and no `Connection: close` (keep-alive, core/http/reply.c),
but php sent `Connection: close` and reads the body until the connection
ends, which never comes: the real socket stays open (nothing was sent on
it) until php's timeout. Now, when the swallowed request asked to close
(HTTP/1.0 without `Connection: keep-alive`, or `Connection: close`), the
429 says `Connection: close` and, once the program has read it whole, its
reads meet the end (core/http/request.h sl_req_replied_end; through TLS,
SSL_get_error says a clean end).

Under `reject` the same wait had another cause: php's write fails, and
php goes on to read from the connection, on which nothing was sent, so
nothing comes until its read timeout (10 s here: calls 2 and 3 took
10.0 s each, plain and TLS). Now a refused request that is the first
of its connection shuts the socket for reading (SHUT_RD: no signal, no
effect on the peer), so the program's reads meet the end at once
(shim/reqout.c, refused_first).
"""
from lib import *

PHP = r"""
[$url, $n] = [$argv[1], (int)$argv[2]];
$ctx = stream_context_create(["http" => ["ignore_errors" => true],
                              "ssl" => ["verify_peer" => false, "verify_peer_name" => false]]);
for ($i = 0; $i < $n; $i++) {
    $t = microtime(true);
    $body = @file_get_contents($url . $i, false, $ctx);
    $code = $body === false ? "ERR" : explode(" ", $http_response_header[0])[1];
    printf("%s %.3f\n", $code, microtime(true) - $t);
}
"""
N = 4
AT_ONCE = 2.0


def main():
    if not shutil.which("php"):
        print("SKIP: no php")
        return
    problems = []
    with TempDir() as tmp:
        v = NginxVendor(tmp, connection=False, plain=True)
        with Proc(v.argv):
            wait_listen(v.port)
            wait_listen(v.plain_port)
            for scheme, port in (("http", v.plain_port), ("https", v.port)):
                for mode in ("bare", "reply", "reject"):
                    tag = f"{scheme}{mode}"
                    argv = ["php", "-d", "default_socket_timeout=10", "-r", PHP,
                            f"{scheme}://127.0.0.1:{port}/{tag}/", str(N)]
                    if mode != "bare":
                        argv = sluice_argv(argv, outs=[f"to=127.0.0.1 port={port} req_rate=1/m "
                                                       f"req_burst=2 action={mode}"])
                    r = run(argv, timeout=120)
                    got = [(w[0], float(w[1])) for w in map(str.split, r.stdout.splitlines())
                           if len(w) == 2]
                    served = v.logged(tag, N if mode == "bare" else 2)
                    print(f"{scheme} {mode}: {got}; nginx served {len(served)}")
                    want = (["200"] * N if mode == "bare" else
                            ["200", "200"] + ["429" if mode == "reply" else "ERR"] * 2)
                    if [c for c, _ in got] != want:
                        problems.append(f"{tag}: {got}, not {want}\n{r.stderr[-1500:]}")
                    if len(served) != (N if mode == "bare" else 2):
                        problems.append(f"{tag}: nginx served {served}")
                    slow = [(i, t) for i, (_, t) in enumerate(got) if t > AT_ONCE]
                    if slow:
                        problems.append(f"{tag}: calls took over {AT_ONCE} s: {slow}")
    check(not problems, "\n".join(problems))
    print("ok")


main()
