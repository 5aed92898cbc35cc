# SPDX-License-Identifier: BSD-2-Clause
"""Real servers, plain or over their own TLS, each a private instance on a
loopback port serving GET /index.html as 200 "ok\\n" with a
Content-Length and keep-alive: what the per-server tests and the servers
table (test_server_coverage.py) start, written once.

Each recipe is recipe(tmp, port, tls) -> Started: the argv, environment
and working directory to run (bare or through sluice_argv), and
`served()`, the requests the server logged as it answered them (a list,
in order: [status, path] each), where the server can log. A recipe whose
program is missing raises Missing. Certificates come from lib.make_cert.
"""
import glob
import os
import shutil
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lib import *

MODULES = "/usr/lib/apache2/modules"
DEB_PY = "/usr/bin/python3"  # Debian's python3-uvicorn and gunicorn are for Debian's python


class Missing(Exception):
    pass


class Started:
    def __init__(self, argv, env=None, cwd=None, log=None, served=None, helpers=()):
        self.argv, self.env, self.cwd, self.log = argv, env or {}, cwd, log
        self._served = served
        self.helpers = list(helpers)  # threads or servers to stop with it

    def served(self):
        """[status, path] per request the server logged answering."""
        if self._served:
            return self._served()
        if not self.log or not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [l.split()[:2] for l in f if l.strip()]

    def stop(self):
        for h in self.helpers:
            h.shutdown()


def need(path, package):
    if not path or not os.path.exists(path):
        raise Missing(f"{package} is not installed")
    return path


def pem_pair(tmp, tls):
    return make_cert(tmp) if tls else (None, None)


def www(tmp):
    os.chmod(tmp.path, 0o755)
    d = tmp.join("www")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write("ok\n")
    return d


def apache(tmp, port, tls, mpm="event"):
    """apache 2.4 (Debian's), one child: event MPM with 4 threads, or
    prefork with 4 processes; mod_ssl when tls."""
    binary = need(shutil.which("apache2") or "/usr/sbin/apache2", "apache2")
    root = www(tmp)
    for d in ("run", "logs"):
        os.makedirs(tmp.join(d), exist_ok=True)
        os.chmod(tmp.join(d), 0o755)
    log = tmp.join("logs", "access.log")
    crt, key = pem_pair(tmp, tls)
    ssl = f"""LoadModule socache_shmcb_module {MODULES}/mod_socache_shmcb.so
LoadModule ssl_module {MODULES}/mod_ssl.so
SSLEngine on
SSLCertificateFile {crt}
SSLCertificateKeyFile {key}
SSLSessionCache shmcb:{tmp.join('run', 'scache')}(51200)
""" if tls else ""
    workers = ("StartServers 1\nServerLimit 1\nThreadsPerChild 4\nMaxRequestWorkers 4"
               if mpm == "event" else
               "StartServers 4\nMinSpareServers 4\nMaxSpareServers 4\nServerLimit 4\n"
               "MaxRequestWorkers 4")
    conf = tmp.write("httpd.conf", f"""
ServerRoot {tmp.path}
ServerName localhost
Listen 127.0.0.1:{port}
PidFile {tmp.join('run', 'httpd.pid')}
DefaultRuntimeDir {tmp.join('run')}
ErrorLog {tmp.join('logs', 'error.log')}
LogLevel warn
LoadModule mpm_{mpm}_module {MODULES}/mod_mpm_{mpm}.so
LoadModule authz_core_module {MODULES}/mod_authz_core.so
LoadModule mime_module {MODULES}/mod_mime.so
TypesConfig /etc/mime.types
User nobody
Group nogroup
DocumentRoot {root}
KeepAlive On
KeepAliveTimeout 15
MaxKeepAliveRequests 1000
{workers}
{ssl}
LogFormat "%s %U" brief
CustomLog {log} brief
<Directory {root}>
    Require all granted
</Directory>
""")
    return Started([binary, "-f", conf, "-DFOREGROUND"], log=log)


def apache_prefork(tmp, port, tls):
    return apache(tmp, port, tls, mpm="prefork")


def nginx(tmp, port, tls):
    """nginx 1.22, one worker."""
    crt, key = pem_pair(tmp, tls)
    root = www(tmp)
    log = tmp.join("access.log")
    ssl = f" ssl;\n        ssl_certificate {crt};\n        ssl_certificate_key {key}" if tls else ""
    _, argv = nginx_config(tmp, f"""
    log_format brief '$status $uri';
    access_log {log} brief;
    server {{
        listen 127.0.0.1:{port}{ssl};
        root {root};
        keepalive_requests 1000;
    }}""")
    return Started(argv, log=log)


PUMA_APP = """
log = File.open(ENV.fetch("SERVED_LOG"), "a")
log.sync = true
run lambda { |env|
  log.write("200 #{env['PATH_INFO']}\\n")
  [200, {"Content-Type" => "text/plain", "Content-Length" => "3"}, ["ok\\n"]]
}
"""


