/* SPDX-License-Identifier: BSD-2-Clause */
/* fd.c - the per-descriptor table.
 *
 * A two-level array: SL_FD_MAX / SL_FD_CHUNK pointers to chunks of SL_FD_CHUNK entries,
 * each chunk allocated (from sluice's own arena) the first time a
 * descriptor in it is tracked and never freed, so a reader holding an entry
 * pointer can never see it vanish. Chunk pointers are published with
 * release and read with acquire.
 */
#include "fd.h"

#include <errno.h>
#include <string.h>

#include "../core/clock.h"
#include "../core/mem.h"
#include "../core/policy/policy.h"
#include "shim.h"

struct sl_fd *_Atomic sl_fd_chunks[SL_FD_MAX / SL_FD_CHUNK];

/* The local port of each listening socket, + 1 (0: not known yet): an
 * accepted connection's local port is its listener's, so rules that look
 * at the port alone cost no getsockname per accept. close and dup2 onto a
 * descriptor forget it (sl_listen_forget). */
_Atomic uint32_t sl_listen_port[SL_FD_MAX];
_Atomic uint64_t sl_listen_rules[SL_FD_MAX];

static void reset(struct sl_fd *e)
{
    e->bytes_rule[0] = e->bytes_rule[1] = -1;
    e->conn_rec[0] = e->conn_rec[1] = -1;
    atomic_store(&e->ready_at[0], 0);
    atomic_store(&e->ready_at[1], 0);
    atomic_store(&e->turn[0].bytes, 0);
    atomic_store(&e->turn[1].bytes, 0);
    atomic_store(&e->held_at, 0);
    atomic_store(&e->pending_connect, 0);
    atomic_store(&e->connect_error, 0);
    e->redecide = false;
    e->peerlen = 0;
    e->gate = NULL;
}

struct sl_fd *sl_fd_track(int fd)
{
    if ((unsigned)fd >= SL_FD_MAX) return NULL;
    struct sl_fd *_Atomic *slot = &sl_fd_chunks[fd / SL_FD_CHUNK];
    struct sl_fd *c = atomic_load_explicit(slot, memory_order_acquire);
    if (!c) {
        int saved = errno;
        struct sl_fd *fresh = sl_alloc(SL_FD_CHUNK * sizeof *fresh);
        errno = saved;
        if (!fresh) return NULL;
        if (atomic_compare_exchange_strong(slot, &c, fresh))
            c = fresh;
        else
            sl_free(fresh);
    }
    struct sl_fd *e = &c[fd % SL_FD_CHUNK];
    if (!atomic_load(&e->tracked)) reset(e);
    atomic_store_explicit(&e->tracked, 1, memory_order_release);
    return e;
}

/* How many of this process's descriptors hold each concurrency record:
 * the place is given back when the count falls to zero. A forked child
 * inherits the counts with the descriptors. Allocated with the first
 * record, before any fork can need it. */
static _Atomic uint16_t *_Atomic local_refs;
static uint32_t nrefs;

static _Atomic uint16_t *refs(struct sl_runtime *rt)
{
    _Atomic uint16_t *r = atomic_load_explicit(&local_refs, memory_order_acquire);
    if (r || !rt) return r;
    uint32_t n = sl_table_conn_records(rt->table);
    int saved = errno;
    _Atomic uint16_t *fresh = sl_alloc(n * sizeof *fresh);
    errno = saved;
    if (!fresh) return NULL;
    nrefs = n;
    if (!atomic_compare_exchange_strong(&local_refs, &r, fresh)) {
        sl_free(fresh);
        return r;
    }
    return fresh;
}

void sl_fd_hold(int32_t rec)
{
    _Atomic uint16_t *r = refs(atomic_load(&sl_runtime_ptr));
    if (r && rec >= 0 && (uint32_t)rec < nrefs) atomic_fetch_add(&r[rec], 1);
}

/* Drops one local reference; true when it was the last. */
static bool unhold(int32_t rec)
{
    _Atomic uint16_t *r = atomic_load(&local_refs);
    if (!r || rec < 0 || (uint32_t)rec >= nrefs) return rec >= 0;
    return atomic_fetch_sub(&r[rec], 1) == 1;
}

