/* SPDX-License-Identifier: BSD-2-Clause */
/* table_conns.c - connections open at once per key (`conns`).
 *
 * The count lives in the key's slot (slot.conns), so every process sharing
 * the table sees one number. Each place taken is backed by a connection
 * record naming the processes that hold the connection open; the place is
 * given back when the last of them closes it, or when a sweep finds them
 * all dead, so a crashed worker cannot leak places for ever.
 *
 * fork: in the parent, before fork, each inherited record gets a mark -P
 * (P the parent's pid) in a free pid entry; the child replaces -P by its
 * own pid. A record is never seen empty while a child is being made. If
 * fork fails the mark stays, and counts as alive while P is: a place leaks
 * for the parent's lifetime at most. A connection shared by more than
 * SL_CONN_PIDS processes is released when the first SL_CONN_PIDS have
 * closed it.
 *
 * Race notes: conns is incremented by CAS only below max; a release
 * decrements once, by whoever wins CAS(slot1, s+1, 0) after seeing every
 * pid entry empty.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "../sys.h"
#include "table_int.h"

#define CLAIMING UINT32_MAX /* slot1 while a record is being filled in */

static _Atomic uint64_t last_sweep;
static _Atomic uint32_t next_rec;

/* A process that exists and is not a zombie: a killed child its parent
 * has not reaped yet holds nothing any more. */
static bool pid_alive(int32_t p)
{
    if (p < 0) p = -p;
    if (p <= 0 || (kill(p, 0) != 0 && errno != EPERM)) return false;
    char path[32], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    int fd = sl_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return true;
    ssize_t n = sl_sys_read(fd, buf, sizeof buf - 1);
    sl_sys_close(fd);
    if (n <= 0) return true;
    buf[n] = 0;
    const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parens */
    return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

static void rec_free_if_empty(struct sl_table *t, struct sl_conn_rec *r)
{
    for (int i = 0; i < SL_CONN_PIDS; i++)
        if (atomic_load(&r->pid[i]) != 0) return;
    uint32_t s1 = atomic_load(&r->slot1);
    if (s1 == 0 || s1 == CLAIMING || !atomic_compare_exchange_strong(&r->slot1, &s1, 0)) return;
    atomic_fetch_sub(&t->side[s1 - 1].conns, 1);
}

/* Frees the records whose holders have all died. */
static void sweep(struct sl_table *t, uint64_t now)
{
    uint64_t last = atomic_load(&last_sweep);
    if (now - last < SL_NS_PER_SEC / 10 || !atomic_compare_exchange_strong(&last_sweep, &last, now))
        return;
    int saved = errno;
    for (uint32_t i = 0; i < t->nrecs; i++) {
        struct sl_conn_rec *r = &t->recs[i];
        uint32_t s1 = atomic_load_explicit(&r->slot1, memory_order_relaxed);
        if (s1 == 0 || s1 == CLAIMING) continue;
        for (int j = 0; j < SL_CONN_PIDS; j++) {
            int32_t p = atomic_load(&r->pid[j]);
            if (p != 0 && !pid_alive(p)) atomic_compare_exchange_strong(&r->pid[j], &p, 0);
        }
        rec_free_if_empty(t, r);
    }
    errno = saved;
}

static bool take_place(struct sl_side *s, uint32_t max)
{
    int32_t n = atomic_load(&s->conns);
    while (n < (int32_t)max)
        if (atomic_compare_exchange_weak(&s->conns, &n, n + 1)) return true;
    return false;
}

int32_t sl_table_conn_acquire(struct sl_table *t, int rule, const struct sl_key *k,
                              const struct sl_limit *l, uint32_t max, uint64_t now)
{
    int64_t at = -1;
    struct sl_side *s = NULL;
    for (int tries = 0; tries < SL_TABLE_TRIES && at < 0; tries++) {
        at = sl_table_find_slot(t, rule, k, l, 0, now);
        if (at < 0) break;
        s = &t->side[at];
        bool placed = take_place(s, max);
        if (!placed) {
            sweep(t, now);
            placed = take_place(s, max);
        }
        /* given to another key meanwhile: its place is given back (the
         * reuser looks at conns after its tag, this after the place) */
        if (!sl_table_still_held(t, at, k)) {
            if (placed) atomic_fetch_sub(&s->conns, 1);
            at = -1;
            continue;
        }
        if (!placed) return -1;
    }
    if (at < 0) {
        sl_table_count(t, rule, SL_C_OVERFLOW, 1);
        return t->on_full == SL_FULL_DENY ? -1 : -2;
    }
    uint32_t slot = (uint32_t)at;
    uint32_t start = atomic_fetch_add_explicit(&next_rec, 1, memory_order_relaxed) * 2654435761u;
    for (uint32_t i = 0; i < t->nrecs; i++) {
        uint32_t idx = (start + i) % t->nrecs;
        struct sl_conn_rec *r = &t->recs[idx];
        uint32_t zero = 0;
        if (atomic_load_explicit(&r->slot1, memory_order_relaxed) != 0) continue;
        if (!atomic_compare_exchange_strong(&r->slot1, &zero, CLAIMING)) continue;
        for (int j = 1; j < SL_CONN_PIDS; j++)
            atomic_store(&r->pid[j], 0);
        atomic_store(&r->pid[0], (int32_t)getpid());
        atomic_store(&r->slot1, slot + 1);
        return (int32_t)idx;
    }
    atomic_fetch_sub(&s->conns, 1);
    sl_table_count(t, rule, SL_C_ERRORS, 1);
    return -2;
}

static bool add_pid(struct sl_conn_rec *r, int32_t p)
{
    for (int j = 0; j < SL_CONN_PIDS; j++) {
        int32_t zero = 0;
        if (atomic_compare_exchange_strong(&r->pid[j], &zero, p)) return true;
    }
    return false;
}

void sl_table_conn_prefork(struct sl_table *t, int32_t rec)
{
    if (rec >= 0 && (uint32_t)rec < t->nrecs) add_pid(&t->recs[rec], -(int32_t)getpid());
}

void sl_table_conn_postfork_child(struct sl_table *t, int32_t rec, int parent)
{
    if (rec < 0 || (uint32_t)rec >= t->nrecs) return;
    struct sl_conn_rec *r = &t->recs[rec];
    for (int j = 0; j < SL_CONN_PIDS; j++) {
        int32_t mark = -(int32_t)parent;
        if (atomic_compare_exchange_strong(&r->pid[j], &mark, (int32_t)getpid())) return;
    }
}

void sl_table_conn_release(struct sl_table *t, int32_t rec)
{
    if (rec < 0 || (uint32_t)rec >= t->nrecs) return;
    struct sl_conn_rec *r = &t->recs[rec];
    int32_t me = (int32_t)getpid();
    for (int j = 0; j < SL_CONN_PIDS; j++) {
        int32_t p = me;
        if (atomic_compare_exchange_strong(&r->pid[j], &p, 0)) break;
    }
    rec_free_if_empty(t, r);
}

uint32_t sl_table_conns(struct sl_table *t, int rule, const struct sl_key *k,
                        const struct sl_limit *l, uint64_t now)
{
    int64_t at = sl_table_find_slot(t, rule, k, l, 0, now);
    return at >= 0 ? (uint32_t)atomic_load(&t->side[at].conns) : 0;
}

uint32_t sl_table_conn_records(const struct sl_table *t)
{
    return t->nrecs;
}
