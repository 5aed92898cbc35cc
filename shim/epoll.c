/* SPDX-License-Identifier: BSD-2-Clause */
/* epoll.c - epoll that does not report a throttled descriptor, and gives
 * an edge-triggered one its edge back when the budget refills.
 *
 * The kernel keeps registrations across calls, so we keep their shadow:
 * epoll_ctl records, per (epfd, fd), the events and data the program asked
 * for (core/limit/readiness.c has the table and the rules). Then:
 *   - throttle (sl_ready_throttle, from the I/O hooks): every registration
 *     of fd gets EPOLL_CTL_MOD with the program's events minus the
 *     throttled direction, and goes on the restore list;
 *   - a held-back non-blocking connect: its registrations leave the kernel
 *     (DEL; an unconnected socket reports EPOLLHUP whatever it is asked)
 *     and come back with ADD once the wait wrapper has made the connect;
 *   - epoll_wait/epoll_pwait/epoll_pwait2: first restore the registrations
 *     of this epfd whose time has come (MOD with the program's events,
 *     which re-evaluates readiness: a new edge if data is waiting), cut the
 *     timeout to the earliest refill still pending, and when the call
 *     comes back empty before the program's timeout, do it all again with
 *     the time left;
 *   - the program's own ADD/MOD of a throttled descriptor is masked the
 *     same way (its events are remembered); DEL and close drop the shadow;
 *   - bytes sluice holds (ready.h: sl_ready_held) are added as EPOLLIN to
 *     the next wait on a set that registered the descriptor (EPOLLONESHOT:
 *     once per arming), and a thread already blocked on such a set is
 *     woken through the set's waker, an eventfd of ours (see wakers).
 * A restore MOD that gets ENOENT (the program closed an untracked fd, which
 * the kernel forgot silently) drops the stale shadow.
 *
 * Another thread. When one thread throttles a descriptor while another is
 * already blocked in epoll_wait on it with a longer timeout, nobody would
 * restore it in time. Waiters therefore say how long they will sleep, and
 * in that case a helper thread (started on first need, all signals blocked,
 * restarted lazily after fork) sleeps until the refill and does the
 * restore; the MOD itself wakes the waiter with the real event. A
 * single-threaded event loop never starts it.
 *
 * Locking: one mutex around the table and the kernel operations that keep
 * it true (epoll_ctl does not sleep); never held while waiting, never held
 * while a connect is made (fd.c may call back into ready.h). pthread_atfork
 * takes it around fork, so a child never inherits it held.
 *
 * fork: epoll instances and their registrations live in the kernel and are
 * shared with the child, so the child keeps the shadow and the restore
 * list: if it dropped them, a registration the parent masked would never be
 * restored by whichever process waits on it. Both may restore the same
 * registration: a MOD with the same events is harmless (at worst one extra
 * edge). The child forgets waiters (its threads are gone) and the helper.
 *
 * Nothing held, nothing throttled: no lock. A wait on a set while nothing
 * is listed or held goes straight to the kernel; a thread that may block
 * says so with one atomic add on the set's slot (slots below), which the
 * throttle and held paths read after publishing their hint (both sides
 * sequentially consistent: one of them sees the other). When a throttle
 * meets such a waiter the helper restores that set. Without outbound
 * rules, a descriptor sluice does not track (no rule matched its accept)
 * never can be throttled or held, so its epoll_ctl is not shadowed; and
 * close takes the lock only for a descriptor whose slot says it was ever
 * in a shadowed set, held, a waker or a set.
 *
 * errno: epoll_ctl and the waits return exactly what the kernel said;
 * our own bookkeeping failures (out of memory) fall back to passing the
 * program's request through unmasked.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../core/clock.h"
#include "../core/mem.h"
#include "epoll.h"
#include "ready_query.h"
#include "shim.h"
#include "wait.h"

#define DUE_MAX 64 /* registrations restored per pass (more: another pass at once) */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_cond_t helper_cond;
static bool helper_running;    /* under lock */
static struct sl_rd_table tab; /* under lock */
/* Copies of tab.n and tab.nlist, written under lock, read without it to
 * skip the lock when there is nothing to do (a stale read costs one call
 * its virtualisation, never correctness of the table). */
static _Atomic uint32_t nregs_hint, nlist_hint;
/* Descriptors whose held bytes (ready.h: sl_ready_held) are to be reported
 * as EPOLLIN from `at` on until they are read (under lock; nheld_hint as
 * the hints above), as the kernel reports bytes it holds: to a
 * level-triggered registration at every wait, to an edge-triggered one
 * once per announcement (seq) and again after the program's ADD or MOD,
 * to an EPOLLONESHOT one once per arming. Grown as needed: one that could
 * not be recorded (no memory) would be a connection that stalls. */
struct held {
    int fd;
    uint64_t at;
    uint32_t seq; /* this announcement's number (held_seq), never 0 */
    bool woken;   /* a thread blocked in a wait was woken for it (wakers below) */
};
static struct held *held;
static uint32_t nheld, capheld, held_seq;

