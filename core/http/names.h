/* SPDX-License-Identifier: BSD-2-Clause */
/* names.h - the destination name a client's first bytes carry: the server
 * name (SNI) of a TLS ClientHello, or the Host of an HTTP/1 request head.
 * An outbound request rule with `to=NAME` matches by it (core/policy/policy.h:
 * sl_rule_names) whatever address the connection reached.
 *
 * Both read only the bytes given (a first write), never more than len, and
 * copy a name of letters, digits, '-', '_' and '.' only: anything else is
 * no name. */
#ifndef SL_NAMES_H
#define SL_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* The host_name of the server_name extension of the ClientHello that buf
 * starts with (a TLS handshake record), copied to out (NUL-terminated,
 * outlen > 0). False when buf is no ClientHello, has no SNI, or is cut
 * before it. */
bool sl_name_sni(const void *buf, size_t len, char *out, size_t outlen);

/* The Host header of the HTTP/1 request head buf starts with, without its
 * port, copied to out. False when the head has none in these bytes. */
bool sl_name_host(const void *buf, size_t len, char *out, size_t outlen);

#endif
