/* SPDX-License-Identifier: BSD-2-Clause */
/* key.h - addresses, address blocks and the keys buckets are found by.
 *
 * Every address is normalised to 16 bytes: IPv4 and IPv4-mapped IPv6 both
 * become ::ffff:a.b.c.d, so a peer reaching a dual-stack socket is the same
 * key as when it reaches an IPv4 one. Keys mask the peer by the rule's
 * prefix (IPv6 /64 by default: a client owns at least a /64, and must not
 * own 2^64 buckets).
 */
#ifndef SL_KEY_H
#define SL_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "../rule.h"

struct sl_addr {
    uint8_t a[16]; /* IPv4 as ::ffff:a.b.c.d */
    uint16_t port; /* host order */
    bool v4;
};

/* The identity of a bucket: which rule, which masked address and port.
 * Laid out as four words so hashing is four multiplies. */
struct sl_key {
    uint64_t rule;  /* sl_rule.id */
    uint64_t hi;    /* address bytes 0..7 */
    uint64_t lo;    /* address bytes 8..15 */
    uint64_t extra; /* port << 8 | prefix length */
};

/* Reads an AF_INET or AF_INET6 sockaddr. Returns false for other families
 * or a length too short to hold one. */
bool sl_addr_from_sockaddr_slow(struct sl_addr *out, const struct sockaddr *sa, socklen_t len);

/* The first 12 bytes of an IPv4 address mapped into IPv6 (::ffff:a.b.c.d). */
static const uint8_t sl_v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static inline void sl_addr_from_sin(struct sl_addr *out, const struct sockaddr_in *s4)
{
    memcpy(out->a, sl_v4mapped, 12);
    memcpy(out->a + 12, &s4->sin_addr, 4);
    out->port = ntohs(s4->sin_port);
    out->v4 = true;
}

/* Inline for IPv4, read at every accept. */
static inline bool sl_addr_from_sockaddr(struct sl_addr *out, const struct sockaddr *sa,
                                         socklen_t len)
{
    if (sa && len >= (socklen_t)sizeof(struct sockaddr_in) && sa->sa_family == AF_INET) {
        sl_addr_from_sin(out, (const void *)sa);
        return true;
    }
    return sl_addr_from_sockaddr_slow(out, sa, len);
}

/* Parses "a.b.c.d", "a.b.c.d/n", "x::y", "x::y/n", "[x::y]". IPv4 prefix
 * lengths are written 0..32 and stored over 128 bits. */
bool sl_cidr_parse(struct sl_cidr *out, const char *text);
bool sl_cidr_contains(const struct sl_cidr *c, const uint8_t addr[16]);
bool sl_cidr_list_contains(const struct sl_cidr *list, int n, const uint8_t addr[16]);
/* Writes the block in its normalised text form ("10.0.0.0/8"). */
void sl_cidr_format(const struct sl_cidr *c, char *buf, size_t len);
void sl_addr_format(const uint8_t a[16], char *buf, size_t len);

/* Builds the key a rule uses for a peer (inbound) or destination
 * (outbound) address. */
void sl_key_make(struct sl_key *k, const struct sl_rule *r, const struct sl_addr *addr);

static inline uint64_t sl_key_mum(uint64_t a, uint64_t b)
{
    unsigned __int128 r = (unsigned __int128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* A 64-bit hash of a key under a per-table secret. Never 0 or 1. It mixes
 * the key with the secret by 64x64->128 multiplies folded (the "mum" step
 * of wyhash): not a MAC, but an attacker who cannot read the table cannot
 * aim keys at one probe sequence, and it costs about two nanoseconds. */
static inline uint64_t sl_key_hash(const struct sl_key *k, const uint64_t s[4])
{
    uint64_t h =
        sl_key_mum(k->rule ^ s[0], k->hi ^ s[1]) ^ sl_key_mum(k->lo ^ s[2], k->extra ^ s[3]);
    h = sl_key_mum(h ^ 0x9e3779b97f4a7c15ull, s[0] ^ 0xe7037ed1a0b428dbull);
    return h < 2 ? h + 2 : h;
}

/* 64-bit FNV-1a of a string: stable rule identities across processes. */
uint64_t sl_name_hash(const char *s);

/* Tags in a key's `extra` that keep request-rule keys (core/http/reqkey.c)
 * apart from connection and byte keys of the same rule and address. */
#define SL_REQ_KEY_BUCKET   (1ull << 61) /* a request-rate bucket */
#define SL_REQ_KEY_QUOTA    (1ull << 60) /* a quota word */
#define SL_REQ_KEY_IDEM     (1ull << 59) /* an Idempotency-Key mark */
#define SL_REQ_KEY_VALUE    (1ull << 58) /* keyed by a value, not an address */
#define SL_REQ_KEY_INFLIGHT (1ull << 57) /* requests in flight (req_conns) */

#endif
