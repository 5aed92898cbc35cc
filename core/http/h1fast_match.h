/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast_match.h - inside h1fast.c: the compare of a head with the
 * thread's memory of one (h1fast.c's memo_match says when they give one
 * result), written once and compiled twice: h1fast.c defines MATCH_ATTR
 * (the functions' attributes), LINES_ATTR (LINES' own: inline where
 * the scan is compiled with it), MATCH and NEAR (their names), DIFF32(a, b)
 * (the bytes of the 32 at a that differ from the 32 at b, as a bit mask)
 * and ODD32(a) (the bytes of the 32 at a that are not 0x21 to 0x7e), then
 * includes this file: once with AVX2 (one compare a step), once with SSE2
 * or plain C (two). */

/* MATCH's head, which differs from the memory's in the bytes from `at`
 * (where MATCH's step found the first): the memory's result, with the new
 * head's Content-Length, as `near_room` when they differ only in bytes
 * vary_of allows, each now from 0x21 to 0x7e; else NULL. */
static __attribute__((noinline)) MATCH_ATTR const struct sl_h1fast *NEAR(const char *buf, size_t at)
{
    struct memo *m = &memo;
    size_t n = m->len;
    if (m->near == NEAR_UNSEEN) { /* once a head: not for one of another target */
        size_t first = at;        /* a byte from `at` on differs */
        while (buf[first] == m->head[first])
            first++;
        if (first < m->lines) return NULL;
        vary_of(m);
    }
    for (; at + 32 <= n; at += 32) {
        uint32_t d = DIFF32(buf + at, m->head + at);
        if (d && !may_differ(m, at, d, ODD32(buf + at))) return NULL;
    }
    if (at + 16 <= n) {
        uint32_t d = differ16(buf + at, m->head + at);
        if (d && !may_differ(m, at, d, odd16(buf + at))) return NULL;
        at += 16;
    }
    if (at < n) { /* the 16 bytes before n, shifted: none past the head (n >= 18) */
        size_t sh = at - (n - 16);
        uint32_t d = differ16(buf + n - 16, m->head + n - 16) >> sh;
        if (d && !may_differ(m, at, d, odd16(buf + n - 16) >> sh)) return NULL;
    }
    /* near_room is the memory's result (read_new), but for Content-Length:
     * read again whether or not its digits changed, fewer instructions
     * than a compare (three or four digits) */
    if (m->cl_len && !length_again(&near_room, buf + m->cl_at, m->cl_len)) return NULL;
    near_reads++;
    answered(m);
    return &near_room;
}

/* A head at buf that may be the memory's (memo_may_start): the memory's
 * result when it is the same, byte for byte; when it differs only in
 * bytes vary_of allows (a trace id, a request id, another key of one
 * length), NEAR's (read whole it would be the same, offsets included: no
 * serial, as the lane takes the memory's own key only for the memory's
 * own bytes); else NULL, nothing read. The compare makes no call until a
 * byte differs: a head the memory holds costs a dozen instructions and a
 * few a step of 32 bytes. */
static MATCH_ATTR const struct sl_h1fast *MATCH(const char *buf)
{
    struct memo *m = &memo;
    size_t n = m->len, at = 0;
    for (; at + 32 <= n; at += 32)
        if (DIFF32(buf + at, m->head + at)) return NEAR(buf, at);
    if (at + 16 <= n) {
        if (differ16(buf + at, m->head + at)) return NEAR(buf, at);
        at += 16;
    }
    if (at < n && differ16(buf + n - 16, m->head + n - 16) >> (at - (n - 16))) return NEAR(buf, at);
    answered(m);
    return &m->out;
}

/* Whether the n bytes at p (the head's, readable) are shape s's lines
 * but where its vary allows a byte to differ, from 0x21 to 0x7e; UNSEEN:
 * a byte differs and vary is not made yet (it is 0 until shape_vary). */
static inline __attribute__((always_inline)) MATCH_ATTR enum like LIKE(const struct shape *s,
                                                                       const char *p, size_t n)
{
    size_t at = 0;
    for (; at + 32 <= n; at += 32) {
        uint32_t d = DIFF32(p + at, s->block + at);
        if (d && (d & (ODDL32(p + at) | ~shape_vary32(s, at)))) goto differs;
    }
    if (at < n) { /* the 32 bytes before n, shifted: none past the lines (n >= SHAPE_MIN) */
        size_t sh = at + 32 - n;
        uint32_t d = DIFF32(p + n - 32, s->block + n - 32) >> sh;
        if (d && (d & ((ODDL32(p + n - 32) >> sh) | ~shape_vary32(s, at)))) goto differs;
    }
    return LIKE_YES;
differs:
    return s->near == NEAR_UNSEEN ? LIKE_UNSEEN : LIKE_NO;
}

/* LIKE once vary is made (out of line: once a shape). */
static __attribute__((noinline, cold)) MATCH_ATTR bool LIKE_MADE(struct shape *s, const char *p,
                                                                 size_t n)
{
    return shape_vary(s) && LIKE(s, p, n) == LIKE_YES;
}

/* The header lines of the head at buf, from ls (its request line read,
 * HTTP/1.1), read from the thread's shapes (sl_h1fast_lines_fn): the
 * first whose lines end where the head may (a blank line there) and
 * differ from the head's only where the shape's vary allows. A head alone
 * in its read (a GET's, most often) ends the buffer: the shapes of that
 * length are tried first, found by a compare of their sixteen lengths
 * (two SSE2 compares). */
static LINES_ATTR MATCH_ATTR bool LINES(const char *buf, size_t lim, size_t ls, bool get,
                                        const struct sl_h1fast_key *k, struct sl_h1fast *out)
{
    const char *p = buf + ls;
    size_t left = lim - ls;
    if (left < SHAPE_MIN) return false;
    struct shape *all = shapes;
    __asm__("" : "+r"(all)); /* one address from the thread pointer, not one an entry */
    for (unsigned ends = shapes_of_len(left, false); ends; ends &= ends - 1) {
        struct shape *s = &all[__builtin_ctz(ends)];
        if (s->gen != k->gen || s->cookies != k->cookies || !ends_at(p, left)) continue;
        enum like l = LIKE(s, p, left);
        if (l == LIKE_YES || (l == LIKE_UNSEEN && LIKE_MADE(s, p, left))) {
            if (shape_take(s, buf, ls, get, out)) return true;
        } else {
            shape_failed(s, (size_t)(s - all));
        }
    }
    /* lines that end before the buffer does */
    for (unsigned shorter = shapes_of_len(left, true); shorter; shorter &= shorter - 1) {
        size_t i = (size_t)__builtin_ctz(shorter), n = shape_lens[i];
        if (!ends_at(p, n)) continue;
        struct shape *s = &all[i];
        if (s->gen != k->gen || s->cookies != k->cookies) continue;
        enum like l = LIKE(s, p, n);
        if (l == LIKE_YES || (l == LIKE_UNSEEN && LIKE_MADE(s, p, n))) {
            if (shape_take(s, buf, ls, get, out)) return true;
        } else {
            shape_failed(s, i);
        }
    }
    return false;
}
