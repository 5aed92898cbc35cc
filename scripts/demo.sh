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
echo "== what sluice logged (rate-limited):"
head -5 /tmp/sluice-demo.log
