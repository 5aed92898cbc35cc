#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The built-in demo: no config to write. First request limits: a keep-alive
# HTTP/1.1 server under an inline request rule keyed by API key, flooded by
# two clients over one connection each, and a client's calls to it paced by
# an outbound request rule (a paid API). Then python3's http.server under a
# connection rule, outbound connects paced by a delay rule, and a download
# capped by a byte rate.
set -eu
cd "$(dirname "$0")/.."
port=${DEMO_PORT:-18080}
rport=$((port + 2))
rrule="port=$rport req_rate=10/s req_burst=5 per=header:X-API-Key action=reply"
echo "== requests: build/sluice run --in '$rrule' -- (a keep-alive HTTP/1.1 server)"
build/sluice run --in "$rrule" -- python3 -c '
import sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers()
        self.wfile.write(b"ok\n")
        sys.stderr.write("served\n"); sys.stderr.flush()
    def log_message(self, *a): pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "$rport" >/dev/null 2>/tmp/sluice-demo-req.log &
rserver=$!
trap 'kill $rserver 2>/dev/null; wait $rserver 2>/dev/null || true' EXIT
python3 - "$rport" <<'PY'
import socket, sys, threading, time
port = int(sys.argv[1])
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
    except OSError:
        time.sleep(0.05)
def read(f):
    line = f.readline()
    if not line:
        return None, ""
    head = [line.decode().strip()]
    n = 0
    while (l := f.readline().decode().strip()):
        head.append(l)
        if l.lower().startswith("content-length:"):
            n = int(l.split(":")[1])
    f.read(n)
    return int(line.split()[1]), "\n  ".join(head)
counts, sample, lock = {}, [None], threading.Lock()
def client(key):
    start, s = time.monotonic(), None
    while time.monotonic() - start < 2.0:
        if s is None:
            s = socket.create_connection(("127.0.0.1", port), timeout=5); f = s.makefile("rb")
        s.sendall(f"GET /orders HTTP/1.1\r\nHost: demo\r\nX-API-Key: {key}\r\n\r\n".encode())
        status, head = read(f)
        with lock:
            counts[(key, status)] = counts.get((key, status), 0) + 1
            if status == 429 and sample[0] is None:
                sample[0] = head
        if status != 200:
            s.close(); s = None   # a 429 closes the connection: reconnect
ts = [threading.Thread(target=client, args=(k,)) for k in ("key-alpha", "key-beta")]
[t.start() for t in ts]; [t.join() for t in ts]
for k in ("key-alpha", "key-beta"):
    print(f"  {k}: {counts.get((k, 200), 0)} answered 200, {counts.get((k, 429), 0)} answered 429")
print("  expected per key about burst + rate*T = 5 + 10*2 = 25 answered 200")
print("  a denied client saw:\n  " + (sample[0] or "(none)"))
PY
sleep 0.3
echo "  requests that reached the server: $(grep -c '^served' /tmp/sluice-demo-req.log)"
echo
orule="to=127.0.0.1 port=$rport req_rate=4/s req_burst=1 action=delay"
echo "== outbound requests (a paid API): 6 calls on one keep-alive connection through --out '$orule'"
build/sluice run --out "$orule" -- python3 - "$rport" <<'PY'
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
start = time.monotonic()
for i in range(6):
    c.request("GET", "/orders", headers={"X-API-Key": "nightly-job"})
    r = c.getresponse(); r.read()
    print(f"  call {i + 1}: {r.status} at {time.monotonic() - start:5.2f} s")
print("  (one every 0.25 s on a connection the client keeps open: queued, none failed)")
PY
kill $rserver 2>/dev/null; wait $rserver 2>/dev/null || true
echo
rule="port=$port rate=5/s burst=5 action=reply"
echo "== inbound: build/sluice run --in '$rule' -- python3 -m http.server $port"
build/sluice run --in "$rule" -- python3 -m http.server "$port" --bind 127.0.0.1 \
    >/dev/null 2>/tmp/sluice-demo.log &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
python3 - "$port" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
    except OSError:
        time.sleep(0.05)
time.sleep(1.2)  # let the probe's token come back
def get():
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n")
        data = b""
        while (c := s.recv(65536)):
            data += c
    return data.decode("latin-1")
counts, sample, start = {}, None, time.monotonic()
while time.monotonic() - start < 2.0:
    r = get()
    status = r.split()[1]
    counts[status] = counts.get(status, 0) + 1
    if status == "429" and sample is None:
        sample = r.split("\r\n\r\n")[0]
print(f"2 s of connections as fast as one client can: {counts}")
print(f"expected about burst + rate*T = 5 + 5*2 = 15 answered 200")
print("a denied client saw:\n  " + sample.replace("\r\n", "\n  "))
PY
echo
echo "== outbound: 6 connects through --out 'to=127.0.0.1 port=$port rate=4/s burst=1 action=delay'"
build/sluice run --out "to=127.0.0.1 port=$port rate=4/s burst=1 action=delay" -- python3 - "$port" <<'PY'
import socket, sys, time
port, start = int(sys.argv[1]), time.monotonic()
for i in range(6):
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    print(f"  connect {i + 1} at {time.monotonic() - start:5.2f} s")
print("  (one every 0.25 s: queued, none failed)")
PY
echo
bw=$((port + 1))
www=$(mktemp -d /tmp/sluice-demo-www-XXXXXX)
head -c 3000000 /dev/zero > "$www/3MB.bin"
echo "== bandwidth: --in 'port=$bw send_rate=1MB/s' on http.server, curl downloads 3 MB"
build/sluice run --in "port=$bw send_rate=1MB/s" -- python3 -m http.server "$bw" --bind 127.0.0.1 \
    --directory "$www" >/dev/null 2>&1 &
bwserver=$!
trap 'kill $server $bwserver 2>/dev/null; wait 2>/dev/null; rm -rf "$www"' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$bw/" && break; sleep 0.05; done
curl -s -o /dev/null -w '  %{size_download} bytes in %{time_total} s = %{speed_download} bytes/s\n' \
    "http://127.0.0.1:$bw/3MB.bin"
echo "  (expected: 100 kB burst, then 1 MB/s: about 2.9 s)"
echo
echo "== what sluice logged (at most 10 lines at once, then 5 a second):"
grep 'sluice\[' /tmp/sluice-demo.log | head -5
