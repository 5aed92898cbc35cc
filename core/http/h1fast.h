/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast.h - a one-pass reader of complete, common HTTP/1 request heads.
 *
 * The fast path of core/http/http1.c: given the bytes at the start of a head,
 * it either reads the whole head (up to and including its blank line) in
 * one pass and returns slices into the buffer (no copies), or declines.
 * It accepts only what it is sure http-parser 2.9.4 reads the same way:
 * "METHOD /target HTTP/1.x" with a common method, CRLF line ends,
 * printable ASCII, token header names of 1 to 63 bytes, Content-Length
 * as plain digits, a keep-alive connection. Anything else (obs-fold, tabs, control or
 * high bytes, Transfer-Encoding, Upgrade, Proxy-Connection, Connection
 * other than keep-alive, a repeated Content-Length, an empty value, a
 * head not complete in the buffer or over SL_H1FAST_MAX, a Cookie line
 * when cookies are wanted, a second line of the key header under any
 * name servers fold with it: X-API-Key, x_api_key) declines, and http1.c runs http-parser, the
 * reference. tests/fuzz/fuzz_h1fast.c holds both to the same result.
 *
 * No allocation, no clock. The result depends only on the head's bytes
 * and the key: each thread remembers the last head it read whole (up to
 * SL_H1FAST_MEMO bytes) and what it gave, so a keep-alive client sending
 * the same head again, or one that differs only inside header values (a
 * trace id or a request id per request, another key of one length),
 * costs a compare instead of a scan (h1fast.c); and the header lines of
 * the last few (8) it read, so that a head whose request line is new (a
 * path, a query string) but whose lines are those of one of them, but
 * for bytes inside values, has its request line read and its lines
 * compared, not scanned.
 */
#ifndef SL_H1FAST_H
#define SL_H1FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A longer head (or one whose end is further into the buffer) is left to
 * http-parser: it fits every bounded field of struct sl_h1_head. */
#define SL_H1FAST_MAX 1024

/* Heads up to this long are remembered per thread (see above): as long
 * as the fast path reads; about 1.2 KiB of each thread's static TLS. */
#define SL_H1FAST_MEMO SL_H1FAST_MAX

/* Shapes of header lines remembered per thread (h1fast.c's shapes:
 * each up to 640 bytes of lines, about 12.5 KiB of static TLS in all). */
#define SL_H1FAST_SHAPES 16

/* What a connection knows once: the key's header name, lowercased. */
struct sl_h1fast_key {
    char name[64]; /* lowercase, '_' as '-'; len 0: no header key */
    uint8_t len;
    bool cookies; /* cookies are wanted: a Cookie line declines */
    uint64_t gen; /* what the scan depends on (the name), hashed by sl_h1fast_key_init:
                     the thread's memo tells keys by it, so connections of one rule share it */
};

/* [off, off + len) in the buffer; len 0 with present false: absent.
 * trimmed: len without the trailing blanks http1.c's copies trim. */
struct sl_h1fast_slice {
    uint16_t off, len, trimmed;
    bool present;
};

struct sl_h1fast {
    const char *method; /* a constant, NUL-padded to 8 bytes ("GET\0\0\0\0\0") */
    uint64_t content_length;
    uint16_t end; /* the head is buf[0, end): end is after its blank line */
    uint8_t method_len;
    uint8_t http_minor;                          /* HTTP/1.0 or HTTP/1.1 */
    bool has_length;                             /* Content-Length given */
    struct sl_h1fast_slice url, host, key, idem; /* values to their CR */
    uint16_t path_len, query_off, query_len;     /* inside url (query_len 0: none) */
};

/* Sets k for a header key `name` (NULL or "": none). False: the name has
 * bytes the fast path never sees in a header name (it then never matches,
 * so heads carrying such a header decline: correct, only slower). */
bool sl_h1fast_key_init(struct sl_h1fast_key *k, const char *name, size_t len, bool cookies);

/* Reads the head at buf[0] (len bytes available). NULL: declined.
 * Otherwise the head, in thread-local memory (no copy when the head
 * repeats: the memory of the last head): valid until this thread's next
 * read. */
const struct sl_h1fast *sl_h1fast_read(const char *buf, size_t len, const struct sl_h1fast_key *k);

/* The scan a read uses (h1fast.c): the best this CPU has, or one forced. */
enum sl_h1fast_path { SL_H1FAST_BEST, SL_H1FAST_AVX2, SL_H1FAST_SSE2, SL_H1FAST_PLAIN };

/* For tests: every read, in every thread, from now on by path p (each
 * gives the same result). False, and nothing changed: this CPU or build
 * has no such path. */
bool sl_h1fast_use(enum sl_h1fast_path p);

/* For tests: the head at buf read by path p alone (no thread memory) into
 * *out. False: declined, or no such path here. */
bool sl_h1fast_scan_path(enum sl_h1fast_path p, const char *buf, size_t len,
                         const struct sl_h1fast_key *k, struct sl_h1fast *out);

/* The serial of the thread's memory of a head when f is it (unique across
 * threads and stores), else 0. */
uint64_t sl_h1fast_serial(const struct sl_h1fast *f);

/* How many heads this thread read as differing from its memory only in
 * header values' bytes (h1fast.c memo_read): the memory's result, no scan. */
uint64_t sl_h1fast_near_reads(void);

/* How many heads this thread read with header lines from its shapes
 * (h1fast.c: the lines of a recent head, whatever its request line). */
uint64_t sl_h1fast_shape_reads(void);

/* How many heads this thread's memory took (h1fast.c read_new). */
uint64_t sl_h1fast_kept(void);

/* For tests: this thread's memory is emptied (its next head read whole is
 * remembered). */
void sl_h1fast_forget(void);

/* The serial of the thread's memory of a head when f, a read of this
 * thread's (sl_h1fast_read, sl_h1fast_again), is it or was read from it
 * as a head differing only in header values (a near read: the memory's
 * result, with the new head's Content-Length), else 0. A near read's key
 * is its own: only sl_h1fast_serial's head has the memory's. */
uint64_t sl_h1fast_memory(const struct sl_h1fast *f);

/* sl_h1fast_read when the thread's memory is still `serial` and buf
 * begins with its head or one that differs from it only in header values
 * (with the same key): that head's read (sl_h1fast_serial tells which);
 * else NULL, nothing read. */
const struct sl_h1fast *sl_h1fast_again(const char *buf, size_t len, const struct sl_h1fast_key *k,
                                        uint64_t serial);

#endif
