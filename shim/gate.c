/* SPDX-License-Identifier: BSD-2-Clause */
/* gate.c - the request gate of one descriptor: see gate.h. */
#include "gate.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/clock.h"
#include "../core/mem.h"
#include "../core/sys.h"
#include "hold.h"
#include "ready.h"

void sl_gate_denied(struct sl_gate *g, int fd, struct sl_fd *e, const struct sl_req_verdict *v,
                    uint64_t now)
{
    g->phase = v->action == SL_ACT_REJECT ? SL_GATE_RESET : SL_GATE_ENDED;
    /* memory for it only now: most connections are never denied */
    if (g->phase == SL_GATE_ENDED && !g->reply && (g->reply = sl_alloc(v->reply_len + 1))) {
        memcpy(g->reply, v->reply, v->reply_len);
        g->reply_len = v->reply_len;
    }
    /* the end (or the reset) is there to read from now on, however often
     * the program reads it, until the close forgets it (ready.h) */
    sl_ready_held_read(fd, e, now);
}

static bool stash_room(struct sl_gate *g)
{
    return g->stash || (g->stash = sl_alloc(SL_GATE_STASH_MAX)) != NULL;
}

/* Stashed bytes behind a held head: nothing to read until `until`, when
 * the readiness layer announces them (new bytes wake nobody early). */
static void due_at(int fd, struct sl_fd *e, uint64_t until)
{
    sl_ready_throttle(fd, e, SL_IO_RECV, until);
    sl_ready_held_read(fd, e, until);
}

/* Tells the readiness layer about what the stash holds after a read that
 * gave the program bytes: nothing (forget it), or the bytes after what was
 * given, due now (they may pass: `left`, or a partial head, or a denial)
 * or at a held head's turn (v: what stopped what was given). */
static void announce(struct sl_gate *g, int fd, struct sl_fd *e, const struct sl_req_verdict *v,
                     bool left, uint64_t now)
{
    if (g->stash_len == 0)
        sl_ready_held_read(fd, e, 0);
    else if (!left && v->status == SL_REQ_HOLD)
        due_at(fd, e, now + v->wait_ns);
    else
        sl_ready_held_read(fd, e, now);
}

/* Gives up to num of the ok stashed bytes that may pass (peek: copies
 * them and keeps them). */
static ssize_t give(struct sl_gate *g, int fd, struct sl_fd *e, void *buf, size_t num, size_t ok,
                    bool peek, const struct sl_req_verdict *v, uint64_t now)
{
    size_t n = ok < num ? ok : num;
    memcpy(buf, g->stash, n);
    if (peek) return (ssize_t)n;
    sl_req_passed(g->conn, g->stash, n);
    memmove(g->stash, g->stash + n, g->stash_len - n);
    g->stash_len -= n;
    announce(g, fd, e, v, ok > n, now);
    return (ssize_t)n;
}

void sl_gate_drop(struct sl_gate *g)
{
    if (g->stash) explicit_bzero(g->stash, g->stash_len);
    g->stash_len = 0;
}

void sl_gate_end(struct sl_gate *g)
{
    sl_gate_drop(g);
    sl_free(g->stash);
    g->stash = NULL;
    sl_free(g->reply);
    g->reply = NULL;
}

/* sl_gate_took's read where some bytes may not pass now (or the head is
 * not whole): what sl_req_admit says of them. */
ssize_t sl_gate_took_some(struct sl_gate *g, struct sl_fd *e, int fd, void *buf, size_t n,
                          uint64_t now, int saved)
{
    struct sl_req_verdict v;
    size_t ok = sl_req_admit(g->conn, buf, n, now, &v);
    if (ok == n || !stash_room(g)) { /* no memory: these pass as they are */
        sl_req_passed(g->conn, buf, n);
        errno = saved;
        return (ssize_t)n;
    }
    memcpy(g->stash, (char *)buf + ok, n - ok);
    g->stash_len = n - ok;
    if (ok > 0) {
        sl_req_passed(g->conn, buf, ok);
        announce(g, fd, e, &v, false, now);
        errno = saved;
        return (ssize_t)ok;
    }
    errno = saved;
    return SL_GATE_MORE;
}

