/* SPDX-License-Identifier: BSD-2-Clause */
/* hostport.h - a UDP or TCP endpoint written as ADDRESS:PORT: "10.0.0.2:7946"
 * or "[2001:db8::2]:7946". Numeric only: a name lookup could block the
 * program, and gossip addresses are compared as text between hosts. One
 * parser for the config (conf/) and the gossip sender (core/fleet/gossip.c).
 */
#ifndef SL_HOSTPORT_H
#define SL_HOSTPORT_H

#include <stddef.h>
#include <sys/socket.h>

/* Parses text into *ss (*len its length). Returns NULL, or what is wrong
 * with it, as a phrase that follows the quoted value in a message. */
const char *sl_hostport_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len);

/* The canonical text of an address parsed above ("[::1]:7946" for
 * "[0:0::1]:7946"). Returns 0, or -1 when it does not fit in outlen. */
int sl_hostport_format(const struct sockaddr_storage *ss, char *out, size_t outlen);

#endif
