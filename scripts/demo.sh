#!/usr/bin/env bash
# The built-in demo: no config to write. Runs python3's http.server under
# sluice with one inline inbound rule, floods it from one client, and shows
# what the client saw; then paces outbound connects with a delay rule.
set -eu
cd "$(dirname "$0")/.."
port=${DEMO_PORT:-18080}
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
