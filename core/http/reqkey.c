/* SPDX-License-Identifier: BSD-2-Clause */
/* reqkey.c - request keys (see reqkey.h). */
#include "reqkey.h"

#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int hex(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..len) into out; '+' is a space. */
static size_t decode(const char *s, size_t len, char *out, size_t outlen)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < outlen; i++) {
        char c = s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%' && i + 2 < len && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            c = (char)(hex(s[i + 1]) << 4 | hex(s[i + 2]));
            i += 2;
        }
        out[n++] = c;
    }
    if (outlen) out[n] = 0;
    return n;
}

/* What copy_add did with a copy. */
enum copy_step {
    COPY_MORE, /* kept: look for more */
    COPY_SAME, /* a copy already kept (each): its bytes may be reused */
    COPY_DONE, /* nothing more is wanted (first; or too many) */
};

/* Copy v[0..len) of a key, under `how`. */
static enum copy_step copy_add(struct sl_req_copies *c, enum sl_per_copy how, const char *v,
                               size_t len)
{
    if (how != SL_COPY_EACH) { /* the first, or the last so far: one slot */
        c->v[0] = v;
        c->len[0] = len;
        c->n = 1;
        return how == SL_COPY_FIRST ? COPY_DONE : COPY_MORE;
    }
    for (unsigned i = 0; i < c->n; i++)
        if (c->len[i] == len && memcmp(c->v[i], v, len) == 0) return COPY_SAME;
    if (c->n == SL_REQ_COPIES_MAX) {
        c->many = true;
        return COPY_DONE;
    }
    c->v[c->n] = v;
    c->len[c->n++] = len;
    return COPY_MORE;
}

/* The name s[0..n) as PHP registers a query parameter
 * (php_register_variable_ex): leading spaces dropped; up to the first '['
 * (and a NUL ends the name), ' ' and '.' become '_'; a '[' with a ']'
 * after it makes an array (-1: never a key), one without becomes '_' and
 * the rest is kept as sent. Into out; its length, -1 when longer. */
static int php_name(const char *s, size_t n, char *out, size_t outlen)
{
    size_t i = 0, o = 0;
    while (i < n && s[i] == ' ')
        i++;
    for (; i < n && s[i]; i++) {
        char c = s[i];
        if (c == '[') {
            size_t rest = n - i - 1;
            if (memchr(s + i + 1, ']', rest)) return -1;
            if (o + 1 + rest > outlen) return -1;
            out[o++] = '_';
            memcpy(out + o, s + i + 1, rest);
            return (int)(o + rest);
        }
        if (o == outlen) return -1;
        out[o++] = c == ' ' || c == '.' ? '_' : c;
    }
    return (int)o;
}

void sl_query_copies(const char *q, size_t len, const char *name, enum sl_per_copy how, char *buf,
                     size_t buflen, struct sl_req_copies *c)
{
    char pname[SL_REQ_NAME_MAX], want[SL_REQ_NAME_MAX], got[SL_REQ_NAME_MAX];
    *c = (struct sl_req_copies){0};
    int wn = php_name(name, strlen(name), want, sizeof want);
    if (wn <= 0 || buflen == 0) return;
    size_t used = 0;
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && q[end] != '&' && q[end] != ';')
            end++;
        const char *eq = memchr(q + i, '=', end - i);
        size_t nlen = eq ? (size_t)(eq - (q + i)) : end - i;
        size_t pn = decode(q + i, nlen, pname, sizeof pname);
        int gn = nlen < sizeof pname ? php_name(pname, pn, got, sizeof got) : -1;
        if (gn == wn && memcmp(got, want, (size_t)wn) == 0) {
            const char *v = eq ? eq + 1 : q + end;
            size_t raw = (size_t)(q + end - v);
            if (how == SL_COPY_LAST) used = 0; /* the one slot's bytes */
            if (buflen - used < raw + 1) {     /* decoding never grows: it might not fit */
                c->many = true;
                return;
            }
            size_t n = decode(v, raw, buf + used, buflen - used);
            enum copy_step st = copy_add(c, how, buf + used, n);
            if (st == COPY_DONE) return;
            if (st == COPY_MORE) used += n + 1;
        }
        i = end + 1;
    }
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

