/* SPDX-License-Identifier: BSD-2-Clause */
/* reqmatch.h - does a request head match a request rule's route, method
 * and host lists?
 *
 * Paths are compared in a normal form, so that a client cannot step around
 * a route limit by spelling the path differently from the way the server
 * reads it: percent-escapes decoded, repeated slashes merged, "." and ".."
 * segments resolved (as nginx does before it picks a location). A route is
 * a path prefix that matches whole segments ("/search" matches "/search"
 * and "/search/x", not "/searchable"), or, when it holds * ? or [, a glob
 * over the whole path (* crosses slashes). Hosts are compared without case
 * and without a port, and may be globs with * and ? ("*.example.com"). Methods are
 * compared exactly (they are case-sensitive tokens). Pure functions: no
 * allocation, no locale.
 */
#ifndef SL_REQMATCH_H
#define SL_REQMATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "../rule.h"

/* Writes the normal form of path[0..len) to out (NUL-terminated). Returns
 * false when it does not fit (out then holds the part that did). A path that does not start with
 * '/' (the asterisk form, an absolute URI's remainder) is kept as it is. */
bool sl_path_normalise(const char *path, size_t len, char *out, size_t outlen);

/* A glob over a whole string: * any run of bytes, ? one byte, [abc] [a-z]
 * [!x] one byte of a set. Case-sensitive unless fold. */
bool sl_glob_match(const char *pattern, const char *s, size_t len, bool fold);

/* A normalised path against the rule's routes (true when it has none). */
bool sl_route_matches(const struct sl_rule *r, const char *path);
bool sl_method_matches(const struct sl_rule *r, const char *method, size_t len);
/* host: the Host header's value as sent (any case, maybe with a port). */
bool sl_host_matches(const struct sl_rule *r, const char *host, size_t len);

#endif