/* The next announcement's number (under lock): never 0, which a
 * registration's held_seen keeps for "none since its ADD or MOD". */
static uint32_t next_seq(void)
{
    return ++held_seq ? held_seq : ++held_seq;
}

/* Whether registration r (of held entry h's descriptor, NULL: none on
 * that set) is to hear of h at or after its time: it asks for EPOLLIN
 * and has not had this announcement as an edge, or as its one shot
 * (under lock). */
static bool held_owed(const struct sl_rd_reg *r, const struct held *h)
{
    if (!r || !(r->events & EPOLLIN)) return false;
    if ((r->events & EPOLLONESHOT) && !r->armed) return false;
    return !(r->events & EPOLLET) || r->held_seen != h->seq;
}

/* Wakers: an eventfd added to each epoll set that a thread waits on with
 * a timeout, so that bytes sluice makes readable while that thread is
 * already blocked (another thread's read left them, or a held head's turn
 * came) wake it, as the kernel would for bytes it received. Its event
 * carries WAKE_DATA, which the wait wrapper takes out of what the program
 * sees (an odd value near 2^64: no pointer, no descriptor number, which is
 * what programs put in epoll_data); closed with its epoll set. Under
 * lock; nwake_hint as the hints above. */
#define WAKE_DATA 0xfffffffe5c1cc0d1ull
struct waker {
    int epfd, efd;
};
static struct waker *wakers;
static uint32_t nwake, capwake;
static _Atomic uint32_t nwake_hint;
static _Atomic uint32_t nheld_hint;

/* Per descriptor number, read without the lock. `waiting`: threads in
 * the lock-free wait on this epoll set that may block. `waker`: the set
 * has a waker (the lock-free wait needs one when sluice may hold bytes).
 * And sl_ready_maybe (ready.h): the descriptor may be in the shadow (a
 * registration, a set, a waker, held bytes): set under lock before it is,
 * cleared by sl_epoll_forget. Descriptors >= SL_FD_MAX always take the
 * lock. */
struct slot {
    _Atomic uint32_t waiting;
    _Atomic uint8_t waker;
};
static struct slot slots[SL_FD_MAX];
_Atomic uint8_t sl_ready_maybe[SL_FD_MAX];

/* epoll.h: once set, plain() no longer sends a wait straight to the
 * kernel, so that every wait that may block is counted in its set's slot
 * (fast(), or wait_events) and its set has a waker: bytes held later wake
 * it, whichever thread announces them or adds the descriptor to the set
 * (apache's event MPM: a worker reads a denial's end of file, then adds
 * the connection to the set its listener thread is blocked on). Set at
 * the first request connection (reqin.c) and at the first announcement;
 * a wait already in the kernel then is not counted (ready.h). */
_Atomic uint8_t sl_epoll_counted;

void sl_epoll_count_waits(void)
{
    atomic_store(&sl_epoll_counted, 1);
}

static void mark(int fd)
{
    if ((unsigned)fd < SL_FD_MAX)
        atomic_store_explicit(&sl_ready_maybe[fd], 1, memory_order_relaxed);
}

/* Someone waits on epfd now: in the table, or in the lock-free wait. */
static bool waited(int epfd, const struct sl_rd_ep *e)
{
    return (e && e->waiters) ||
           ((unsigned)epfd < SL_FD_MAX && atomic_load(&slots[epfd].waiting)); /* seq_cst */
}

static void prefork(void)
{
    pthread_mutex_lock(&lock);
}

static void postfork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

static void postfork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    sl_epoll_after_fork_child();
}

static void setup(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&helper_cond, &a);
    pthread_condattr_destroy(&a);
    pthread_atfork(prefork, postfork_parent, postfork_child);
}

static void take(void)
{
    pthread_once(&once, setup);
    pthread_mutex_lock(&lock);
}

