/* SPDX-License-Identifier: BSD-2-Clause */
/* contract.c - one case of the contract a call held by sluice keeps.
 *
 *   contract PORT DELAY_PORT DENY_PORT CASE [REQ_PORT CONNS_PORT REPLY_PORT]
 *
 * Runs CASE on loopback and prints one line: "CASE rv errno bytes ms".
 * run.sh runs every "k_" case twice, bare and under the shim with a rule
 * that makes the shim hold the call (byte rates far above what moves, so
 * the outcome is the kernel's), and requires the same line (elapsed within
 * a tolerance). "b_" cases run only under a slow rule, where the shim
 * holds the call on its budget; they check the kernel's contract
 * themselves and print "ok" or "FAIL why" after the line.
 *
 * The peer (the accepted end, or a connecting client) is a thread of this
 * process that keeps SIGALRM blocked, so the signal always lands in the
 * call under test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define BIG (4 * 1024 * 1024)

static int port, delay_port, deny_port;
static int req_port, conns_port, reply_port; /* request rules: r_ cases */
static char *buf;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void die(const char *what)
{
    perror(what);
    exit(2);
}

static struct sockaddr_in addr_of(int p)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int listener(int p)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = addr_of(p);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 16)) die("listen");
    return fd;
}

static int connected(int p)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = addr_of(p);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) die("connect");
    return fd;
}

