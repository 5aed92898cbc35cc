/* SPDX-License-Identifier: BSD-2-Clause */
/* h1count.c - for tests/fuzz/diff_llhttp.sh: reads streams from stdin, each
 * a 4-byte big-endian length and its bytes, and prints for each how many
 * request heads sluice's HTTP/1 scanner reports (whole, then split into
 * 7-byte pieces: the smaller of the two), or "h2" when it hands the
 * stream to HTTP/2, "pass N" when it passes the stream through. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../core/http/http1.h"

static int count(const uint8_t *buf, size_t len, size_t piece, int *state)
{
    static struct sl_h1 s;
    sl_h1_fini(&s); /* the last stream's head copies */
    sl_h1_init(&s, SL_H1_KEY_HEADER, "x-api-key");
    int heads = 0;
    *state = 0;
    for (size_t off = 0; off < len;) {
        size_t n = piece && piece < len - off ? piece : len - off;
        enum sl_h1_event ev;
        off += sl_h1_feed(&s, buf + off, n, &ev);
        if (ev == SL_H1_HEAD) heads++;
        if (ev == SL_H1_H2) {
            *state = 2;
            return heads;
        }
        if (ev == SL_H1_PASSTHROUGH) *state = 1;
    }
    return heads;
}

int main(void)
{
    uint8_t hdr[4];
    static uint8_t buf[1 << 20];
    while (fread(hdr, 1, 4, stdin) == 4) {
        size_t len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
        if (len > sizeof buf || fread(buf, 1, len, stdin) != len) return 2;
        int st1, st2;
        int a = count(buf, len, 0, &st1), b = count(buf, len, 7, &st2);
        if (st1 == 2 || st2 == 2)
            printf("h2\n");
        else
            printf("%s%d\n", st1 || st2 ? "pass " : "", a < b ? a : b);
    }
    return 0;
}
