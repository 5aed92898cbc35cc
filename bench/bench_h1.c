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
 * Usage: bench_h1 fast|vary|slow [N] [--post]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "fast") != 0 && strcmp(argv[1], "vary") != 0 &&
                     strcmp(argv[1], "slow") != 0)) {
        fprintf(stderr, "usage: bench_h1 fast|vary|slow [N] [--post]\n");
        return 2;
    }
    size_t n = argc > 2 && argv[2][0] != '-' ? strtoul(argv[2], NULL, 10) : 100000;
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
