/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_h2resp.c - libFuzzer target for the HTTP/2 response reader
 * (core/http/h2resp.c): the input's first byte picks where to cut the rest
 * in two reads; both cuts (none, and that one) must report the same heads
 * with the same fields and stop reading at the same point. ASan and UBSan
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
};

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
    if (la != lb || a.n != b.n) abort();
    for (int i = 0; i < a.n && i < 16; i++)
        if (a.stream[i] != b.stream[i] || memcmp(&a.f[i], &b.f[i], sizeof a.f[i])) abort();
    return 0;
}
