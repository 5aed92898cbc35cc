# SPDX-License-Identifier: BSD-2-Clause
"""Token budgets (issue 35, item 3): `cost_from` reads what each answer says
a call cost, `cost_rate`/`cost_burst` is the key's budget of such tokens; a
call is admitted while the key's budget is not in debt, and the answer's
cost is charged once it is read.

The "LLM endpoint" is a ThreadingHTTPServer in this test process (not under
the shim) on 127.0.0.1 (plain, and over TLS with a self-signed
certificate): POST /json?n=N answers {"usage": {"total_tokens": N}} with a
Content-Length; POST /sse?n=N answers a chunked text/event-stream, as
OpenAI streams: two chunks of text, then one whose JSON carries `usage`,
then `data: [DONE]`. It keeps the tokens it said per call, and the time
each call arrived (time.monotonic(): CLOCK_MONOTONIC, sluice's clock).

The clients are real ones under `sluice run -c CONF`: /usr/bin/python3 with
requests (JSON, keep-alive; over TLS too) and curl (the SSE stream, one
process per call: the budget is the table's, shared by the processes).
Every rule: per = header:X-User, cost_from = json:usage.total_tokens.

1. cost_rate = 1000/m, cost_burst = 1000, action = reply, answers of 400:
   alice's calls 1-3 pass (the third leaves her 200 in debt), the 4th is
   answered 429 by sluice and never reaches the endpoint; bob's call passes
   (a key of his own). `sluice stats`: calls 4, tokens 1600 = what the
   endpoint said, none unread, 1 refused.
2. The same over an SSE stream, with curl: 200 200 200 429; tokens 1200.
3. The same JSON calls over TLS (requests, OpenSSL): 200 200 200 429.
4. Both budgets together (action = reply, answers of 100, req_rate = 3/m):
   the 4th call is refused by the request budget: the endpoint saw 3,
   tokens 300 (the refused call spent none); and (req_rate = 5/m, answers of
   400) the 4th is refused by the tokens: the request budget's row counts 3
   allowed, 1 limited, the token row 1 refused, tokens 1200.
5. action = delay, cost_rate = 100/s, cost_burst = 1000 (10 ms a token),
   answers of 400: the 4th call waits until the debt of 200 tokens is paid.
   The budget refills from the first charge on: 1,200 tokens charged from
   the first answer's reading (t1) leave the key in debt until t1 + 2 s,
   and t1 is after the first call reached the endpoint, so the 4th reaches
   it >= 1.9 s after the first did (0.1 s off for timer rounding only; a
   slow machine makes it later, never sooner) and < 5 s after the third
   (max_delay).
An answer whose cost cannot be read (a body without usage) is charged the
rule's `cost` by the rule of doubt and counted `unread` (6).
"""
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from lib import *


