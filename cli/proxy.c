/* SPDX-License-Identifier: BSD-2-Clause */
/* proxy.c - the local forwarding HTTP proxy of `sluice run` (proxy.h).
 *
 * A thread per client connection (at most SL_PROXY_CONNS at once; the
 * next gets a 503), reading the client's request heads (at most
 * SL_PROXY_HEAD bytes each; larger: 431):
 *
 * - `CONNECT host:port`: resolve and connect (through the shim: a delay
 *   rule waits, a reject rule refuses: 502 naming the error, since a
 *   refused connect cannot tell a rule from a closed port), answer
 *   `200 Connection established`, then relay bytes both ways until either
 *   side closes. The client's TLS goes through the shim's send as any TLS
 *   sluice cannot decrypt: counted by write bursts, named by its SNI.
 * - an absolute-form request, `GET http://host:port/path HTTP/1.1`:
 *   connect to host:port, send the head in origin-form (`GET /path`,
 *   Proxy-* fields dropped, Host kept or added), then its body (by
 *   Content-Length or chunked framing), and read the next head: a
 *   keep-alive client (Go's transport) sends every plain request to every
 *   host on one connection to its proxy, so a head for another host:port
 *   closes the upstream connection and opens one to the new one (a client
 *   that does not pipeline has read the previous response when it sends the
 *   next head). The shim reads these plain requests exactly, as any
 *   client's: a delay rule holds the head's write, a reply rule's 429
 *   comes back as the server's answer would, and a head whose write a
 *   reject rule fails (ECONNREFUSED, the default errno: no kernel fails a
 *   connected socket's write so) is answered 429 by the proxy, the
 *   connection closed. An Upgrade request turns the connection into a
 *   tunnel.
 *
 * Responses are relayed as they come, by a second thread per upstream
 * connection (the pump): a server that writes while it reads never waits
 * on the proxy. When the server closes, the client connection is shut
 * down too; when the client closes, the server connection is.
 *
 * The proxy never holds the program: it is the program's child, killed
 * when the program ends (PR_SET_PDEATHSIG) and watching getppid() once a
 * second besides; its stdin and stdout are /dev/null (the shim's log goes
 * to the program's stderr, as the program's own would).
 */
#include "proxy.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>

#define SL_PROXY_HEAD  16384       /* a request head, request line included */
#define SL_PROXY_CONNS 256         /* client connections at once */
#define SL_PROXY_STACK (256 << 10) /* per thread: the shim's hooks run on it */

const char sl_proxy_covers[] =
    "the HTTP and HTTPS of clients that honour these variables (Go's net/http with its default "
    "transport or Proxy: http.ProxyFromEnvironment, curl, python, node 24 with "
    "NODE_USE_ENV_PROXY=1) goes through it and is limited there; anything else such a program "
    "does stays unseen (other protocols, clients that ignore the variables, and Go's requests to "
    "localhost or a loopback address, which it never sends to a proxy)";

/* ---- the variables ---------------------------------------------------- */

static const char *const vars[][2] = {
    {"HTTPS_PROXY", "https_proxy"},
    {"HTTP_PROXY", "http_proxy"},
    {"ALL_PROXY", "all_proxy"},
};
#define NVARS (sizeof vars / sizeof *vars)

static const char *user_value(size_t i)
{
    for (int c = 0; c < 2; c++) {
        const char *v = getenv(vars[i][c]);
        if (v && *v) return v;
    }
    return NULL;
}

int sl_proxy_unset_vars(void)
{
    int n = 0;
    for (size_t i = 0; i < NVARS; i++)
        n += user_value(i) == NULL;
    return n;
}

void sl_proxy_name(const char *url, char *kept, size_t len)
{
    size_t used = 0;
    if (len) *kept = 0;
    for (size_t i = 0; i < NVARS; i++) {
        const char *v = user_value(i);
        if (!v) {
            setenv(vars[i][0], url, 1);
            setenv(vars[i][1], url, 1);
            continue;
        }
        int w = snprintf(kept + used, len - used, "%s%s=%s", used ? " " : "", vars[i][0], v);
        if (w > 0 && (size_t)w < len - used) used += (size_t)w;
    }
}

/* ---- starting it ------------------------------------------------------ */