ssize_t sl_gate_read(struct sl_gate *g, struct sl_fd *e, const struct sl_transport *t, void *buf,
                     size_t num, bool peek, enum sl_tls_how *how)
{
    int fd = t->fd;
    *how = SL_TLS_REAL;
    if (g->phase == SL_GATE_ENDED) return *how = SL_TLS_EOF, 0;
    if (g->phase == SL_GATE_RESET) return *how = SL_TLS_RESET, errno = ECONNRESET, -1;
    int saved = errno;
    struct sl_hold h = sl_hold_for(fd, e, SL_IO_RECV, t->flags & MSG_DONTWAIT);
    h.held_read = true; /* new bytes wake nobody early: the stash is announced at the turn */
    bool looked = peek; /* this call read the transport (a peek: just below, or not needed) */
    if (peek && g->stash_len && g->stash_len < num && stash_room(g)) {
        /* a peek shows what the kernel has too, as bare: a shorter peek
         * before stashed only its own length, and a program that peeks
         * until it sees enough would otherwise see that forever */
        size_t room = SL_GATE_STASH_MAX - g->stash_len, want = num - g->stash_len;
        ssize_t n = t->more(t, g->stash + g->stash_len, want < room ? want : room);
        if (n > 0) g->stash_len += (size_t)n;
        errno = saved;
    }
    if (g->stash_len == 0 && !peek) { /* the common read: straight into buf */
        ssize_t n = t->read(t, buf, num);
        if (n <= 0) return n;
        errno = saved;
        if ((n = sl_gate_took(g, e, fd, buf, (size_t)n)) != SL_GATE_MORE) return n;
    }
    for (;;) {
        struct sl_req_verdict v = {.status = SL_REQ_NEED_MORE};
        uint64_t now = sl_gate_now(g);
        size_t ok = g->stash_len ? sl_req_admit(g->conn, g->stash, g->stash_len, now, &v) : 0;
        if (v.status == SL_REQ_NEED_MORE && ok == 0) {
            /* an incomplete head (or nothing yet): what the transport has */
            if (!stash_room(g)) return t->read(t, buf, num); /* no memory: unscanned */
            size_t room = SL_GATE_STASH_MAX - g->stash_len;
            ssize_t n = room == 0      ? 0 /* cannot happen: heads over 16 KiB pass */
                        : g->stash_len ? t->more(t, g->stash + g->stash_len, room)
                                       : t->read(t, g->stash, num < room ? num : room);
            looked = true;
            if (n > 0) {
                g->stash_len += (size_t)n;
                continue;
            }
            if (g->stash_len == 0) return n; /* the transport's own answer: wait, end, error */
            /* nothing more now: the partial head goes to the program (the
             * transport's answer, if it was an end or an error, comes again
             * at the next read) */
            errno = saved;
            return give(g, fd, e, buf, num, g->stash_len, peek, &v, now);
        }
        if (ok > 0 && !looked && ok == g->stash_len && ok < num) {
            /* the stash alone would make a short read, which an
             * edge-triggered program takes for "drained": bytes that came
             * into the transport meanwhile, their edge already reported
             * (or merged with the stash's announcement), would never be
             * read (issue 21). So the read goes on with what the
             * transport has now, up to what the program asked, as bare. */
            size_t room = SL_GATE_STASH_MAX - g->stash_len, want = num - ok;
            ssize_t n = room ? t->more(t, g->stash + g->stash_len, want < room ? want : room) : 0;
            looked = true;
            if (n > 0) {
                g->stash_len += (size_t)n;
                continue;
            }
        }
        if (ok > 0) {
            errno = saved;
            return give(g, fd, e, buf, num, ok, peek, &v, now);
        }
        if (v.status == SL_REQ_DENY) {
            sl_gate_denied(g, fd, e, &v, now);
            sl_gate_drop(g);
            if (g->phase == SL_GATE_RESET) return *how = SL_TLS_RESET, errno = ECONNRESET, -1;
            errno = saved;
            return *how = SL_TLS_EOF, 0;
        }
        if (v.status != SL_REQ_HOLD) { /* nothing may pass yet nothing stopped it: cannot happen */
            errno = saved;
            return give(g, fd, e, buf, num, g->stash_len, peek, &v, now);
        }
        if (sl_hold_until(&h, now, now + v.wait_ns) != 0) return *how = SL_TLS_WANT_READ, -1;
    }
}

/* ---- outbound: the program's requests, and the 429s it reads ---- */

/* How long a request that `reply` swallows waits for the responses before
 * it (a pipelining client): a blocking write asks again every ms up to
 * REPLY_WAIT_NS, then fails with the rule's errno (a client that writes
 * and reads on one thread would otherwise wait for ever); a non-blocking
 * one gets EAGAIN and is reported writable again REPLY_POLL_NS later.
 * When the responses cannot be counted any more (sl_req_swallow_lost) the
 * turn never comes: the write fails at once, like reject. */
#define REPLY_POLL_NS (SL_NS_PER_SEC / 100)
#define REPLY_STEP_NS (SL_NS_PER_SEC / 1000)
#define REPLY_WAIT_NS SL_NS_PER_SEC