static void give(void)
{
    atomic_store_explicit(&nheld_hint, nheld, memory_order_relaxed);
    atomic_store_explicit(&nwake_hint, nwake, memory_order_relaxed);
    atomic_store_explicit(&nregs_hint, tab.n, memory_order_relaxed);
    atomic_store_explicit(&nlist_hint, tab.nlist, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
}

static bool active(void)
{
    struct sl_runtime *rt = sl_runtime_now();
    return rt && (rt->any_bytes || rt->any_out);
}

/* ---- bringing the kernel in line (under lock) ---- */

static int kernel(const struct sl_rd_reg *r, enum sl_rd_op op, uint32_t ev)
{
    struct epoll_event e = {.events = ev, .data.u64 = r->data};
    int kop = op == SL_RD_MOD ? EPOLL_CTL_MOD : op == SL_RD_ADD ? EPOLL_CTL_ADD : EPOLL_CTL_DEL;
    int rc = REAL(epoll_ctl)(r->epfd, kop, r->fd, &e);
    if (rc < 0 && kop == EPOLL_CTL_ADD && errno == EEXIST)
        rc = REAL(epoll_ctl)(r->epfd, EPOLL_CTL_MOD, r->fd, &e);
    return rc;
}

static void helper_kick(void);

/* Makes r match `thr`; may remove r (stale). Returns whether it is listed. */
static bool bring(struct sl_rd_reg *r, unsigned thr, enum sl_rd_why why, uint64_t wake)
{
    uint32_t ev;
    enum sl_rd_op op = sl_rd_plan(r, thr, why, &ev);
    if (op != SL_RD_KEEP && kernel(r, op, ev) != 0) {
        if (errno == ENOENT || errno == EBADF)
            sl_rd_remove(&tab, r->epfd, r->fd); /* stale: the kernel forgot it */
        else
            sl_rd_unlist(&tab, r); /* cannot be brought in line: stop trying */
        return false;
    }
    return sl_rd_done(&tab, r, op, ev, wake);
}

/* A registration of ep went on the list until `wake`: if a thread already
 * waits on ep for longer than that, the helper must step in. */
static void maybe_kick(int epfd, uint64_t wake)
{
    /* published before the lock-free waiters are read (see `slots`) */
    atomic_store(&nlist_hint, tab.nlist);
    struct sl_rd_ep *e = sl_rd_ep(&tab, epfd, false);
    if ((e && e->waiters && wake < e->wait_until) ||
        ((unsigned)epfd < SL_FD_MAX && atomic_load(&slots[epfd].waiting)))
        helper_kick(); /* a lock-free waiter's timeout is unknown: the helper steps in */
}

/* Restores the due registrations of epfd (< 0: of every epfd with a
 * waiter); returns the earliest time one of them is due. Takes the lock
 * itself and drops it around the connects it makes. */
static uint64_t restore(int epfd, uint64_t now, bool locked)
{
    int32_t eps[DUE_MAX], fds[DUE_MAX];
    unsigned st[DUE_MAX];
    uint64_t wk[DUE_MAX], next = SL_RD_FOREVER;
    if (!locked) take();
    size_t n = sl_rd_due(&tab, epfd, now, eps, fds, DUE_MAX, &next);
    if (n) {
        give();
        for (size_t i = 0; i < n; i++) {
            wk[i] = SL_RD_FOREVER;
            sl_ready_step(fds[i], now);
            st[i] = sl_ready_state(fds[i], now, &wk[i]);
        }
        take();
        for (size_t i = 0; i < n; i++) {
            struct sl_rd_reg *r = sl_rd_find(&tab, eps[i], fds[i]);
            if (r && r->listed && bring(r, st[i], SL_RD_RESTORE, wk[i]) && wk[i] < next)
                next = wk[i] > now ? wk[i] : now;
        }
        if (n == DUE_MAX) next = now; /* more may be due: another pass at once */
    }
    if (!locked) give();
    return next;
}

/* ---- wakers ---- */

static struct waker *waker_find(int epfd)
{
    for (uint32_t i = 0; i < nwake; i++)
        if (wakers[i].epfd == epfd) return &wakers[i];
    return NULL;
}

/* epfd's waker, made on first need (under lock); NULL when it cannot be. */
static struct waker *waker_get(int epfd)
{
    struct waker *w = waker_find(epfd);
    if (w) return w;
    if (nwake == capwake) {
        uint32_t cap = capwake ? 2 * capwake : 8;
        struct waker *g = sl_realloc(wakers, cap * sizeof *g);
        if (!g) return NULL;
        wakers = g;
        capwake = cap;
    }
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd < 0) return NULL;
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = WAKE_DATA};
    if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, efd, &e) != 0) {
        REAL(close)(efd);
        return NULL;
    }
    wakers[nwake] = (struct waker){.epfd = epfd, .efd = efd};
    mark(epfd);
    mark(efd);
    if ((unsigned)epfd < SL_FD_MAX) atomic_store(&slots[epfd].waker, 1);
    return &wakers[nwake++];
}

/* fd is closed: an epoll set closes its waker; a waker the program closed
 * itself (closing every descriptor, as daemons do) is forgotten, so its
 * number, reused, is never written to (under lock). */
static void waker_forget(int fd)
{
    for (uint32_t i = 0; i < nwake; i++)
        if (wakers[i].epfd == fd || wakers[i].efd == fd) {
            if (wakers[i].epfd == fd) REAL(close)(wakers[i].efd);
            if ((unsigned)wakers[i].epfd < SL_FD_MAX) atomic_store(&slots[wakers[i].epfd].waker, 0);
            wakers[i] = wakers[--nwake];
            return;
        }
}

/* Wakes the threads blocked on an epoll set that holds a readable
 * registration of a held descriptor due by `now`, once per announcement;
 * returns the earliest later announcement such a thread waits for (under
 * lock). */
