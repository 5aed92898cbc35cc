/* SPDX-License-Identifier: BSD-2-Clause */
/* hold.c - the one hold step: see hold.h. */
#include "hold.h"

#include <errno.h>
#include <sys/socket.h>

#include "ready.h"
#include "wait.h"

bool sl_hold_nonblocking(struct sl_hold *h)
{
    if (h->nonblock < 0) h->nonblock = sl_fd_nonblocking(h->fd);
    return h->nonblock;
}

int sl_hold_until(struct sl_hold *h, uint64_t now, uint64_t until)
{
    if (sl_hold_nonblocking(h)) {
        sl_ready_throttle(h->fd, h->e, h->io, until);
        if (h->held_read) sl_ready_held_read(h->fd, h->e, until);
        errno = EAGAIN;
        return -1;
    }
    if (!h->deadline_known) {
        h->deadline = sl_wait_deadline(h->fd, h->io == SL_IO_RECV ? SO_RCVTIMEO : SO_SNDTIMEO, now);
        h->deadline_known = true;
    }
    return h->mask ? sl_wait_until_masked(until, h->deadline, h->mask)
                   : sl_wait_until(until, h->deadline);
}