void sl_fd_forget(int fd)
{
    struct sl_fd *e = sl_fd_get(fd);
    if (!e) return;
    int32_t recs[SL_CONN_HOLDS] = {e->conn_rec[0], e->conn_rec[1]};
    struct sl_runtime *rt = atomic_load(&sl_runtime_ptr);
    /* a place the connection held in its key's queue goes to the others */
    for (int io = 0; io < 2 && rt; io++)
        if (e->bytes_rule[io] >= 0 && e->bytes_rule[io] < rt->cfg->nrules)
            sl_bytes_drop(rt, e->bytes_rule[io], &e->bytes_key[io], io, &e->turn[io],
                          sl_clock_now());
    atomic_store_explicit(&e->tracked, 0, memory_order_release);
    if (!rt) return;
    for (int i = 0; i < SL_CONN_HOLDS; i++)
        if (recs[i] >= 0 && !unhold(recs[i])) recs[i] = -1;
    sl_conn_release(rt, recs);
}

void sl_fd_carry(int fd, const struct sl_decision *d)
{
    if (!sl_fd_carries(d)) return;
    struct sl_fd *e = sl_fd_track(fd);
    if (!e) {
        /* cannot follow this descriptor: give its places back now rather than leak them */
        struct sl_runtime *rt = atomic_load(&sl_runtime_ptr);
        if (rt) sl_conn_release(rt, d->conn_rec);
        return;
    }
    for (int io = 0; io < 2; io++) {
        e->bytes_rule[io] = (int16_t)d->bytes_rule[io];
        if (d->bytes_rule[io] >= 0) e->bytes_key[io] = d->bytes_key[io];
    }
    for (int h = 0; h < SL_CONN_HOLDS; h++) {
        e->conn_rec[h] = d->conn_rec[h];
        sl_fd_hold(d->conn_rec[h]);
    }
}

void sl_fd_dup(int oldfd, int newfd)
{
    struct sl_fd *o = sl_fd_get(oldfd);
    if (!o || oldfd == newfd) return;
    struct sl_fd *n = sl_fd_track(newfd);
    if (!n) return;
    n->bytes_rule[0] = o->bytes_rule[0];
    n->bytes_rule[1] = o->bytes_rule[1];
    n->bytes_key[0] = o->bytes_key[0];
    n->bytes_key[1] = o->bytes_key[1];
    n->conn_rec[0] = o->conn_rec[0];
    n->conn_rec[1] = o->conn_rec[1];
    sl_fd_hold(n->conn_rec[0]);
    sl_fd_hold(n->conn_rec[1]);
}

uint64_t sl_fd_ready_at(int fd, enum sl_io io)
{
    struct sl_fd *e = sl_fd_get(fd);
    return e ? atomic_load_explicit(&e->ready_at[io], memory_order_relaxed) : 0;
}

/* fork: the child inherits the parent's descriptors, so it becomes a holder
 * of every concurrency place they hold (see core/limit/table_conns.c). No
 * allocation here: allocators lock themselves around fork. */
void sl_fd_prefork(void)
{
    struct sl_runtime *rt = atomic_load(&sl_runtime_ptr);
    _Atomic uint16_t *r = atomic_load(&local_refs);
    if (!rt || !r) return;
    for (uint32_t i = 0; i < nrefs; i++)
        if (atomic_load_explicit(&r[i], memory_order_relaxed))
            sl_table_conn_prefork(rt->table, (int32_t)i);
}

void sl_fd_postfork_child(int parent)
{
    /* a place in a key's queue (io.c) stays the parent's: the child's copy
     * would use the same bytes a second time */
    for (size_t c = 0; c < SL_FD_MAX / SL_FD_CHUNK; c++) {
        struct sl_fd *ch = atomic_load_explicit(&sl_fd_chunks[c], memory_order_acquire);
        for (size_t i = 0; ch && i < SL_FD_CHUNK; i++) {
            atomic_store_explicit(&ch[i].turn[0].bytes, 0, memory_order_relaxed);
            atomic_store_explicit(&ch[i].turn[1].bytes, 0, memory_order_relaxed);
        }
    }
    struct sl_runtime *rt = atomic_load(&sl_runtime_ptr);
    _Atomic uint16_t *r = atomic_load(&local_refs);
    if (!rt || !r) return;
    for (uint32_t i = 0; i < nrefs; i++)
        if (atomic_load_explicit(&r[i], memory_order_relaxed))
            sl_table_conn_postfork_child(rt->table, (int32_t)i, parent);
}