static uint64_t held_wake(uint64_t now)
{
    uint64_t next = SL_RD_FOREVER;
    for (uint32_t i = 0; i < nheld; i++) {
        if (held[i].woken) continue;
        for (uint32_t j = 0; j < nwake; j++) {
            struct sl_rd_ep *ep = sl_rd_ep(&tab, wakers[j].epfd, false);
            struct sl_rd_reg *r = sl_rd_find(&tab, wakers[j].epfd, held[i].fd);
            if (!waited(wakers[j].epfd, ep) || !held_owed(r, &held[i])) continue;
            if (held[i].at > now) {
                if (held[i].at < next) next = held[i].at;
                continue;
            }
            uint64_t one = 1;
            ssize_t n = REAL(write)(wakers[j].efd, &one, sizeof one);
            (void)n; /* a full counter already wakes */
            held[i].woken = true;
        }
    }
    return next;
}

/* Takes the wakers' events out of the n the kernel gave for epfd. */
static int wake_filter(int epfd, struct epoll_event *evs, int n)
{
    for (int k = 0; k < n;) {
        if (evs[k].data.u64 != WAKE_DATA) {
            k++;
            continue;
        }
        take();
        struct waker *w = waker_find(epfd);
        if (w) {
            uint64_t v;
            ssize_t got = REAL(read)(w->efd, &v, sizeof v);
            (void)got;
        }
        give();
        evs[k] = evs[--n];
    }
    return n;
}

/* ---- the helper thread ---- */

static void *helper(void *arg)
{
    (void)arg;
    sl_guard = 1; /* its own calls (connect in fd.c) go straight to libc */
    take();
    for (;;) {
        uint64_t now = sl_clock_now();
        uint64_t next = restore(-1, now, true);
        for (uint32_t i = 0; i < tab.nep; i++) { /* restore() may drop the lock: re-read nep */
            int epfd = tab.ep[i].epfd;
            if ((unsigned)epfd < SL_FD_MAX && atomic_load(&slots[epfd].waiting)) {
                uint64_t n = restore(epfd, now, true);
                if (n < next) next = n;
            }
        }
        uint64_t h = nwake ? held_wake(now) : SL_RD_FOREVER;
        if (h < next) next = h;
        if (next == SL_RD_FOREVER) {
            pthread_cond_wait(&helper_cond, &lock);
        } else if (next > now) {
            struct timespec ts = sl_ns_to_timespec(next);
            pthread_cond_timedwait(&helper_cond, &lock, &ts);
        }
        atomic_store_explicit(&nregs_hint, tab.n, memory_order_relaxed);
        atomic_store_explicit(&nlist_hint, tab.nlist, memory_order_relaxed);
    }
    return NULL;
}