int sl_proxy_start(const char *preload, char *url, size_t len, char *err, size_t errlen)
{
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 128) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
        snprintf(err, errlen, "cannot listen on 127.0.0.1: %s", strerror(errno));
        if (ls >= 0) close(ls);
        return -1;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(err, errlen, "/proc/self/exe: %s", strerror(errno));
        close(ls);
        return -1;
    }
    self[n] = 0;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(ls);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(0);
        int fd = fcntl(ls, F_DUPFD, 3); /* without FD_CLOEXEC */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd < 0 || null < 0) _exit(1);
        dup2(null, 0);
        dup2(null, 1);
        char fds[16], pp[16];
        snprintf(fds, sizeof fds, "%d", fd);
        snprintf(pp, sizeof pp, "%d", (int)parent);
        setenv("LD_PRELOAD", preload, 1);
        execl(self, "sluice-proxy", "proxy-serve", fds, pp, (char *)NULL);
        _exit(127);
    }
    close(ls);
    snprintf(url, len, "http://127.0.0.1:%d", ntohs(a.sin_port));
    return 0;
}

/* ---- bytes ------------------------------------------------------------ */

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static ssize_t recv_some(int fd, char *p, size_t n)
{
    ssize_t r;
    do
        r = recv(fd, p, n, 0);
    while (r < 0 && errno == EINTR);
    return r;
}

/* ---- one client connection --------------------------------------------- */

struct conn {
    int client;
    int up;                  /* -1: none */
    char target[300];        /* host:port of up */
    pthread_t pump;          /* up -> client, while up >= 0 */
    atomic_bool leaving;     /* the reader closes up itself: the pump keeps client open */
    size_t len;              /* bytes of buf read from the client, not yet handled */
    char buf[SL_PROXY_HEAD]; /* the client's bytes: a head, then what follows */
    char out[SL_PROXY_HEAD + 512];
};

static atomic_int active;        /* client connections being served */
static pthread_attr_t pump_attr; /* joinable, SL_PROXY_STACK */

static void *pump(void *arg)
{
    struct conn *c = arg;
    char b[16384];
    for (;;) {
        ssize_t r = recv_some(c->up, b, sizeof b);
        if (r <= 0 || send_all(c->client, b, (size_t)r) != 0) break;
    }
    /* the server closed: so does the client's connection (its reader sees
     * end-of-file), unless the reader is closing this one itself */
    if (!atomic_load(&c->leaving)) shutdown(c->client, SHUT_RDWR);
    return NULL;
}

static void end_upstream(struct conn *c)
{
    if (c->up < 0) return;
    atomic_store(&c->leaving, true);
    shutdown(c->up, SHUT_RDWR);
    pthread_join(c->pump, NULL);
    close(c->up);
    c->up = -1;
    c->target[0] = 0;
    atomic_store(&c->leaving, false);
}