def puma(tmp, port, tls):
    """puma 5.6 (Debian's), single mode, 1-4 threads, a Rack app that logs
    what it serves."""
    binary = need(shutil.which("puma") or "/usr/bin/puma", "puma")
    log = tmp.join("served.log")
    ru = tmp.write("config.ru", PUMA_APP)
    if tls:
        crt, key = make_cert(tmp)
        bind = f"ssl://127.0.0.1:{port}?key={key}&cert={crt}&verify_mode=none"
    else:
        bind = f"tcp://127.0.0.1:{port}"
    return Started([binary, "-e", "production", "-b", bind, "-t", "1:4", ru],
                   env={"SERVED_LOG": log}, cwd=tmp.path, log=log)


ASGI_APP = """
import os
LOG = open(os.environ["SERVED_LOG"], "a", buffering=1)
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    LOG.write("200 %s\\n" % scope["path"])
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", b"3")]})
    await send({"type": "http.response.body", "body": b"ok\\n"})
"""

WSGI_APP = """
import os
LOG = open(os.environ["SERVED_LOG"], "a", buffering=1)
def app(environ, start_response):
    LOG.write("200 %s\\n" % environ["PATH_INFO"])
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "3")])
    return [b"ok\\n"]
"""


def deb_python_has(module):
    return run([DEB_PY, "-c", f"import {module}"]).returncode == 0


def uvicorn(tmp, port, tls, workers=2, loop=None, http=None):
    """uvicorn (Debian's python3-uvicorn) with `workers` worker processes
    (None: one process, no supervisor), its `--loop` and `--http` when
    given, an ASGI app that logs what it serves."""
    if not deb_python_has("uvicorn"):
        raise Missing("python3-uvicorn is not installed")
    log = tmp.join("served.log")
    tmp.write("app.py", ASGI_APP)
    argv = [DEB_PY, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port),
            "--log-level", "warning"]
    argv += ["--workers", str(workers)] if workers else []
    argv += ["--loop", loop] if loop else []
    argv += ["--http", http] if http else []
    if tls:
        crt, key = make_cert(tmp)
        argv += ["--ssl-keyfile", key, "--ssl-certfile", crt]
    return Started(argv + ["app:app"], env={"SERVED_LOG": log}, cwd=tmp.path, log=log)


def gunicorn(tmp, port, tls, workers=2):
    """gunicorn (Debian's) with `workers` sync workers, a WSGI app that
    logs what it serves."""
    if not deb_python_has("gunicorn"):
        raise Missing("gunicorn is not installed")
    log = tmp.join("served.log")
    tmp.write("app.py", WSGI_APP)
    argv = [DEB_PY, "-m", "gunicorn", "-b", f"127.0.0.1:{port}", "-w", str(workers),
            "--log-level", "warning"]
    if tls:
        crt, key = make_cert(tmp)
        argv += ["--keyfile", key, "--certfile", crt]
    return Started(argv + ["app:app"], env={"SERVED_LOG": log}, cwd=tmp.path, log=log)


def python(tmp, port, tls):
    """python 3's ThreadingHTTPServer (HTTP/1.1; lib.KEEPALIVE_SERVER), TLS
    with the ssl module over its socket."""
    log = tmp.join("served.log")
    return Started(keepalive_argv(port, served_log=log, tls=make_cert(tmp) if tls else None),
                   log=log)


def lighttpd(tmp, port, tls, lib="openssl"):
    """lighttpd 1.4 (Debian's), TLS with mod_openssl (lib="gnutls":
    mod_gnutls, GnuTLS over its socket)."""
    binary = need(shutil.which("lighttpd") or "/usr/sbin/lighttpd", "lighttpd")
    root = www(tmp)
    log = tmp.join("access.log")
    ssl = ""
    if tls:
        if not glob.glob(f"/usr/lib/lighttpd/mod_{lib}.so"):
            raise Missing(f"lighttpd-mod-{lib} is not installed")
        crt, key = make_cert(tmp)
        ssl = f'server.modules += ("mod_{lib}")\nssl.engine = "enable"\n' \
              f'ssl.pemfile = "{crt}"\nssl.privkey = "{key}"\n'
    conf = tmp.write("lighttpd.conf", f"""
server.document-root = "{root}"
server.port = {port}
server.bind = "127.0.0.1"
server.modules = ("mod_accesslog")
accesslog.filename = "{log}"
accesslog.format = "%s %U"
server.max-keep-alive-requests = 1000
mimetype.assign = (".html" => "text/html")
{ssl}""")
    return Started([binary, "-D", "-f", conf], log=log)


NODE_SERVER = r"""
const fs = require("fs"), [port, log, crt, key] = process.argv.slice(1);
const out = fs.openSync(log, "a");
const handler = (req, res) => {
  fs.writeSync(out, "200 " + req.url + "\n");
  res.writeHead(200, {"Content-Type": "text/plain", "Content-Length": "3"});
  res.end("ok\n");
};
const srv = crt ? require("https").createServer({cert: fs.readFileSync(crt), key: fs.readFileSync(key)}, handler)
                : require("http").createServer(handler);
srv.keepAliveTimeout = 15000;
srv.listen(+port, "127.0.0.1");
"""