/* Under lock. */
static void helper_kick(void)
{
    if (helper_running) {
        pthread_cond_signal(&helper_cond);
        return;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_t t;
    helper_running = pthread_create(&t, &a, helper, NULL) == 0;
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- ready.h's part ---- */

/* Under lock. */
static void held_drop(uint32_t i)
{
    held[i] = held[--nheld];
}

void sl_epoll_throttle(int fd, uint64_t now)
{
    if (!atomic_load_explicit(&nregs_hint, memory_order_relaxed)) return;
    uint64_t wake = SL_RD_FOREVER;
    unsigned thr = sl_ready_state(fd, now, &wake);
    if (!thr) return;
    take();
    for (uint32_t i = tab.nep; i-- > 0;) {
        if (i >= tab.nep) continue; /* a stale removal shrank the array */
        int epfd = tab.ep[i].epfd;
        struct sl_rd_reg *r = sl_rd_find(&tab, epfd, fd);
        if (r && bring(r, thr, SL_RD_THROTTLE, wake)) maybe_kick(epfd, wake);
    }
    give();
}

void sl_epoll_forget(int fd)
{
    if ((unsigned)fd < SL_FD_MAX &&
        !atomic_load_explicit(&sl_ready_maybe[fd], memory_order_relaxed))
        return; /* never in the shadow: no lock (close of a file, of an untracked socket) */
    if (!atomic_load_explicit(&nregs_hint, memory_order_relaxed) &&
        !atomic_load_explicit(&nwake_hint, memory_order_relaxed))
        return;
    int saved = errno;
    take();
    waker_forget(fd);
    sl_rd_remove_fd(&tab, fd);
    for (uint32_t i = 0; i < nheld;)
        if (held[i].fd == fd)
            held_drop(i);
        else
            i++;
    if ((unsigned)fd < SL_FD_MAX)
        atomic_store_explicit(&sl_ready_maybe[fd], 0, memory_order_relaxed);
    give();
    errno = saved;
}

/* A read of fd left bytes to announce: for an EPOLLONESHOT registration
 * that read means its event fired, and the announcement waits for the
 * program's re-arm (under lock). */
static void held_disarm(int fd)
{
    for (uint32_t i = 0; i < tab.nep; i++) {
        struct sl_rd_reg *r = sl_rd_find(&tab, tab.ep[i].epfd, fd);
        if (r && (r->events & EPOLLONESHOT)) r->armed = false;
    }
}

void sl_epoll_held(int fd, uint64_t at, bool read)
{
    if (!at && !atomic_load_explicit(&nheld_hint, memory_order_relaxed)) return;
    if (at && !atomic_load_explicit(&sl_epoll_counted, memory_order_relaxed))
        sl_epoll_count_waits();
    take();
    uint32_t i = 0;
    while (i < nheld && held[i].fd != fd)
        i++;
    if (at && read) held_disarm(fd);
    if (!at) {
        if (i < nheld) held_drop(i);
    } else if (i < nheld) {
        held[i].at = at;
        held[i].seq = next_seq();
        held[i].woken = false;
    } else {
        if (nheld == capheld) {
            uint32_t cap = capheld ? 2 * capheld : 64;
            struct held *h = sl_realloc(held, cap * sizeof *h);
            if (h) {
                held = h;
                capheld = cap;
            }
        }
        if (nheld < capheld) {
            mark(fd);
            held[nheld++] = (struct held){.fd = fd, .at = at, .seq = next_seq()};
        }
    }
    /* published before the lock-free waiters are read (see `slots`) */
    atomic_store(&nheld_hint, nheld);
    if (at && nwake && held_wake(sl_clock_now()) != SL_RD_FOREVER)
        helper_kick(); /* a blocked thread waits for a later turn: the helper wakes it */
    give();
}

/* The earliest time a held descriptor registered on epfd for reading is
 * to be announced (under lock). */
static uint64_t held_next(int epfd)
{
    uint64_t next = SL_RD_FOREVER;
    for (uint32_t i = 0; i < nheld; i++)
        if (held[i].at < next && held_owed(sl_rd_find(&tab, epfd, held[i].fd), &held[i]))
            next = held[i].at;
    return next;
}

/* Adds the due announcements of epfd to the n events the kernel gave;
 * they stay until the bytes are read (sl_epoll_held with 0, or close).
 * EPOLLONESHOT: one event per arming, as the kernel would; an
 * announcement made for it disarms the kernel's registration too, so the
 * kernel does not report the descriptor to another thread as well. */
static int held_report(int epfd, struct epoll_event *evs, int n, int max, uint64_t now)
{
    take();
    for (uint32_t i = 0; i < nheld; i++) {
        struct sl_rd_reg *r = sl_rd_find(&tab, epfd, held[i].fd);
        if (!r || !(r->events & EPOLLIN) || held[i].at > now) continue;
        int k = 0;
        while (k < n && evs[k].data.u64 != r->data)
            k++;
        bool oneshot = (r->events & EPOLLONESHOT) != 0;
        /* fired (not re-armed yet), or an edge already given: later; an
         * event the kernel gives it now carries the bytes all the same */
        if (k == n && !held_owed(r, &held[i])) continue;
        if (k == n && n == max) break; /* no room: the next call */
        if (k == n) evs[n++] = (struct epoll_event){.events = 0, .data.u64 = r->data};
        evs[k].events |= EPOLLIN;
        if (oneshot && r->armed && !r->parked) {
            struct epoll_event off = {.events = EPOLLONESHOT, .data.u64 = r->data};
            REAL(epoll_ctl)(epfd, EPOLL_CTL_MOD, r->fd, &off); /* the kernel's arming is used up */
        }
        r->armed = false;
        r->held_seen = held[i].seq;
    }
    give();
    return n;
}

void sl_epoll_after_fork_child(void)
{
    /* Single-threaded here, and the lock may still be held by prefork: no locking. */
    helper_running = false;
    for (uint32_t i = 0; i < tab.nep; i++) {
        tab.ep[i].waiters = 0;
        tab.ep[i].wait_until = 0;
        if ((unsigned)tab.ep[i].epfd < SL_FD_MAX) atomic_store(&slots[tab.ep[i].epfd].waiting, 0);
    }
}

/* ---- the hooks ---- */

/* Each hook's slow half is a function of its own, so that the fast half
 * (nothing to shadow) needs no stack frame. */
#define SLOW_HALF __attribute__((noinline))

/* fd can never be throttled or held, and is in no shadow: without
 * outbound rules only an accept that a rule matched makes a descriptor
 * tracked, before the program sees it (an outbound rule may track a
 * socket the program registered before its connect). */
static inline bool unshadowed(const struct sl_runtime *rt, int fd)
{
    return !rt->any_out && (unsigned)fd < SL_FD_MAX && !sl_fd_get(fd) &&
           !atomic_load_explicit(&sl_ready_maybe[fd], memory_order_relaxed);
}

/* No shadow for fd: as unshadowed, read without the guard (the slow half
 * looks at it), inline, so that it costs a few loads and no stack frame. */
static inline bool ctl_plain(int fd)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_acquire);
    return !rt || !(rt->any_bytes || rt->any_out) || unshadowed(rt, fd);
}