static void answer(struct conn *c, int code, const char *reason, const char *why)
{
    char b[1024];
    int n = snprintf(b, sizeof b,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s\n",
                     code, reason, strlen(why) + 1, why);
    if (n > 0) send_all(c->client, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

/* Splits "host:port" or "[v6]:port" (port: dflt when absent). */
static bool split_authority(const char *s, size_t n, const char *dflt, char *host, size_t hlen,
                            char *port, size_t plen)
{
    const char *colon = NULL, *end = s + n;
    if (n && *s == '[') {
        const char *close = memchr(s, ']', n);
        if (!close) return false;
        if ((size_t)(close - s - 1) >= hlen) return false;
        memcpy(host, s + 1, (size_t)(close - s - 1));
        host[close - s - 1] = 0;
        if (close + 1 < end && close[1] != ':') return false;
        colon = close + 1 < end ? close + 1 : NULL;
    } else {
        colon = memrchr(s, ':', n);
        size_t h = colon ? (size_t)(colon - s) : n;
        if (h == 0 || h >= hlen) return false;
        memcpy(host, s, h);
        host[h] = 0;
    }
    const char *p = colon ? colon + 1 : dflt;
    size_t pl = colon ? (size_t)(end - p) : strlen(dflt);
    if (pl == 0 || pl >= plen || pl > 5) return false;
    long v = 0;
    for (size_t i = 0; i < pl; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > 65535) return false;
    memcpy(port, p, pl);
    port[pl] = 0;
    return true;
}

/* Connects c->up to host:port (through the shim: its rules decide). */
static int open_upstream(struct conn *c, const char *host, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char why[512];
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        snprintf(why, sizeof why, "sluice proxy: cannot resolve %s: %s", host, gai_strerror(g));
        answer(c, 502, "Bad Gateway", why);
        return -1;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            e = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(why, sizeof why,
                 "sluice proxy: connect to %s port %s: %s (refused by the server, or by a "
                 "sluice rule: the log says which)",
                 host, port, strerror(e));
        answer(c, 502, "Bad Gateway", why);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->up = fd;
    snprintf(c->target, sizeof c->target, "%s:%s", host, port);
    if (pthread_create(&c->pump, &pump_attr, pump, c) != 0) {
        close(fd);
        c->up = -1;
        answer(c, 503, "Service Unavailable", "sluice proxy: out of threads");
        return -1;
    }
    return 0;
}

/* Reads until buf holds a whole head; returns its length (through the
 * blank line), 0 at end-of-file before one, -1 when too large. */
static size_t read_head(struct conn *c, bool *too_large)
{
    *too_large = false;
    for (;;) {
        char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
        if (end) return (size_t)(end - c->buf) + 4;
        if (c->len == sizeof c->buf) {
            *too_large = true;
            return 0;
        }
        ssize_t r = recv_some(c->client, c->buf + c->len, sizeof c->buf - c->len);
        if (r <= 0) return 0;
        c->len += (size_t)r;
    }
}

static void consume(struct conn *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

/* Relays everything from the client to up until the client closes. */
static void tunnel(struct conn *c)
{
    if (c->len && send_all(c->up, c->buf, c->len) != 0) return;
    c->len = 0;
    for (;;) {
        ssize_t r = recv_some(c->client, c->buf, sizeof c->buf);
        if (r <= 0 || send_all(c->up, c->buf, (size_t)r) != 0) return;
    }
}

/* A chunked body, scanned as it passes (RFC 9112 7.1; a bare LF is taken
 * for CRLF). */
struct chunked {
    enum { CH_SIZE, CH_EXT, CH_DATA, CH_DATA_END, CH_TRAILER, CH_TRAILER_LINE, CH_DONE } st;
    uint64_t left;
    bool digits;
};

/* How many of p's n bytes belong to the body; -1 when it is malformed. */
static ssize_t chunked_scan(struct chunked *ch, const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && ch->st != CH_DONE) {
        char b = p[i];
        switch (ch->st) {
        case CH_SIZE:
            if ((b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'f')) {
                if (ch->left >> 56) return -1;
                ch->left = ch->left * 16 + (uint64_t)(b <= '9' ? b - '0' : (b | 0x20) - 'a' + 10);
                ch->digits = true;
                i++;
                break;
            }
            if (!ch->digits) return -1;
            ch->st = CH_EXT;
            break;
        case CH_EXT:
            if (p[i++] != '\n') break;
            ch->st = ch->left ? CH_DATA : CH_TRAILER;
            break;
        case CH_DATA: {
            size_t take = n - i < ch->left ? n - i : (size_t)ch->left;
            i += take;
            ch->left -= take;
            if (!ch->left) ch->st = CH_DATA_END;
            break;
        }
        case CH_DATA_END:
            if (b == '\r') {
                i++;
                break;
            }
            if (b != '\n') return -1;
            i++;
            ch->st = CH_SIZE;
            ch->digits = false;
            break;
        case CH_TRAILER:
            i++;
            if (b == '\n')
                ch->st = CH_DONE;
            else if (b != '\r')
                ch->st = CH_TRAILER_LINE;
            break;
        case CH_TRAILER_LINE:
            if (p[i++] == '\n') ch->st = CH_TRAILER;
            break;
        case CH_DONE:
            break;
        }
    }
    return (ssize_t)i;
}

/* A header's value in head (NUL-terminated, lines after the first), or NULL. */
static const char *field(const char *head, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    for (const char *l = strstr(head, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
        const char *s = l + 2;
        if (strncasecmp(s, name, nl) || s[nl] != ':') continue;
        s += nl + 1;
        while (*s == ' ' || *s == '\t')
            s++;
        const char *e = strstr(s, "\r\n");
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        *vlen = (size_t)(e - s);
        return s;
    }
    return NULL;
}

static bool has_word(const char *v, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (!strncasecmp(v + i, word, w)) return true;
    return false;
}

/* How the body of the request whose head is head (NUL-terminated) is
 * framed: chunked, or *length bytes (0: none); false when malformed. */
static bool body_framing(const char *head, bool *chunked, uint64_t *length)
{
    size_t vl;
    const char *te = field(head, "Transfer-Encoding", &vl);
    *chunked = te && has_word(te, vl, "chunked");
    *length = 0;
    const char *cl = field(head, "Content-Length", &vl);
    for (size_t i = 0; cl && !*chunked && i < vl; i++) {
        if (cl[i] < '0' || cl[i] > '9' || *length >> 56) return false;
        *length = *length * 10 + (uint64_t)(cl[i] - '0');
    }
    return true;
}

/* Forwards the body of the request whose head was just sent; false when
 * the connection cannot go on. */
static bool forward_body(struct conn *c, bool chunked, uint64_t left)
{
    if (chunked) {
        struct chunked ch = {0};
        for (;;) {
            ssize_t k = chunked_scan(&ch, c->buf, c->len);
            if (k < 0) return false;
            if (k && send_all(c->up, c->buf, (size_t)k) != 0) return false;
            consume(c, (size_t)k);
            if (ch.st == CH_DONE) return true;
            ssize_t r = recv_some(c->client, c->buf + c->len, sizeof c->buf - c->len);
            if (r <= 0) return false;
            c->len += (size_t)r;
        }
    }
    while (left) {
        if (!c->len) {
            ssize_t r = recv_some(c->client, c->buf, sizeof c->buf);
            if (r <= 0) return false;
            c->len = (size_t)r;
        }
        size_t take = c->len < left ? c->len : (size_t)left;
        if (send_all(c->up, c->buf, take) != 0) return false;
        consume(c, take);
        left -= take;
    }
    return true;
}

/* One absolute-form request: its head is buf[0, hlen), its request line
 * split at method (m), target (t) and version (v). */
static bool forward_request(struct conn *c, size_t hlen, const char *m, size_t ml, const char *t,
                            size_t tl, const char *v, size_t vl)
{
    const char *auth = t + 7, *end = t + tl; /* after "http://" */
    const char *path = memchr(auth, '/', (size_t)(end - auth));
    const char *query = memchr(auth, '?', (size_t)(end - auth));
    if (!path || (query && query < path)) path = query;
    const char *aend = path ? path : end;
    char host[256], port[8];
    if (!split_authority(auth, (size_t)(aend - auth), "80", host, sizeof host, port, sizeof port)) {
        answer(c, 400, "Bad Request", "sluice proxy: the request's URL has no valid host:port");
        return false;
    }
    char target[300];
    snprintf(target, sizeof target, "%s:%s", host, port);
    if (c->up >= 0 && strcmp(target, c->target)) end_upstream(c);
    if (c->up < 0 && open_upstream(c, host, port) != 0) return false;

    /* the head in origin-form, without the fields meant for the proxy */
    char *head = c->buf;
    head[hlen - 2] = 0; /* one CRLF stays: field() ends each line at one */
    size_t n = 0;
    n += (size_t)snprintf(c->out + n, sizeof c->out - n, "%.*s %s%.*s %.*s\r\n", (int)ml, m,
                          path && *path == '?' ? "/" : "", path ? (int)(end - path) : 1,
                          path ? path : "/", (int)vl, v);
    size_t hv, ul;
    bool host_field = field(head, "Host", &hv) != NULL;
    const char *upg = field(head, "Upgrade", &ul);
    bool upgrade = upg && ul, chunked;
    uint64_t length;
    if (!body_framing(head, &chunked, &length)) {
        answer(c, 400, "Bad Request", "sluice proxy: a Content-Length that is not a number");
        return false;
    }
    for (const char *l = strstr(head, "\r\n"); l && l[2];) {
        const char *s = l + 2, *e = strstr(s, "\r\n");
        if (!e) break;
        if (strncasecmp(s, "Proxy-", 6) && n + (size_t)(e - s) + 2 < sizeof c->out) {
            memcpy(c->out + n, s, (size_t)(e - s) + 2);
            n += (size_t)(e - s) + 2;
        }
        l = e;
    }
    if (!host_field && n + strlen(target) + 12 < sizeof c->out)
        n += (size_t)snprintf(c->out + n, sizeof c->out - n, "Host: %.*s\r\n", (int)(aend - auth),
                              auth);
    memcpy(c->out + n, "\r\n", 2);
    n += 2;

    if (send_all(c->up, c->out, n) != 0) {
        /* ECONNREFUSED from a write on a connected socket is no kernel's:
         * it is a reject rule's errno (the default) */
        if (errno == ECONNREFUSED)
            answer(c, 429, "Too Many Requests",
                   "sluice proxy: the request was refused by a sluice rule (the log names it)");
        else
            answer(c, 502, "Bad Gateway", "sluice proxy: the server connection failed");
        return false;
    }
    consume(c, hlen);
    if (upgrade) { /* websockets and the like: a tunnel from here on */
        tunnel(c);
        return false;
    }
    return forward_body(c, chunked, length);
}

static void *serve(void *arg)
{
    struct conn *c = arg;
    for (;;) {
        bool too_large;
        size_t hlen = read_head(c, &too_large);
        if (!hlen) {
            if (too_large)
                answer(c, 431, "Request Header Fields Too Large",
                       "sluice proxy: a request head is at most 16 KiB");
            break;
        }
        /* request line: METHOD SP TARGET SP VERSION CRLF */
        const char *m = c->buf, *sp1 = memchr(m, ' ', hlen);
        const char *t = sp1 ? sp1 + 1 : NULL;
        const char *sp2 = t ? memchr(t, ' ', hlen - (size_t)(t - c->buf)) : NULL;
        const char *v = sp2 ? sp2 + 1 : NULL;
        const char *eol = memmem(c->buf, hlen, "\r\n", 2);
        if (!v || v > eol) {
            answer(c, 400, "Bad Request", "sluice proxy: not an HTTP request");
            break;
        }
        size_t ml = (size_t)(sp1 - m), tl = (size_t)(sp2 - t), vl = (size_t)(eol - v);
        if (ml == 7 && !memcmp(m, "CONNECT", 7)) {
            char host[256], port[8];
            end_upstream(c);
            if (!split_authority(t, tl, "443", host, sizeof host, port, sizeof port)) {
                answer(c, 400, "Bad Request", "sluice proxy: CONNECT needs host:port");
                break;
            }
            if (open_upstream(c, host, port) != 0) break;
            static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
            if (send_all(c->client, ok, sizeof ok - 1) != 0) break;
            consume(c, hlen);
            tunnel(c);
            break;
        }
        if (tl < 8 || strncasecmp(t, "http://", 7)) {
            answer(c, 400, "Bad Request",
                   "sluice proxy: only CONNECT and absolute-form http:// requests");
            break;
        }
        if (!forward_request(c, hlen, m, ml, t, tl, v, vl)) break;
    }
    /* the client is done: so is the server connection (a response still
     * coming has no one to read it) */
    end_upstream(c);
    close(c->client);
    free(c);
    atomic_fetch_sub(&active, 1);
    return NULL;
}

int sl_cmd_proxy_serve(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "sluice proxy-serve: started by `sluice run`, not by hand\n");
        return 2;
    }
    int ls = atoi(argv[1]);
    pid_t parent = (pid_t)atoi(argv[2]);
    fcntl(ls, F_SETFD, FD_CLOEXEC);
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_NAME, "sluice-proxy"); /* as `sluice ps` and top(1) list it */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, SL_PROXY_STACK);
    pthread_attr_init(&pump_attr);
    pthread_attr_setstacksize(&pump_attr, SL_PROXY_STACK);
    while (getppid() == parent) {
        struct pollfd p = {.fd = ls, .events = POLLIN};
        if (poll(&p, 1, 1000) <= 0) continue;
        int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                struct timespec ts = {0, 100 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        struct conn *c = NULL;
        if (atomic_load(&active) < SL_PROXY_CONNS) c = malloc(sizeof *c);
        if (c) {
            c->client = fd;
            c->up = -1;
            c->target[0] = 0;
            c->len = 0;
            atomic_init(&c->leaving, false);
            pthread_t th;
            atomic_fetch_add(&active, 1);
            if (pthread_create(&th, &attr, serve, c) == 0) continue;
            atomic_fetch_sub(&active, 1);
            free(c);
        }
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                   "Retry-After: 1\r\nConnection: close\r\n\r\n";
        send_all(fd, busy, sizeof busy - 1);
        close(fd);
    }
    return 0;
}
