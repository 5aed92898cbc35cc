/* req.c - requests on inbound connections: see req.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../core/request.h"
#include "fd.h"
#include "ready.h"
#include "req.h"
#include "shim.h"
#include "wait.h"

/* What one peek looks at: a whole head of the largest size the scanner
 * reads, plus one byte, so a head that does not fit is known to be too
 * large (and passed through) rather than waited for. */
#define PEEK_MAX (16384 + 1)

/* How soon an incomplete head is looked at again: the rest of a head split
 * across segments is usually a round trip away. */
#define MORE_NS (2 * 1000000ull)

struct sl_req_fd {
    enum { OPEN, ENDED, RESET } phase; /* ENDED: a denied head, its 429 due at the end */
    bool replied;                      /* the 429 was written */
    size_t reply_len;
    char reply[1024];
    _Alignas(max_align_t) unsigned char conn[]; /* a struct sl_req_conn: sl_req_conn_size() */
};

#define CONN(r) ((struct sl_req_conn *)(void *)(r)->conn)

void sl_req_accept(struct sl_runtime *rt, int fd, const struct sl_addr *local,
                   const struct sl_addr *peer)
{
    if (!rt->any_req_in) return;
    int saved = errno;
    struct sl_req_fd *r = sl_alloc(sizeof *r + sl_req_conn_size());
    struct sl_fd *e;
    if (!r || !sl_req_conn_init(CONN(r), rt, SL_IN, local, peer, sl_clock_now()) ||
        !(e = sl_fd_track(fd))) {
        sl_free(r);
        errno = saved;
        return;
    }
    e->req = r;
    errno = saved;
}

/* EAGAIN until `until`: the readiness layer hides fd's reads until then. */
static ssize_t not_yet(int fd, struct sl_fd *e, uint64_t until)
{
    atomic_store(&e->ready_at[SL_IO_RECV], until);
    sl_ready_throttle(fd, SL_IO_RECV, until);
    errno = EAGAIN;
    return -1;
}

ssize_t sl_req_before_read(int fd, struct sl_fd *e, size_t len, bool nonblock)
{
    struct sl_req_fd *r = e->req;
    if (r->phase == ENDED) return 0;
    if (r->phase == RESET) return errno = ECONNRESET, -1;
    if (sl_req_done(CONN(r))) return (ssize_t)len;
    int saved = errno;
    uint64_t start = sl_clock_now();
    uint64_t deadline = nonblock ? 0 : sl_wait_deadline(fd, SO_RCVTIMEO, start);
    char buf[PEEK_MAX];
    for (;;) {
        /* the kernel's own wait for data: timeouts and signals as usual */
        ssize_t n = REAL(recv)(fd, buf, sizeof buf, MSG_PEEK | (nonblock ? MSG_DONTWAIT : 0));
        if (n <= 0) return n < 0 ? -1 : (errno = saved, 0);
        uint64_t now = sl_clock_now();
        struct sl_req_verdict v;
        size_t ok = sl_req_admit(CONN(r), buf, (size_t)n, now, &v);
        if (ok > 0) {
            atomic_store_explicit(&e->ready_at[SL_IO_RECV], 0, memory_order_relaxed);
            errno = saved;
            return (ssize_t)(ok < len ? ok : len);
        }
        uint64_t until;
        switch (v.status) {
        case SL_REQ_DENY:
            r->phase = v.action == SL_ACT_REJECT ? RESET : ENDED;
            r->reply_len = v.reply_len < sizeof r->reply ? v.reply_len : sizeof r->reply;
            memcpy(r->reply, v.reply, r->reply_len);
            if (r->phase == RESET) return errno = ECONNRESET, -1;
            errno = saved;
            return 0;
        case SL_REQ_HOLD:
            until = now + v.wait_ns;
            break;
        case SL_REQ_NEED_MORE:
            until = now + MORE_NS;
            break;
        default: /* nothing shown may pass yet nothing stopped it: cannot happen */
            errno = saved;
            return (ssize_t)len;
        }
        if (nonblock) return not_yet(fd, e, until);
        if (sl_wait_until(until, deadline) != 0) return -1; /* EINTR, or EAGAIN at SO_RCVTIMEO */
    }
}

void sl_req_after_read(struct sl_fd *e, const struct iovec *iov, int iovcnt, size_t got)
{
    struct sl_req_fd *r = e->req;
    for (int i = 0; i < iovcnt && got > 0; i++) {
        size_t n = iov[i].iov_len < got ? iov[i].iov_len : got;
        sl_req_passed(CONN(r), iov[i].iov_base, n);
        got -= n;
    }
}

static void reply(int fd, struct sl_req_fd *r)
{
    if (r->replied) return;
    r->replied = true;
    int saved = errno;
    /* after every response the program wrote: it read end-of-file first */
    ssize_t n = REAL(send)(fd, r->reply, r->reply_len, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)n;
    errno = saved;
}

void sl_req_shutdown(int fd, struct sl_fd *e)
{
    if (e->req->phase == ENDED) reply(fd, e->req);
}

bool sl_req_close(int fd, struct sl_fd *e)
{
    struct sl_req_fd *r = e->req;
    if (r->phase == RESET) { /* as an inbound reject: the client sees a reset */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        return false;
    }
    if (r->phase != ENDED) return false;
    int saved = errno;
    reply(fd, r);
    REAL(shutdown)(fd, SHUT_WR);
    errno = saved;
    return true;
}

void sl_req_free(struct sl_fd *e)
{
    struct sl_req_fd *r = e->req;
    if (!r) return;
    e->req = NULL;
    sl_req_conn_fini(CONN(r));
    sl_free(r);
}
