/* SPDX-License-Identifier: BSD-2-Clause */
/* udpowner.h - which user holds a UDP port on this host, from the
 * kernel's /proc/net/udp (or udp6): the gossip sender names the squatter
 * of its listen port (gossip.c), `sluice check` names it before the
 * program starts (cli/places.c). */
#ifndef SL_UDPOWNER_H
#define SL_UDPOWNER_H

/* The uid of a socket bound to UDP `port` in the table at `path`
 * ("/proc/net/udp" or "/proc/net/udp6"), or -1 (none, or unreadable). */
long sl_udp_owner(const char *path, unsigned port);

#endif
