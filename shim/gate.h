/* SPDX-License-Identifier: BSD-2-Clause */
/* gate.h - the request gate of one descriptor: what a connection's reads
 * may give the program of the requests it receives, decided by core
 * (core/http/request.h) on bytes read through a transport.
 *
 * A gate holds the connection's phase (open; ended by a denied head, its
 * 429 due; reset), the stash of bytes read and held back, the 429 a
 * denial queued, and the core connection object. How bytes are read is
 * the transport's business (struct sl_transport): inbound, the socket in
 * reqin.c, OpenSSL in tls.c (reqin.c keeps the one its requests are read
 * through, and writes a denial's 429 with its write); outbound, the socket
 * in io.c, OpenSSL in tls.c, OpenSSL over memory BIOs in tlsbio.c, GnuTLS
 * in gnutls.c. A new transport is a small file: its read, a never-waiting
 * one and a write inbound, its read and write outbound, over its own
 * context.
 *
 * Outbound, the gate decides the program's writes (sl_gate_write; the
 * TLS libraries' loop around it: reqout.h, sl_reqout_tls_write) and serves
 * its reads of the responses (sl_gate_read_replies): the 429 a `reply`
 * rule queued first, then the transport's bytes, counted as responses.
 *
 * The common read goes straight into the program's buffer (one read, as
 * without sluice) and is decided there: when every byte it got may pass,
 * that is all. When it got a head that may not pass yet (held, denied, or
 * incomplete), the bytes from that head on are kept in the stash, and
 * later reads are served from the stash first.
 *
 * Nothing is lost and nothing waits without bound:
 *   - an incomplete head is completed from what already arrived (reads
 *     that do not wait), never waited for: when the transport has nothing
 *     more now, the partial head goes to the program as it is, and the
 *     request is decided when its head completes (a denied one then ends
 *     the connection: the program already has part of it);
 *   - whenever bytes stay in the stash after a read, the readiness layer
 *     announces them (ready.h: sl_ready_held_read): at once when they may
 *     pass or are a partial head or a denial to report, at its turn for a
 *     held head;
 *   - a read is short only when the transport had nothing more during the
 *     call, as bare: a read that would empty the stash and fill less than
 *     the program asked reads the transport too (an edge-triggered
 *     program takes a short read for "drained": bytes whose edge fired
 *     while they waited behind the stash would never be read).
 * Blocking and timeouts are the transport's own, except while a held head
 * waits its turn (hold.h, the one hold step).
 */
#ifndef SL_GATE_H
#define SL_GATE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "../core/clock.h"
#include "../core/http/request.h"
#include "../core/http/reqwrite.h"
#include "fd.h"

/* A head of the largest size the scanner reads, and one more read after it. */
#define SL_GATE_STASH_MAX (2 * 16384 + 2)

/* How the gate reads and writes: read may block as the program's call
 * would; more never waits. Both return > 0, or <= 0 (the transport's own
 * answer: errno EAGAIN, an end, an error). A transport fills the members
 * its direction uses; the others stay NULL. */
struct sl_transport {
    ssize_t (*read)(const struct sl_transport *t, void *buf, size_t n);
    ssize_t (*more)(const struct sl_transport *t, void *buf, size_t n);
    /* outbound reads into several buffers at once (a socket's readv); NULL:
     * read into the first */
    ssize_t (*readv)(const struct sl_transport *t, const struct iovec *iov, int cnt);
    /* whether a read's answer r <= 0 is the clean end of the stream (NULL:
     * r == 0); keeps errno */
    bool (*ended)(const struct sl_transport *t, ssize_t r);
    /* outbound: the library's own write of plaintext, > 0 bytes taken, or
     * its own failure (<= 0, returned to the program as it is); inbound:
     * how a denial's 429 is written (never waits) */
    ssize_t (*write)(const struct sl_transport *t, const void *buf, size_t n);
    /* memory BIOs (tlsbio.h): where the next record begins in the
     * ciphertext stream; NULL: the library writes its own socket */
    uint64_t (*offset)(const struct sl_transport *t);
    int fd;
    int flags; /* MSG_DONTWAIT: the call does not block, whatever the descriptor */
    void *ctx; /* the transport's own (an SSL *, the owner of the gate) */
};

enum sl_gate_phase {
    SL_GATE_OPEN,
    SL_GATE_ENDED, /* a denied head: the program reads an end, then the 429 is written */
    SL_GATE_RESET, /* a rejected head: reads fail with ECONNRESET, the close resets */
};

