/* SPDX-License-Identifier: BSD-2-Clause */
/* passed.h - connections a process receives from another over a Unix
 * socket (SCM_RIGHTS), as a master that accepts hands them to workers,
 * or a broker its clients' connections: tracked from their receipt as
 * their local and peer addresses say, an inbound request connection when
 * an inbound request rule takes its local port, else an outbound one when
 * an outbound rule names its peer. The connection was counted where it was
 * made; from here on its requests are read, the first from the next byte
 * (a head the sender had begun is read by the rule of doubt). */
#ifndef SL_PASSED_H
#define SL_PASSED_H

#include <sys/socket.h>

/* io.c: a recvmsg returned msg, which may carry descriptors. Keeps errno. */
void sl_passed_received(const struct msghdr *msg);

#endif
