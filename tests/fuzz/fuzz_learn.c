/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_learn.c - a vendor's rate-limit fields (core/http/learn.h): every
 * value parser on the input as it is, the input as one header (name up to
 * its first ':') into sl_learn_decide at a wall time it also picks, and
 * the input as response bytes after a status line through the response
 * counter reading the fields (core/http/h1resp.h). Checks: parsed
 * durations and times stay within the saturation bounds, a learned wait
 * never exceeds the cap, a capped one asked for more, a wait is only
 * learned from a field named, and no read goes past the input (ASan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/h1resp.h"
#include "../../core/http/learn.h"

#define BOUND (INT64_MAX / 4)

static void check_decide(const struct sl_learn_resp *f, int64_t now, uint64_t cap)
{
    struct sl_learned o;
    bool held = sl_learn_decide(f, now, cap, &o);
    if (held != (o.wait_ns > 0)) abort();
    if (o.wait_ns > cap) abort();
    if (o.capped && (o.asked_ns <= cap || o.wait_ns != cap)) abort();
    if (held && (!o.field || o.asked_ns > SL_LEARN_ABSURD_NS)) abort();
    if (o.ignored && !o.ignored_field) abort();
    /* a spread: N > 0 left for a window, the wait its N-th part (before the cap) */
    if (o.spread &&
        (o.left <= 0 || o.window_ns == 0 || o.asked_ns != o.window_ns / (uint64_t)o.left))
        abort();
}

static void on_head(void *arg, uint64_t index, const struct sl_learn_resp *f)
{
    if (index >= *(uint64_t *)arg || f->status < 200) abort();
    check_decide(f, 1714564800ll * 1000000000ll, 600ull * 1000000000ull);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes: ASan sees any read past them */
    char *v = malloc(size ? size : 1);
    if (!v) return 0;
    memcpy(v, data, size);
    uint64_t u;
    int64_t s, r;
    if (sl_learn_parse_delta(v, size, &u) && u > (uint64_t)BOUND) abort();
    if (sl_learn_parse_ms(v, size, &u) && u > (uint64_t)BOUND) abort();
    if (sl_learn_parse_go_duration(v, size, &u) && u > (uint64_t)BOUND) abort();
    if (sl_learn_parse_count(v, size, &s) && (s < 0 || s > BOUND)) abort();
    if (sl_learn_parse_http_date(v, size, &s) && (s < 0 || s > BOUND)) abort();
    if (sl_learn_parse_epoch(v, size, &s) && (s < 0 || s > BOUND)) abort();
    if (sl_learn_parse_rfc3339(v, size, &s) && (s < 0 || s > BOUND)) abort();
    if (sl_learn_parse_ratelimit(v, size, &r, &u) && (r < 0 || u > (uint64_t)BOUND)) abort();
    uint64_t q, w;
    if (sl_learn_parse_policy(v, size, &q, &w) && (q == 0 || w == 0)) abort();

    /* one header, at a wall time and cap the first bytes choose */
    const char *colon = memchr(v, ':', size);
    struct sl_learn_resp f;
    sl_learn_resp_init(&f, size && (data[0] & 1) ? 429 : 200);
    if (colon)
        sl_learn_header(&f, v, (size_t)(colon - v), colon + 1, size - (size_t)(colon - v) - 1);
    uint64_t now = 0, cap = 1;
    for (size_t i = 0; i < size && i < 8; i++) {
        now = now << 8 | data[i];
        cap = cap * 31 + data[i];
    }
    check_decide(&f, (int64_t)now, cap); /* any time, even before 1970 */

    /* as response bytes, in two reads split where the first byte says */
    static const char head[] = "HTTP/1.1 429 Too Many Requests\r\n";
    struct sl_h1resp rs;
    uint64_t sent = 3;
    sl_h1resp_init(&rs);
    sl_h1resp_learn(&rs, on_head, &sent);
    for (uint64_t i = 0; i < sent; i++)
        sl_h1resp_sent(&rs, "GET");
    sl_h1resp_feed(&rs, head, sizeof head - 1);
    size_t cut = size ? data[0] % (size + 1) : 0;
    sl_h1resp_feed(&rs, v, cut);
    sl_h1resp_feed(&rs, v + cut, size - cut);
    sl_h1resp_eof(&rs);
    free(v);
    return 0;
}
