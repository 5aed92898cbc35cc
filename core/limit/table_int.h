/* SPDX-License-Identifier: BSD-2-Clause */
/* table_int.h - the table's memory layout, shared by table.c and
 * table_conns.c only. */
#ifndef SL_TABLE_INT_H
#define SL_TABLE_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "limit_log.h"
#include "table.h"

/* SL_VERSION 4: side entries say how much of its limit a key may use;
 * 5: stripes of two cache lines (odd_heads); 6: quota use per plan
 * (table_plans.c); 7: what `learn` rules learned, the last 4 KB
 * (table_learned.c) */
#define SL_MAGIC   0x31656369756c73ull /* "sluice1" */
#define SL_VERSION 7
#define SL_STRIPES 16
#define SL_HDR     4096

/* What a decision touches: four slots to a cache line. */
struct sl_slot {
    _Atomic uint64_t tag;   /* writer: the claimer (CAS); 0 never used, 1 changing hands */
    _Atomic uint64_t state; /* writer: every decision (CAS) */
};
_Static_assert(sizeof(struct sl_slot) == 16, "four slots to a cache line");
#define SL_BUCKET 4 /* slots per cache line */

/* What only claims, reuses and concurrency limits touch, kept apart so a
 * decision's cache line holds four keys. */
struct sl_side {
    _Atomic uint64_t meta; /* writer: the claimer; what the state word is (table.c: meta_of) */
    _Atomic int32_t conns; /* connections open at once under this key */
    _Atomic uint32_t cap;  /* writer: the claimer; the key's limit in requests (0: unknown) */
};
_Static_assert(sizeof(struct sl_side) == 16, "side entry size");

struct sl_rule_entry {
    _Atomic uint64_t id; /* writer: the registering process (CAS from 0) */
    _Atomic uint64_t overflow_state;
    char name[SL_NAME_MAX];
};
_Static_assert(sizeof(struct sl_rule_entry) == 64, "a rule entry is one cache line");

#define SL_STRIPE_WORDS 16 /* two cache lines: room for counters to come */
struct sl_stripe {
    _Atomic uint64_t v[SL_NCOUNTERS];
    uint64_t pad[SL_STRIPE_WORDS - SL_NCOUNTERS];
};
_Static_assert(sizeof(struct sl_stripe) == 128, "a stripe is two cache lines");

struct sl_header {
    uint64_t magic;
    uint32_t version;
    uint32_t nslots;
    uint64_t secret[4];
    _Atomic uint32_t ready;      /* writer: the creator, last (release) */
    _Atomic uint32_t config_gen; /* writer: `sluice reload` (bumps); readers: every decision */
    char config_path[1024];  /* writer: the creator, then `sluice reload` before it bumps config_gen
                              */
    char config_rules[2048]; /* inline rules: the same writers */
    _Atomic uint32_t stamped; /* writer: the first process to describe the program (CAS) */
    int32_t origin_pid;       /* the process that described it */
    char origin_command[64];
    _Atomic uint64_t denials_head; /* writers: every denial (fetch-add); see table_denials.c */
    _Atomic uint32_t log_next;     /* words of the log region given out (table_log.c) */
    _Atomic uint32_t log_at[SL_MAX_RULES]; /* a rule entry's log: word << 13 | count; 1 making */
};
_Static_assert(sizeof(struct sl_header) <= SL_HDR, "the header fits its page");

/* One recent denial: seq is 0 while a writer fills it, then its position
 * in the ring + 1, so a reader that sees the same seq before and after
 * copying it has a whole entry. */
struct sl_denial_slot {
    _Atomic uint64_t seq;
    _Atomic uint64_t at_ns;
    _Atomic uint64_t rule; /* rule entry index */
    _Atomic uint64_t w[4]; /* struct sl_key */
    uint64_t pad;
};
_Static_assert(sizeof(struct sl_denial_slot) == 64, "a denial is one cache line");
#define SL_DENIALS   2048
#define SL_LOG_WORDS SL_LOG_TABLE_WORDS

/* A rule's waits (table_denials.c): the turns of its last delayed
 * decisions, so a reader can count those still to come, and the total
 * time they were given to wait; and how often its keys reached a share of
 * their quota. */
