/* http1.h - finds HTTP/1.x request heads in a connection's byte stream.
 *
 * Bytes are fed in stream order, split anywhere (a head may arrive one
 * byte at a time; several pipelined requests may come in one read). The
 * scanner reports each complete request head with the stream offsets where
 * it starts and ends, and the parts the request rules look at (method,
 * path, query, Host, Cookie, Idempotency-Key and one configured header).
 * Bodies are skipped by Content-Length and chunked encoding, so the next
 * head is always found. Parsing is Debian's libhttp-parser (2.9), never our
 * own.
 *
 * What is not plain HTTP/1 is passed through from that point on: an
 * upgrade (WebSocket, h2c), CONNECT, the HTTP/2 preface, anything the
 * parser calls malformed, and a head larger than SL_H1_HEAD_MAX. The
 * program then sees exactly what it would have (it answers 400 to garbage
 * as it always did); nothing here ever changes a byte.
 *
 * Looking ahead: the shim decides a head before the program consumes it
 * (it peeks), so the scanner is a plain value: copy a struct sl_h1 and feed
 * the copy to look ahead; the original is untouched (sl_h1_copy fixes the
 * parser's back pointer). Values longer than their buffer are cut (a key
 * longer than SL_H1_VALUE_MAX bytes is counted by its first bytes).
 * No allocation, no system call.
 */
#ifndef SL_HTTP1_H
#define SL_HTTP1_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_H1_HEAD_MAX  16384 /* a longer head is passed through */
#define SL_H1_URL_MAX   2048
#define SL_H1_VALUE_MAX 512
#define SL_H1_NAME_MAX  64

enum sl_h1_state {
    SL_H1_IDLE,        /* between requests */
    SL_H1_HEAD,        /* inside a head not complete yet */
    SL_H1_BODY,        /* inside a request's body */
    SL_H1_PASSTHROUGH, /* not (or no longer) HTTP/1: nothing more is reported */
};

struct sl_h1_value {
    char text[SL_H1_VALUE_MAX];
    uint16_t len;
    bool seen;
};

struct sl_h1 {
    http_parser parser;
    enum sl_h1_state state;
    uint64_t pos;              /* stream offset of the next byte to feed */
    uint64_t head_start;       /* where the current (or last) head began */
    uint64_t head_end;         /* where the last complete head ended */
    char want[SL_H1_NAME_MAX]; /* the configured header ("" : none), lower case */

    /* the head being read */
    char method[16];
    char url[SL_H1_URL_MAX];
    uint16_t url_len;
    char field[SL_H1_NAME_MAX]; /* the header name being read, lower case, cut */
    uint16_t field_len;
    struct sl_h1_value *value; /* where the current header's value goes, or NULL */
    bool in_value;
    struct sl_h1_value host, cookie, idem, header;
    bool complete; /* a head completed in the last sl_h1_feed */
};

/* A complete head, as reported by sl_h1_feed. Pointers into the scanner
 * (valid until it is fed again); NULL when the head had no such part. */
struct sl_h1_head {
    uint64_t start, end; /* stream offsets: the head is [start, end) */
    const char *method, *path, *query, *host, *cookie, *idem, *header;
    size_t method_len, path_len, query_len, host_len, cookie_len, idem_len, header_len;
};

/* `header`: the header whose value the rules key on (case-insensitive),
 * NULL or "" for none. */
void sl_h1_init(struct sl_h1 *h, const char *header);

/* *dst = *src, ready to be fed independently. */
void sl_h1_copy(struct sl_h1 *dst, const struct sl_h1 *src);

/* Feeds up to len bytes. Stops right after a head completes (returning the
 * bytes consumed, with *head filled and the function returning true in
 * *got), else consumes everything. Feed the rest again to go on. */
size_t sl_h1_feed(struct sl_h1 *h, const char *buf, size_t len, struct sl_h1_head *head, bool *got);

static inline bool sl_h1_passthrough(const struct sl_h1 *h)
{
    return h->state == SL_H1_PASSTHROUGH;
}

/* True while the scanner is inside a head that began at h->head_start. */
static inline bool sl_h1_in_head(const struct sl_h1 *h)
{
    return h->state == SL_H1_HEAD;
}

#endif