struct sl_gate {
    enum sl_dir dir; /* SL_IN: reqin.c's (struct sl_reqin_conn); SL_OUT: reqout.c's */
    enum sl_gate_phase phase;
    struct sl_req_conn *conn; /* core's connection object */
    char *stash;              /* allocated at the first head held back */
    size_t stash_len;
    uint64_t (*clock)(void); /* NULL: sl_clock_now (unit tests inject theirs) */
    bool replied;            /* the 429 was written */
    size_t reply_len;
    char *reply;             /* the 429 a denial keeps (allocated then, NUL-terminated), or NULL */
    _Atomic uint32_t writer; /* the thread writing the connection's requests now (0: none):
                                sl_gate_lock */
    _Atomic unsigned copies; /* other descriptors that share this gate (dup, dup2, dup3,
                                F_DUPFD: one connection): freed with the last one */
    uint8_t answers;         /* inbound: 0 not asked yet, 1 no, 2 the program's writes are
                                its responses, read (sl_gate_answers) */
};

/* fd2 is a copy of fd (dup and its family): one connection, so one gate,
 * whose requests are counted as one stream whichever copy writes or
 * reads. */
static inline void sl_gate_share(struct sl_fd *from, struct sl_fd *to)
{
    if (!from || !to || !from->gate || to->gate) return;
    atomic_fetch_add_explicit(&from->gate->copies, 1, memory_order_relaxed);
    to->gate = from->gate;
}

/* A copy of the descriptor is going: true when others still share the gate
 * (this copy lets go of it, e->gate NULL), false for the last, which frees
 * it. */
static inline bool sl_gate_let_go(struct sl_fd *e)
{
    unsigned c = atomic_load_explicit(&e->gate->copies, memory_order_relaxed);
    while (c && !atomic_compare_exchange_weak_explicit(
                    &e->gate->copies, &c, c - 1, memory_order_acq_rel, memory_order_relaxed)) {
    }
    if (!c) return false;
    e->gate = NULL;
    return true;
}

/* Whether other descriptors share e's gate (its close is not the last). */
static inline bool sl_gate_shared(const struct sl_fd *e)
{
    return e->gate && atomic_load_explicit(&e->gate->copies, memory_order_relaxed) > 0;
}

/* What the program's call to a TLS library's error function must then say. */
enum sl_tls_how {
    SL_TLS_REAL,      /* whatever the library says: the result is its own */
    SL_TLS_WANT_READ, /* try again later (held, or a blocking wait ended) */
    SL_TLS_EOF,       /* a clean end of the stream: a denied request */
    SL_TLS_RESET,     /* a reset (reject): errno ECONNRESET */
};

/* The descriptor's gate of one direction, or NULL. */
static inline struct sl_gate *sl_gate_in(const struct sl_fd *e)
{
    return e->gate && e->gate->dir == SL_IN ? e->gate : NULL;
}

static inline struct sl_gate *sl_gate_out(const struct sl_fd *e)
{
    return e->gate && e->gate->dir == SL_OUT ? e->gate : NULL;
}

/* A denial decided v at `now` on descriptor fd (its entry e): the phase
 * ends (reply) or resets (reject), and its response is kept for the end
 * (no memory: none is written). The end is announced readable from then
 * on until the close (ready.h: sl_ready_held_read), as the kernel reports
 * a peer's end or reset for ever: an event loop that took the end-of-file
 * for "nothing more yet" and waits for the descriptor again (apache's
 * event MPM hands it to its listener's epoll set, puma to its reactor)
 * hears of it at once, and closes, which lets the 429 out. */
void sl_gate_denied(struct sl_gate *g, int fd, struct sl_fd *e, const struct sl_req_verdict *v,
                    uint64_t now);

/* Reads up to num bytes the program may have into buf through t (peek:
 * they stay): > 0, or 0 (end of stream), or -1 with errno; *how says what
 * a TLS caller reports. e: fd's entry, for the readiness layer. */
ssize_t sl_gate_read(struct sl_gate *g, struct sl_fd *e, const struct sl_transport *t, void *buf,
                     size_t num, bool peek, enum sl_tls_how *how);

/* What sl_gate_took returns when the head in buf must wait: the bytes are
 * in the stash, and sl_gate_read goes on from there. */
#define SL_GATE_MORE (-2)