void sl_cookie_copies(const char *h, size_t len, const char *name, enum sl_per_copy how,
                      struct sl_req_copies *c)
{
    size_t want = strlen(name);
    *c = (struct sl_req_copies){0};
    for (size_t i = 0; i < len;) {
        while (i < len && (blank(h[i]) || h[i] == ';'))
            i++;
        size_t end = i;
        while (end < len && h[end] != ';')
            end++;
        const char *eq = memchr(h + i, '=', end - i);
        if (eq) {
            size_t nlen = (size_t)(eq - (h + i));
            while (nlen && blank(h[i + nlen - 1]))
                nlen--;
            if (nlen == want && memcmp(h + i, name, want) == 0) {
                const char *s = eq + 1;
                size_t n = (size_t)(h + end - s);
                sl_req_unblank(&s, &n);
                if (n >= 2 && *s == '"' && s[n - 1] == '"') s++, n -= 2; /* a quoted cookie-value */
                if (copy_add(c, how, s, n) == COPY_DONE) return;
            }
        }
        i = end + 1;
    }
}

void sl_header_copies(const char *v, size_t len, enum sl_per_copy how, struct sl_req_copies *c)
{
    *c = (struct sl_req_copies){0};
    for (size_t i = 0; i < len;) {
        const char *comma = memchr(v + i, ',', len - i);
        size_t end = comma ? (size_t)(comma - v) : len, n = end - i;
        const char *s = v + i;
        sl_req_unblank(&s, &n);
        if (n && copy_add(c, how, s, n) == COPY_DONE) return;
        i = end + 1;
    }
    if (c->n == 0) copy_add(c, how, v, 0); /* an empty value is one, as it always was */
}

/* The last long value this thread hashed (over the VALUE_WORDS words the
 * process's memory below keeps: a JWT or a long token as the key), and
 * its hash; and the last table hash of a key made of it (sl_key_hash of
 * the rule, the value's hash and `extra`, under the same secret). A
 * keep-alive client sends the same key request after request, and
 * SipHash over a few hundred bytes costs several hundred instructions;
 * the compare a few dozen. Keyed by the secret too, so a reload with a
 * new secret never reuses a hash. After a miss only every fourth value
 * is kept (as core/http/h1fast.c's memory of heads). Short values skip it:
 * the memory below finds them, and asking the memo first cost more than
 * it saved (bench/insn.sh, per request: 64 keys in turn 48 instructions,
 * realistic heads 60, the repeated head none, which the lane answers).
 * Values over sizeof v are hashed every time. Thread-local: no sharing,
 * no lock (initial-exec, as core/limit/table.c's stripe). */
struct memo {
    uint64_t secret[4];
    uint64_t hi, lo;
    size_t len;              /* 0: empty (an empty value is hashed every time) */
    uint64_t rule, extra, h; /* h 0: none (sl_key_hash is never 0) */
    unsigned misses;         /* since the last hit or store */
    char v[256];
};
static __thread struct memo memo __attribute__((tls_model("initial-exec")));

/* a[0, n) == b[0, n), n <= sizeof memo.v: a key value is a few dozen
 * bytes, compared in words without a call (the last word overlaps) */
static inline bool same_value(const char *a, const char *b, size_t n)
{
    if (n < 8) return memcmp(a, b, n) == 0;
    uint64_t x, y, d = 0;
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        d |= x ^ y;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return (d | (x ^ y)) == 0;
}

static inline bool same_secret(const uint64_t a[4], const uint64_t b[4])
{
    return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0;
}