def node(tmp, port, tls):
    """node's http and https servers (its OpenSSL is inside the binary)."""
    binary = need(shutil.which("node"), "nodejs")
    log = tmp.join("served.log")
    argv = [binary, "-e", NODE_SERVER, "--", str(port), log]  # -e: argv[1] is the first
    if tls:
        argv += list(make_cert(tmp))
    return Started(argv, log=log)


JAVA_SERVER = r"""
import com.sun.net.httpserver.*;
import java.io.*;
import java.net.InetSocketAddress;
import java.security.KeyStore;
import java.util.concurrent.Executors;
import javax.net.ssl.*;

public class Srv {
    public static void main(String[] a) throws Exception {
        int port = Integer.parseInt(a[0]);
        PrintStream log = new PrintStream(new FileOutputStream(a[1], true), true);
        InetSocketAddress at = new InetSocketAddress("127.0.0.1", port);
        HttpServer s;
        if (a.length > 2) {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(new FileInputStream(a[2]), "pw".toCharArray());
            KeyManagerFactory kmf = KeyManagerFactory.getInstance("SunX509");
            kmf.init(ks, "pw".toCharArray());
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf.getKeyManagers(), null, null);
            HttpsServer hs = HttpsServer.create(at, 50);
            hs.setHttpsConfigurator(new HttpsConfigurator(ctx));
            s = hs;
        } else {
            s = HttpServer.create(at, 50);
        }
        s.createContext("/", x -> {
            log.println("200 " + x.getRequestURI().getPath());
            byte[] b = "ok\n".getBytes();
            x.sendResponseHeaders(200, b.length);
            x.getResponseBody().write(b);
            x.close();
        });
        s.setExecutor(Executors.newFixedThreadPool(4));
        s.start();
    }
}
"""


def java(tmp, port, tls):
    """Java 17's com.sun.net.httpserver (JSSE for TLS, which sluice cannot
    decrypt)."""
    need(shutil.which("javac"), "openjdk-17-jdk-headless")
    os.makedirs(tmp.join("java"), exist_ok=True)
    src = tmp.write("java/Srv.java", JAVA_SERVER)
    r = run(["javac", "-d", tmp.join("java"), src], timeout=120)
    check(r.returncode == 0, f"javac: {r.stderr}")
    log = tmp.join("served.log")
    argv = ["java", "-Djava.net.preferIPv4Stack=true", "-cp", tmp.join("java"), "Srv", str(port), log]
    if tls:
        crt, key = make_cert(tmp)
        p12 = tmp.join("srv.p12")
        r = run(["openssl", "pkcs12", "-export", "-in", crt, "-inkey", key, "-out", p12,
                 "-passout", "pass:pw"])
        check(r.returncode == 0, f"openssl pkcs12: {r.stderr}")
        argv.append(p12)
    return Started(argv, log=log)


class _Backend(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    served = None

    def do_GET(self):
        self.served.append(["200", self.path])
        # one write: headers and body apart would meet Nagle and delayed ACKs
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")

    def log_message(self, *a):
        pass


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # haproxy closing an idle backend connection: a reset, not a failure


def haproxy(tmp, port, tls):
    """haproxy 2.6 (Debian's) in front of a python backend in this test's
    process (not under the shim); sluice is in haproxy's, on its frontend
    port, which terminates TLS when tls (`bind ssl crt`)."""
    binary = need(shutil.which("haproxy") or "/usr/sbin/haproxy", "haproxy")
    served = []
    handler = type("Backend", (_Backend,), {"served": served})
    back = _Quiet(("127.0.0.1", 0), handler)
    threading.Thread(target=back.serve_forever, daemon=True).start()
    bind = f"127.0.0.1:{port}"
    if tls:
        crt, key = make_cert(tmp)
        pem = tmp.join("both.pem")
        with open(pem, "w") as f:
            f.write(open(crt).read() + open(key).read())
        bind += f" ssl crt {pem}"
    conf = tmp.write("haproxy.cfg", f"""
global
    maxconn 100
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 15s
    option http-ignore-probes
frontend fe
    bind {bind}
    default_backend be
backend be
    server b1 127.0.0.1:{back.server_address[1]}
""")
    return Started([binary, "-db", "-f", conf], cwd=tmp.path, served=lambda: list(served),
                   helpers=[back])


# The servers table's rows, in order: (name, recipe).
ALL = [
    ("nginx", nginx),
    ("python http.server", python),
    ("apache2 event", apache),
    ("apache2 prefork", apache_prefork),
    ("haproxy", haproxy),
    ("puma", puma),
    ("uvicorn --workers 2", uvicorn),
    ("uvicorn --workers 4 --loop uvloop", lambda t, p, s: uvicorn(t, p, s, workers=4, loop="uvloop")),
    ("gunicorn --workers 2", gunicorn),
    ("lighttpd", lighttpd),
    ("lighttpd mod_gnutls", lambda t, p, s: lighttpd(t, p, s, lib="gnutls")),
    ("node http/https", node),
    ("java HttpServer", java),
]
