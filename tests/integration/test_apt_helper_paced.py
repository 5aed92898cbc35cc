# SPDX-License-Identifier: BSD-2-Clause
"""apt's downloads are paced under an outbound `delay` rule with no option
beyond the rule (issue 34: "apt's download methods: not paced (apt closes
inherited descriptors before exec)").

`apt-helper download-file URI PATH [URI PATH]...` runs apt's acquire
system: the http method (/usr/lib/apt/methods/http) is a child apt execs
after closing every descriptor but its pipes, and, run as root, the method
drops to the user _apt when the target directory is writable by _apt (it
is here: the download is sandboxed as apt's own are; apt warns
"unsandboxed" otherwise, which the test rules out). The method finds the
rule and the table through the environment and the process that handed it
down (SLUICE_TABLE_PID).

The vendor is lib's KEEPALIVE_SERVER, logging the monotonic time at which
it handles each request. N files, one apt-helper run:
  bare            all N downloaded; the span between the first and the
                  last request the server saw is printed (a few ms here:
                  apt fetches them back to back on one connection) and
                  must be under the floor below, so the paced run's
                  check is not met by apt's own speed;
  under sluice    `--out 'to=127.0.0.1 port=P req_rate=5/s req_burst=1
                  action=delay'`, nothing else: all N downloaded, intact,
                  and the server saw them over at least (N-1)/5 - 0.2 s.
                  The limiter gives each request its turn 0.2 s after the
                  previous one's, so the last cannot reach the server
                  before (N-1)/5 s after the first left apt; the server's
                  span is shorter only by the first request's delivery
                  (loopback, far below one interval). A slow machine delays
                  later requests as much as the first, or more: it
                  lengthens the span, never shortens it. At most DUE + 5 s
                  (scheduling on a loaded 2-CPU machine; lateness does not
                  add up, each request waits on its own booking). sluice
                  logged the rule pacing a request.
"""
from lib import *

APT_HELPER = "/usr/lib/apt/apt-helper"
N, RATE = 8, 5
DUE = (N - 1) / RATE
FLOOR = DUE - 1 / RATE  # the docstring says why


def download(tmp, port, tag, wrap=()):
    """One apt-helper run fetching N files; returns (run, seconds)."""
    out = tmp.join(tag)
    os.mkdir(out)
    os.chmod(out, 0o777)  # writable by _apt: apt's method runs sandboxed
    pairs = []
    for i in range(N):
        pairs += [f"http://127.0.0.1:{port}/{tag}/{i}", os.path.join(out, str(i))]
    t0 = time.monotonic()
    r = run(list(wrap) + [APT_HELPER, "download-file", *pairs], timeout=60)
    took = time.monotonic() - t0
    got = [open(os.path.join(out, str(i))).read() if os.path.exists(os.path.join(out, str(i)))
           else None for i in range(N)]
    check(r.returncode == 0 and got == ["ok\n"] * N,
          f"{tag}: apt-helper exit {r.returncode}, files {got}\n{r.stdout}\n{r.stderr[-2000:]}")
    check("unsandboxed" not in r.stdout + r.stderr,
          f"{tag}: apt ran its method as root, not as _apt:\n{r.stderr}")
    return r, took


def span(server, tag):
    times = [t for _, _, t in served(server, f"/{tag}/")]
    check(len(times) == N, f"{tag}: the server saw {len(times)} of {N} requests")
    return max(times) - min(times)


def main():
    if not os.path.exists(APT_HELPER):
        print("SKIP: no apt-helper")
        return
    with TempDir() as tmp:
        os.chmod(tmp.path, 0o755)
        port = free_port()
        with Proc(keepalive_argv(port, log=True)) as server:
            wait_listen(port)
            _, took = download(tmp, port, "bare")
            bare = span(server, "bare")
            print(f"bare: {N} files, the server saw them over {bare:.3f} s (run {took:.2f} s)")
            check(bare < FLOOR, f"bare: apt alone spreads them over {bare:.2f} s, not under "
                  f"{FLOOR:.1f} s: the paced check would prove nothing")

            rule = f"to=127.0.0.1 port={port} req_rate={RATE}/s req_burst=1 action=delay"
            r, took = download(tmp, port, "paced", wrap=sluice_argv([], outs=[rule]))
            paced = span(server, "paced")
            print(f"sluice: {N} files over {paced:.3f} s (floor {FLOOR:.1f} s, due {DUE:.1f} s; "
                  f"run {took:.2f} s)")
            check(paced >= FLOOR, f"not paced: {paced:.3f} s < {FLOOR:.1f} s\n{r.stderr[-2000:]}")
            check(paced <= DUE + 5, f"paced over {paced:.2f} s, more than {DUE} + 5 s")
            lines = [l for l in sluice_lines(r.stderr) if "paced a request" in l]
            check(lines, f"sluice did not log the pacing:\n{r.stderr[-2000:]}")
    print("ok")


main()