class Endpoint:
    """The fake LLM endpoint; `said` holds (path, user, tokens, arrival)."""

    def __init__(self, tls=None):
        self.said = []
        self.lock = threading.Lock()
        ep = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                t = time.monotonic()
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                u = urlparse(self.path)
                n = int(parse_qs(u.query).get("n", ["0"])[0])
                usage = {"prompt_tokens": n // 4, "completion_tokens": n - n // 4, "total_tokens": n}
                with ep.lock:
                    ep.said.append((u.path, self.headers.get("X-User"), n if u.path != "/nousage" else None, t))
                if u.path == "/sse":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    events = [{"choices": [{"delta": {"content": w}}]} for w in ("Hel", "lo")]
                    events.append({"choices": [], "usage": usage})
                    for e in [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]:
                        b = e.encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    return
                body = {"id": "x", "object": "chat.completion"}
                if u.path != "/nousage":
                    body["usage"] = usage
                b = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

            def log_message(self, *a):
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def tokens(self):
        with self.lock:
            return sum(n for _, _, n, _ in self.said if n is not None)

    def calls(self):
        with self.lock:
            return list(self.said)

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


# argv: base URL, CA file ("-": none), then calls "PATH USER N"; prints the
# statuses and when each answer had been read (time.monotonic()).
CLIENT = r"""
import json, sys, time
import requests
base, ca, calls = sys.argv[1], sys.argv[2], sys.argv[3:]
s = requests.Session()
codes, read_at = [], []
for c in calls:
    path, user, n = c.split()
    r = s.post(f"{base}{path}?n={n}", data=b"{}", headers={"X-User": user}, timeout=20,
               verify=ca if ca != "-" else True)
    r.content
    codes.append(r.status_code)
    read_at.append(time.monotonic())
print(json.dumps({"codes": codes, "read_at": read_at}))
"""


def config(tmp, name, port, extra):
    return tmp.write(f"{name}.conf", f"""
shared = "{name}"
outbound "llm" {{
    to         = "127.0.0.1"
    port       = {port}
    per        = "header:X-User"
    cost_from  = "json:usage.total_tokens"
    {extra}
}}
""")


def python_calls(conf, base, calls, ca="-"):
    r = run(sluice_argv(["/usr/bin/python3", "-c", CLIENT, base, ca, *calls], config=conf), timeout=60)
    check(r.returncode == 0, f"client failed: {r.stdout}{r.stderr}")
    return last_json(r.stdout), r.stderr


def stats(conf):
    """`sluice stats -c CONF`: the token row and the request row of rule llm."""
    st = run([SLUICE, "stats", "-c", conf])
    check(st.returncode == 0, f"sluice stats: {st.stdout}{st.stderr}")
    lines = st.stdout.splitlines()
    out = {}
    for i, l in enumerate(lines):
        if l.startswith("tokens (") or l.startswith("requests ("):
            head = lines[i + 1].split()
            row = next((x.split() for x in lines[i + 2:] if x.split()[:1] == ["llm"]), None)
            check(row, f"no llm row under {l}:\n{st.stdout}")
            out[l.split()[0]] = dict(zip(head[1:], map(int, row[1:len(head)])))
    check("tokens" in out, f"no tokens section:\n{st.stdout}")
    return out, st.stdout


names = []
try:
    with TempDir() as tmp:
        # 1. JSON answers, python requests, action = reply
        ep = Endpoint()
        name = f"it-cost-json-{os.getpid()}"
        names.append(name)
        conf = config(tmp, name, ep.port, 'cost_rate = "1000/m"\n    cost_burst = 1000\n    action = "reply"')
        res, err = python_calls(conf, f"http://127.0.0.1:{ep.port}",
                                ["/json alice 400"] * 4 + ["/json bob 400"])
        calls = ep.calls()
        print("1. json:", res["codes"], "endpoint saw", [(p, u, n) for p, u, n, _ in calls])
        check(res["codes"] == [200, 200, 200, 429, 200], f"statuses {res['codes']}\n{err}")
        check([u for _, u, _, _ in calls] == ["alice"] * 3 + ["bob"],
              f"the refused call reached the endpoint: {calls}")
        s, text = stats(conf)
        print(text)
        t = s["tokens"]
        check(t["tokens"] == ep.tokens() == 1600, f"tokens charged {t['tokens']}, endpoint said {ep.tokens()}")
        check(t["calls"] == 4 and t["unread"] == 0 and t["refused"] == 1, f"token row {t}")
        m = run([SLUICE, "metrics", "-c", conf]).stdout
        check('sluice_tokens_total{rule="llm",what="tokens"} 1600' in m,
              "metrics: " + "\n".join(l for l in m.splitlines() if "tokens" in l))
        check('rule="llm:cost"' not in m, "a token budget shown as a rule of its own in the metrics")
        ep.close()

        # 2. SSE, curl: one process per call, the budget shared through the table
        ep = Endpoint()
        name = f"it-cost-sse-{os.getpid()}"
        names.append(name)
        conf = config(tmp, name, ep.port, 'cost_rate = "1000/m"\n    cost_burst = 1000\n    action = "reply"')
        url = f"http://127.0.0.1:{ep.port}/sse?n=400"
        script = " ".join(["curl -sS -N -o /dev/null -w '%{http_code} ' -X POST --data '{}' "
                           f"-H 'X-User: carol' '{url}';"] * 4)
        r = run(sluice_argv(["sh", "-c", script], config=conf), timeout=60)
        codes = r.stdout.split()
        print("2. sse:", codes, r.stderr)
        check(codes == ["200", "200", "200", "429"], f"curl statuses {codes}\n{r.stderr}")
        check(len(ep.calls()) == 3, f"the endpoint saw {len(ep.calls())} calls")
        s, text = stats(conf)
        print(text)
        check(s["tokens"]["tokens"] == ep.tokens() == 1200,
              f"tokens charged {s['tokens']['tokens']}, endpoint said {ep.tokens()}")
        check(s["tokens"]["unread"] == 0, f"token row {s['tokens']}")
        ep.close()

        # 3. over TLS (requests, OpenSSL: the shim reads the plaintext)
        crt, key = make_cert(tmp)
        ep = Endpoint(tls=(crt, key))
        name = f"it-cost-tls-{os.getpid()}"
        names.append(name)
        conf = config(tmp, name, ep.port, 'cost_rate = "1000/m"\n    cost_burst = 1000\n    action = "reply"')
        res, err = python_calls(conf, f"https://127.0.0.1:{ep.port}", ["/json dave 400"] * 4, ca=crt)
        print("3. tls:", res["codes"])
        check(res["codes"] == [200, 200, 200, 429], f"statuses over TLS {res['codes']}\n{err}")
        s, text = stats(conf)
        check(s["tokens"]["tokens"] == ep.tokens() == 1200, f"over TLS: {s['tokens']}, endpoint {ep.tokens()}")
        ep.close()

        # 4. both budgets decided together
        ep = Endpoint()
        name = f"it-cost-both-{os.getpid()}"
        names.append(name)
        conf = config(tmp, name, ep.port, 'cost_rate = "1000/m"\n    cost_burst = 1000\n'
                      '    req_rate = "3/m"\n    req_burst = 3\n    action = "reply"')
        res, err = python_calls(conf, f"http://127.0.0.1:{ep.port}", ["/json erin 100"] * 4)
        print("4a. request budget refuses:", res["codes"])
        check(res["codes"] == [200, 200, 200, 429], f"statuses {res['codes']}\n{err}")
        check(len(ep.calls()) == 3, f"the endpoint saw {len(ep.calls())} calls")
        s, text = stats(conf)
        print(text)
        check(s["tokens"]["tokens"] == ep.tokens() == 300 and s["tokens"]["refused"] == 0,
              f"a call the request budget refused spent tokens: {s['tokens']}")
        check(s["requests"]["limited"] == 1, f"request row {s['requests']}")
        ep.close()

        ep = Endpoint()
        name = f"it-cost-both2-{os.getpid()}"
        names.append(name)
        conf = config(tmp, name, ep.port, 'cost_rate = "1000/m"\n    cost_burst = 1000\n'
                      '    req_rate = "5/m"\n    req_burst = 5\n    action = "reply"')
        res, err = python_calls(conf, f"http://127.0.0.1:{ep.port}", ["/json frank 400"] * 4)
        print("4b. token budget refuses:", res["codes"])
        check(res["codes"] == [200, 200, 200, 429], f"statuses {res['codes']}\n{err}")
        s, text = stats(conf)
        print(text)
        check(s["tokens"]["refused"] == 1 and s["tokens"]["tokens"] == ep.tokens() == 1200,
              f"token row {s['tokens']}")
        check(s["requests"]["allowed"] == 3 and s["requests"]["limited"] == 1,
              f"request row {s['requests']}")
        ep.close()

        # 5. delay: the 4th call waits until the debt is paid
        ep = Endpoint()
        name = f"it-cost-delay-{os.getpid()}"
        names.append(name)
        conf = config(tmp, name, ep.port, 'cost_rate = "100/s"\n    cost_burst = 1000\n'
                      '    action = "delay"\n    max_delay = "5s"')
        res, err = python_calls(conf, f"http://127.0.0.1:{ep.port}", ["/json gina 400"] * 4)
        calls = ep.calls()
        gap, after3 = calls[3][3] - calls[0][3], calls[3][3] - calls[2][3]
        print(f"5. delay: {res['codes']}, the 4th arrived {gap:.3f} s after the 1st, "
              f"{after3:.3f} s after the 3rd")
        check(res["codes"] == [200] * 4, f"statuses {res['codes']}\n{err}")
        check(gap >= 1.9, f"the 4th call arrived {gap:.3f} s after the 1st (debt paid 2 s after it)")
        check(after3 < 5.0, f"the 4th call arrived {after3:.3f} s after the 3rd (max_delay 5 s)")
        s, _ = stats(conf)
        check(s["tokens"]["tokens"] == ep.tokens() == 1600, f"token row {s['tokens']}")
        ep.close()

        # 6. an answer without a readable cost: the rule's cost, counted
        ep = Endpoint()
        name = f"it-cost-unread-{os.getpid()}"
        names.append(name)
        conf = config(tmp, name, ep.port, 'cost_rate = "1000/m"\n    cost_burst = 1000\n'
                      '    cost = 7\n    action = "reply"')
        res, err = python_calls(conf, f"http://127.0.0.1:{ep.port}", ["/nousage hank 0", "/json hank 5"])
        s, _ = stats(conf)
        print("6. unread:", res["codes"], s["tokens"])
        check(s["tokens"]["tokens"] == 12 and s["tokens"]["unread"] == 1
              and s["tokens"]["unread_tokens"] == 7, f"token row {s['tokens']}")
        check("could not be read" in err, f"no log line for the unread cost:\n{err}")
        ep.close()
finally:
    for n in names:
        shm_cleanup(n)
print("ok")
