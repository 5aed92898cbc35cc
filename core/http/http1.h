/* SPDX-License-Identifier: BSD-2-Clause */
/* http1.h - finds HTTP/1.0 and HTTP/1.1 request heads in one direction of a
 * byte stream, and extracts what request rules match on.
 *
 * An incremental scanner over Debian's libhttp-parser 2.9.4: bytes go in in
 * stream order, split anywhere (byte by byte works); every complete request
 * head is reported once, with its stream offsets, method, path, query,
 * Host, the value of one configured key (header, query parameter or
 * cookie) and Idempotency-Key. Bodies (Content-Length, chunked) are skipped
 * so the next pipelined head is found. Bytes are never changed.
 *
 * The rule of doubt: the scanner never stops reporting heads because it
 * could not parse one. Passthrough is only for a stream whose first line
 * is not shaped like a request line (not HTTP at all). A head that
 * http-parser refuses, a head over SL_H1_HEAD_MAX, or a GET/HEAD with a
 * body is reported with `odd` set (the reason says why), and from then on
 * the stream is read by the conservative reading (see http1.c): every
 * head-shaped line sequence is a head, bodies are not skipped, so nothing
 * a server might run as a request goes uncounted. So is the stream after a
 * chunked body that servers frame differently (sl_h1_odd_body: "2c;\n",
 * an extension nginx ends at a bare LF and http-parser reads on). An upgrade (Upgrade,
 * CONNECT) does not stop the scan either: the request is reported and
 * scanning goes on, since only the peer's 101 (which this direction never
 * sees) makes it a tunnel; a stream that opens, or continues after an
 * upgrade request, with the HTTP/2 connection preface is reported as
 * SL_H1_H2 (hand it to core/http/h2.h).
 *
 * Scanning ahead: a stream's bytes never change, so the caller needs no
 * "uncommitted" state. Feed every byte exactly once, as soon as it is seen
 * (a peek, or the buffer of a write), remember the heads by offset, and
 * next time feed only the bytes past sl_h1_pos(): buf + (sl_h1_pos(s) -
 * stream_pos).
 *
 * Common complete heads are read by a one-pass fast path (core/http/h1fast.h)
 * that gives exactly http-parser's result or declines; such a head is
 * kept as slices of the buffer fed (sl_h1_fast), copied into a struct
 * sl_h1_head only when sl_h1_head() asks.
 *
 * Memory: the scanner itself is small (~0.5 KB); the bounded copies of
 * a head (struct sl_h1_head, ~5 KB) are allocated from sluice's heap only
 * while http-parser or the conservative reading needs them, and freed
 * when the fast path reads a head (an idle keep-alive connection keeps
 * none). No memory: the rest of the stream passes (SL_H1_PASSTHROUGH).
 * sl_h1_fini frees them. Not thread-safe: one stream, one caller.
 * Values longer than their buffer are truncated and flagged; a key or
 * Idempotency-Key value that is cut ends in '#' and 16 hex digits of a
 * hash of the whole value, so long values that differ anywhere differ.
 * A long origin-form URL has its complete path segments resolved (".",
 * "..", empty) when the buffer fills, so the path the server acts on fits.
 * Query parameters and cookies are compared as sent: no percent-decoding.
 */
#ifndef SL_HTTP1_H
#define SL_HTTP1_H

#include <http_parser.h>
#include <stdbool.h>

#include "h1fast.h"
#include <stddef.h>
#include <stdint.h>

#define SL_H1_HEAD_MAX   16384 /* a longer head is decided when it reaches this (odd) */
#define SL_H1_METHOD_MAX 24
#define SL_H1_URL_MAX    2048 /* path + query as sent */
#define SL_H1_HOST_MAX   256
#define SL_H1_VALUE_MAX  256  /* the key's value, Idempotency-Key */
#define SL_H1_NAME_MAX   64   /* header, parameter or cookie name */
#define SL_H1_COOKIE_MAX 2048 /* a cookie past this much of a Cookie line counts as missing */

enum sl_h1_key_kind {
    SL_H1_KEY_NONE,
    SL_H1_KEY_HEADER, /* a request header, name compared case-insensitively */
    SL_H1_KEY_QUERY,  /* a query parameter, name compared exactly */
    SL_H1_KEY_COOKIE, /* a cookie in the Cookie header(s), name compared exactly */
};

/* A bounded copy: len bytes in text, then a NUL (use len: a value may
 * hold NUL bytes the program's parser tolerated); `truncated` when the
 * value was longer than the buffer. */
struct sl_h1_text {
    size_t len;
    bool present;
    bool truncated;
    uint64_t hash; /* FNV-1a of every byte appended, kept or cut */
};

