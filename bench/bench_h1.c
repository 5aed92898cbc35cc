/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_h1.c - the cost of reading one keep-alive request head: the
 * scanner with its one-pass fast path (core/http/h1fast.c) against http-parser
 * alone.
 *
 * What is measured. One connection's scanner (keyed on X-API-Key, as
 * `per=header:X-API-Key`) is fed N heads, each as its own read, as a
 * keep-alive server receives them; every head must be reported. The head
 * is what wrk or curl sends, 70 bytes:
 *   GET /index.html HTTP/1.1 / Host: 127.0.0.1:8080 / X-API-Key: key-0042
 * (a second kind, --post, adds Content-Length and a 16-byte body).
 *
 * Instructions are the figure to compare (repeatable on a shared machine):
 *   valgrind --tool=callgrind --toggle-collect=feed_heads build/bench/bench_h1 fast 100000
 * and divide the total by N. Without valgrind it prints nanoseconds per
 * head from CLOCK_MONOTONIC, which moves with the machine's load.
 *
 * `fast` feeds the same head every time, so after the first one the fast
 * path's per-thread memo answers (h1fast.c: a compare, no scan); `vary`
 * alternates two heads that differ in the key's last byte, so every head
 * is scanned (what a client whose heads change pays); `slow` is
 * http-parser alone.
 *
 * `real`, `realslow`, `realscan` and `realbare` read heads as real API
 * traffic sends them, none repeated (see real_heads): each as its own
 * read through the scanner (`real`), through http-parser alone
 * (`realslow`), given to the one-pass reader alone (`realscan`,
 * sl_h1fast_read: the scanner's own cost, no glue, with the thread's
 * memory of header lines: h1fast.c's shapes), or to the scan alone
 * (`realbare`, sl_h1fast_scan_path: no thread memory, every line read).
 * They print the heads' bytes: instructions per byte
 * of head are the total of the toggled function over that, e.g.
 *   valgrind --tool=callgrind --toggle-collect=feed_real build/bench/bench_h1 realscan 20000
 * (bench/h1_insn.sh runs all three and prints the figures).
 *
 * The scan is the best this CPU has (h1fast.c); a last argument avx2,
 * sse2 or plain forces one (the fallbacks' cost).
 *
 * Usage: bench_h1 fast|vary|slow|real|realslow|realscan|realbare [N] [--post] [avx2|sse2|plain]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/http/h1fast.h"
#include "../core/http/http1.h"

static const char get_head[] = "GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                               "X-API-Key: key-0042\r\n\r\n";
static const char post_head[] = "POST /api/items HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                                "X-API-Key: key-0042\r\nContent-Length: 16\r\n\r\n"
                                "{\"name\":\"item\"}\n";

/* Feeds n heads, one read each, msg and alt in turn (alt NULL: msg
 * only); returns how many heads were reported. */
__attribute__((noinline)) static size_t feed_heads(struct sl_h1 *s, const char *msg,
                                                   const char *alt, size_t len, size_t n)
{
    size_t heads = 0;
    for (size_t i = 0; i < n; i++) {
        const char *m = alt && i % 2 ? alt : msg;
        size_t off = 0;
        while (off < len) {
            enum sl_h1_event ev;
            off += sl_h1_feed(s, m + off, len - off, &ev);
            heads += ev == SL_H1_HEAD;
        }
    }
    return heads;
}

/* A seeded generator of what an API's clients send (the same heads on
 * every run): a W3C traceparent unique to each request, one of 1,000 API
 * keys of skewed use (a few keys send most requests), 40 routes, most with
 * a query string, the headers of three kinds of SDK (a Python SDK with
 * its x-stainless-* lines, a Node one, a Go client), and 1 in 10 a POST
 * with a JSON body. The heads are about 300 bytes. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13; /* xorshift64 */
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *const routes[40] = {
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/embeddings",
    "/v1/models",
    "/v1/models/m-small",
    "/v1/models/m-large",
    "/v1/files",
    "/v1/files/file-7Qx2/content",
    "/v1/batches",
    "/v1/batches/batch_91",
    "/v1/fine_tuning/jobs",
    "/v1/fine_tuning/jobs/ft-3/events",
    "/v1/images/generations",
    "/v1/audio/speech",
    "/v1/audio/transcriptions",
    "/v1/moderations",
    "/v1/assistants",
    "/v1/assistants/asst_12",
    "/v1/threads",
    "/v1/threads/thread_8/messages",
    "/v1/threads/thread_8/runs",
    "/v1/vector_stores",
    "/v1/vector_stores/vs_5/files",
    "/v1/uploads",
    "/v1/responses",
    "/v1/responses/resp_77",
    "/v2/orders",
    "/v2/orders/184467",
    "/v2/customers",
    "/v2/customers/cus_0042/invoices",
    "/v2/payments",
    "/v2/refunds",
    "/v2/products",
    "/v2/products/prod_9/prices",
    "/v2/events",
    "/v2/webhooks",
    "/api/search",
    "/api/users/me",
    "/api/projects/42/usage",
    "/healthz",
};

static const char hex[] = "0123456789abcdef";

/* Appends len hex digits of fresh randomness. */
static char *put_hex(char *p, size_t len)
{
    while (len) {
        uint64_t r = next_rand();
        for (int i = 0; i < 16 && len; i++, len--, r >>= 4)
            *p++ = hex[r & 15];
    }
    return p;
}

/* One request (head, then its body if a POST) at p; returns its end and
 * the head's length in *head. */
static char *real_one(char *p, size_t *head)
{
    char *start = p;
    uint64_t r = next_rand();
    bool post = r % 10 == 0;
    const char *route = routes[(r >> 8) % 40];
    /* skewed use: the square of a uniform draw favours the low keys */
    uint64_t u = (r >> 16) % 1000;
    unsigned key = (unsigned)(u * u / 1000);
    int sdk = (int)((r >> 32) % 3);
    size_t body = post ? 40 + (r >> 40) % 200 : 0;
    p += sprintf(p, "%s %s", post ? "POST" : "GET", route);
    if (!post && (r >> 48) % 4 != 0)
        p += sprintf(p, "?limit=%u&order=desc&after=obj_%06u", (unsigned)(r >> 52) % 100 + 1,
                     (unsigned)(next_rand() % 1000000));
    p += sprintf(p, " HTTP/1.1\r\nHost: api.example.com\r\n");
    static const char *const agents[3] = {"OpenAI/Python 1.51.0", "OpenAI/JS 4.67.3",
                                          "Go-http-client/1.1"};
    p += sprintf(p, "User-Agent: %s\r\nAccept: application/json\r\n", agents[sdk]);
    if (post) p += sprintf(p, "Content-Type: application/json\r\nContent-Length: %zu\r\n", body);
    p += sprintf(p, "X-API-Key: sk-live-%08x%08x\r\n", key * 2654435761u, key ^ 0x5bd1e995u);
    if (sdk == 0)
        p += sprintf(p, "x-stainless-lang: python\r\nx-stainless-package-version: 1.51.0\r\n");
    else if (sdk == 1)
        p += sprintf(p, "x-stainless-lang: js\r\nx-stainless-os: Linux\r\n");
    else
        p += sprintf(p, "Accept-Encoding: gzip\r\n");
    p += sprintf(p, "traceparent: 00-");
    p = put_hex(p, 32);
    *p++ = '-';
    p = put_hex(p, 16);
    p += sprintf(p, "-01\r\n\r\n");
    *head = (size_t)(p - start);
    if (body) {
        p += sprintf(p, "{\"model\":\"m-small\",\"input\":\"");
        while ((size_t)(p - start) < *head + body - 3)
            *p++ = 'a' + (char)(next_rand() % 26);
        p += sprintf(p, "\"}\n");
    }
    return p;
}

/* n requests, one after another in one buffer; at[i] is the start of
 * request i (at[n] the end), *head_bytes the heads' total. */
static char *real_heads(size_t n, size_t **at, size_t *head_bytes)
{
    char *buf = malloc(n * 800 + 1);
    *at = malloc((n + 1) * sizeof **at);
    if (!buf || !*at) exit(1);
    char *p = buf;
    *head_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        size_t h;
        (*at)[i] = (size_t)(p - buf);
        p = real_one(p, &h);
        *head_bytes += h;
    }
    (*at)[n] = (size_t)(p - buf);
    return buf;
}

/* The scan a last argument forced (force_path), for `realbare`. */
static enum sl_h1fast_path forced = SL_H1FAST_BEST;

enum how { FEED, READ, BARE };

/* Feeds request i of buf as one read (READ: to the one-pass reader alone;
 * BARE: to the scan alone); returns how many heads were read. */
__attribute__((noinline)) static size_t feed_real(struct sl_h1 *s, const char *buf,
                                                  const size_t *at, size_t n, enum how how)
{
    size_t heads = 0;
    struct sl_h1fast_key k;
    sl_h1fast_key_init(&k, "X-API-Key", 9, false);
    for (size_t i = 0; i < n; i++) {
        const char *m = buf + at[i];
        size_t len = at[i + 1] - at[i];
        if (how == READ) {
            heads += sl_h1fast_read(m, len, &k) != NULL;
            continue;
        }
        if (how == BARE) {
            struct sl_h1fast f;
            heads += sl_h1fast_scan_path(forced, m, len, &k, &f);
            continue;
        }
        size_t off = 0;
        while (off < len) {
            enum sl_h1_event ev;
            off += sl_h1_feed(s, m + off, len - off, &ev);
            heads += ev == SL_H1_HEAD;
        }
    }
    return heads;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int real(const char *mode, size_t n)
{
    size_t *at, head_bytes;
    char *buf = real_heads(n, &at, &head_bytes);
    static struct sl_h1 s;
    sl_h1_init(&s, SL_H1_KEY_HEADER, "X-API-Key");
    if (strcmp(mode, "realslow") == 0) sl_h1_slow_only(&s);
    enum how how = strcmp(mode, "realscan") == 0   ? READ
                   : strcmp(mode, "realbare") == 0 ? BARE
                                                   : FEED;
    bool scan = how != FEED;
    double t0 = now_ns();
    size_t heads = feed_real(&s, buf, at, n, how);
    double t1 = now_ns();
    if (heads != n) {
        fprintf(stderr, "bench_h1: %zu heads of %zu\n", heads, n);
        return 1;
    }
    printf("%s: %zu heads, %zu bytes of head (%.1f a head), %.1f ns per head, %llu by the fast "
           "path, %llu with header lines from a shape\n",
           mode, n, head_bytes, (double)head_bytes / (double)n, (t1 - t0) / (double)n,
           scan ? (unsigned long long)n : (unsigned long long)s.fast_heads,
           (unsigned long long)sl_h1fast_shape_reads());
    free(buf);
    free(at);
    return 0;
}

/* A last argument naming a scan forces it (sl_h1fast_use); drops it. */
static int force_path(int argc, char **argv)
{
    static const struct {
        const char *name;
        enum sl_h1fast_path path;
    } paths[] = {{"avx2", SL_H1FAST_AVX2}, {"sse2", SL_H1FAST_SSE2}, {"plain", SL_H1FAST_PLAIN}};
    for (size_t i = 0; argc > 2 && i < sizeof paths / sizeof paths[0]; i++) {
        if (strcmp(argv[argc - 1], paths[i].name) != 0) continue;
        if (!sl_h1fast_use(paths[i].path)) {
            fprintf(stderr, "bench_h1: no %s scan on this CPU\n", paths[i].name);
            exit(2);
        }
        forced = paths[i].path;
        return argc - 1;
    }
    return argc;
}

int main(int argc, char **argv)
{
    argc = force_path(argc, argv);
    size_t n = argc > 2 && argv[2][0] != '-' ? strtoul(argv[2], NULL, 10) : 100000;
    if (argc >= 2 && strncmp(argv[1], "real", 4) == 0 &&
        (strcmp(argv[1], "real") == 0 || strcmp(argv[1], "realslow") == 0 ||
         strcmp(argv[1], "realscan") == 0 || strcmp(argv[1], "realbare") == 0))
        return real(argv[1], n);
    if (argc < 2 || (strcmp(argv[1], "fast") != 0 && strcmp(argv[1], "vary") != 0 &&
                     strcmp(argv[1], "slow") != 0)) {
        fprintf(stderr,
                "usage: bench_h1 fast|vary|slow|real|realslow|realscan|realbare [N] [--post]\n");
        return 2;
    }
    bool post = argc > 2 && strcmp(argv[argc - 1], "--post") == 0;
    const char *msg = post ? post_head : get_head;
    size_t len = strlen(msg);
    static char alt[sizeof post_head];
    memcpy(alt, msg, len + 1);
    *strstr(alt, "key-0042") = 'K'; /* the same length, another key */
    static struct sl_h1 s;
    sl_h1_init(&s, SL_H1_KEY_HEADER, "X-API-Key");
    if (strcmp(argv[1], "slow") == 0) sl_h1_slow_only(&s);
    double t0 = now_ns();
    size_t heads = feed_heads(&s, msg, strcmp(argv[1], "vary") == 0 ? alt : NULL, len, n);
    double t1 = now_ns();
    const char *last = strcmp(argv[1], "vary") == 0 && n % 2 == 0 ? "Key-0042" : "key-0042";
    if (heads != n || strcmp(sl_h1_head(&s)->key, last) != 0) {
        fprintf(stderr, "bench_h1: %zu heads of %zu, key '%s'\n", heads, n, sl_h1_head(&s)->key);
        return 1;
    }
    printf("%s %s: %zu heads of %zu bytes, %.1f ns per head, %llu by the fast path\n", argv[1],
           post ? "post" : "get", n, len, (t1 - t0) / (double)n, (unsigned long long)s.fast_heads);
    return 0;
}
