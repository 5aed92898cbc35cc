/* SPDX-License-Identifier: BSD-2-Clause */
/* key.c - address normalisation, CIDR blocks, bucket keys. */
#include "key.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

bool sl_addr_from_sockaddr_slow(struct sl_addr *out, const struct sockaddr *sa, socklen_t len)
{
    if (!sa || len < (socklen_t)sizeof(sa_family_t)) return false;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        sl_addr_from_sin(out, (const void *)sa);
        return true;
    }
    if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *s6 = (const void *)sa;
        memcpy(out->a, &s6->sin6_addr, 16);
        out->port = ntohs(s6->sin6_port);
        out->v4 = memcmp(out->a, sl_v4mapped, 12) == 0;
        return true;
    }
    return false;
}

static void mask(uint8_t a[16], unsigned plen)
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned bits = plen > i * 8 ? plen - i * 8 : 0;
        if (bits >= 8) continue;
        a[i] &= (uint8_t)(0xff00 >> bits);
    }
}

bool sl_cidr_parse(struct sl_cidr *out, const char *text)
{
    char buf[80];
    size_t n = strlen(text);
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, text, n + 1);

    long plen = -1;
    char *slash = strchr(buf, '/');
    if (slash) {
        *slash = 0;
        char *end;
        if (!slash[1]) return false;
        for (const char *d = slash + 1; *d; d++)
            if (*d < '0' || *d > '9' || d - slash > 3) return false;
        plen = strtol(slash + 1, &end, 10);
    }
    char *host = buf;
    size_t hl = strlen(host);
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']' && strchr(host, ':')) {
        host[hl - 1] = 0;
        host++;
    }
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1) {
        if (plen > 32) return false;
        memcpy(out->addr, sl_v4mapped, 12);
        memcpy(out->addr + 12, &a4, 4);
        out->plen = (uint8_t)(96 + (plen < 0 ? 32 : plen));
    } else if (inet_pton(AF_INET6, host, &a6) == 1) {
        if (plen > 128) return false;
        memcpy(out->addr, &a6, 16);
        out->plen = (uint8_t)(plen < 0 ? 128 : plen);
    } else {
        return false;
    }
    mask(out->addr, out->plen);
    return true;
}

bool sl_cidr_contains(const struct sl_cidr *c, const uint8_t addr[16])
{
    unsigned full = c->plen / 8, rest = c->plen % 8;
    if (memcmp(c->addr, addr, full) != 0) return false;
    if (rest == 0) return true;
    uint8_t m = (uint8_t)(0xff00 >> rest);
    return (addr[full] & m) == c->addr[full];
}

bool sl_cidr_list_contains(const struct sl_cidr *list, int n, const uint8_t addr[16])
{
    for (int i = 0; i < n; i++)
        if (sl_cidr_contains(&list[i], addr)) return true;
    return false;
}

void sl_addr_format(const uint8_t a[16], char *buf, size_t len)
{
    if (memcmp(a, sl_v4mapped, 12) == 0)
        inet_ntop(AF_INET, a + 12, buf, (socklen_t)len);
    else
        inet_ntop(AF_INET6, a, buf, (socklen_t)len);
}

void sl_cidr_format(const struct sl_cidr *c, char *buf, size_t len)
{
    char a[INET6_ADDRSTRLEN];
    sl_addr_format(c->addr, a, sizeof a);
    bool v4 = memcmp(c->addr, sl_v4mapped, 12) == 0 && c->plen >= 96;
    snprintf(buf, len, "%s/%u", a, v4 ? c->plen - 96u : c->plen);
}

/* A mask keeping the first `bits` bits (0..64) of an 8-byte word of an
 * address, in memory order: masks a word loaded with memcpy as mask()
 * masks its bytes. */
static inline uint64_t keep_bits(unsigned bits)
{
    return htobe64(bits >= 64 ? ~0ull : bits ? ~0ull << (64 - bits) : 0);
}

/* Per accepted connection and per request: two word masks, not mask()'s
 * loop over sixteen bytes. */
void sl_key_make(struct sl_key *k, const struct sl_rule *r, const struct sl_addr *addr)
{
    uint64_t hi = 0, lo = 0;
    unsigned plen = 0;
    uint16_t port = 0;
    switch (r->per) {
    case SL_PER_PEER:
    case SL_PER_PREFIX:
        memcpy(&hi, addr->a, 8);
        memcpy(&lo, addr->a + 8, 8);
        plen = addr->v4 ? 96u + r->prefix4 : r->prefix6;
        if (plen < 128) {
            hi &= keep_bits(plen);
            lo &= keep_bits(plen > 64 ? plen - 64 : 0);
        }
        break;
    case SL_PER_DESTINATION:
        memcpy(&hi, addr->a, 8);
        memcpy(&lo, addr->a + 8, 8);
        plen = 128;
        port = addr->port;
        break;
    case SL_PER_RULE:
        break;
    }
    k->rule = r->id;
    k->hi = hi;
    k->lo = lo;
    k->extra = (uint64_t)port << 8 | plen;
}

uint64_t sl_name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h ? h : 1;
}
