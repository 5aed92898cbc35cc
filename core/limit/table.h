/* SPDX-License-Identifier: BSD-2-Clause */
/* table.h - the shared bucket table.
 *
 * A fixed number of 64-byte slots in one shared memory mapping, found by
 * open addressing and claimed and updated with compare-and-swap: no lock,
 * no allocation and no system call on the decision path. The mapping is
 * MAP_SHARED, so every process forked from the one that created it shares
 * the buckets (nginx workers, pre-fork servers); separately started programs
 * share one when they open it by the same name.
 *
 * The table also holds, per rule, an overflow bucket (for keys that find no
 * slot) and striped counters that any process may read.
 */
#ifndef SL_TABLE_H
#define SL_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "key.h"
#include "limit.h"
#include "../rule.h"

#define SL_PROBE 64 /* slots (16 cache lines) looked at before a key overflows */

enum sl_counter {
    SL_C_ALLOWED,     /* requests that passed */
    SL_C_LIMITED,     /* requests denied (reject or reply) */
    SL_C_DELAYED,     /* requests that passed after waiting (outbound delay) */
    SL_C_WOULD_LIMIT, /* dry run: requests that would have been denied */
    SL_C_OVERFLOW,    /* decisions made without a slot (full table) */
    SL_C_REUSED,      /* idle slots given to a new key */
    SL_C_CLAIMED,     /* empty slots given to a new key */
    SL_C_ERRORS,      /* failures inside the shim for this rule (fail open) */
    SL_C_ODD,         /* request heads read under the rule of doubt (core/http/http1.h) */
    /* what `learn` rules learned from the vendor's answers (core/http/learn.h) */
    SL_C_LEARNED,       /* holds that moved a key's time: Retry-After, nothing left */
    SL_C_LEARN_SPREAD,  /* spreads that moved it: N left for T, the next T/N later */
    SL_C_LEARN_CAPPED,  /* waits asked beyond learn_max, cut to it */
    SL_C_LEARN_IGNORED, /* values ignored: unreadable, in the past, absurd */
    SL_NCOUNTERS
};

extern const char *const sl_counter_names[SL_NCOUNTERS];

struct sl_table;

/* Creates a table of at least `slots` (rounded up to four times a prime, 68
 * at the least) shared with
 * this process's future children, or opens the table named `shared`
 * (creating it if it does not exist yet). Returns NULL with a message in
 * err on failure. */
struct sl_table *sl_table_open(uint32_t slots, const char *shared, enum sl_on_full on_full,
                               char *err, size_t errlen);

/* Opens an existing named table only to read it (sluice stats). */
struct sl_table *sl_table_attach(const char *shared, char *err, size_t errlen);

void sl_table_close(struct sl_table *t);

uint32_t sl_table_slots(const struct sl_table *t);
size_t sl_table_bytes(const struct sl_table *t);

/* Finds or registers a rule by id; returns its index for the calls below,
 * or -1 when the table already knows SL_MAX_RULES other rules. */
int sl_table_rule(struct sl_table *t, uint64_t id, const char *name);

/* Decides one request: finds or claims the key's slot and applies the
 * limit. When every slot the key may take is held, the least-used key not
 * at its limit is evicted (table.c); when all of them are at their limit,
 * the on_full policy decides. */
void sl_table_decide(struct sl_table *t, int rule, const struct sl_key *k, const struct sl_limit *l,
                     uint64_t now, uint64_t cost, uint64_t slack_ns, struct sl_verdict *v);

/* sl_table_decide for a caller that reads v->remaining only when denied
 * (a connection's decision): on an allow of a GCRA limit it is left 0
 * rather than counted, which is a good part of the decision's cost. */
void sl_table_decide_lean(struct sl_table *t, int rule, const struct sl_key *k,
                          const struct sl_limit *l, uint64_t now, uint64_t cost, uint64_t slack_ns,
                          struct sl_verdict *v);

/* Lookups and steps of one key, each looked at again after the step (a
 * full table may give the slot to another key under it): a few rounds at
 * most, then the key is counted as a full table counts it. */
#define SL_TABLE_TRIES 4

/* sl_table_decide_lean for the key whose hash the caller holds:
 * h = sl_key_hash(k, sl_table_secret(t)) (a caller that remembers it for
 * a repeated key saves the hash). False, rarely: the key's slot was given
 * to another key under the step (which then counted for that key); call
 * again, and the key is looked for again. */
bool sl_table_decide_lean_h(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                            uint64_t now, uint64_t cost, uint64_t slack_ns, struct sl_verdict *v);

/* sl_table_decide_lean_h of cost 1 and no slack for a key whose slot the
 * caller remembers from its last decision: *at (-1: none) is taken when
 * it still holds the key's tag, and is left where the key was found (-1:
 * in no slot, the table being full). */
void sl_table_decide_lean_at(struct sl_table *t, int rule, uint64_t h, int64_t *at,
                             const struct sl_limit *l, uint64_t now, struct sl_verdict *v);