static SLOW_HALF int epoll_ctl_slow(int epfd, int op, int fd, struct epoll_event *event)
{
    if (!active() || (op != EPOLL_CTL_DEL && !event) ||
        (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL) ||
        unshadowed(sl_runtime_now(), fd))
        return REAL(epoll_ctl)(epfd, op, fd, event);

    int saved = errno, rc = 0, err = saved;
    uint64_t now = sl_clock_now(), wake = SL_RD_FOREVER;
    unsigned thr = op == EPOLL_CTL_DEL ? 0 : sl_ready_state(fd, now, &wake);
    take();
    struct sl_rd_reg *r = sl_rd_find(&tab, epfd, fd);
    if (op == EPOLL_CTL_DEL) {
        if (!r || !r->parked) {
            errno = saved;
            rc = REAL(epoll_ctl)(epfd, op, fd, event);
            err = errno;
        }
        if (r) sl_rd_remove(&tab, epfd, fd);
    } else if (r && r->parked) {
        /* not in the kernel: the program's view is ours to keep */
        if (op == EPOLL_CTL_ADD) {
            rc = -1;
            err = EEXIST;
        } else {
            r->events = event->events;
            r->data = event->data.u64;
            r->armed = true;
            if (bring(r, thr, SL_RD_PROGRAM, wake)) maybe_kick(epfd, wake);
        }
    } else {
        struct sl_rd_reg want = {.epfd = epfd,
                                 .fd = fd,
                                 .events = event->events,
                                 .data = event->data.u64,
                                 .applied = r ? r->applied : 0};
        uint32_t ev = event->events;
        enum sl_rd_op kop = SL_RD_MOD;
        if (thr) kop = sl_rd_plan(&want, thr, SL_RD_PROGRAM, &ev);
        if (kop == SL_RD_DEL && op == EPOLL_CTL_MOD) {
            errno = saved; /* a held-back connect registered before connect(): leave the kernel */
            rc = REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, fd, NULL);
            err = errno;
        } else if (kop != SL_RD_DEL) {
            struct epoll_event e = {.events = ev, .data = event->data};
            errno = saved;
            rc = REAL(epoll_ctl)(epfd, op, fd, &e);
            err = errno;
        }
        if (rc == 0 && (r = sl_rd_insert(&tab, epfd, fd)) != NULL) {
            mark(fd);
            mark(epfd);
            r->events = want.events;
            r->data = want.data;
            r->applied = ev;
            r->parked = kop == SL_RD_DEL;
            r->armed = true;
            if (sl_rd_done(&tab, r, SL_RD_KEEP, ev, wake)) maybe_kick(epfd, wake);
        } else if (rc == 0 && ev != event->events) {
            /* no memory to remember it: hand the program's request over as it was */
            struct epoll_event e = *event;
            REAL(epoll_ctl)(epfd, kop == SL_RD_DEL ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &e);
        } else if (rc < 0 && err == ENOENT && r) {
            sl_rd_remove(&tab, epfd, fd);
        }
    }
    if (rc == 0 && op != EPOLL_CTL_DEL && nheld) {
        /* the kernel looks at an ADD or MOD afresh: bytes sluice still
         * holds are owed to it again (an edge-triggered or re-armed
         * registration, another thread blocked on the set) */
        if ((r = sl_rd_find(&tab, epfd, fd)) != NULL) r->held_seen = 0;
        for (uint32_t i = 0; i < nheld; i++)
            if (held[i].fd == fd) held[i].woken = false;
        if (nwake) held_wake(now);
    }
    give();
    errno = rc == 0 ? saved : err;
    return rc;
}

SL_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
    if (__builtin_expect(ctl_plain(fd) && sl_real.epoll_ctl != NULL, 1))
        return sl_real.epoll_ctl(epfd, op, fd, event);
    return epoll_ctl_slow(epfd, op, fd, event);
}

enum kind { K_WAIT, K_PWAIT, K_PWAIT2 };

static int call(enum kind k, int epfd, struct epoll_event *evs, int max, uint64_t wait_ns,
                const sigset_t *sigmask)
{
    if (k == K_WAIT) return REAL(epoll_wait)(epfd, evs, max, sl_rd_ms(wait_ns));
    if (k == K_PWAIT) return REAL(epoll_pwait)(epfd, evs, max, sl_rd_ms(wait_ns), sigmask);
    struct timespec ts = sl_ns_to_timespec(wait_ns);
    return REAL(epoll_pwait2)(epfd, evs, max, wait_ns == SL_RD_FOREVER ? NULL : &ts, sigmask);
}

/* This thread starts (delta 1), goes on (0) or stops (-1) waiting on epfd;
 * `until` is when it will look again (SL_RD_FOREVER: not before an event). */