/* The values this process hashed lately, by a cheap hash of the value,
 * shared by its threads. Real traffic repeats API keys across requests and
 * connections, not request after request on one connection (1,000 keys of
 * skewed use over 8 connections in bench/insn.sh's realistic case), so the
 * thread's memo above rarely sees its last value again while this memory
 * usually has it: a hit costs a few dozen instructions against SipHash's
 * ~220-280. Values of 1 to VALUE_WORDS words are kept, with the secret
 * they were hashed under, in sets of two entries (a value in either; a new
 * one takes the way not hit or written last: realistic heads' hashing fell
 * from 393 to 291 a thousand requests, where the way picked by a bit of
 * the value's hash made the sets direct-mapped). 2,048 sets: with 512,
 * those 1,000 keys still met in sets, and SipHash cost 82 instructions a
 * request against 37 now; 4,096 counted no fewer (what is left is first
 * sightings). Each entry is a sequence lock: a
 * writer makes its word odd, writes, and makes it even again; a reader
 * that saw it change, or odd, misses (and hashes); a writer that finds it
 * odd leaves the entry to the other. An attacker who picks values that
 * share a set only makes them miss. With the value's hash, an entry keeps
 * the table hash of the key the rule that kept it made of it: a single
 * rule's request then makes no sl_key_hash (about 25 instructions).
 * 608 KiB a process, untouched until used (a page holds 26 entries: a
 * few hundred keys touch most). No
 * fence (TSan builds refuse them): a reader's loads are acquire, so its
 * second look at the word comes after them all, and a writer's stores are
 * release, so each comes after its odd word (plain moves on x86-64). */
#define VALUE_SETS_LOG2 11
#define VALUE_SETS      (1u << VALUE_SETS_LOG2)
#define VALUE_WORDS     8
struct value_entry {
    _Atomic uint64_t seq;            /* odd: being written */
    _Atomic uint64_t len;            /* 0: empty */
    _Atomic uint64_t w[VALUE_WORDS]; /* the value; its last word zero-padded */
    _Atomic uint64_t secret[4];
    _Atomic uint64_t hi, lo;
    /* the table hash of the key of rule `rule`, extra `extra` made of the
     * value (sl_key_hash): the rule that hashed it first, as a request
     * rule's single key asks again on every request; h 0: none */
    _Atomic uint64_t rule, extra, h;
};
static struct value_entry values[VALUE_SETS][2] __attribute__((aligned(64)));
/* Each set's way last hit or written: a new value takes the other. */
static _Atomic uint8_t values_recent[VALUE_SETS];
static __thread uint64_t values_hashed __attribute__((tls_model("initial-exec")));

uint64_t sl_req_key_hashed(void)
{
    return values_hashed;
}