/* Why a head was odd (reported, but not as http-parser reads it). */
enum sl_h1_odd {
    SL_H1_ODD_NONE,
    SL_H1_ODD_SYNTAX,   /* http-parser refused it: the conservative reading found it */
    SL_H1_ODD_LONG,     /* longer than SL_H1_HEAD_MAX: decided before its end */
    SL_H1_ODD_GET_BODY, /* a GET or HEAD with a body: the body is scanned for heads */
    SL_H1_ODD_PREFACE,  /* a broken HTTP/2 connection preface */
    SL_H1_ODD_CHUNKED,  /* a chunked body servers frame differently (sl_h1_odd_body) */
    SL_H1_ODD_CUT,      /* a request line cut by where a body may end: counted twice */
};

/* A short reason for logs ("a header line http-parser refuses"). */
const char *sl_h1_odd_reason(enum sl_h1_odd why);

struct sl_h1_head {
    uint64_t start, end; /* stream offsets: the head is [start, end), end after the blank line */
    char method[SL_H1_METHOD_MAX]; /* "GET" */
    char url[SL_H1_URL_MAX];       /* the request target as sent, NUL-terminated */
    struct sl_h1_text url_info;
    size_t path_off, path_len;   /* the path inside url (absolute-form: its path part) */
    size_t query_off, query_len; /* the query inside url (after '?'), len 0 when none */
    char host[SL_H1_HOST_MAX];   /* absolute-form: the URL's host (as servers use it); else Host */
    struct sl_h1_text host_info;
    char key[SL_H1_VALUE_MAX]; /* the configured key's value; present=false: missing.
                                  A header key's lines are joined by ", " (its
                                  copies, core/http/reqkey.h); cut copies: missing */
    struct sl_h1_text key_info;
    char idem[SL_H1_VALUE_MAX]; /* Idempotency-Key */
    struct sl_h1_text idem_info;
    uint8_t http_major, http_minor;
    bool chunked;    /* Transfer-Encoding: chunked */
    bool has_length; /* Content-Length given */
    uint64_t content_length;
    bool body;          /* a body follows (HTTP/2: the HEADERS frame lacked END_STREAM) */
    bool keep_alive;    /* another request may follow on the connection */
    bool upgrade;       /* Upgrade or CONNECT (the scan goes on: only a 101 makes a tunnel) */
    enum sl_h1_odd odd; /* not NONE: read under the rule of doubt (see above) */
    char cookie[SL_H1_COOKIE_MAX]; /* every Cookie line, joined by "; " (when wanted) */
    struct sl_h1_text cookie_info;
};

enum sl_h1_event {
    SL_H1_MORE,        /* every byte consumed, no head completed: feed more */
    SL_H1_HEAD,        /* a head completed: sl_h1_head() holds it; feed the rest */
    SL_H1_PASSTHROUGH, /* not HTTP: nothing more will be reported (all bytes consumed) */
    SL_H1_H2,          /* the stream opened with the 24-byte HTTP/2 preface, now consumed:
                          continue with core/http/h2.h from sl_h1_pos() */
};

enum sl_h1_state {
    SL_H1_IDLE,    /* between requests: the next byte starts a head */
    SL_H1_IN_HEAD, /* inside an incomplete head that started at sl_h1_head_start() */
    SL_H1_IN_BODY, /* inside a body */
    SL_H1_PASS,    /* not HTTP, or HTTP/2: no more heads */
};

