/* SPDX-License-Identifier: BSD-2-Clause */
/* reqkey.h - the key a request is counted under.
 *
 * A request rule with `per = header:NAME`, `query:NAME` or `cookie:NAME`
 * counts each request under that value; the value never reaches the table
 * or a log: it becomes two words of a 128-bit SipHash (libsodium's
 * siphashx24) under the table's secret, so every process sharing the table
 * makes the same key and nobody who cannot read the secret can aim values
 * at one bucket. Logs show a short hash (6 hex digits) only.
 *
 * Query values are compared percent-decoded (and '+' as space), as servers
 * read them, so one key spelled two ways is still one key. Header and
 * cookie values are compared as sent, without surrounding blanks.
 *
 * Each thread remembers the last value it hashed (and the secret), so a
 * keep-alive client repeating its API key costs a compare, not a SipHash.
 *
 * The `extra` word keeps request buckets apart from the rule's connection
 * and byte buckets (SL_REQ_KEY_*).
 */
#ifndef SL_REQKEY_H
#define SL_REQKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../limit/key.h"
#include "../rule.h"

/* A query value is whole (a URL is at most 2047 bytes); header and cookie
 * values over 255 bytes come sealed with a hash of the whole (http1.h). */
#define SL_REQ_VALUE_MAX 2048

/* The value of query parameter `name` in query string q[0..len) (without
 * the '?'), percent-decoded into out (NUL-terminated, cut at outlen - 1).
 * Returns false when the parameter is absent. */
bool sl_query_value(const char *q, size_t len, const char *name, char *out, size_t outlen,
                    size_t *outn);

/* The value of cookie `name` in a Cookie header's value. */
bool sl_cookie_value(const char *h, size_t len, const char *name, const char **v, size_t *vlen);

/* The bucket key of a value for rule r. */
void sl_req_key_value(struct sl_key *k, const struct sl_rule *r, const char *v, size_t len,
                      const uint64_t secret[4]);
/* The same, returning the key's table hash, sl_key_hash(k, secret) (both
 * remembered while the value repeats). */
uint64_t sl_req_key_value_hash(struct sl_key *k, const struct sl_rule *r, const char *v, size_t len,
                               const uint64_t secret[4]);
/* The bucket key of an address (per_missing = peer, or no request key). */
void sl_req_key_addr(struct sl_key *k, const struct sl_rule *r, const struct sl_addr *a);
/* The bucket key of everything without a key (per_missing = rule). */
void sl_req_key_rule(struct sl_key *k, const struct sl_rule *r);

/* Six hex digits naming a key in logs. */
void sl_req_key_short(const struct sl_key *k, char out[7]);

#endif
