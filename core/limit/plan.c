/* SPDX-License-Identifier: BSD-2-Clause */
/* plan.c - plans and their hashed key values (see plan.h).
 *
 * Keys are appended while building and sorted once when the set is
 * sealed; a value given twice is found then, as neighbours in digest
 * order, so building n keys costs n log n (a check per key against all
 * before it made a plans file of 100,000 keys take minutes).
 */
#include "plan.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../clock.h"
#include "key.h"
#include "../mem.h"

struct entry {
    uint8_t digest[crypto_shorthash_siphashx24_BYTES];
    uint32_t plan;
    uint32_t tag; /* the builder's (a line number): names a value given twice */
};

struct sl_plans {
    uint8_t key[crypto_shorthash_siphashx24_KEYBYTES];
    struct sl_plan plans[SL_MAX_PLANS];
    int nplans;
    struct entry *entries;
    uint32_t nentries, cap;
    bool sealed;
};

struct sl_plans *sl_plans_new(void)
{
    struct sl_plans *p = sl_alloc(sizeof *p);
    if (!p) return NULL;
    if (getrandom(p->key, sizeof p->key, GRND_NONBLOCK) != (ssize_t)sizeof p->key) {
        /* no entropy yet (early boot): the digests still hide the values */
        uint64_t seed = sl_clock_now() ^ (uintptr_t)p;
        memcpy(p->key, &seed, sizeof seed);
    }
    return p;
}

void sl_plans_free(struct sl_plans *p)
{
    if (!p) return;
    sl_free(p->entries);
    sodium_memzero(p, sizeof *p);
    sl_free(p);
}

int sl_plans_add(struct sl_plans *p, const struct sl_plan *plan)
{
    if (p->nplans >= SL_MAX_PLANS) return -1;
    for (int i = 0; i < p->nplans; i++)
        if (strcmp(p->plans[i].name, plan->name) == 0) return -1;
    p->plans[p->nplans] = *plan;
    p->plans[p->nplans].id = sl_name_hash(plan->name);
    return p->nplans++;
}

static void digest(const struct sl_plans *p, const char *v, size_t len, uint8_t out[16])
{
    crypto_shorthash_siphashx24(out, (const unsigned char *)v, len, p->key);
}

static int by_digest(const void *a, const void *b)
{
    return memcmp(((const struct entry *)a)->digest, ((const struct entry *)b)->digest, 16);
}

/* Digest order, then the builder's: the first of two equal values first. */
static int by_digest_tag(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    int d = by_digest(x, y);
    return d ? d : (x->tag > y->tag) - (x->tag < y->tag);
}

int sl_plans_add_key(struct sl_plans *p, int plan, const char *v, size_t len, uint32_t tag)
{
    if (plan < 0 || plan >= p->nplans || p->sealed || p->nentries == UINT32_MAX) return -1;
    struct entry e = {.plan = (uint32_t)plan, .tag = tag};
    digest(p, v, len, e.digest);
    if (p->nentries == p->cap) {
        uint32_t cap = p->cap ? (p->cap > UINT32_MAX / 2 ? UINT32_MAX : p->cap * 2) : 16;
        struct entry *n = sl_alloc((size_t)cap * sizeof *n);
        if (!n) return -1;
        if (p->nentries) memcpy(n, p->entries, p->nentries * sizeof *n);
        sl_free(p->entries);
        p->entries = n;
        p->cap = cap;
    }
    p->entries[p->nentries++] = e;
    return 0;
}

uint32_t sl_plans_seal(struct sl_plans *p)
{
    uint32_t twice = 0;
    if (p->nentries) qsort(p->entries, p->nentries, sizeof *p->entries, by_digest_tag);
    for (uint32_t i = 1; i < p->nentries; i++)
        if (by_digest(&p->entries[i - 1], &p->entries[i]) == 0 &&
            (twice == 0 || p->entries[i].tag < twice))
            twice = p->entries[i].tag;
    p->sealed = true;
    return twice;
}

const struct sl_plan *sl_plans_find(const struct sl_plans *p, const char *v, size_t len)
{
    if (!p || !p->sealed || p->nentries == 0) return NULL;
    struct entry want;
    digest(p, v, len, want.digest);
    const struct entry *e = bsearch(&want, p->entries, p->nentries, sizeof want, by_digest);
    return e ? &p->plans[e->plan] : NULL;
}

int sl_plans_count(const struct sl_plans *p)
{
    return p ? p->nplans : 0;
}

const struct sl_plan *sl_plans_get(const struct sl_plans *p, int i)
{
    return p && i >= 0 && i < p->nplans ? &p->plans[i] : NULL;
}

uint32_t sl_plans_keys(const struct sl_plans *p, int i)
{
    uint32_t n = 0;
    for (uint32_t k = 0; p && k < p->nentries; k++)
        n += p->entries[k].plan == (uint32_t)i;
    return n;
}
