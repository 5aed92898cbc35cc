/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_cost.c - an answer's cost (core/http/costread.h) as the response
 * counter hands it over (core/http/h1resp.h): the input, after a head its
 * first byte picks (JSON with a Content-Length, chunked JSON, an event
 * stream delimited by the end or chunked, a raw response, a cost header),
 * is read whole and then in two reads at every split (every one for short
 * inputs, 64 spread over longer ones), and in three. Checks: every split
 * gives the cost the whole read gives (or none, as it does), a cost is
 * never past SL_COSTREAD_MOST, and no read goes past the input (ASan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/costread.h"
#include "../../core/http/h1resp.h"

struct reader {
    struct sl_costread r;
    int ends;
    bool found;
    uint64_t cost;
};

static void on_field(void *arg, uint64_t index, const char *n, size_t nl, const char *v, size_t vl)
{
    sl_costread_header(&((struct reader *)arg)->r, n, nl, v, vl);
}

static void on_body(void *arg, uint64_t index, const char *at, size_t n)
{
    sl_costread_body(&((struct reader *)arg)->r, at, n);
}

static void on_done(void *arg, uint64_t index)
{
    struct reader *rd = arg;
    uint64_t c;
    bool f = sl_costread_end(&rd->r, &c);
    if (f && c > SL_COSTREAD_MOST) abort();
    if (rd->ends++ == 0) { /* the first response's: the one compared */
        rd->found = f;
        rd->cost = f ? c : 0;
    }
}

/* The cost of the stream s[0..n) read in pieces cut at a and b (a <= b). */
static void read_cut(enum sl_cost_from from, const char *s, size_t n, size_t a, size_t b,
                     struct reader *rd)
{
    struct sl_h1resp h;
    memset(rd, 0, sizeof *rd);
    sl_costread_init(&rd->r, from, from == SL_COST_HEADER ? "x-cost" : "usage.total_tokens");
    sl_h1resp_init(&h);
    sl_h1resp_bodies(&h, on_field, on_body, rd);
    sl_h1resp_ends(&h, on_done, rd);
    sl_h1resp_sent(&h, "POST");
    sl_h1resp_sent(&h, "POST");
    /* each piece in a buffer of its own size: ASan sees a read past it */
    size_t cut[4] = {0, a, b, n};
    for (int i = 0; i < 3; i++) {
        size_t len = cut[i + 1] - cut[i];
        char *p = malloc(len ? len : 1);
        memcpy(p, s + cut[i], len);
        sl_h1resp_feed(&h, p, len);
        free(p);
    }
    sl_h1resp_eof(&h);
    sl_costread_fini(&rd->r);
}

static const char *const heads[] = {
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
    "",
    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Cost: ",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned pick = data[0] % (sizeof heads / sizeof *heads);
    const char *body = (const char *)data + 1;
    size_t blen = size - 1;
    char head[160];
    int hl = snprintf(head, sizeof head, heads[pick], blen);
    size_t n = (size_t)hl + blen;
    char *s = malloc(n ? n : 1);
    memcpy(s, head, (size_t)hl);
    memcpy(s + hl, body, blen);
    enum sl_cost_from from = pick == 5 ? SL_COST_HEADER : SL_COST_JSON;

    uint64_t direct;
    if (sl_costread_json("usage.total_tokens", body, blen, &direct) && direct > SL_COSTREAD_MOST)
        abort();

    struct reader whole, part;
    read_cut(from, s, n, n, n, &whole);
    size_t step = n <= 512 ? 1 : n / 64;
    for (size_t a = 0; a <= n; a += step) {
        read_cut(from, s, n, a, a, &part);
        if (part.ends != whole.ends || part.found != whole.found || part.cost != whole.cost)
            abort();
        size_t b = a + (n - a) / 2; /* and a third read */
        read_cut(from, s, n, a, b, &part);
        if (part.ends != whole.ends || part.found != whole.found || part.cost != whole.cost)
            abort();
    }
    free(s);
    return 0;
}
