/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_h2resp.c - libFuzzer target for the HTTP/2 response reader
 * (core/http/h2resp.c): the input's first byte picks where to cut the rest
 * in two reads; both cuts (none, and that one) must report the same heads
 * with the same fields, the same pairing events (statuses, fields, stream
 * ends, GOAWAYs, in order) and stop reading at the same point; a status
 * is final and an end names a stream. ASan and UBSan
 * watch the frame walk and the inflater's use. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/h2resp.h"
#include "../../core/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
    int n;
    uint32_t stream[16];
    struct sl_learn_resp f[16];
    uint64_t events; /* a hash of the pairing events in order */
    uint64_t body;   /* a hash of the body bytes in order, with their streams */
};

static void event(struct seen *s, uint64_t kind, uint64_t a, uint64_t b)
{
    s->events = (s->events ^ (kind << 56 ^ a << 24 ^ b)) * 0x100000001b3ull;
}

static void p_status(void *arg, uint32_t stream, int status)
{
    if (status < 200 || status > 999) abort();
    event(arg, 1, stream, (uint64_t)status);
}

static void p_field(void *arg, uint32_t stream, const char *name, size_t nlen, const char *value,
                    size_t vlen)
{
    uint64_t h = 0;
    for (size_t i = 0; i < nlen; i++)
        h = h * 31 + (unsigned char)name[i];
    for (size_t i = 0; i < vlen; i++)
        h = h * 31 + (unsigned char)value[i];
    event(arg, 2, stream, h);
}

/* Body bytes: hashed byte by byte with their stream, so any split of a
 * frame gives the same hash. */
static void p_data(void *arg, uint32_t stream, const uint8_t *p, size_t n)
{
    struct seen *s = arg;
    for (size_t i = 0; i < n; i++)
        s->body = (s->body ^ p[i] ^ (uint64_t)stream << 8) * 0x100000001b3ull;
}

static void p_end(void *arg, uint32_t stream)
{
    if (stream == 0) abort();
    event(arg, 3, stream, 0);
}

static void p_goaway(void *arg, uint32_t last)
{
    if (last >> 31) abort();
    event(arg, 4, last, 0);
}

static const struct sl_h2resp_pairs pairs = {
    .status = p_status, .field = p_field, .data = p_data, .end = p_end, .goaway = p_goaway};

static void on_head(void *arg, uint32_t stream, const struct sl_learn_resp *f)
{
    struct seen *s = arg;
    if (s->n < 16) {
        s->stream[s->n] = stream;
        s->f[s->n] = *f;
    }
    s->n++;
}

static bool read_as(const uint8_t *d, size_t n, size_t cut, struct seen *s)
{
    struct sl_h2resp r;
    memset(s, 0, sizeof *s);
    sl_h2resp_init(&r, on_head, s);
    sl_h2resp_pair(&r, &pairs);
    sl_h2resp_feed(&r, d, cut);
    sl_h2resp_feed(&r, d + cut, n - cut);
    bool lost = sl_h2resp_lost(&r);
    sl_h2resp_fini(&r);
    return lost;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct seen a, b;
    if (size < 1) return 0;
    sl_log_setup(SL_LOG_NONE, SL_LOG_ERROR);
    size_t n = size - 1, cut = n ? data[0] % (n + 1) : 0;
    bool la = read_as(data + 1, n, n, &a), lb = read_as(data + 1, n, cut, &b);
    if (la != lb || a.n != b.n || a.events != b.events || a.body != b.body) abort();
    for (int i = 0; i < a.n && i < 16; i++)
        if (a.stream[i] != b.stream[i] || memcmp(&a.f[i], &b.f[i], sizeof a.f[i])) abort();
    return 0;
}
