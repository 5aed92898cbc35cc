/* SPDX-License-Identifier: BSD-2-Clause */
/* fd.h - what sluice knows about the program's descriptors.
 *
 * A descriptor is tracked when an accept or connect it came from matched a
 * rule with byte limits (recv_rate, send_rate) or a concurrency limit
 * (conns), or while a delayed non-blocking connect waits its turn. Entries
 * live in a process-local array indexed by fd (allocated in chunks as
 * descriptors appear; descriptors >= SL_FD_MAX are never tracked and pass
 * through). Everything else costs one load to find untracked.
 *
 * Who writes: the thread that creates the descriptor fills the entry
 * before the program can see the fd; close/dup copy or clear it. ready_at
 * is written by the I/O hooks and read by the readiness hooks (atomics).
 */
#ifndef SL_FD_H
#define SL_FD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../core/limit/key.h"
#include "../core/policy/policy.h"
#include "../core/limit/turn.h"

#define SL_FD_MAX 65536

struct sl_gate;

enum sl_io { SL_IO_RECV = 0, SL_IO_SEND = 1 };

struct sl_fd {
    _Atomic uint32_t tracked;     /* 0: nothing below is meaningful */
    int16_t bytes_rule[2];        /* config rule index limiting recv / send bytes, -1: none */
    struct sl_key bytes_key[2];   /* that rule's key for this connection */
    int32_t conn_rec[2];          /* concurrency records to release at the last close, -1 */
    _Atomic uint64_t ready_at[2]; /* recv / send throttled until (CLOCK_MONOTONIC ns), 0: not */
    struct sl_turn turn[2];       /* recv / send: the place held in the key's queue (io.c) */
    /* sluice holds bytes the program may read from this time on (the
     * kernel does not know: they were read already, e.g. decrypted by
     * OpenSSL); 0: none. The wait wrappers report the fd readable then. */
    _Atomic uint64_t held_at;
    /* A non-blocking connect held back by a delay rule: performed at
     * connect_at (pending_connect 1; 2 while a thread decides it). With
     * redecide set, the rules are asked again then (a window or a conns
     * place), until connect_deadline; a connect that cannot be made by
     * then fails asynchronously: connect_error is what SO_ERROR, recv and
     * send report. */
    _Atomic int pending_connect;
    uint64_t connect_at;
    uint64_t connect_deadline;
    bool redecide;
    uint64_t took; /* the rate tokens the pending connect holds (core/policy/policy.h) */
    _Atomic int connect_error;
    struct sockaddr_storage peer;
    socklen_t peerlen;
    /* requests on the connection (gate.h: its direction says whose, reqin.c
     * inbound, reqout.c outbound), or NULL; close.c frees it */
    struct sl_gate *gate;
};

#define SL_FD_CHUNK 1024

/* fd.c's chunks of entries (see there); read through sl_fd_get only. */
extern struct sl_fd *_Atomic sl_fd_chunks[SL_FD_MAX / SL_FD_CHUNK];

/* The entry for fd, or NULL when fd is not tracked. Inline: every wrapped
 * call asks it first, and an untracked descriptor must cost a few loads,
 * not a call. */
static inline struct sl_fd *sl_fd_get(int fd)
{
    if ((unsigned)fd >= SL_FD_MAX) return NULL;
    struct sl_fd *c =
        atomic_load_explicit(&sl_fd_chunks[(unsigned)fd / SL_FD_CHUNK], memory_order_acquire);
    if (!c) return NULL;
    struct sl_fd *e = &c[(unsigned)fd % SL_FD_CHUNK];
    return atomic_load_explicit(&e->tracked, memory_order_acquire) ? e : NULL;
}

/* The local port + 1 of each listening socket accept.c has seen (0: none
 * known), so that rules on the port alone cost no getsockname per accept. */
extern _Atomic uint32_t sl_listen_port[SL_FD_MAX];

/* The inbound rules of each such listener's port, worked out at its first
 * accept (accept.c: listen_rules): the configuration generation in the top
 * half, SL_LISTEN_KNOWN, and a bit per rule below it (configurations of at
 * most 31 rules; larger ones are matched rule by rule every accept). Set
 * only where sl_listen_port is, so close's fast path needs no second look. */
extern _Atomic uint64_t sl_listen_rules[SL_FD_MAX];
#define SL_LISTEN_KNOWN (1ull << 31)

/* A descriptor closed or replaced: forget it was a listener. */
static inline void sl_listen_forget(int fd)
{
    if ((unsigned)fd < SL_FD_MAX &&
        atomic_load_explicit(&sl_listen_port[fd], memory_order_relaxed)) {
        atomic_store_explicit(&sl_listen_rules[fd], 0, memory_order_relaxed);
        atomic_store_explicit(&sl_listen_port[fd], 0, memory_order_relaxed);
    }
}

/* The entry for fd, created (zeroed, rules -1) if needed; NULL if fd is out
 * of range or memory ran out. */
struct sl_fd *sl_fd_track(int fd);

/* Forgets fd's entry (close.h: sl_fd_drop frees what it carries first):
 * releases its concurrency places when this was the process's last
 * descriptor for the connection. */
void sl_fd_forget(int fd);

/* dup/dup2/dup3/F_DUPFD: newfd refers to the same connection. */
void sl_fd_dup(int oldfd, int newfd);

struct sl_decision;
/* Records what a connection that passed carries on (byte rules, concurrency
 * places) under its descriptor. Nothing is recorded when it carries none. */
void sl_fd_carry(int fd, const struct sl_decision *d);

/* Whether a decision has anything for sl_fd_carry to record (inline: most
 * connections carry nothing). */
static inline bool sl_fd_carries(const struct sl_decision *d)
{
    return d->bytes_rule[0] >= 0 || d->bytes_rule[1] >= 0 || d->conn_rec[0] >= 0 ||
           d->conn_rec[1] >= 0;
}

/* This process holds one more descriptor of concurrency record rec. */
void sl_fd_hold(int32_t rec);

/* fork: the parent marks the places its child will inherit; the child
 * claims them (core/limit/table_conns.c). */
void sl_fd_prefork(void);
void sl_fd_postfork_child(int parent);

/* When fd's recv or send is throttled, the time it is next worth trying;
 * 0 when it is not throttled (or the time has come). */
uint64_t sl_fd_ready_at(int fd, enum sl_io io);

#endif