static void timeout(int fd, int opt, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* SIGALRM in `ms`, its handler installed with or without SA_RESTART. */
static void alarm_in(int ms, bool restart)
{
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = restart ? SA_RESTART : 0};
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {.it_value = {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- the peer ---- */

struct peer {
    int fd;
    int delay_ms;
    int chunks, chunk, gap_ms; /* sends `chunks` of `chunk` bytes */
    bool drain;                /* reads everything until EOF */
    int connect_port;          /* connects (and keeps) a socket to it */
};

static void *peer_main(void *arg)
{
    struct peer *p = arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    nap(p->delay_ms);
    if (p->connect_port) connected(p->connect_port);
    for (int i = 0; i < p->chunks; i++) {
        if (i) nap(p->gap_ms);
        for (int off = 0; off < p->chunk;) {
            ssize_t n = send(p->fd, buf + off, (size_t)(p->chunk - off), MSG_NOSIGNAL);
            if (n <= 0) return NULL;
            off += (int)n;
        }
    }
    static char sink[65536];
    while (p->drain && read(p->fd, sink, sizeof sink) > 0) {
    }
    return NULL;
}

static void peer(struct peer *p)
{
    pthread_t t;
    struct peer *copy = malloc(sizeof *copy);
    *copy = *p;
    pthread_create(&t, NULL, peer_main, copy);
    pthread_detach(t);
}

/* A connected pair: *cli is the end under test (the rule's port), *srv the peer's. */
static void pair(int lst, int *cli, int *srv, bool small_buffers)
{
    *cli = socket(AF_INET, SOCK_STREAM, 0);
    if (small_buffers) {
        int sz = 16384;
        setsockopt(*cli, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
        setsockopt(lst, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    }
    struct sockaddr_in a = addr_of(port);
    if (connect(*cli, (struct sockaddr *)&a, sizeof a)) die("connect");
    *srv = accept(lst, NULL, NULL);
    if (*srv < 0) die("accept");
}

/* ---- the calls ---- */

enum dir { RECV, SEND };
struct kind {
    const char *name;
    enum dir dir;
    bool flags; /* takes MSG_* flags */
};
static const struct kind kinds[] = {
    {"recv", RECV, true},    {"recvfrom", RECV, true},  {"recvmsg", RECV, true},
    {"read", RECV, false},   {"readv", RECV, false},    {"send", SEND, true},
    {"sendto", SEND, true},  {"sendmsg", SEND, true},   {"write", SEND, false},
    {"writev", SEND, false}, {"sendfile", SEND, false}, {"splice", RECV, false},
};

static int file_fd(void)
{
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("contract", 0);
        if (fd < 0 || write(fd, buf, BIG) != BIG) die("memfd");
    }
    return fd;
}

static ssize_t call(const struct kind *k, int fd, size_t len, int flags)
{
    /* two iovecs, so readv/writev/recvmsg/sendmsg cross a boundary */
    struct iovec iov[2] = {{buf, len / 2}, {buf + len / 2, len - len / 2}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    off_t off = 0;
    const char *n = k->name;
    if (!strcmp(n, "recv")) return recv(fd, buf, len, flags);
    if (!strcmp(n, "recvfrom")) return recvfrom(fd, buf, len, flags, (struct sockaddr *)&from, &fl);
    if (!strcmp(n, "recvmsg")) return recvmsg(fd, &m, flags);
    if (!strcmp(n, "read")) return read(fd, buf, len);
    if (!strcmp(n, "readv")) return readv(fd, iov, 2);
    if (!strcmp(n, "send")) return send(fd, buf, len, flags | MSG_NOSIGNAL);
    if (!strcmp(n, "sendto")) return sendto(fd, buf, len, flags | MSG_NOSIGNAL, NULL, 0);
    if (!strcmp(n, "sendmsg")) return sendmsg(fd, &m, flags | MSG_NOSIGNAL);
    if (!strcmp(n, "write")) return write(fd, buf, len);
    if (!strcmp(n, "writev")) return writev(fd, iov, 2);
    if (!strcmp(n, "sendfile")) return sendfile(fd, file_fd(), &off, len);
    if (!strcmp(n, "splice")) { /* socket -> pipe: the receive side of splice */
        static int p[2] = {-1, -1};
        if (p[0] < 0 && pipe(p)) die("pipe");
        return splice(fd, NULL, p[1], NULL, len, 0);
    }
    errno = ENOSYS;
    return -1;
}

/* ---- reporting ---- */

static const char *case_name;
static double t0;

/* bytes: exact (>= 0), or -2 when only "some" is comparable (how much a
 * full socket buffer took depends on the kernel's autotuning). */
static void report(ssize_t rv, int err, long bytes)
{
    double ms = now_ms() - t0;
    printf("%s %s %s %ld %.0f", case_name,
           rv < 0    ? "-1"
           : rv == 0 ? "0"
                     : "+",
           rv < 0 ? strerrorname_np(err) : "-", bytes, ms);
}

static int expect(bool ok, const char *why)
{
    printf(ok ? " ok\n" : " FAIL %s\n", why);
    return ok ? 0 : 1;
}

/* ---- cases ---- */

/* k_KIND_WHAT: compared with the bare kernel. */
static int kernel_case(const struct kind *k, const char *what, int lst)
{
    int cli, srv, err;
    ssize_t rv;
    bool send_dir = k->dir == SEND;
    if (!strcmp(what, "waitall") || !strcmp(what, "dontwait") || !strcmp(what, "peek") ||
        !strcmp(what, "waitall_timeout"))
        if (!k->flags) return 3;
    if ((!strcmp(what, "waitall") || !strcmp(what, "peek") || !strcmp(what, "waitall_timeout")) &&
        send_dir)
        return 3;
    pair(lst, &cli, &srv, send_dir);
    size_t len = send_dir ? BIG : 1000;
    int opt = send_dir ? SO_SNDTIMEO : SO_RCVTIMEO;
    long some = send_dir ? -2 : 0;
    t0 = now_ms();
    if (!strcmp(what, "timeout")) {
        timeout(cli, opt, 300);
        rv = call(k, cli, len, 0);
    } else if (!strcmp(what, "intr")) {
        alarm_in(300, false);
        rv = call(k, cli, len, 0);
    } else if (!strcmp(what, "restart")) {
        /* receive: the signal comes first, the data later, and the call
         * goes on to get it; send: the peer starts reading later */
        alarm_in(200, true);
        peer(&(struct peer){
            .fd = srv, .delay_ms = 500, .chunks = !send_dir, .chunk = 100, .drain = send_dir});
        rv = call(k, cli, send_dir ? 300000 : len, 0);
        some = 0;
    } else if (!strcmp(what, "repeat")) {
        timeout(cli, opt, 200);
        call(k, cli, len, 0);
        t0 = now_ms();
        rv = call(k, cli, len, 0);
        some = 0;
    } else if (!strcmp(what, "waitall")) {
        peer(&(struct peer){.fd = srv, .chunks = 3, .chunk = 10000, .gap_ms = 100});
        rv = call(k, cli, 30000, MSG_WAITALL);
    } else if (!strcmp(what, "waitall_timeout")) {
        timeout(cli, opt, 300);
        peer(&(struct peer){.fd = srv, .chunks = 1, .chunk = 10000});
        rv = call(k, cli, 30000, MSG_WAITALL);
    } else if (!strcmp(what, "peek")) {
        peer(&(struct peer){.fd = srv, .chunks = 1, .chunk = 100});
        nap(50);
        t0 = now_ms();
        rv = call(k, cli, len, MSG_PEEK);
        if (rv == 100) rv = call(k, cli, len, 0);
    } else if (!strcmp(what, "dontwait")) {
        rv = call(k, cli, len, MSG_DONTWAIT);
        if (send_dir && rv > 0) rv = call(k, cli, len, MSG_DONTWAIT);
        some = 0;
    } else {
        return 3;
    }
    err = errno;
    report(rv, err, rv > 0 && some ? some : (long)rv);
    printf("\n");
    return 0;
}

/* k_accept_WHAT and k_connect_WHAT. */
static int socket_case(const char *what, int lst)
{
    ssize_t rv;
    int err;
    t0 = now_ms();
    if (!strcmp(what, "accept_timeout")) {
        timeout(lst, SO_RCVTIMEO, 300);
        rv = accept(lst, NULL, NULL);
    } else if (!strcmp(what, "accept_intr")) {
        alarm_in(300, false);
        rv = accept(lst, NULL, NULL);
    } else if (!strcmp(what, "accept_restart")) {
        alarm_in(200, true);
        peer(&(struct peer){.delay_ms = 500, .connect_port = port});
        rv = accept(lst, NULL, NULL);
    } else if (!strcmp(what, "accept_repeat")) {
        timeout(lst, SO_RCVTIMEO, 200);
        accept(lst, NULL, NULL);
        t0 = now_ms();
        rv = accept(lst, NULL, NULL);
    } else if (!strcmp(what, "connect_repeat")) {
        int fd = connected(port);
        struct sockaddr_in a = addr_of(port);
        rv = connect(fd, (struct sockaddr *)&a, sizeof a);
    } else if (!strcmp(what, "connect_nonblock_repeat")) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_in a = addr_of(port);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) && errno != EINPROGRESS) die("connect");
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, 1000);
        rv = connect(fd, (struct sockaddr *)&a, sizeof a);
    } else {
        return 3;
    }
    err = errno;
    report(rv, err, rv > 0 ? 1 : (long)rv);
    printf("\n");
    return 0;
}

/* b_WHAT: under a slow rule (100KB/s each way, burst 10KB, a connect
 * delay of one per 10 s on DELAY_PORT, one accepted connection per 10 s on
 * DENY_PORT); the shim holds these on budget or turns. */
static int budget_case(const char *what, int lst)
{
    int cli, srv, err;
    ssize_t rv;
    if (!strcmp(what, "accept_timeout_after_deny")) {
        /* SO_RCVTIMEO counts from the start of accept, also when the shim
         * rejected a connection in between and went on waiting */
        int dl = listener(deny_port);
        peer(&(struct peer){.connect_port = deny_port});
        close(accept(dl, NULL, NULL)); /* uses the one turn */
        timeout(dl, SO_RCVTIMEO, 300);
        peer(&(struct peer){.delay_ms = 200, .connect_port = deny_port});
        t0 = now_ms();
        rv = accept(dl, NULL, NULL);
        err = errno;
        report(rv, err, 0);
        double ms = now_ms() - t0;
        return expect(rv == -1 && err == EAGAIN && ms < 400, "want -1/EAGAIN at ~300 ms");
    }
    const struct kind *recv_k = &kinds[0], *send_k = &kinds[5];
    if (!strncmp(what, "connect", 7)) {
        int dl = listener(delay_port);
        (void)dl;
        close(connected(delay_port)); /* uses the one turn */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = addr_of(delay_port);
        t0 = now_ms();
        if (!strcmp(what, "connect_intr"))
            alarm_in(300, false);
        else
            timeout(fd, SO_SNDTIMEO, 300);
        rv = connect(fd, (struct sockaddr *)&a, sizeof a);
        err = errno;
        report(rv, err, 0);
        double ms = now_ms() - t0;
        if (!strcmp(what, "connect_intr"))
            return expect(rv == -1 && err == EINTR && ms < 600, "want -1/EINTR at ~300 ms");
        return expect(rv == -1 && err == EINPROGRESS && ms < 600,
                      "want -1/EINPROGRESS at ~300 ms (the kernel's connect timeout)");
    }
    pair(lst, &cli, &srv, false);
    const struct kind *k = strstr(what, "send") ? send_k : recv_k;
    if (strstr(what, "sendfile")) k = &kinds[10];
    if (strstr(what, "writev")) k = &kinds[9];
    if (strstr(what, "recvmsg")) k = &kinds[2];
    if (k->dir == SEND) peer(&(struct peer){.fd = srv, .drain = true});
    t0 = now_ms();
    size_t len = 500000;
    if (strstr(what, "waitall_all")) {
        peer(&(struct peer){.fd = srv, .chunks = 1, .chunk = 50000});
        rv = call(k, cli, 50000, MSG_WAITALL);
        err = errno;
        report(rv, err, (long)rv);
        return expect(rv == 50000, "a blocking MSG_WAITALL read returns all 50000 bytes");
    }
    if (strstr(what, "full")) { /* a blocking send or writev sends everything */
        rv = call(k, cli, 60000, 0);
        err = errno;
        report(rv, err, (long)rv);
        return expect(rv == 60000, "a blocking send returns all 60000 bytes");
    }
    if (strstr(what, "dontwait") || strstr(what, "peek")) {
        peer(&(struct peer){.fd = srv, .chunks = 1, .chunk = 30000});
        call(k, cli, 20000, MSG_WAITALL); /* leaves the budget empty */
        t0 = now_ms();
        bool peek = strstr(what, "peek");
        rv = call(k, cli, 10000, peek ? MSG_PEEK | MSG_DONTWAIT : MSG_DONTWAIT);
        err = errno;
        report(rv, err, (long)rv);
        double ms = now_ms() - t0;
        if (peek) return expect(rv == 10000 && ms < 20, "a peek is not held: 10000 at once");
        return expect((rv == -1 && err == EAGAIN) || rv > 0,
                      "MSG_DONTWAIT: EAGAIN or data, never blocks");
    }
    if (k->dir == RECV) peer(&(struct peer){.fd = srv, .chunks = 1, .chunk = (int)len});
    int opt = k->dir == SEND ? SO_SNDTIMEO : SO_RCVTIMEO;
    int flags = k->dir == RECV && k->flags ? MSG_WAITALL : 0;
    bool restart = strstr(what, "restart");
    if (restart) len = 60000;
    if (strstr(what, "timeout"))
        timeout(cli, opt, 300);
    else
        alarm_in(300, restart);
    rv = call(k, cli, len, flags);
    err = errno;
    double ms = now_ms() - t0;
    report(rv, err, (long)rv);
    if (restart)
        return expect(rv == (ssize_t)len && ms > 300,
                      "a signal with SA_RESTART does not end the call: all of it");
    return expect(rv > 0 && rv < (ssize_t)len && ms > 200 && ms < 600,
                  "stopped at ~300 ms with what it moved (a partial count)");
}

/* A request head on fd: the "GET /N" of connection n. */
static ssize_t request(int fd, int n)
{
    char head[128];
    int len = snprintf(head, sizeof head, "GET /%d HTTP/1.1\r\nHost: contract\r\n\r\n", n);
    return send(fd, head, (size_t)len, 0);
}

/* A client connection to p whose server end drains what comes and never
 * answers. */
static int drained(int lst, int p)
{
    int cli = connected(p), srv = accept(lst, NULL, NULL);
    if (srv < 0) die("accept");
    peer(&(struct peer){.fd = srv, .drain = true});
    return cli;
}

/* b_req_WHAT: a request the shim holds under an outbound request rule (a
 * second GET: REQ_PORT delays one request per 10 s, burst 1), a place
 * waited for (CONNS_PORT: req_conns = 1, the first request never
 * answered, the second on another connection waits), or a request `reply`
 * swallows while the answer owed before it never comes (REPLY_PORT:
 * one request per 10 s, the second pipelined on the same connection). The
 * held send keeps the kernel's contract: SO_SNDTIMEO ends it with
 * EAGAIN, a signal without SA_RESTART with EINTR, both at ~300 ms. */
static int request_case(const char *what)
{
    int p = strstr(what, "conns") ? conns_port : strstr(what, "reply") ? reply_port : req_port;
    int lst = listener(p), cli = drained(lst, p);
    if (request(cli, 1) <= 0) die("first request");
    if (p == conns_port) cli = drained(lst, p); /* the one place is taken */
    bool intr = strstr(what, "intr");
    t0 = now_ms();
    if (intr)
        alarm_in(300, false);
    else
        timeout(cli, SO_SNDTIMEO, 300);
    ssize_t rv = request(cli, 2);
    int err = errno;
    double ms = now_ms() - t0;
    report(rv, err, (long)rv);
    if (intr)
        return expect(rv == -1 && err == EINTR && ms > 200 && ms < 600, "want -1/EINTR at ~300 ms");
    return expect(rv == -1 && err == EAGAIN && ms > 200 && ms < 600, "want -1/EAGAIN at ~300 ms");
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 8) {
        fprintf(
            stderr,
            "usage: contract PORT DELAY_PORT DENY_PORT CASE [REQ_PORT CONNS_PORT REPLY_PORT]\n");
        return 2;
    }
    port = atoi(argv[1]);
    delay_port = atoi(argv[2]);
    deny_port = atoi(argv[3]);
    case_name = argv[4];
    if (argc == 8) req_port = atoi(argv[5]), conns_port = atoi(argv[6]), reply_port = atoi(argv[7]);
    signal(SIGPIPE, SIG_IGN);
    buf = malloc(BIG);
    memset(buf, 'x', BIG);
    int lst = listener(port);
    if (!strncmp(case_name, "b_req_", 6)) return req_port ? request_case(case_name + 6) : 3;
    if (!strncmp(case_name, "b_", 2)) return budget_case(case_name + 2, lst);
    if (strncmp(case_name, "k_", 2)) return 3;
    const char *rest = case_name + 2;
    if (!strncmp(rest, "accept_", 7) || !strncmp(rest, "connect_", 8))
        return socket_case(rest, lst);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t n = strlen(kinds[i].name);
        if (!strncmp(rest, kinds[i].name, n) && rest[n] == '_')
            return kernel_case(&kinds[i], rest + n + 1, lst);
    }
    return 3;
}