static void waiter(int epfd, int delta, uint64_t until)
{
    take();
    struct sl_rd_ep *e = sl_rd_ep(&tab, epfd, delta > 0);
    if (e) mark(epfd);
    if (e && delta < 0) {
        if (e->waiters && --e->waiters == 0) e->wait_until = 0;
        sl_rd_ep_idle(&tab, epfd);
    } else if (e) {
        struct sl_runtime *rt = sl_runtime_now();
        if (delta > 0 && rt && (rt->any_req_in || rt->any_req_out))
            waker_get(epfd); /* requests: sluice may make bytes readable meanwhile */
        e->waiters += (uint32_t)delta;
        if (until > e->wait_until) e->wait_until = until; /* the latest of them: may kick early */
    }
    give();
}

struct waiting {
    enum kind k;
    int epfd, max;
    struct epoll_event *evs;
    const sigset_t *sigmask;
    bool blocks, entered;
};

static uint64_t mask(void *ctx, uint64_t now)
{
    struct waiting *w = ctx;
    uint64_t next = SL_RD_FOREVER;
    if (atomic_load_explicit(&nlist_hint, memory_order_relaxed))
        next = restore(w->epfd, now, false);
    if (atomic_load_explicit(&nheld_hint, memory_order_relaxed)) {
        take();
        uint64_t h = held_next(w->epfd);
        give();
        if (h < next) next = h > now ? h : now;
    }
    return next;
}

static int wait_call(void *ctx, uint64_t now, uint64_t wait)
{
    struct waiting *w = ctx;
    if (w->blocks && wait) {
        int saved = errno;
        waiter(w->epfd, !w->entered, wait == SL_RD_FOREVER ? wait : now + wait);
        w->entered = true;
        errno = saved;
    }
    int rc = call(w->k, w->epfd, w->evs, w->max, wait, w->sigmask);
    if (rc > 0 && atomic_load_explicit(&nwake_hint, memory_order_relaxed)) {
        int saved = errno;
        rc = wake_filter(w->epfd, w->evs, rc);
        errno = saved;
    }
    if (rc >= 0 && atomic_load_explicit(&nheld_hint, memory_order_relaxed)) {
        int saved = errno;
        rc = held_report(w->epfd, w->evs, rc, w->max, sl_clock_now());
        errno = saved;
    }
    return rc;
}

static int wait_events(enum kind k, int epfd, struct epoll_event *evs, int max, int64_t timeout_ns,
                       const sigset_t *sigmask)
{
    struct waiting w = {.k = k,
                        .epfd = epfd,
                        .max = max,
                        .evs = evs,
                        .sigmask = sigmask,
                        .blocks = timeout_ns != 0};
    struct sl_ready_wait rw = {.mask = mask, .call = wait_call, .ctx = &w};
    uint64_t deadline;
    int rc = sl_ready_wait(&rw, timeout_ns, &deadline);
    int err = errno;
    if (w.entered) waiter(epfd, -1, 0);
    errno = err;
    return rc;
}

/* Nothing registered in a shadowed set, and nothing can be held yet (see
 * sl_epoll_counted): the program's call goes straight to the kernel.
 * Inline, without the thread-local guard (the slow half looks at it), so
 * that this costs a few loads and no stack frame. */
static inline bool plain(void)
{
    return !sl_watching() || !(atomic_load_explicit(&nregs_hint, memory_order_relaxed) |
                               atomic_load_explicit(&sl_epoll_counted, memory_order_relaxed));
}

/* The program's own call, as it made it. */
struct own {
    enum kind k;
    int epfd, max, timeout;
    struct epoll_event *evs;
    const struct timespec *ts;
    const sigset_t *sigmask;
};

static inline __attribute__((always_inline)) int own_call(const struct own *o)
{
    if (o->k == K_WAIT) return REAL(epoll_wait)(o->epfd, o->evs, o->max, o->timeout);
    if (o->k == K_PWAIT) return REAL(epoll_pwait)(o->epfd, o->evs, o->max, o->timeout, o->sigmask);
    return REAL(epoll_pwait2)(o->epfd, o->evs, o->max, o->ts, o->sigmask);
}

#define SLOW (-2) /* fast() declined: take wait_events */

/* The wait with nothing listed and nothing held: the program's call as it
 * was, no lock, no clock. A call that may block counts itself in its
 * set's slot, then looks at the hints again (a throttle or held bytes
 * published meanwhile: SLOW). With request rules it needs the set's waker
 * (made by a first wait through wait_events), or held bytes could not wake
 * it. What the kernel reports still passes the waker filter and the held
 * report; when the waker's was all it reported, SLOW again (a wait that
 * returned 0 early would look like a timeout, or an error to a program
 * that waits forever): at worst a finite timeout restarts whole.
 * Inlined into each wait's slow half: the call's kind is then known there,
 * and the program's common wait (nginx's, one per request) makes no frame
 * and keeps errno without saving it. */
