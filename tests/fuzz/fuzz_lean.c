/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_lean.c - differential libFuzzer target: request.c's lean decision
 * (a fast head on a connection whose one rule is plain, decided from its
 * key's slice alone: core/http/reqdecide.h sl_req_solo_decide) against reqdecide.c's general
 * loop.
 *
 * The first input byte picks the rule (a header key under reply, delay or
 * reject; the peer's address under reject; a header key under reply with
 * count_status = 401, whose answers give back what their requests took:
 * after each read the program may answer, 200 or 401, the same answers to
 * both twins); each further byte is a read: a head of one of several keys,
 * with no key, with a list of keys, with an Idempotency-Key, a POST with a
 * body, two heads, or the input's own next bytes, perhaps cut in two reads,
 * after a time step, perhaps after another connection of the thread read a
 * head of its own. Twin connections on twin tables read the same stream as
 * the gate reads (sl_req_admit_all, sl_req_admit when it says no): one
 * under the plain rule (the lean path), one under the same rule with
 * `learn` set, which an inbound connection does not act on (request.c reads
 * responses' fields outbound only) but which makes the rule not plain, so
 * its requests go down the general loop. Every read must pass the same
 * bytes with the same verdict, and the tables' counters must agree. The
 * twins' tables hash with one secret (twins.h says why). */
#include "twins.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAD "GET /x HTTP/1.1\r\nHost: a\r\nX-Key: k\r\n\r\n"

static void describe(struct stream *st, const uint8_t *d, size_t size)
{
    static const char *const pieces[] = {
        HEAD,
        "GET /x HTTP/1.1\r\nHost: a\r\nX-Key: j\r\n\r\n",
        "POST /p HTTP/1.1\r\nX-Key: k\r\nContent-Length: 3\r\n\r\nabc",
        HEAD HEAD,
        "GET /y?q=1 HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /x HTTP/1.1\r\nX-Key: a, b\r\n\r\n",
        "POST /i HTTP/1.1\r\nX-Key: k\r\nIdempotency-Key: 7\r\nContent-Length: 2\r\n\r\nhi",
        "HEAD /h HTTP/1.0\r\nX-Key: j\r\n\r\n",
    };
    static const uint64_t steps[] = {0, 1000000ull, 20000000ull, 200000000ull};
    uint64_t now = 1000000000000ull;
    st->len = 0;
    st->n = 0;
    for (size_t i = 0; i < size && st->n < NREADS - 1; i++) {
        uint8_t b = d[i];
        size_t at = st->len;
        unsigned pick = b & 15;
        if (pick < 3) { /* a key of many: heads that vary */
            st->len += (size_t)sprintf(st->s + at, "GET /v HTTP/1.1\r\nX-Key: k%u\r\n\r\n",
                                       (unsigned)(b >> 4) * 3 + pick);
        } else if (pick < 11) {
            st->len += (size_t)sprintf(st->s + at, "%s", pieces[pick - 3]);
        } else { /* the input's own next bytes */
            size_t n = (size_t)(b >> 4) * 4 + 1;
            if (n > size - i - 1) n = size - i - 1;
            memcpy(st->s + at, d + i + 1, n);
            st->len += n;
            i += n;
        }
        now += steps[(b >> 3) & 3];
        if ((b & 0x60) == 0x60 && st->len - at > 1) { /* cut in two reads */
            st->cut[st->n] = at + (st->len - at) / 2;
            st->now[st->n] = now;
            st->other[st->n++] = false;
        }
        st->cut[st->n] = st->len;
        st->now[st->n] = now;
        st->answer[st->n] = (uint8_t)((b + st->n) % 3);
        st->other[st->n++] = (b & 0x80) != 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct stream st;
    if (!other.table) twins_setup("lean", true);
    if (size < 2) return 0;
    int k = data[0] % NRULES;
    describe(&st, data + 1, size - 1);
    twins_agree(k, &st, true);
    return 0;
}
