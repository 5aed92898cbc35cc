/* SPDX-License-Identifier: BSD-2-Clause */
/* passed.c - connections received over a Unix socket: see passed.h. */
#include "passed.h"

#include <errno.h>
#include <string.h>

#include "../core/limit/key.h"
#include "fd.h"
#include "reqin.h"
#include "reqout.h"
#include "shim.h"

/* A connected TCP socket's local and peer addresses; false for anything
 * else (a Unix socket, a listener, a file). */
static bool tcp_ends(int fd, struct sl_addr *local, struct sl_addr *peer)
{
    int type = 0;
    socklen_t tl = sizeof type;
    struct sockaddr_storage l, p;
    socklen_t ll = sizeof l, pl = sizeof p;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM &&
           getsockname(fd, (struct sockaddr *)&l, &ll) == 0 &&
           getpeername(fd, (struct sockaddr *)&p, &pl) == 0 &&
           sl_addr_from_sockaddr(local, (struct sockaddr *)&l, ll) &&
           sl_addr_from_sockaddr(peer, (struct sockaddr *)&p, pl);
}

static void received(struct sl_runtime *rt, int fd)
{
    struct sl_addr local, peer;
    struct sl_fd *e = sl_fd_get(fd);
    if ((e && e->gate) || !tcp_ends(fd, &local, &peer)) return; /* known, or no connection */
    if (rt->any_req_in) sl_reqin_accept(rt, fd, &local, &peer);
    e = sl_fd_get(fd);
    if ((!e || !e->gate) && rt->any_req_out) sl_reqout_connect(rt, fd, &peer);
}

void sl_passed_received(const struct msghdr *msg)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!rt || !(rt->any_req_in || rt->any_req_out) || !msg->msg_control) return;
    int saved = errno;
    for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)msg); c;
         c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
            received(rt, fd);
        }
    }
    errno = saved;
}
