/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_h1resp.c - differential libFuzzer target: counting responses
 * (core/http/h1resp.c) with its fast path for common heads
 * (core/http/h1resp_fast.c) against http-parser alone (sl_h1resp_slow_only),
 * both as `count_status` and `req_conns` read them (statuses and ends).
 *
 * The input's first byte says how many requests are sent before the
 * stream (0 to 7) and how many more between its two reads (0 to 7); the
 * next four bytes give their methods, two bits each (GET, HEAD, POST,
 * CONNECT); the rest is what the server wrote. For every split of it into
 * two reads (of a stream over 512 bytes, 256 of them), and once a byte a
 * read, both are fed the same reads, then the end of the stream, then one
 * byte more; after each call they must have seen the same callbacks (each
 * status and end with its request's index, in order) and count the same
 * responses outstanding (or both have lost the count). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/h1resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
    uint64_t hash, events;
};

static void mix(struct seen *s, uint64_t v)
{
    s->hash = (s->hash ^ v) * 0x100000001b3ull;
    s->events++;
}

static void saw_status(void *arg, uint64_t index, int status)
{
    mix(arg, index << 16 | (uint64_t)status);
}

static void saw_done(void *arg, uint64_t index)
{
    mix(arg, index << 16 | 0xffff);
}

struct twin {
    struct sl_h1resp r[2]; /* [0] with the fast path, [1] http-parser alone */
    struct seen s[2];
    const uint8_t *methods;
    unsigned nsent;
};

static void start(struct twin *t, const uint8_t *methods)
{
    t->methods = methods;
    t->nsent = 0;
    for (int i = 0; i < 2; i++) {
        t->s[i] = (struct seen){.hash = 0xcbf29ce484222325ull};
        sl_h1resp_init(&t->r[i]);
        if (i) sl_h1resp_slow_only(&t->r[i]);
        sl_h1resp_statuses(&t->r[i], saw_status, &t->s[i]);
        sl_h1resp_ends(&t->r[i], saw_done, &t->s[i]);
    }
}

static void same(const struct twin *t)
{
    if (t->s[0].hash != t->s[1].hash || t->s[0].events != t->s[1].events ||
        sl_h1resp_outstanding(&t->r[0]) != sl_h1resp_outstanding(&t->r[1]))
        abort();
}

static void send_requests(struct twin *t, unsigned n)
{
    static const char *names[] = {"GET", "HEAD", "POST", "CONNECT"};
    for (; n > 0 && t->nsent < 16; n--, t->nsent++) {
        const char *m = names[(t->methods[t->nsent / 4] >> (2 * (t->nsent % 4))) & 3];
        sl_h1resp_sent(&t->r[0], m);
        sl_h1resp_sent(&t->r[1], m);
    }
    same(t);
}

static void feed(struct twin *t, const uint8_t *p, size_t n)
{
    sl_h1resp_feed(&t->r[0], p, n);
    sl_h1resp_feed(&t->r[1], p, n);
    same(t);
}

static void end(struct twin *t, const uint8_t *s, size_t len)
{
    sl_h1resp_eof(&t->r[0]);
    sl_h1resp_eof(&t->r[1]);
    same(t);
    if (len) feed(t, s, 1); /* after the end: a cut body loses the count */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5) return 0;
    unsigned before = data[0] & 7, between = (data[0] >> 3) & 7;
    const uint8_t *methods = data + 1, *s = data + 5;
    size_t len = size - 5;
    static struct twin t; /* two parsers' state: off the fuzzer's stack */
    size_t step = len > 512 ? len / 256 : 1;
    for (size_t cut = 0; cut <= len; cut += step) {
        start(&t, methods);
        send_requests(&t, before);
        feed(&t, s, cut);
        send_requests(&t, between);
        feed(&t, s + cut, len - cut);
        end(&t, s, len);
    }
    start(&t, methods);
    send_requests(&t, before + between);
    for (size_t i = 0; i < len; i++)
        feed(&t, s + i, 1);
    end(&t, s, len);
    return 0;
}
