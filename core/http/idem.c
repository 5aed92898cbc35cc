/* SPDX-License-Identifier: BSD-2-Clause */
/* idem.c - Idempotency-Key marks (see idem.h).
 *
 * The key is BLAKE2b keyed with the table's secret over the bucket key and
 * the length-prefixed parts, so that no two different requests can be
 * spelled into one input ("GET" + "/x" against "GE" + "T/x"), and every
 * process sharing the table computes the same mark.
 */
#include "idem.h"

#include <sodium.h>
#include <string.h>

#include "bodydigest.h"
#include "../limit/quota.h"
#include "reqhead.h"
#include "reqkey.h"

#define END_UNIT (SL_QUOTA_MAX + 1) /* the word's end is in these units */

static void put(crypto_generichash_state *st, const char *s, size_t len)
{
    uint64_t n = s ? len : 0;
    crypto_generichash_update(st, (const unsigned char *)&n, sizeof n);
    if (n) crypto_generichash_update(st, (const unsigned char *)s, n);
}

void sl_idem_key(struct sl_key *k, const struct sl_key *bucket, const struct sl_req_head *h,
                 const uint64_t secret[4])
{
    unsigned char key[crypto_generichash_KEYBYTES], out[16];
    memcpy(key, secret, sizeof key);
    crypto_generichash_state st;
    crypto_generichash_init(&st, key, sizeof key, sizeof out);
    crypto_generichash_update(&st, (const unsigned char *)bucket, sizeof *bucket);
    put(&st, h->idem, h->idem_len);
    put(&st, h->method, h->method_len);
    put(&st, h->path, h->path_len);
    put(&st, h->query, h->query_len);
    put(&st, (const char *)h->body_digest, SL_BODY_DIGEST_LEN);
    crypto_generichash_final(&st, out, sizeof out);
    k->rule = bucket->rule;
    memcpy(&k->hi, out, 8);
    memcpy(&k->lo, out + 8, 8);
    k->extra = bucket->extra | SL_REQ_KEY_IDEM;
}

uint64_t sl_idem_step(uint64_t old, uint64_t now, bool *free, uint64_t *opened)
{
    *free = false;
    *opened = 0;
    if (old == 0 || old <= now) { /* no mark, or its window has ended */
        uint64_t end = (now + SL_IDEM_WINDOW_NS + END_UNIT - 1) & ~(END_UNIT - 1);
        *opened = end;
        return end | 1;
    }
    uint64_t attempts = old & (END_UNIT - 1);
    if (attempts > SL_IDEM_FREE) return old; /* the free retries are spent */
    *free = true;
    return old + 1;
}

uint64_t sl_idem_unmark(uint64_t old, uint64_t opened)
{
    return (old & ~(END_UNIT - 1)) == opened ? 0 : old;
}