/* The common read after the fact: n > 0 bytes the transport just gave into
 * buf while the stash was empty (sl_gate_read's first step, made by
 * reqin.c's fast path without building a transport). Returns how many of
 * them the program gets (the rest stashed and announced), or SL_GATE_MORE.
 * errno is kept. Inline: the read where every byte may pass (one per
 * request on a keep-alive server) makes no call of its own. */
ssize_t sl_gate_took_some(struct sl_gate *g, struct sl_fd *e, int fd, void *buf, size_t n,
                          uint64_t now, int saved);

/* The gate's clock, read once per decision. */
static inline uint64_t sl_gate_now(const struct sl_gate *g)
{
    return g->clock ? g->clock() : sl_clock_now();
}

static inline __attribute__((always_inline)) ssize_t
sl_gate_took(struct sl_gate *g, struct sl_fd *e, int fd, void *buf, size_t n)
{
    int saved = errno;
    uint64_t now = sl_gate_now(g);
    if (__builtin_expect(!sl_req_admit_all(g->conn, buf, n, now), 0))
        return sl_gate_took_some(g, e, fd, buf, n, now, saved);
    errno = saved;
    return (ssize_t)n;
}

/* Outbound, before a write of up to len bytes of buf (the program's
 * requests), under the runtime rt (core rebinds the connection to a
 * reloaded one): how many may go now (> 0), or -1 with errno (EAGAIN held,
 * EINTR, the rule's errno). One decision of core's a pass
 * (core/http/reqwrite.h): the bytes it lets go count as passed already,
 * so a caller whose write then sends fewer says so (sl_req_unwritten). A
 * write is shortened at a head that may not leave yet, except when whole
 * (a TLS library's write: the buffer waits for the last of its requests,
 * or fails with it). With *swallowed set, that many were swallowed by a
 * `reply` rule: the caller reports them written without sending them; the
 * request's 429 is queued for the program's reads once the responses owed
 * before it were read. */
ssize_t sl_gate_write(struct sl_gate *g, struct sl_fd *e, int fd, const void *buf, size_t len,
                      struct sl_runtime *rt, bool nonblock, bool whole, bool *swallowed);

/* Outbound, the program's read of responses into iov (cnt buffers, not
 * all empty) through t: the queued 429s first (*own set: the bytes are
 * sluice's, from no peer; taken unless peek), else the transport's read,
 * whose bytes, or clean end, are counted as responses (unless peek).
 * After a 429 that ends the stream was read (sl_req_replied_end), 0 with
 * *own set: sluice's end, which a TLS library must report as a clean one.
 * Returns as the transport's read. */
ssize_t sl_gate_read_replies(struct sl_gate *g, struct sl_fd *e, const struct sl_transport *t,
                             const struct iovec *iov, int cnt, bool peek, bool *own);

/* Inbound: whether the program's writes must be shown to sl_gate_wrote
 * (a `count_status` or `req_conns` rule matches the connection: the
 * statuses are counted, a request is in flight until the end of its
 * response). Asked once: the
 * answer is kept, so a connection without one pays a load per write. */
static inline bool sl_gate_answers(struct sl_gate *g)
{
    if (__builtin_expect(g->answers == 0, 0)) g->answers = sl_req_answers(g->conn) ? 2 : 1;
    return g->answers == 2;
}

/* Inbound: the program wrote these n bytes (its responses, in order; a
 * gathered write as its buffers, iov of cnt); read, never changed. iov
 * NULL: n bytes went that cannot be read (a splice from a pipe): the
 * responses are no longer counted on the connection. */
void sl_gate_wrote(struct sl_gate *g, const struct iovec *iov, int cnt, size_t n);

/* Forgets what the stash holds (a request's secrets: zeroed). */
void sl_gate_drop(struct sl_gate *g);

/* The connection ends: the stash and the 429 are freed. */
void sl_gate_end(struct sl_gate *g);

/* The program's writes of one connection's requests, one thread at a
 * time: a request is read, let go (or held) and written before another
 * thread's request on the same connection is read, so two threads
 * sharing a connection are counted exactly. Returns whether this call
 * took the lock (a signal handler's write in the thread that holds it
 * goes on without: false); the kernel serialises the writes of a stream
 * socket the same way. A lock left by a thread that is gone (its process
 * forked) is taken over. */
bool sl_gate_lock(struct sl_gate *g);
void sl_gate_unlock(struct sl_gate *g, bool taken);

#endif
