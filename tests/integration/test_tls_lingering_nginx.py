# SPDX-License-Identifier: BSD-2-Clause
"""TLS shutdown and nginx's own accounting under a never-limiting rule
(issue 21 item 4): the same as bare.

nginx over TLS with `lingering_close always` (every close lingers: nginx
sends its close_notify, then reads the raw socket until the client is
done, or 1 s of silence) and stub_status on a second, plain port. Run bare and under
`req_rate=1000000/s` on the TLS port; for each scenario the client
records the response's status line, how the stream ended (close_notify,
or an end without one, or a reset) and nginx's info-level error log lines
(the epoll_wait interruption at shutdown left out), and the two runs must
agree:
  - a request with Connection: close;
  - the same with the start of a pipelined second request behind it;
  - a POST whose 200 KB body is refused (413, client_max_body_size 1k),
    the body's rest sent during the lingering close;
  - a head sent in two parts with stub_status read in between: nginx
    counts the connection as reading (it has bytes of a request), not
    waiting. Before partial heads went to the program at once, sluice
    held them and nginx said "Reading: 0 ... Waiting: 1".
"""
import socket
import ssl

from lib import *


def scenario(port, sport, name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=3)
    s = ctx.wrap_socket(raw, suppress_ragged_eofs=False)
    stub = None
    head = b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    if name == "close":
        s.sendall(head)
    elif name == "pipelined part":
        s.sendall(head + b"GET /a HT")
    elif name == "413 with a body":
        s.sendall(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n" + b"x" * 20000)
        time.sleep(0.1)  # nginx answered and lingers: the rest comes then
        try:
            s.sendall(b"y" * 20000)
        except OSError:
            pass
    elif name == "head in two parts":
        s.sendall(head[:20])
        time.sleep(0.2)  # nginx has read the first part
        with socket.create_connection(("127.0.0.1", sport), timeout=3) as st:
            st.sendall(b"GET / HTTP/1.0\r\n\r\n")
            text = b""
            while True:
                d = st.recv(1000)
                if not d:
                    break
                text += d
        m = re.search(rb"Reading: (\d+) Writing: (\d+) Waiting: (\d+)", text)
        stub = m.group(0).decode() if m else text
        s.sendall(head[20:])
    data, end = b"", "?"
    try:
        while True:
            d = s.recv(4096)
            if not d:
                end = "close_notify"
                break
            data += d
    except ssl.SSLEOFError:
        end = "end without close_notify"
    except (ConnectionResetError, ssl.SSLError) as e:
        end = type(e).__name__
    except socket.timeout:
        end = "timeout"
    s.close()
    return data.split(b"\r\n")[0].decode(), end, stub


def run_all(under):
    with TempDir() as tmp:
        crt, key = make_cert(tmp)
        port, sport = free_port(), free_port()
        www = tmp.join("www")
        os.makedirs(www)
        os.chmod(www, 0o755)
        with open(os.path.join(www, "a"), "w") as f:
            f.write("ok\n")
        conf, argv = nginx_config(tmp, f"""
    access_log off;
    lingering_close always;
    lingering_timeout 1s;
    client_max_body_size 1k;
    server {{ listen 127.0.0.1:{port} ssl; ssl_certificate {crt}; ssl_certificate_key {key};
             root {www}; }}
    server {{ listen 127.0.0.1:{sport}; location / {{ stub_status; }} }}
""", events="use epoll;")
        with open(conf) as f:
            text = f.read().replace(" notice;", " info;")
        with open(conf, "w") as f:
            f.write(text)
        if under:
            argv = sluice_argv(argv, ins=[f"port={port} req_rate=1000000/s req_burst=1000000"])
        out = {}
        with Proc(argv) as ng:
            wait_listen(port)
            for name in ("close", "pipelined part", "413 with a body", "head in two parts"):
                out[name] = scenario(port, sport, name)
            time.sleep(0.3)  # nginx logs a close after the client saw it
            check(ng.p.poll() is None, "nginx is still running")
        with open(tmp.join("error.log")) as f:
            out["log"] = sorted(re.sub(r"^.*?\[info\] \d+#\d+: (\*\d+ )?", "", l).strip()
                                for l in f if "[info]" in l and "epoll_wait() failed" not in l)
    return out


bare, ours = run_all(False), run_all(True)
for k in bare:
    print(f"{k}: bare {bare[k]}, under the rule {ours[k]}")
bad = [k for k in bare if bare[k] != ours[k]]
check(not bad, "differs from bare: " + ", ".join(bad))
print("ok")
