# SPDX-License-Identifier: BSD-2-Clause
"""The library brings no allocator into the host, and binds nothing of it.

A preloaded library that depends on an allocator library (Debian's
libjemalloc.so.2, as sluice did) hands the host that allocator's C++
operator new/delete: libstdc++ loaded later binds its own `_ZdaPv` to it
while `malloc`/`free` stay glibc's, and C++ code that mixes the two aborts.
nginx with Debian's image_filter module (libgd -> libheif, C++) aborted at
every worker exit with "free(): invalid pointer" under a rule that matched
nothing; this test failed that way before sluice got its own heap.

1. libsluice.so needs no allocator, no libstdc++, no libgcc_s and no libm.
2. LD_DEBUG=bindings of that nginx under sluice: every symbol another
   object binds to libsluice.so is one of the interposed names in
   shim/exports.map, nothing outside sluice binds to a library that only
   sluice brought (libconfuse, libsodium, libnghttp2), and libstdc++'s
   operators bind to libstdc++.
3. The same nginx (master and two workers) serves a request and quits
   cleanly: exit status 0, no abort, no "invalid pointer", no worker
   "exited on signal" in its error log.
"""
import re
import subprocess

from lib import *

MODULE = "/usr/lib/nginx/modules/ngx_http_image_filter_module.so"
check(os.path.exists(MODULE),
      "apt-get install libnginx-mod-http-image-filter (scripts/deps.sh installs it)")

# 1. What the library needs.
needed = re.findall(r"\(NEEDED\).*\[(.*)\]",
                    subprocess.run(["readelf", "-d", LIB], capture_output=True, text=True).stdout)
for bad in ("jemalloc", "stdc++", "gcc_s", "libm.", "tcmalloc", "mimalloc"):
    check(not any(bad in n for n in needed), f"libsluice.so needs {bad}: {needed}")
print("needed:", " ".join(needed))

exported = set()
with open(os.path.join(ROOT, "shim", "exports.map")) as f:
    text = f.read()
glob = text.split("global:")[1].split("local:")[0]
exported = {s.strip() for s in glob.replace("\n", " ").split(";") if s.strip()}
check("recv" in exported and "SSL_read" in exported, f"exports.map not read: {exported}")

with TempDir() as tmp:
    port = free_port()
    os.chmod(tmp.path, 0o755)
    conf = tmp.write("nginx.conf", f"""
load_module {MODULE};
worker_processes 2;
pid {tmp.join('nginx.pid')};
error_log {tmp.join('error.log')} notice;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp.path};
    server {{ listen 127.0.0.1:{port}; location / {{ return 200 "ok\\n"; }} }}
}}
""")
    ngx = [NGINX, "-p", tmp.path, "-e", tmp.join("error.log"), "-c", conf, "-g", "daemon off;"]
    # A rule on another port: the library is loaded and initialised, and
    # limits nothing this nginx does.
    argv = sluice_argv(ngx, ins=[f"port={port + 1 if port < 65535 else 1} rate=10/s"])
    bind_log = tmp.join("bind")
    p = subprocess.Popen(argv, env=dict(os.environ, LD_DEBUG="bindings",
                                        LD_DEBUG_OUTPUT=bind_log),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        wait_port(port)
        st, _, body = http_get(port)
        check(st == 200 and body == b"ok\n", f"nginx under sluice answered {st} {body!r}")
        # Each worker has bound every operator it uses by now; QUIT makes
        # them exit through libheif's destructors (where the abort was).
        os.kill(p.pid, signal.SIGQUIT)
        _, err = p.communicate(timeout=15)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    with open(tmp.join("error.log"), errors="replace") as f:
        elog = f.read()
    check(p.returncode == 0, f"nginx exited {p.returncode}\n{err}\n{elog[-2000:]}")
    for bad in ("invalid pointer", "exited on signal", "Aborted", "double free"):
        check(bad not in elog and bad not in err, f"{bad!r} at exit:\n{err}\n{elog[-2000:]}")

    # 2. The bindings of every process (the dynamic linker writes one file
    # per pid: sluice run, the master, the workers).
    pat = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'")
    only_ours = ("libconfuse.so", "libsodium.so", "libnghttp2.so")
    seen_std = 0
    files = [f for f in os.listdir(tmp.path) if f.startswith("bind.")]
    check(files, "LD_DEBUG wrote nothing")
    bad = []
    for name in files:
        with open(tmp.join(name), errors="replace") as f:
            for line in f:
                m = pat.search(line)
                if not m:
                    continue
                frm, to, sym = m.groups()
                sym = sym.split("@")[0]
                # `sluice run` itself (it links libconfuse) is ours too.
                from_us = ("libsluice" in frm or frm == SLUICE
                           or any(o in frm for o in only_ours))
                if "libsluice" in to and not from_us and sym not in exported:
                    bad.append(f"{frm} -> {to}: {sym}")
                if any(o in to for o in only_ours) and not from_us:
                    bad.append(f"{frm} -> {to}: {sym}")
                if sym.startswith(("_Znw", "_Zna", "_Zdl", "_Zda")):
                    seen_std += 1
                    if "libstdc++" not in to:
                        bad.append(f"{frm} -> {to}: {sym}")
    check(not bad, "host symbols bound into sluice or its libraries:\n" + "\n".join(bad[:20]))
    check(seen_std > 0, "no C++ operator binding seen: is libheif loaded?")
    print(f"nginx + image_filter under sluice: clean exit, {seen_std} operator bindings "
          f"to libstdc++ (LD_DEBUG files: {len(files)}), none into sluice")
print("ok")