static inline __attribute__((always_inline)) int fast(const struct own *o, bool blocks)
{
    if ((unsigned)o->epfd >= SL_FD_MAX || atomic_load_explicit(&nlist_hint, memory_order_relaxed) ||
        atomic_load_explicit(&nheld_hint, memory_order_relaxed))
        return SLOW;
    struct slot *sl = &slots[o->epfd];
    if (blocks) {
        /* the waker first: once made, the runtime need not be read */
        if (!atomic_load_explicit(&sl->waker, memory_order_relaxed)) {
            struct sl_runtime *rt = sl_runtime_now();
            if (!rt || rt->any_req_in || rt->any_req_out) return SLOW;
        }
        atomic_fetch_add(&sl->waiting, 1); /* seq_cst: see `slots` */
        if (atomic_load(&nlist_hint) || atomic_load(&nheld_hint)) {
            atomic_fetch_sub(&sl->waiting, 1);
            return SLOW;
        }
    }
    int rc = own_call(o);
    if (blocks) atomic_fetch_sub(&sl->waiting, 1);
    int got = rc;
    bool waker = rc > 0 && atomic_load_explicit(&sl->waker, memory_order_relaxed), woke = false;
    for (int k = 0; waker && k < rc && !woke; k++)
        woke = o->evs[k].data.u64 == WAKE_DATA;
    bool some_held = rc >= 0 && atomic_load_explicit(&nheld_hint, memory_order_relaxed);
    if (!woke && !some_held)
        return rc; /* the common wait: the kernel's answer and errno as they are */
    int err = errno;
    if (woke) rc = wake_filter(o->epfd, o->evs, rc); /* the lock only when it fired */
    if (some_held) rc = held_report(o->epfd, o->evs, rc, o->max, sl_clock_now());
    if (rc == 0 && got > 0) return SLOW;
    errno = err;
    return rc;
}

/* Reached when plain() said no, or before the real call was known (only
 * then is plain() asked again: its runtime may be none). */
static SLOW_HALF int epoll_wait_slow(int epfd, struct epoll_event *evs, int max, int timeout)
{
    if (sl_guard || (sl_real.epoll_wait == NULL && plain()))
        return REAL(epoll_wait)(epfd, evs, max, timeout);
    struct own o = {.k = K_WAIT, .epfd = epfd, .max = max, .timeout = timeout, .evs = evs};
    int rc = fast(&o, timeout != 0);
    if (rc != SLOW) return rc;
    return wait_events(K_WAIT, epfd, evs, max, timeout < 0 ? -1 : (int64_t)timeout * 1000000, NULL);
}

SL_EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
    if (__builtin_expect(plain() && sl_real.epoll_wait != NULL, 1))
        return sl_real.epoll_wait(epfd, evs, max, timeout);
    return epoll_wait_slow(epfd, evs, max, timeout);
}

static SLOW_HALF int epoll_pwait_slow(int epfd, struct epoll_event *evs, int max, int timeout,
                                      const sigset_t *sigmask)
{
    if (sl_guard || plain()) return REAL(epoll_pwait)(epfd, evs, max, timeout, sigmask);
    struct own o = {
        .k = K_PWAIT, .epfd = epfd, .max = max, .timeout = timeout, .evs = evs, .sigmask = sigmask};
    int rc = fast(&o, timeout != 0);
    if (rc != SLOW) return rc;
    return wait_events(K_PWAIT, epfd, evs, max, timeout < 0 ? -1 : (int64_t)timeout * 1000000,
                       sigmask);
}

SL_EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout,
                          const sigset_t *sigmask)
{
    if (__builtin_expect(plain() && sl_real.epoll_pwait != NULL, 1))
        return sl_real.epoll_pwait(epfd, evs, max, timeout, sigmask);
    return epoll_pwait_slow(epfd, evs, max, timeout, sigmask);
}

static SLOW_HALF int epoll_pwait2_slow(int epfd, struct epoll_event *evs, int max,
                                       const struct timespec *ts, const sigset_t *sigmask)
{
    int64_t t = SL_TIMESPEC_NS(ts);
    if (sl_guard || plain() || t == -2) return REAL(epoll_pwait2)(epfd, evs, max, ts, sigmask);
    struct own o = {
        .k = K_PWAIT2, .epfd = epfd, .max = max, .evs = evs, .ts = ts, .sigmask = sigmask};
    int rc = fast(&o, t != 0);
    if (rc != SLOW) return rc;
    return wait_events(K_PWAIT2, epfd, evs, max, t, sigmask);
}

SL_EXPORT int epoll_pwait2(int epfd, struct epoll_event *evs, int max, const struct timespec *ts,
                           const sigset_t *sigmask)
{
    if (__builtin_expect(plain() && sl_real.epoll_pwait2 != NULL, 1))
        return sl_real.epoll_pwait2(epfd, evs, max, ts, sigmask);
    return epoll_pwait2_slow(epfd, evs, max, ts, sigmask);
}
