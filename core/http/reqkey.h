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
 * Copies. A request may carry its key more than once, and applications
 * read different copies: PHP takes the last of `?api_key=a&api_key=b` and
 * maps `X-API-Key` and `X_API_KEY` to one variable (HTTP_X_API_KEY, the
 * last line winning), python's SimpleCookie takes the last of
 * `sid=a; sid=b`, node joins repeated header lines as "a, b". So the
 * copies of a key are every occurrence under every name servers fold
 * together: a header's lines (names equal ignoring case, '-' and '_'
 * alike: CGI's mapping), each split at its commas (a list, RFC 9110
 * 5.3, blanks trimmed, empty elements dropped); a query parameter's
 * occurrences under PHP's name mangling (leading spaces dropped, ' ' and
 * '.' read as '_', a '[' without a later ']' as '_'; a name with
 * "[...]" is an array, never the key); a cookie's occurrences in every
 * Cookie line. A rule's `per_copy` says which count (enum sl_per_copy):
 * the first, the last, or each distinct one, up to SL_REQ_COPIES_MAX
 * (more are the rule of doubt's: the request counts as without a key).
 *
 * Each thread remembers the last value it hashed (and the secret), so a
 * keep-alive client repeating its API key costs a compare, not a SipHash;
 * and the process remembers the last 256 or so values (of up to 64
 * bytes) its threads hashed, so keys used again by any client of any
 * connection cost a lookup (reqkey.c, `values`).
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

/* At most this many distinct copies of one key are charged (each); more:
 * `many`, and the request counts as without a key (per_missing). */
#define SL_REQ_COPIES_MAX 4

/* The copies of a key in one request that a rule charges, in order of
 * appearance (values point into the request's bytes, or into the buffer
 * a query's decoded values were written to). */
struct sl_req_copies {
    unsigned n; /* 0: the key is missing */
    bool many;  /* more distinct copies than SL_REQ_COPIES_MAX (each), or
                   decoded values that did not fit the buffer */
    const char *v[SL_REQ_COPIES_MAX];
    size_t len[SL_REQ_COPIES_MAX];
};

/* The value at *v (*n bytes) without the blanks (SP, HT) around it, as
 * servers read a field value (RFC 9110, 5.5) and each copy of a list:
 * *v and *n moved in. */
static inline void sl_req_unblank(const char **v, size_t *n)
{
    const char *s = *v;
    size_t k = *n;
    while (k && (s[k - 1] == ' ' || s[k - 1] == '\t'))
        k--;
    while (k && (*s == ' ' || *s == '\t'))
        s++, k--;
    *v = s;
    *n = k;
}

/* Header names a and b are one name to servers: equal ignoring case, with
 * '-' and '_' alike (CGI and PHP map both to HTTP_X_API_KEY). */
static inline bool sl_req_header_name_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen) return false;
    for (size_t i = 0; i < alen; i++) {
        char x = a[i] >= 'A' && a[i] <= 'Z' ? (char)(a[i] + 32) : a[i] == '_' ? '-' : a[i];
        char y = b[i] >= 'A' && b[i] <= 'Z' ? (char)(b[i] + 32) : b[i] == '_' ? '-' : b[i];
        if (x != y) return false;
    }
    return true;
}

/* The copies in a header's value v[0..len) (its lines joined by ", "); a
 * value with no element (empty, blanks, commas) is one empty copy. */
void sl_header_copies(const char *v, size_t len, enum sl_per_copy how, struct sl_req_copies *c);

/* The copies of query parameter `name` in q[0..len) (without the '?'),
 * percent-decoded into buf (each NUL-terminated). */
void sl_query_copies(const char *q, size_t len, const char *name, enum sl_per_copy how, char *buf,
                     size_t buflen, struct sl_req_copies *c);

/* The copies of cookie `name` in a Cookie header's value (several lines
 * joined by "; "). */
void sl_cookie_copies(const char *h, size_t len, const char *name, enum sl_per_copy how,
                      struct sl_req_copies *c);

/* The bucket key of a value for rule r. */
void sl_req_key_value(struct sl_key *k, const struct sl_rule *r, const char *v, size_t len,
                      const uint64_t secret[4]);
/* The same, returning the key's table hash, sl_key_hash(k, secret) (both
 * remembered while the value repeats). */
uint64_t sl_req_key_value_hash(struct sl_key *k, const struct sl_rule *r, const char *v, size_t len,
                               const uint64_t secret[4]);
/* The same for a value that is one key: false, nothing made, when it is a
 * list (a comma anywhere in its len bytes). A value the memories of
 * hashed values hold is known to be one without being looked at again:
 * they keep no value with a comma. */
bool sl_req_key_one_hash(struct sl_key *k, const struct sl_rule *r, const char *v, size_t len,
                         const uint64_t secret[4], uint64_t *hash);
/* How many values this thread has hashed with SipHash (not found in the
 * memo or the process's memory): for the tests. */
uint64_t sl_req_key_hashed(void);
/* The bucket key of an address (per_missing = peer, or no request key). */
void sl_req_key_addr(struct sl_key *k, const struct sl_rule *r, const struct sl_addr *a);
/* The bucket key of everything without a key (per_missing = rule). */
void sl_req_key_rule(struct sl_key *k, const struct sl_rule *r);

/* Six hex digits naming a key in logs. */
void sl_req_key_short(const struct sl_key *k, char out[7]);

#endif