#define SL_TURNS 59
struct sl_rule_waits {
    _Atomic uint64_t next;             /* writers: fetch-add */
    _Atomic uint64_t wait_ns_total;    /* writers: fetch-add */
    _Atomic uint64_t turn[SL_TURNS];   /* monotonic ns */
    _Atomic uint64_t quota_crossed[3]; /* keys that reached 80, 90, 100 % of their quota */
};
_Static_assert(sizeof(struct sl_rule_waits) == 512, "eight cache lines per rule");

/* A plan's quota counters (table_plans.c), one entry per rule entry and
 * plan name. What every request reads (key, quota, win_end_s) is written
 * once per entry or per window; the crossings only when a key reaches a
 * share of its quota. win_reached[] and the stripes' `used` are counts of
 * the current window: [window tag : 16][count : 48], the tag being the low
 * bits of the window's end in wall seconds. */
#define SL_TABLE_PLANS 256
struct sl_plan_entry {
    _Atomic uint64_t key;       /* 0: free; 1: being made; else the (rule, name) hash */
    _Atomic uint32_t rule;      /* the rule entry */
    _Atomic uint32_t window;    /* enum sl_quota_window */
    _Atomic uint64_t quota;     /* per key and window: the last configuration's */
    _Atomic uint64_t win_end_s; /* the latest window counted: its end, wall seconds */
    char name[SL_NAME_MAX];
    _Atomic uint64_t reached[3];     /* keys that reached 80, 90, 100 %, ever */
    _Atomic uint64_t win_reached[3]; /* the same in the current window (tagged) */
};
_Static_assert(sizeof(struct sl_plan_entry) == 128, "a plan entry is two cache lines");

/* What each request adds, on the stripe of its thread ([stripe][entry], so
 * threads counting requests of one plan do not share a line). */
struct sl_plan_stripe {
    _Atomic uint64_t admitted, refused;
    _Atomic uint64_t used; /* admitted in the current window (tagged) */
    uint64_t pad;
};
_Static_assert(sizeof(struct sl_plan_stripe) == 32, "plan stripe size");

/* A connection holding a place under a `conns` limit. pid[] lists the
 * processes holding it open (negative: a child being forked by that
 * parent); the last to close it, or a sweep that finds every holder dead,
 * frees it and gives the place back. */
#define SL_CONN_PIDS 5
struct sl_conn_rec {
    _Atomic uint32_t slot1; /* slot index + 1; 0: free. Writers: acquire (CAS), release */
    _Atomic int32_t pid[SL_CONN_PIDS];
    uint32_t pad;
};
_Static_assert(sizeof(struct sl_conn_rec) == 28, "record size");

struct sl_table {
    struct sl_header *hdr;
    struct sl_rule_entry *rules;
    struct sl_stripe *stripes; /* [rule * SL_STRIPES + stripe] */
    struct sl_slot *slots;
    struct sl_side *side;
    struct sl_conn_rec *recs;
    struct sl_denial_slot *denials;      /* [SL_DENIALS] */
    struct sl_rule_waits *waits;         /* [SL_MAX_RULES] */
    _Atomic uint64_t *logs;              /* [SL_LOG_WORDS] */
    struct sl_plan_entry *plans;         /* [SL_TABLE_PLANS] */
    struct sl_plan_stripe *plan_stripes; /* [SL_STRIPES * SL_TABLE_PLANS] */
    uint32_t nrecs;
    uint64_t nbuckets; /* a prime; slots = 4 * nbuckets */
    uint64_t secret[4];
    size_t bytes;
    enum sl_on_full on_full;
};

size_t sl_table_layout_bytes(uint32_t nslots);
/* The index of the key's slot, claimed if needed; -1 when the table is full
 * for it. */
int64_t sl_table_find_slot(struct sl_table *t, int rule, const struct sl_key *k,
                           const struct sl_limit *l, uint64_t quota, uint64_t now);
/* Whether slot i (found for key k) is still k's once its words are
 * changed: a thread filling a full table may give it to another key
 * between the lookup and the change (table.c's still_held). */
bool sl_table_still_held(struct sl_table *t, int64_t i, const struct sl_key *k);

/* The counter stripe of the calling thread (table.c). */
unsigned sl_table_stripe(void);
/* Which of 80, 90, 100 % (bits 0, 1, 2) a key's quota use passed when a
 * request of `cost` took it to `used` of `limit` (table_denials.c). */
unsigned sl_table_quota_marks(uint64_t used, uint64_t cost, uint64_t limit);

#endif