/* Takes up to `want` bytes from the key's byte bucket (a GCRA limit over
 * bytes), as sl_limit_take: a grant usable now (*wait_ns 0), or a place in
 * the key's queue usable in *wait_ns. 0 only when on_full = deny refuses a
 * key the table cannot hold (retry in *wait_ns). Give back what was not
 * used with sl_table_refund. */
uint64_t sl_table_take(struct sl_table *t, int rule, const struct sl_key *k,
                       const struct sl_limit *l, uint64_t now, uint64_t want, uint64_t quantum,
                       uint64_t *wait_ns);

/* Concurrency: takes one of `max` places for the key and returns a
 * connection record (>= 0) to release later, -1 when all places are taken,
 * -2 when no record is free (the caller fails open). A place held by
 * processes that have all died is reclaimed by a sweep, at most every
 * 100 ms, when a key is found full. */
int32_t sl_table_conn_acquire(struct sl_table *t, int rule, const struct sl_key *k,
                              const struct sl_limit *l, uint32_t max, uint64_t now);
/* How many connection records the table has (their indices are 0..n-1). */
uint32_t sl_table_conn_records(const struct sl_table *t);
/* Before fork, in the parent: marks each record the child will inherit. */
void sl_table_conn_prefork(struct sl_table *t, int32_t rec);
/* In the child: turns the parent's mark into the child's own pid. */
void sl_table_conn_postfork_child(struct sl_table *t, int32_t rec, int parent);
/* The calling process closed its last descriptor of the connection. */
void sl_table_conn_release(struct sl_table *t, int32_t rec);
/* Places in use for a key (tests, stats). */
uint32_t sl_table_conns(struct sl_table *t, int rule, const struct sl_key *k,
                        const struct sl_limit *l, uint64_t now);

/* Gives back a request sl_table_decide let through: to the key's slot
 * while it holds the key (never to a key given the slot meanwhile:
 * sl_table_give_back), or to the rule's overflow bucket when the key has
 * no slot and a full table shares it. */
void sl_table_refund(struct sl_table *t, int rule, const struct sl_key *k, const struct sl_limit *l,
                     uint64_t now, uint64_t cost);

/* Gives back to the key's state word by `step` (step may run more than
 * once), only while the slot is the key's: a thread filling a full table
 * may give it to another key between the lookup and the step, and then
 * nothing is given back (what the old key took went with its slot),
 * where sl_table_apply's step would count for the new key. Never claims a
 * slot. True: given back. */
bool sl_table_give_back(struct sl_table *t, const struct sl_key *k,
                        uint64_t (*step)(uint64_t old, void *arg), void *arg);

/* A learned hold (core/http/learn.h): the GCRA bucket of the key of hash
 * h (limit l) moves so that its next request passes no sooner than
 * `until` (gap_ns: l's burst_ns less that request's cost), by the same
 * compare-and-swap as a decision, so every process sharing the table
 * holds it. Only ever later: true when this call moved it (a hold as late
 * or later was there: false). Claims the key's slot if it has none; false
 * when the table has no room for it. */
bool sl_table_hold(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                   uint64_t until, uint64_t gap_ns, uint64_t now);

/* Applies `step` to the key's state word, compare-and-swap until it holds
 * (step may run more than once): for the quota words of core/limit/quota.c,
 * `quota` their limit (by which a full table judges whether the key may
 * be evicted). The slot is claimed with limit l (sl_quota_slot_limit).
 * Returns false when the key finds no slot: nothing touched, or, when a
 * thread filling a full table gave the slot to another key between the
 * lookup and the step, that key's state (one use more for it). */
bool sl_table_apply(struct sl_table *t, int rule, const struct sl_key *k, const struct sl_limit *l,
                    uint64_t quota, uint64_t now, uint64_t (*step)(uint64_t old, void *arg),
                    void *arg);

/* sl_table_apply for the key of hash h = sl_key_hash(k, sl_table_secret(t))
 * and a bucket of limit l (core/limit/answer.c). */
bool sl_table_apply_h(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                      uint64_t now, uint64_t (*step)(uint64_t old, void *arg), void *arg);

/* The table's secret (4 words), for keyed hashes of values that become
 * keys: every process sharing the table makes the same keys. */
const uint64_t *sl_table_secret(const struct sl_table *t);

void sl_table_count(struct sl_table *t, int rule, enum sl_counter c, uint64_t n);
uint64_t sl_table_counter(const struct sl_table *t, int rule, enum sl_counter c);

/* Rule entries for readers: returns false past the last one. */
bool sl_table_rule_info(const struct sl_table *t, int rule, uint64_t *id, char *name,
                        size_t namelen);

/* Slots currently holding a key (a scan: for stats and tests only). */
uint32_t sl_table_used(const struct sl_table *t);

