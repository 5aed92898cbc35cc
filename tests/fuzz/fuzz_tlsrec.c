/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_tlsrec.c - libFuzzer target for the ClientHello reader and the
 * record walker of TLS sluice cannot decrypt (core/http/tlsrec.h).
 *
 * The first input byte is a split seed; the rest is a client's byte
 * stream. The hello's server name must be printable and terminated; the
 * stream is walked whole and in pieces (with the same answers at the same
 * offsets): both walks must count the same bursts, and a peek must point
 * inside the piece it was given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/tlsrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned seed = data[0];
    data++, size--;

    struct sl_tls_hello h;
    int got = sl_tls_hello_parse(data, size, &h);
    if (got < -1 || got > 1) abort();
    size_t n = strnlen(h.sni, sizeof h.sni);
    if (n == sizeof h.sni) abort();
    for (size_t i = 0; i < n; i++)
        if (h.sni[i] <= 0x20 || h.sni[i] >= 0x7f) abort();

    /* an answer every `gap` bytes, the pieces `step` bytes long */
    size_t gap = 1 + (seed & 0x0f) * 37, step = 1 + (seed >> 4) * 13;
    struct sl_tlsrec whole, parts;
    sl_tlsrec_init(&whole);
    sl_tlsrec_init(&parts);
    for (size_t off = 0; off < size; off += gap) {
        size_t k = size - off < gap ? size - off : gap;
        sl_tlsrec_feed(&whole, data + off, k);
        sl_tlsrec_answered(&whole);
    }
    size_t next_answer = gap;
    for (size_t off = 0; off < size;) {
        size_t k = size - off < step ? size - off : step;
        if (off + k > next_answer) k = next_answer - off;
        size_t at = sl_tlsrec_peek(&parts, data + off, k);
        if (at > k) abort();
        uint64_t before = parts.bursts;
        sl_tlsrec_feed(&parts, data + off, at);
        if (parts.bursts != before) abort(); /* a peek stops before a burst */
        sl_tlsrec_feed(&parts, data + off + at, k - at);
        off += k;
        if (off == next_answer) {
            sl_tlsrec_answered(&parts);
            next_answer += gap;
        }
    }
    if (whole.bursts != parts.bursts || whole.bad != parts.bad) abort();
    return 0;
}
