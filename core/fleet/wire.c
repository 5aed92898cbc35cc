/* SPDX-License-Identifier: BSD-2-Clause */
/* wire.c - encoder and decoder of the gossip datagram, format v1.
 *
 * Layout (little endian, offsets in bytes; docs/gossip-wire.txt is the
 * reference):
 *    0  magic "SLUG"            4
 *    4  version (1)             1
 *    5  type (1 = counts)       1
 *    6  flags (bit 0: full)     1
 *    7  reserved, 0             1
 *    8  node id                 8
 *   16  boot id                 8
 *   24  sequence                8
 *   32  timestamp, ms realtime  8
 *   40  record count            2
 *   42  reserved, 0             2
 *   44  records, 24 bytes each: key hash 8, rule 4, window 4, prev 4, curr 4
 *  end-32 crypto_auth (HMAC-SHA-512-256) over every byte before it
 *
 * The decoder checks cheap things first (length, magic, version, record
 * count against length) so garbage costs no hashing, then the MAC with
 * crypto_auth_verify (constant time), and only then the values of an
 * authentic datagram. Nothing is trusted before the MAC verifies, and
 * nothing in the datagram is used as a length or index without a bound.
 */
#include "wire.h"

#include <sodium.h>
#include <stdatomic.h>
#include <string.h>

#include "../limit/limit.h"

_Static_assert(SL_WIRE_MAC == crypto_auth_BYTES, "MAC size");
_Static_assert(SL_WIRE_KEYLEN == crypto_auth_KEYBYTES, "key size");
_Static_assert(SL_WIRE_HDR + SL_WIRE_MAX_RECS * SL_WIRE_REC + SL_WIRE_MAC <= SL_WIRE_MAX, "fits");

static const uint8_t magic[4] = {'S', 'L', 'U', 'G'};

const char *const sl_wire_status_names[SL_WIRE_NSTATUS] = {
    "ok",     "truncated", "oversized",    "bad_magic", "bad_version",
    "forged", "malformed", "unknown_peer", "replayed",  "stale",
};

static void sodium_once(void)
{
    static _Atomic int done;
    if (!atomic_load_explicit(&done, memory_order_acquire)) {
        if (sodium_init() >= 0) atomic_store_explicit(&done, 1, memory_order_release);
    }
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

size_t sl_wire_encode(uint8_t *out, const struct sl_wire_hdr *h, const struct sl_wire_rec *recs,
                      size_t n, const uint8_t key[SL_WIRE_KEYLEN])
{
    sodium_once();
    if (n > SL_WIRE_MAX_RECS) n = SL_WIRE_MAX_RECS;
    memcpy(out, magic, 4);
    out[4] = SL_WIRE_VERSION;
    out[5] = h->type;
    out[6] = h->flags;
    out[7] = 0;
    put64(out + 8, h->node);
    put64(out + 16, h->boot);
    put64(out + 24, h->seq);
    put64(out + 32, h->ts_ms);
    put16(out + 40, (uint16_t)n);
    put16(out + 42, 0);
    uint8_t *p = out + SL_WIRE_HDR;
    for (size_t i = 0; i < n; i++, p += SL_WIRE_REC) {
        put64(p, recs[i].hash);
        put32(p + 8, recs[i].rule);
        put32(p + 12, recs[i].window);
        put32(p + 16, recs[i].prev);
        put32(p + 20, recs[i].curr);
    }
    crypto_auth(p, out, (unsigned long long)(p - out), key);
    return (size_t)(p - out) + SL_WIRE_MAC;
}

void sl_wire_rec_at(const uint8_t *buf, size_t i, struct sl_wire_rec *r)
{
    const uint8_t *p = buf + SL_WIRE_HDR + i * SL_WIRE_REC;
    r->hash = get64(p);
    r->rule = get32(p + 8);
    r->window = get32(p + 12);
    r->prev = get32(p + 16);
    r->curr = get32(p + 20);
}

enum sl_wire_status sl_wire_decode(const uint8_t *buf, size_t len,
                                   const uint8_t key[SL_WIRE_KEYLEN], struct sl_wire_hdr *h)
{
    if (len > SL_WIRE_MAX) return SL_WIRE_OVERSIZED;
    if (len < 6) return SL_WIRE_TRUNCATED;
    if (memcmp(buf, magic, 4) != 0) return SL_WIRE_BAD_MAGIC;
    if (buf[4] != SL_WIRE_VERSION) return SL_WIRE_BAD_VERSION;
    if (len < SL_WIRE_HDR + SL_WIRE_MAC) return SL_WIRE_TRUNCATED;
    size_t nrec = get16(buf + 40);
    if (nrec > SL_WIRE_MAX_RECS) return SL_WIRE_MALFORMED;
    size_t want = SL_WIRE_HDR + nrec * SL_WIRE_REC + SL_WIRE_MAC;
    if (len < want) return SL_WIRE_TRUNCATED;
    if (len > want) return SL_WIRE_MALFORMED;

    sodium_once();
    size_t body = len - SL_WIRE_MAC;
    if (crypto_auth_verify(buf + body, buf, body, key) != 0) return SL_WIRE_FORGED;

    /* Authentic from here on; still check every value before use. */
    if (buf[5] != SL_WIRE_TYPE_COUNTS || (buf[6] & ~SL_WIRE_FLAG_FULL) || buf[7] || get16(buf + 42))
        return SL_WIRE_MALFORMED;
    h->type = buf[5];
    h->flags = buf[6];
    h->node = get64(buf + 8);
    h->boot = get64(buf + 16);
    h->seq = get64(buf + 24);
    h->ts_ms = get64(buf + 32);
    h->nrec = (uint16_t)nrec;
    if (h->seq == 0 || h->boot == 0) return SL_WIRE_MALFORMED;
    for (size_t i = 0; i < nrec; i++) {
        struct sl_wire_rec r;
        sl_wire_rec_at(buf, i, &r);
        if (r.hash < 2 || r.prev > SL_SLIDING_MAX_COUNT || r.curr > SL_SLIDING_MAX_COUNT)
            return SL_WIRE_MALFORMED;
    }
    return SL_WIRE_OK;
}