ssize_t sl_gate_write(struct sl_gate *g, struct sl_fd *e, int fd, const void *buf, size_t len,
                      struct sl_runtime *rt, bool nonblock, bool whole, bool *swallowed)
{
    int saved = errno;
    struct sl_hold h = sl_hold_for(fd, e, SL_IO_SEND, nonblock);
    *swallowed = false;
    for (uint64_t now = sl_gate_now(g), start = now;; now = sl_gate_now(g)) {
        struct sl_req_write w; /* one clock read a pass: the decision and what follows it */
        sl_req_write(g->conn, rt, buf, len, now, whole ? SL_REQ_WRITE_WHOLE : 0, &w);
        if (w.what == SL_REQ_WRITE || w.what == SL_REQ_SKIP) {
            if (w.announce) sl_ready_held(fd, e, now); /* a 429 to read */
            if (w.n == len || w.what == SL_REQ_SKIP)
                atomic_store_explicit(&e->ready_at[SL_IO_SEND], 0, memory_order_relaxed);
            *swallowed = w.what == SL_REQ_SKIP;
            errno = saved;
            return (ssize_t)w.n;
        }
        if (w.what == SL_REQ_FAIL) {
            errno = w.err;
            return -1;
        }
        uint64_t until = now + w.wait_ns; /* a head's turn */
        if (w.err) { /* a swallowed request's 429 waits for the answers before it */
            if (!sl_hold_nonblocking(&h) && now - start >= REPLY_WAIT_NS) {
                errno = w.err;
                return -1;
            }
            until = now + (h.nonblock ? REPLY_POLL_NS : REPLY_STEP_NS);
        }
        if (sl_hold_until(&h, now, until) != 0) return -1;
    }
}

/* Copies the queued 429s into iov (taken unless peek): the bytes copied. */
static size_t inject(struct sl_gate *g, struct sl_fd *e, int fd, const struct iovec *iov, int cnt,
                     bool peek)
{
    const char *p;
    size_t q = sl_req_inject_peek(g->conn, &p), n = 0;
    for (int i = 0; i < cnt && n < q; i++) {
        size_t k = iov[i].iov_len < q - n ? iov[i].iov_len : q - n;
        memcpy(iov[i].iov_base, p + n, k);
        n += k;
    }
    if (n > 0 && !peek) {
        sl_req_inject_take(g->conn, n);
        /* none left: nothing to announce; some: announced again (epoll
         * hears of held bytes once per call, a partial read needs another) */
        bool more = sl_req_inject_peek(g->conn, &p) || sl_req_replied_end(g->conn);
        sl_ready_held(fd, e, more ? sl_gate_now(g) : 0);
    }
    return n;
}

ssize_t sl_gate_read_replies(struct sl_gate *g, struct sl_fd *e, const struct sl_transport *t,
                             const struct iovec *iov, int cnt, bool peek, bool *own)
{
    size_t q = inject(g, e, t->fd, iov, cnt, peek);
    if ((*own = q > 0)) return (ssize_t)q;
    if ((*own = sl_req_replied_end(g->conn))) return 0; /* the end after a closing 429 */
    ssize_t r = t->readv ? t->readv(t, iov, cnt) : t->read(t, iov[0].iov_base, iov[0].iov_len);
    if (peek) return r;
    int saved = errno;
    if (r > 0) { /* the bytes fill the buffers in order */
        size_t left = (size_t)r;
        for (int i = 0; i < cnt && left > 0; i++) {
            size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;
            sl_req_responses(g->conn, iov[i].iov_base, k);
            left -= k;
        }
    } else if (t->ended ? t->ended(t, r) : r == 0) {
        sl_req_responses(g->conn, NULL, 0); /* the server closed */
    }
    errno = saved;
    return r;
}

/* ---- inbound: the program's responses (count_status, req_conns) ---- */

void sl_gate_wrote(struct sl_gate *g, const struct iovec *iov, int cnt, size_t n)
{
    int saved = errno;
    uint64_t now = sl_gate_now(g);
    if (!iov) sl_req_responses_unread(g->conn);
    for (int i = 0; iov && i < cnt && n > 0; i++) {
        size_t k = iov[i].iov_len < n ? iov[i].iov_len : n;
        if (k) sl_req_responses_at(g->conn, iov[i].iov_base, k, now);
        n -= k;
    }
    errno = saved;
}

/* Whether thread `tid` is one of this process's (tgkill with signal 0
 * tests it): a lock held by a thread that is not (a fork copied the lock
 * but not its holder) is free. */
static bool ours(uint32_t tid)
{
    return sl_syscall(SYS_tgkill, getpid(), (long)tid, 0) == 0 || errno != ESRCH;
}

bool sl_gate_lock(struct sl_gate *g)
{
    uint32_t me = (uint32_t)sl_syscall(SYS_gettid), held = 0;
    int saved = errno;
    while (!atomic_compare_exchange_strong(&g->writer, &held, me)) {
        if (held == me) { /* a signal handler writing in the holder's thread */
            errno = saved;
            return false;
        }
        if (!ours(held)) continue; /* CAS again from the stale holder */
        /* sleeps while the holder holds it; 100 ms at most, then looks again */
        struct timespec ts = {0, 100000000};
        sl_syscall(SYS_futex, &g->writer, FUTEX_WAIT_PRIVATE, held, &ts);
        held = 0;
    }
    errno = saved;
    return true;
}

void sl_gate_unlock(struct sl_gate *g, bool taken)
{
    if (!taken) return;
    int saved = errno;
    atomic_store(&g->writer, 0);
    sl_syscall(SYS_futex, &g->writer, FUTEX_WAKE_PRIVATE, 1);
    errno = saved;
}
