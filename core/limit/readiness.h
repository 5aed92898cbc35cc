/* SPDX-License-Identifier: BSD-2-Clause */
/* readiness.h - the pure logic behind shim/poll.c, select.c and epoll.c:
 * which events a throttled descriptor must not be asked for, how long a
 * wait may last, and the shadow of the program's epoll registrations with
 * the kernel operation that brings each one in line.
 *
 * Nothing here reads a clock, takes a lock or makes a system call: callers
 * pass `now` and hold whatever lock protects a struct sl_rd_table.
 */
#ifndef SL_READINESS_H
#define SL_READINESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What is throttled on a descriptor, as a bit mask. */
#define SL_RD_RECV 1u /* recv budget empty: not readable */
#define SL_RD_SEND 2u /* send budget empty: not writable */
#define SL_RD_PARK 4u /* a held-back connect: the socket is not even connected */
#define SL_RD_HELD                                                                                 \
    8u /* sluice holds bytes the program may read now: readable, whatever the kernel says */

#define SL_RD_FOREVER UINT64_MAX

struct sl_rd_table;

/* The directions of {recv, send} throttled at `now` (ready_at in the
 * future); *wake is lowered to the earliest of those ready_at. */
unsigned sl_rd_throttled(uint64_t recv_at, uint64_t send_at, uint64_t now, uint64_t *wake);

/* poll/select/epoll event bits a throttled direction takes away. The
 * error and hang-up bits are never taken: the kernel reports them anyway. */
short sl_rd_poll_mask(unsigned throttled);
uint32_t sl_rd_epoll_mask(unsigned throttled);

/* The absolute deadline of a wait of timeout_ns (< 0: SL_RD_FOREVER). */
uint64_t sl_rd_deadline(uint64_t now, int64_t timeout_ns);

/* How long the real call may wait: until the program's deadline or the
 * next refill (`wake`), whichever is first; 0 when either has passed;
 * SL_RD_FOREVER when both are. */
uint64_t sl_rd_wait_ns(uint64_t now, uint64_t deadline, uint64_t wake);

/* ns as a poll/epoll_wait timeout in ms: rounded up (a refill 0.3 ms away
 * must not turn into a busy loop of zero timeouts), -1 for SL_RD_FOREVER,
 * capped at INT_MAX. */
int sl_rd_ms(uint64_t ns);

/* One registration the program made with epoll_ctl, as it asked for it. */
struct sl_rd_reg {
    int32_t epfd, fd;
    uint32_t events;  /* the program's events (last ADD or MOD) */
    uint32_t applied; /* what the kernel holds, as far as we know (not when parked) */
    uint64_t data;    /* the program's epoll_data */
    uint64_t until;   /* listed: when to look at it again */
    bool used;
    bool parked;        /* removed from the kernel: held-back connect */
    bool listed;        /* differs from what the program asked for: on the restore list */
    bool armed;         /* EPOLLONESHOT: the program (re-)armed it and no event was reported since
                           that shim/epoll.c knows of (a read of the descriptor means one was) */
    uint32_t held_seen; /* EPOLLET: the announcement of held bytes last reported to it
                           (shim/epoll.c; 0: none since the program's ADD or MOD) */
};

/* Why a registration is being brought in line. */
enum sl_rd_why {
    SL_RD_PROGRAM,  /* the program's own ADD or MOD */
    SL_RD_THROTTLE, /* an I/O hook just ran out of budget */
    SL_RD_RESTORE,  /* a wait wrapper: the time may have come */
};

enum sl_rd_op { SL_RD_KEEP, SL_RD_MOD, SL_RD_ADD, SL_RD_DEL };

/* The kernel operation (with its events in *ev) that makes registration r
 * match `throttled`. Rules:
 *   - PARK: the registration leaves the kernel (DEL), because an unconnected
 *     TCP socket reports EPOLLHUP|EPOLLOUT whatever the events;
 *   - a parked one comes back with ADD when its connect has been made;
 *   - otherwise MOD with the program's events minus the throttled ones,
 *     when that differs from what the kernel holds. A MOD re-evaluates
 *     readiness, so restoring an edge-triggered registration gives it a
 *     new edge if data is waiting;
 *   - EPOLLONESHOT: a throttle never touches it (it may have fired, and a
 *     MOD would re-arm it); the program's own re-arm is masked, and the
 *     restore re-arms it with the program's events;
 *   - EPOLLEXCLUSIVE cannot be modified: it is never masked. */
enum sl_rd_op sl_rd_plan(const struct sl_rd_reg *r, unsigned throttled, enum sl_rd_why why,
                         uint32_t *ev);

/* Records that `op` with `ev` succeeded on r; `wake` is when to look again
 * if r is still not what the program asked for. Returns whether r is
 * (still) on the restore list. */
bool sl_rd_done(struct sl_rd_table *t, struct sl_rd_reg *r, enum sl_rd_op op, uint32_t ev,
                uint64_t wake);

/* The shadow: registrations keyed by (epfd, fd) in an open-addressing hash
 * (linear probing, backward-shift deletion), the epoll descriptors seen,
 * and the list of registrations that differ from the program's wishes. */
struct sl_rd_ep {
    int32_t epfd;
    uint32_t nregs;
    uint32_t waiters;    /* threads in a wait wrapper on it now */
    uint64_t wait_until; /* the latest time one of them will look again */
};

struct sl_rd_table {
    struct sl_rd_reg *slot;
    uint32_t cap, n; /* cap: 0 or a power of two */
    uint64_t *list;  /* keys (epfd << 32 | fd) of listed registrations */
    uint32_t nlist, caplist;
    struct sl_rd_ep *ep;
    uint32_t nep, capep;
};

struct sl_rd_reg *sl_rd_find(struct sl_rd_table *t, int epfd, int fd);
/* Finds or inserts (zeroed but for the key); NULL when memory ran out. */
struct sl_rd_reg *sl_rd_insert(struct sl_rd_table *t, int epfd, int fd);
void sl_rd_remove(struct sl_rd_table *t, int epfd, int fd);
/* Removes every registration of fd (close). */
void sl_rd_remove_fd(struct sl_rd_table *t, int fd);
/* epfd's record; created when `create` (NULL when memory ran out). */
struct sl_rd_ep *sl_rd_ep(struct sl_rd_table *t, int epfd, bool create);
/* Drops epfd's record once it has neither registrations nor waiters. */
void sl_rd_ep_idle(struct sl_rd_table *t, int epfd);

/* Puts r on the restore list / takes it off (idempotent). */
bool sl_rd_list(struct sl_rd_table *t, struct sl_rd_reg *r);
void sl_rd_unlist(struct sl_rd_table *t, struct sl_rd_reg *r);

/* Copies into fds[] (at most max) the descriptors of epfd's listed
 * registrations due at `now` (epfd < 0: of every epoll descriptor with a
 * waiter); returns their count, and lowers *next to the earliest `until`
 * among those not due. */
size_t sl_rd_due(const struct sl_rd_table *t, int epfd, uint64_t now, int32_t *epfds, int32_t *fds,
                 size_t max, uint64_t *next);

/* Frees everything (tests). */
void sl_rd_table_free(struct sl_rd_table *t);

#endif
