/* SPDX-License-Identifier: BSD-2-Clause */
/* tlsrec.c - the ClientHello and the record layer of TLS sluice cannot
 * decrypt: see tlsrec.h.
 *
 * Records (RFC 8446 section 5.1; the same header in TLS 1.2): a content
 * type (20 ChangeCipherSpec, 21 alert, 22 handshake, 23 application data,
 * 24 heartbeat), a legacy version 3.x and a 16-bit length of at most
 * 2^14 + 2048 (TLS 1.2's ciphertext bound, which covers TLS 1.3's 2^14 +
 * 256). Anything else makes the stream "bad": nothing more is counted, so
 * a connection that is not TLS after all is never held.
 */
#include "tlsrec.h"

#include <string.h>

#define REC_CCS     20
#define REC_HANDSHK 22
#define REC_APPDATA 23
#define REC_MAX     (16384 + 2048)
#define HELLO_MAX   8192 /* a ClientHello longer than this is not read */

static unsigned be16(const uint8_t *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

/* A server name as it may be logged and matched: printable ASCII with no
 * space (RFC 6066: a DNS host name); anything else is dropped. */
static void copy_name(char *dst, size_t cap, const uint8_t *p, size_t n)
{
    if (n >= cap) return;
    for (size_t i = 0; i < n; i++)
        if (p[i] <= 0x20 || p[i] >= 0x7f) return;
    memcpy(dst, p, n);
    dst[n] = 0;
}

static void alpn(struct sl_tls_hello *h, const uint8_t *p, size_t n)
{
    if (n < 2 || be16(p) != n - 2) return;
    h->alpn = true;
    for (size_t off = 2; off < n;) {
        size_t k = p[off++];
        if (k == 0 || k > n - off) return;
        if (k == 2 && !memcmp(p + off, "h2", 2))
            h->alpn_h2 = true;
        else if (k == 8 && !memcmp(p + off, "http/1.1", 8))
            h->alpn_h1 = true;
        else
            h->alpn_other = true;
        off += k;
    }
}

static void sni(struct sl_tls_hello *h, const uint8_t *p, size_t n)
{
    if (n < 2 || be16(p) != n - 2) return;
    for (size_t off = 2; off + 3 <= n;) {
        size_t k = be16(p + off + 1);
        if (k > n - off - 3) return;
        if (p[off] == 0) { /* host_name */
            copy_name(h->sni, sizeof h->sni, p + off + 3, k);
            return;
        }
        off += 3 + k;
    }
}

/* The ClientHello body (after the 4-byte handshake header). */
static int hello_body(const uint8_t *p, size_t n, struct sl_tls_hello *h)
{
    size_t off = 2 + 32; /* legacy_version, random */
    if (off + 1 > n) return -1;
    off += 1 + p[off]; /* legacy_session_id */
    if (off + 2 > n) return -1;
    off += 2 + be16(p + off); /* cipher_suites */
    if (off + 1 > n) return -1;
    off += 1 + p[off];      /* legacy_compression_methods */
    if (off == n) return 1; /* no extensions (TLS 1.2 allows it) */
    if (off + 2 > n || be16(p + off) != n - off - 2) return -1;
    for (off += 2; off + 4 <= n;) {
        unsigned type = be16(p + off);
        size_t k = be16(p + off + 2);
        if (k > n - off - 4) return -1;
        if (type == 0) sni(h, p + off + 4, k);
        if (type == 16) alpn(h, p + off + 4, k);
        off += 4 + k;
    }
    return off == n ? 1 : -1;
}

int sl_tls_hello_parse(const void *buf, size_t len, struct sl_tls_hello *h)
{
    const uint8_t *p = buf;
    uint8_t msg[HELLO_MAX];
    size_t have = 0, off = 0;
    memset(h, 0, sizeof *h);
    /* the handshake message may span records: their bodies are joined */
    for (;;) {
        if (len - off < 5) return 0;
        if (p[off] != REC_HANDSHK || p[off + 1] != 3) return -1;
        size_t k = be16(p + off + 3), here = len - off - 5 < k ? len - off - 5 : k;
        if (k == 0 || k > REC_MAX || here > sizeof msg - have) return -1;
        memcpy(msg + have, p + off + 5, here);
        have += here;
        if (have >= 4) {
            if (msg[0] != 1) return -1; /* client_hello */
            size_t want = (size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3];
            if (want + 4 > sizeof msg) return -1;
            if (have >= want + 4) return hello_body(msg + 4, want, h);
        }
        if (here < k) return 0; /* the record goes on in a later write */
        off += 5 + k;
    }
}

bool sl_tls_hello_exact(const struct sl_tls_hello *h)
{
    return !h->alpn_h2 && !h->alpn_other;
}

void sl_tlsrec_init(struct sl_tlsrec *r)
{
    memset(r, 0, sizeof *r);
}

void sl_tlsrec_answered(struct sl_tlsrec *r)
{
    r->answered = true;
}

/* Walks n bytes; with stop, returns at the first byte of a record that
 * begins a burst (not counting it). Returns where it stopped. */
static size_t walk(struct sl_tlsrec *r, const uint8_t *p, size_t n, bool stop)
{
    size_t off = 0;
    while (off < n && !r->bad) {
        if (r->left) {
            size_t k = r->left < n - off ? r->left : n - off;
            r->left -= (uint32_t)k;
            off += k;
            if (!r->left) r->after_ccs = r->type == REC_CCS;
            continue;
        }
        if (r->nhdr == 0 && p[off] == REC_APPDATA) {
            if (r->after_ccs) {
                /* TLS 1.3: the client's Finished, not a request */
            } else if (r->answered || !r->in_burst) {
                if (stop) return off;
                r->bursts++;
                r->in_burst = true;
                r->answered = false;
            }
        }
        r->hdr[r->nhdr++] = p[off++];
        if (r->nhdr < 5) continue;
        r->nhdr = 0;
        unsigned k = be16(r->hdr + 3);
        if (r->hdr[0] < 20 || r->hdr[0] > 24 || r->hdr[1] != 3 || k > REC_MAX) {
            r->bad = true;
            break;
        }
        r->type = r->hdr[0];
        r->left = k;
        if (!k) r->after_ccs = r->type == REC_CCS;
    }
    return n;
}

size_t sl_tlsrec_peek(const struct sl_tlsrec *r, const void *buf, size_t len)
{
    struct sl_tlsrec copy = *r;
    return walk(&copy, buf, len, true);
}

void sl_tlsrec_feed(struct sl_tlsrec *r, const void *buf, size_t n)
{
    walk(r, buf, n, false);
}