/* The configuration generation: `sluice reload` bumps it after validating
 * a new configuration, and every process of the program loads it again at
 * its next decision (shim/reload.c). */
uint32_t sl_table_config_gen(const struct sl_table *t);
/* Publishes a configuration, the file `path` (absolute; "" or NULL: none)
 * and inline `rules` (NULL: none), as the next generation; returns it
 * (0: too long to fit: 1 KiB of path, 2 KiB of rules). */
uint32_t sl_table_config_publish(struct sl_table *t, const char *path, const char *rules);
/* The configuration last published, or the one the program started with. */
void sl_table_config_path(const struct sl_table *t, char *out, size_t len);
void sl_table_config_rules(const struct sl_table *t, char *out, size_t len);

/* Says which program uses the table: the first process to call it wins
 * (later ones, and other programs sharing a named table, change nothing).
 * path/rules as for sl_table_config_publish; too long ones are left out. */
void sl_table_describe(struct sl_table *t, int pid, const char *command, const char *path,
                       const char *rules);
/* false: no process described it yet. */
bool sl_table_origin(const struct sl_table *t, int *pid, char *command, size_t len);

/* As sl_table_attach, writable (for sl_table_config_publish). */
struct sl_table *sl_table_attach_rw(const char *shared, char *err, size_t errlen);
/* A table in an open descriptor (`sluice` reaches an unnamed one through
 * /proc/PID/fd/N). */
struct sl_table *sl_table_attach_fd(int fd, bool writable, char *err, size_t errlen);

/* A decision that passed after a wait: counts it (SL_C_DELAYED) and keeps
 * its turn, now + wait_ns, among the rule's last few, for readers to see
 * the queue (table_denials.c). */
void sl_table_count_wait(struct sl_table *t, int rule, uint64_t now, uint64_t wait_ns);
/* A request took a key's quota from `used - cost` to `used` of `limit`:
 * counts, per rule, the keys that thereby reached 80, 90 and 100 %. */
void sl_table_note_quota(struct sl_table *t, int rule, uint64_t used, uint64_t cost,
                         uint64_t limit);
/* How many times keys of the rule reached 80, 90 and 100 % of their quota. */
void sl_table_quota_crossed(const struct sl_table *t, int rule, uint64_t out[3]);

/* Of the rule's recent delayed decisions, those whose turn is after now
 * (at most the last 59 are kept: more is shown as 59), the longest of their
 * waits still to go, and the total wait ever given, in ns. */
void sl_table_queue(const struct sl_table *t, int rule, uint64_t now, uint32_t *waiting,
                    uint64_t *longest_ns, uint64_t *total_wait_ns);

/* The exact sliding log of rule entry `rule` (algorithm = log) for
 * `count` requests, made on first use in the table's log region; NULL when
 * the region has no room left (the caller fails open and counts an error). */
struct sl_log;
struct sl_log *sl_table_log(struct sl_table *t, int rule, uint64_t count);

/* Recent denials, kept in a ring of SL_DENIALS entries (table_denials.c)
 * for `sluice top`: which rule denied which key, and when. `rule` is the
 * rule's entry, | SL_DENIAL_DRY when a dry-run rule would have denied. */
#define SL_DENIAL_DRY (1 << 16)
void sl_table_note_denial(struct sl_table *t, int rule, const struct sl_key *k, uint64_t now);
struct sl_denial {
    uint64_t at_ns;
    int rule;
    bool dry;
    struct sl_key key;
};
/* Copies out the entries written since *from (the ring's count of
 * denials; 0 the first time), at most max, oldest first; returns how many
 * and advances *from. Entries overwritten before they were read are
 * skipped (*lost counts them). */
size_t sl_table_denials(const struct sl_table *t, uint64_t *from, struct sl_denial *out, size_t max,
                        uint64_t *lost);

/* What `learn` rules learned, kept for readers at the end of the mapping
 * (core/limit/table_learned.h): SL_TABLE_LEARNED entries of a cache line. */
#define SL_TABLE_LEARNED       64
#define SL_TABLE_LEARNED_BYTES (SL_TABLE_LEARNED * 64)

/* A table without a shared name that the programs this one starts with
 * exec share: the one in the descriptor `inherited` when it holds one
 * (-1: none), or, when the program closed that descriptor before exec
 * (python's multiprocessing spawn, uvicorn's and gunicorn's workers, apt's
 * methods), the one process `holder` still holds under that number
 * (through /proc), and this process may write it (it runs as the table's
 * user: core/shm.h). Else a new memory file. *fd_out is the descriptor
 * this process's own children inherit (read-only, not closed on exec; -1
 * when only a private table could be made). When the inherited table was
 * refused for its user, `note` says so (for the log); else it is empty. */
struct sl_table *sl_table_open_inherited(uint32_t slots, enum sl_on_full on_full, int inherited,
                                         int holder, int *fd_out, char *note, size_t notelen,
                                         char *err, size_t errlen);

#endif
