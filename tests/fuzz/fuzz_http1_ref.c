/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_http1_ref.c - libFuzzer target: sluice's HTTP/1 scanner never counts
 * fewer request heads than a reference parser finds (issue 18 item 10).
 *
 * The reference is libhttp-parser run plainly, as a server would: it
 * counts every head it completes and stops at its first error (a server
 * answers 400 and closes); after an upgrade request it starts over (an
 * Upgrade answered 200 leaves an HTTP/1 connection). sluice's scanner
 * (core/http/http1.h) gets the same bytes, split at points from the first
 * input byte, and must report at least as many heads, and never pass a
 * stream through that the reference found a head in. A stream sluice
 * hands to HTTP/2 (the preface) is not compared. node's llhttp is the
 * second reference, run over the same seeds by tests/fuzz/diff_llhttp.sh.
 * Chunked bodies as nginx and python frame them (a bare LF ends a line,
 * which http-parser does not take) are tests/fuzz/fuzz_chunked.c's.
 *
 * Debian builds http-parser without HTTP_PARSER_STRICT, and strict mode is
 * what a server's reading is compared with: streams holding a CR that is
 * not followed by LF are skipped (the non-strict build takes any byte
 * after a CR as its LF, which no server does: nginx, llhttp and python
 * end lines at LF and refuse a stray CR or keep it in the line). The
 * other non-strict leniency, the letters of "HTTP/", sluice's reading
 * shares.
 */
#include <http_parser.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_headers_complete(http_parser *p)
{
    (*(int *)p->data)++;
    return 0;
}

static const http_parser_settings ref_settings = {.on_headers_complete = on_headers_complete};

/* Heads the reference completes before its first error. */
static int reference(const uint8_t *buf, size_t len)
{
    http_parser p;
    int heads = 0;
    size_t off = 0;
    while (off < len) {
        http_parser_init(&p, HTTP_REQUEST);
        p.data = &heads;
        size_t n = http_parser_execute(&p, &ref_settings, (const char *)buf + off, len - off);
        if (HTTP_PARSER_ERRNO(&p) != HPE_OK) break;
        if (!p.upgrade) break; /* all consumed */
        off += n;              /* an upgrade request: its answer may be a 200 */
    }
    return heads;
}

/* Heads sluice reports; -1: the stream went to HTTP/2. */
static int sluice(const uint8_t *buf, size_t len, unsigned seed, bool *pass)
{
    static struct sl_h1 s;
    sl_h1_fini(&s); /* the last stream's head copies */
    sl_h1_init(&s, SL_H1_KEY_HEADER, "x-api-key");
    int heads = 0;
    size_t off = 0;
    *pass = false;
    while (off < len) {
        size_t piece = seed ? 1 + (seed = seed * 1103515245 + 12345) % 29 : len - off;
        if (piece > len - off) piece = len - off;
        enum sl_h1_event ev;
        off += sl_h1_feed(&s, buf + off, piece, &ev);
        if (ev == SL_H1_HEAD) heads++;
        if (ev == SL_H1_H2) return -1;
        if (ev == SL_H1_PASSTHROUGH) *pass = true;
    }
    return heads;
}

/* A CR not followed by LF (see above). */
static bool stray_cr(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\r' && (i + 1 == n || p[i + 1] != '\n')) return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || stray_cr(data + 1, size - 1)) return 0;
    int want = reference(data + 1, size - 1);
    bool pass;
    int got = sluice(data + 1, size - 1, data[0], &pass);
    if (got < 0) return 0;
    if (got < want) abort();       /* a head a server runs went uncounted */
    if (pass && want > 0) abort(); /* passthrough of a stream that is HTTP */
    return 0;
}