struct sl_h1 {
    http_parser parser;
    enum sl_h1_state state;
    enum sl_h1_key_kind key_kind;
    char key_name[SL_H1_NAME_MAX];
    size_t key_name_len;
    uint64_t pos;        /* stream offset of the next byte to feed */
    uint64_t head_start; /* IN_HEAD: where the head began */
    uint64_t body_end;   /* where the last message with a body ended (0: none yet) */
    uint64_t ck_left;    /* the chunk-size being read, then the chunk's data bytes left */
    uint64_t odd_body;   /* the first byte of a body servers frame differently (0: none) */
    uint64_t preface_at; /* where the preface may begin (0, or after an upgrade request) */
    bool want_cookie;    /* collect Cookie lines into head.cookie */
    bool trust_bodies;   /* a GET's body is skipped like any other (outbound) */
    bool reported;       /* a head was reported: the stream is HTTP */
    /* the conservative reading (http1.c): its line state, the method it read */
    bool doubt;   /* the stream is read by it from now on */
    uint8_t ck;   /* a chunked body's framing, followed strictly (enum in http1.c) */
    bool rd_cb;   /* it feeds the head's fields (http-parser gave up) */
    bool rd_skip; /* the rest of an already reported head: not a new one */
    uint8_t rd, rd_n, rd_major, rd_minor;
    bool rd_09;          /* the request line had no version (HTTP/0.9 GET) */
    enum sl_h1_odd odd;  /* the head being read is odd, why */
    uint64_t line_start; /* where the line being read began */
    /* a head it read gave Content-Length: a head may also begin where
     * that body ends, at any byte (first and last such header) */
    uint64_t rd_len, len_first, len_last;
    bool rd_len_bad;
    uint8_t nlens;
    uint8_t preface;   /* stream bytes held while they match the HTTP/2 preface (at preface_at) */
    bool head_done;    /* set by the parser's callback: a head just completed */
    bool message_done; /* set by the parser's callback: a message just ended */
    /* the fast path's (fast_key's comment below; here, where they fill
     * the words before resync: struct sl_req_conn stays within 768 bytes) */
    bool fresh;
    bool slow_only;     /* tests: http-parser alone (the reference) */
    bool fast_found;    /* the last head reported is `fast`, not copied into head */
    uint64_t resync[2]; /* stream offsets where a line is taken to begin (0: none) */
    char rd_method[SL_H1_METHOD_MAX];
    /* the header being read: its name (bounded), which field it feeds */
    size_t field_len; /* its name is in the slow readers' block (http1.c) */
    bool field_long;
    bool in_value;
    bool cookie_more;  /* the Cookie (or key) value being read has begun */
    uint8_t key_lines; /* lines of the key header in the head (saturating) */
    int target;        /* enum in http1.c: which buffer the current value goes to */
    /* the fast path (core/http/h1fast.h): the key's name once per connection;
     * `fresh`: http-parser is where a new request begins (it has not been
     * fed since init or since a kept-alive message ended), so a head the
     * fast path reads leaves it exactly as http-parser reading it would */
    struct sl_h1fast_key fast_key;
    uint64_t fast_body;              /* IN_BODY after a fast head: body bytes left */
    uint64_t fast_heads;             /* heads the fast path read (tests, benchmarks) */
    const struct sl_h1fast *fast_at; /* the last fast head (h1fast.c's thread-local
                                        memory): slices of fast_buf */
    const char *fast_buf;            /* the buffer of the feed that read it */
    size_t fast_len;
    struct sl_h1_head *head; /* allocated while the slow readers need it (NULL: none) */
};

/* Starts a stream at offset 0. kind/name: the key to extract (name may be
 * NULL for SL_H1_KEY_NONE; longer than SL_H1_NAME_MAX - 1: never found). */
void sl_h1_init(struct sl_h1 *s, enum sl_h1_key_kind kind, const char *name);

/* Feeds up to len bytes at stream offset sl_h1_pos(s). Stops right after
 * the first head that completes (SL_H1_HEAD) so the caller can decide it
 * before feeding the rest. Returns how many bytes were consumed; *ev says
 * why it stopped. */
size_t sl_h1_feed(struct sl_h1 *s, const void *buf, size_t len, enum sl_h1_event *ev);

/* The writer of this stream is the program itself (outbound): a GET's body
 * is framed by Content-Length as the server will read it, not scanned for
 * heads (the conservative reading guards against hostile clients). */
static inline void sl_h1_trust_bodies(struct sl_h1 *s)
{
    s->trust_bodies = true;
}

/* Collect every Cookie line into head.cookie (a rule keys on a cookie). */
static inline void sl_h1_want_cookies(struct sl_h1 *s)
{
    s->want_cookie = true;
    s->fast_key.cookies = true;
}

/* Every head through http-parser, never the fast path (the reference the
 * differential fuzz target and the benchmark compare with). */
static inline void sl_h1_slow_only(struct sl_h1 *s)
{
    s->slow_only = true;
}

/* The last completed head (valid after SL_H1_HEAD until the next feed;
 * a fast head is copied from the buffer last fed, which must still hold
 * its bytes). NULL when there is no memory for the copy. */
const struct sl_h1_head *sl_h1_head(struct sl_h1 *s);

/* The last completed head when the fast path read it (valid after
 * SL_H1_HEAD until the next feed, and until this thread's next fast read
 * of any stream: it is in h1fast.c's thread-local memory; sl_h1_head()
 * stays valid until the next feed): its slices are into *base (the buffer
 * given to the feed that returned it, at the head's first byte); its
 * stream offsets are [sl_h1_head_start, sl_h1_pos). NULL: use
 * sl_h1_head(). */