static inline uint64_t load8(const char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* The value's last word (from byte (len - 1) / 8 * 8), zero-padded; no
 * byte before v or from len on is read. */
static inline uint64_t last_word(const char *v, size_t len)
{
    size_t rem = len - (len - 1) / 8 * 8; /* 1 to 8 */
    if (len >= 8) return load8(v + len - 8) >> (8 - rem) * 8;
    uint64_t x = 0;
    for (size_t j = 0; j < len; j++)
        x |= (uint64_t)(uint8_t)v[j] << (8 * j);
    return x;
}

static inline __attribute__((always_inline)) bool value_found(struct value_entry *e, const char *v,
                                                              size_t len, uint64_t last,
                                                              const uint64_t secret[4],
                                                              struct sl_key *k, uint64_t *hash)
{
    uint64_t seq = atomic_load_explicit(&e->seq, memory_order_acquire);
    if ((seq & 1) || atomic_load_explicit(&e->len, memory_order_acquire) != len) return false;
    size_t n = (len - 1) / 8; /* whole words before the last */
    uint64_t d = atomic_load_explicit(&e->w[n], memory_order_acquire) ^ last;
    for (size_t i = 0; i < n; i++)
        d |= atomic_load_explicit(&e->w[i], memory_order_acquire) ^ load8(v + 8 * i);
    d |= (atomic_load_explicit(&e->secret[0], memory_order_acquire) ^ secret[0]) |
         (atomic_load_explicit(&e->secret[1], memory_order_acquire) ^ secret[1]) |
         (atomic_load_explicit(&e->secret[2], memory_order_acquire) ^ secret[2]) |
         (atomic_load_explicit(&e->secret[3], memory_order_acquire) ^ secret[3]);
    uint64_t hi = atomic_load_explicit(&e->hi, memory_order_acquire);
    uint64_t lo = atomic_load_explicit(&e->lo, memory_order_acquire);
    uint64_t h = 0;
    if (hash && atomic_load_explicit(&e->rule, memory_order_acquire) == k->rule &&
        atomic_load_explicit(&e->extra, memory_order_acquire) == k->extra)
        h = atomic_load_explicit(&e->h, memory_order_acquire);
    if (d || atomic_load_explicit(&e->seq, memory_order_relaxed) != seq) return false;
    k->hi = hi;
    k->lo = lo;
    if (hash) *hash = h;
    return true;
}

static void value_keep(struct value_entry *e, const char *v, size_t len, uint64_t last,
                       const uint64_t secret[4], const struct sl_key *k, uint64_t table_hash)
{
    uint64_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
    if ((seq & 1) || !atomic_compare_exchange_strong_explicit(
                         &e->seq, &seq, seq + 1, memory_order_relaxed, memory_order_relaxed))
        return;
    size_t n = (len - 1) / 8;
    atomic_store_explicit(&e->len, len, memory_order_release);
    for (size_t i = 0; i < n; i++) /* words past the last are never read for this len */
        atomic_store_explicit(&e->w[i], load8(v + 8 * i), memory_order_release);
    atomic_store_explicit(&e->w[n], last, memory_order_release);
    for (int i = 0; i < 4; i++)
        atomic_store_explicit(&e->secret[i], secret[i], memory_order_release);
    atomic_store_explicit(&e->hi, k->hi, memory_order_release);
    atomic_store_explicit(&e->lo, k->lo, memory_order_release);
    atomic_store_explicit(&e->rule, k->rule, memory_order_release);
    atomic_store_explicit(&e->extra, k->extra, memory_order_release);
    atomic_store_explicit(&e->h, table_hash, memory_order_release);
    atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
}

/* Whether v, asked for as one key (`one`), is a list: its len bytes are
 * looked at for a comma once (*unlisted: looked at, and none). */
static inline bool a_list(const char *v, size_t len, bool one, bool *unlisted)
{
    if (!*unlisted) *unlisted = !memchr(v, ',', len);
    return one && !*unlisted;
}

/* The value's two hash words: from the process's memory, else SipHash.
 * The memory keeps only values without a comma, so that a value found
 * there is known to be one key, not a list: `one` asks for that (false
 * and nothing made when it is a list); `unlisted`: len bytes at v already
 * known to hold no comma. hash (NULL: not wanted): where the key's
 * table hash goes when the memory has it for k's rule and extra, or when
 * it was just kept there (untouched otherwise). */
static inline __attribute__((always_inline)) bool value_hash(struct sl_key *k, const char *v,
                                                             size_t len, const uint64_t secret[4],
                                                             bool one, bool unlisted,
                                                             uint64_t *hash)
{
    struct value_entry *set = NULL;
    _Atomic uint8_t *recent = NULL;
    uint64_t last = 0, h = 0;
    if (len && len <= VALUE_WORDS * 8) {
        last = last_word(v, len);
        h = (load8(len >= 8 ? v : "\0\0\0\0\0\0\0\0") ^ len) * 0x9e3779b97f4a7c15ull ^
            last * 0xc2b2ae3d27d4eb4full;
        h ^= h >> 29;
        set = values[h >> (64 - VALUE_SETS_LOG2)];
        recent = &values_recent[h >> (64 - VALUE_SETS_LOG2)];
        /* the way last hit or written first: a set that holds one value
         * (most, with 2,048 sets) has it there, and is read once */
        unsigned first = atomic_load_explicit(recent, memory_order_relaxed) & 1u, way = first;
        if (value_found(&set[way], v, len, last, secret, k, hash) ||
            value_found(&set[way ^= 1u], v, len, last, secret, k, hash)) {
            if (way != first) atomic_store_explicit(recent, (uint8_t)way, memory_order_relaxed);
            return true;
        }
    }
    if (a_list(v, len, one, &unlisted)) return false;
    unsigned char out[crypto_shorthash_siphashx24_BYTES];
    unsigned char key[crypto_shorthash_siphashx24_KEYBYTES];
    memcpy(key, secret, sizeof key);
    crypto_shorthash_siphashx24(out, (const unsigned char *)v, len, key);
    memcpy(&k->hi, out, 8);
    memcpy(&k->lo, out + 8, 8);
    values_hashed++;
    if (set && unlisted) {
        uint64_t table_hash = sl_key_hash(k, secret);
        if (hash) *hash = table_hash;
        unsigned way = atomic_load_explicit(recent, memory_order_relaxed) ^ 1u;
        atomic_store_explicit(recent, (uint8_t)way, memory_order_relaxed);
        value_keep(&set[way], v, len, last, secret, k, table_hash);
    }
    return true;
}

/* hash: where to put the key's table hash, or NULL (not wanted). one:
 * only for a value that is one key (no comma, the whole value looked at):
 * false, nothing made, for a list. The thread's memo, as the process's
 * memory, keeps only values without a comma. */
static inline __attribute__((always_inline)) bool key_value(struct sl_key *k,
                                                            const struct sl_rule *r, const char *v,
                                                            size_t len, const uint64_t secret[4],
                                                            uint64_t *hash, bool one)
{
    bool unlisted = false;
    if (len > SL_REQ_VALUE_MAX) { /* the list is told by the whole value */
        if (one && a_list(v, len, one, &unlisted)) return false;
        len = SL_REQ_VALUE_MAX;
    }
    k->rule = r->id;
    k->extra = SL_REQ_KEY_BUCKET | SL_REQ_KEY_VALUE | (uint64_t)r->req_per;
    struct memo *m = &memo;
    bool long_value = len > VALUE_WORDS * 8;
    if (long_value && len == m->len && same_secret(m->secret, secret) && same_value(m->v, v, len)) {
        m->misses = 0;
        k->hi = m->hi;
        k->lo = m->lo;
        if (!hash) return true;
        if (m->h && m->rule == k->rule && m->extra == k->extra) {
            *hash = m->h;
            return true;
        }
        m->rule = k->rule;
        m->extra = k->extra;
        *hash = m->h = sl_key_hash(k, secret);
        return true;
    }
    if (long_value && a_list(v, len, one, &unlisted)) return false;
    uint64_t h = 0;
    if (!value_hash(k, v, len, secret, one, unlisted, hash ? &h : NULL)) return false;
    if (hash) *hash = h = h ? h : sl_key_hash(k, secret);
    /* values that vary (real traffic: many keys in turn) would pay the
     * store on every request: after a miss, only every fourth is kept */
    if (long_value && unlisted && len <= sizeof m->v && (m->len == 0 || ++m->misses >= 4)) {
        m->misses = 0;
        memcpy(m->secret, secret, sizeof m->secret);
        memcpy(m->v, v, len);
        m->len = len;
        m->hi = k->hi;
        m->lo = k->lo;
        m->rule = k->rule;
        m->extra = k->extra;
        m->h = h;
    }
    return true;
}

void sl_req_key_value(struct sl_key *k, const struct sl_rule *r, const char *v, size_t len,
                      const uint64_t secret[4])
{
    key_value(k, r, v, len, secret, NULL, false);
}

uint64_t sl_req_key_value_hash(struct sl_key *k, const struct sl_rule *r, const char *v, size_t len,
                               const uint64_t secret[4])
{
    uint64_t h;
    key_value(k, r, v, len, secret, &h, false);
    return h;
}

bool sl_req_key_one_hash(struct sl_key *k, const struct sl_rule *r, const char *v, size_t len,
                         const uint64_t secret[4], uint64_t *hash)
{
    return key_value(k, r, v, len, secret, hash, true);
}

void sl_req_key_addr(struct sl_key *k, const struct sl_rule *r, const struct sl_addr *a)
{
    sl_key_make(k, r, a);
    k->extra |= SL_REQ_KEY_BUCKET;
}

void sl_req_key_rule(struct sl_key *k, const struct sl_rule *r)
{
    *k = (struct sl_key){.rule = r->id, .extra = SL_REQ_KEY_BUCKET | SL_REQ_KEY_VALUE};
}

void sl_req_key_short(const struct sl_key *k, char out[7])
{
    uint64_t h = sl_key_mum(k->hi ^ 0x9e3779b97f4a7c15ull, k->lo ^ k->extra);
    snprintf(out, 7, "%06llx", (unsigned long long)(h >> 40));
}
