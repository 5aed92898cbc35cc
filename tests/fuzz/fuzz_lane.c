/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_lane.c - differential libFuzzer target: the request gate's lane
 * (core/http/request.c: a read that repeats the last read's head is passed
 * without the head being read or its key hashed) against the scan alone.
 *
 * The first input byte picks the rule (a header key under reply, delay or
 * reject; the peer's address under reject; a header key under reply with
 * count_status = 401, whose answers give back what their requests took:
 * after each read the program may answer, 200 or 401, the same answers to
 * both twins); each further byte is a read:
 * the repeated head, another key's head (of one length: read by the lane
 * as differing only in values), a list of keys of that length (the
 * general path's, inside the lane too), the key's head with another Host
 * (by the lane too), a POST with a body,
 * two heads, or
 * the input's own next bytes, perhaps cut in two reads, after a time step,
 * perhaps after another connection of the thread read a head of its own.
 * Twin connections on twin tables read the same stream: one as the gate
 * reads (sl_req_admit_all, sl_req_admit when it says no), one by
 * sl_req_admit alone, which never takes the lane. Every read must pass the
 * same bytes with the same verdict, and the tables' counters must agree
 * (tests/fuzz/twins.h, shared with fuzz_lean.c). */
#include "twins.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAD "GET /x HTTP/1.1\r\nHost: a\r\nX-Key: k\r\n\r\n"

static void describe(struct stream *st, const uint8_t *d, size_t size)
{
    static const char *const pieces[] = {
        HEAD,
        "GET /x HTTP/1.1\r\nHost: a\r\nX-Key: j\r\n\r\n",
        "GET /x HTTP/1.1\r\nHost: b\r\nX-Key: ,\r\n\r\n",
        "GET /x HTTP/1.1\r\nHost: c\r\nX-Key: k\r\n\r\n",
        "POST /p HTTP/1.1\r\nX-Key: k\r\nContent-Length: 3\r\n\r\nabc",
        HEAD HEAD,
    };
    static const uint64_t steps[] = {0, 1000000ull, 20000000ull, 200000000ull};
    uint64_t now = 1000000000000ull;
    st->len = 0;
    st->n = 0;
    for (size_t i = 0; i < size && st->n < NREADS - 1; i++) {
        uint8_t b = d[i];
        size_t at = st->len;
        unsigned pick = b & 7;
        if (pick < 2) {
            st->len += (size_t)sprintf(st->s + at, "%s", pieces[0]);
        } else if (pick < 7) {
            st->len += (size_t)sprintf(st->s + at, "%s", pieces[pick - 1]);
        } else { /* the input's own next bytes */
            size_t n = (size_t)(b >> 3) + 1;
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
    if (!other.table) twins_setup("lane", false);
    if (size < 2) return 0;
    int k = data[0] % NRULES;
    describe(&st, data + 1, size - 1);
    twins_agree(k, &st, false);
    return 0;
}