static inline const struct sl_h1fast *sl_h1_fast(const struct sl_h1 *s, const char **base)
{
    if (!s->fast_found) return NULL;
    *base = s->fast_buf;
    return s->fast_at;
}

/* The fast head the scanner's last feed read (the thread's memory of it,
 * `serial`: sl_h1fast_memory), or one differing from it only in header
 * values (sl_h1fast_again), again at the scanner's position, filling buf
 * exactly, without a body: the scanner moves past it as sl_h1_feed would
 * (SL_H1_HEAD, sl_h1_fast valid) and it returns len; 0 when it is not so
 * (the scanner untouched). Only for a scanner whose last feed read such a
 * head and nothing else, which the caller knows (core/http/request.c's
 * lane): the state the head leaves (its method and version, no body) is
 * then already the scanner's. */
size_t sl_h1_feed_again(struct sl_h1 *s, const char *buf, size_t len, uint64_t serial);

/* The fast head at the scanner's position, where sl_h1_feed would read
 * the fast path first (an idle scanner, buf from the position): read,
 * the scanner untouched; NULL when sl_h1_feed would not take it so. Then
 * sl_h1_take(s, f, buf, len), with nothing fed in between, moves the
 * scanner past it as that feed would (SL_H1_HEAD, sl_h1_fast valid) and
 * returns its length: one read of the head for a caller that decides
 * before the scanner moves (core/http/request.c's whole()). */
const struct sl_h1fast *sl_h1_peek(const struct sl_h1 *s, const char *buf, size_t len);
size_t sl_h1_take(struct sl_h1 *s, const struct sl_h1fast *f, const char *buf, size_t len);

/* Frees what the scanner allocated (it may be initialised again). */
void sl_h1_fini(struct sl_h1 *s);

/* Shared with core/http/h2.c. A bounded copy of n bytes into buf (cap bytes). */
void sl_h1_text_set(char *buf, size_t cap, struct sl_h1_text *t, const char *at, size_t n);
/* Appends n bytes (bounded, hashed). */
void sl_h1_text_append(char *buf, size_t cap, struct sl_h1_text *t, const char *at, size_t n);
/* A cut value gets the hash of the whole value as its last 17 bytes
 * ("#" and 16 hex digits): values that differ past the cut stay apart. */
void sl_h1_text_seal(char *buf, size_t cap, struct sl_h1_text *t);
/* The head's key from its query string (per = query:NAME), if the URL was
 * not cut: shared by the HTTP/1 and HTTP/2 scanners. */
void sl_h1_query_key(struct sl_h1_head *h, const char *name, size_t name_len);

/* Finds `name` in a list "a=1<sep>b=2" (query: '&'; cookies: ';' with
 * optional spaces); the first occurrence wins; no percent-decoding. */
bool sl_h1_param(const char *s, size_t len, char sep, const char *name, size_t name_len,
                 const char **val, size_t *val_len);

static inline uint64_t sl_h1_pos(const struct sl_h1 *s)
{
    return s->pos;
}

static inline enum sl_h1_state sl_h1_state(const struct sl_h1 *s)
{
    return s->state;
}

/* The end of the last message that had a body (its last byte + 1), 0
 * before any: a caller that needs a message's end watches it change. */
static inline uint64_t sl_h1_body_end(const struct sl_h1 *s)
{
    return s->body_end;
}

/* Where the framing of a chunked body left the common ground of the
 * servers a request may reach (0: it never did). A chunk-size line is
 * HEX[;ext]CRLF with a token-ish extension, chunk data is followed by
 * CRLF, trailer lines are text ended by CRLF: on that ground nginx, node's
 * llhttp, python and http-parser frame a body alike. Off it they part (nginx
 * and python end a line at a bare LF, http-parser skips an extension up to
 * a CR, llhttp refuses both), so what one server runs as the next request
 * may be chunk data to another: from this byte on the stream is read by the
 * conservative reading (heads looked for at every line start, no body
 * skipped, for the rest of the stream), and the caller counts the body odd
 * (reason SL_H1_ODD_CHUNKED). Set once: the stream is never framed by its
 * bodies again. */
static inline uint64_t sl_h1_odd_body(const struct sl_h1 *s)
{
    return s->odd_body;
}

/* The bytes of the framing line in which sl_h1_odd_body() was found, from
 * its start up to and including the odd byte (its first 23 bytes and that
 * byte when longer), raw: *len set; NULL when there are none. */
const char *sl_h1_odd_body_line(const struct sl_h1 *s, size_t *len);

/* IN_HEAD: the stream offset where the incomplete head began. */
static inline uint64_t sl_h1_head_start(const struct sl_h1 *s)
{
    return s->head_start;
}

#endif
