/* SPDX-License-Identifier: BSD-2-Clause */
/* udpowner.c - the user of a UDP port (see udpowner.h). Read in pieces
 * through core/sys.h (never the interposed names), a line that a piece
 * cuts carried to the next, so a host with many sockets is read whole. */
#include "udpowner.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "../sys.h"

/* One line of the table: "sl local rem st tx:rx tr:when retrnsmt uid ...". */
static long owner_of(const char *line, unsigned port)
{
    char local[64];
    unsigned lport;
    long uid;
    if (sscanf(line, "%*s %63s %*s %*s %*s %*s %*s %ld", local, &uid) != 2) return -1;
    const char *colon = strrchr(local, ':');
    return colon && sscanf(colon + 1, "%x", &lport) == 1 && lport == port ? uid : -1;
}

long sl_udp_owner(const char *path, unsigned port)
{
    int fd = sl_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return -1;
    char buf[4096];
    size_t have = 0;
    long found = -1;
    bool header = true; /* the first line names the columns */
    for (;;) {
        ssize_t n = sl_sys_read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0) break;
        have += (size_t)n;
        buf[have] = 0;
        char *line = buf, *end;
        while (found < 0 && (end = strchr(line, '\n'))) {
            *end = 0;
            if (!header) found = owner_of(line, port);
            header = false;
            line = end + 1;
        }
        if (found >= 0) break;
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof buf - 1) have = 0; /* a line longer than the buffer: not a socket's */
    }
    sl_sys_close(fd);
    return found;
}
