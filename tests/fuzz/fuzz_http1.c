/* fuzz_http1.c - libFuzzer target for the HTTP/1 request-head scanner.
 *
 * The first input byte chooses how the rest is split into feeds (1 to 256
 * bytes each), so heads broken anywhere are exercised; every reported head
 * must lie inside what was fed, and a look-ahead copy fed everything at
 * once must report the same heads as the split feeds. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t run(struct sl_h1 *h, const uint8_t *data, size_t size, size_t step)
{
    uint64_t heads = 0, sum = 0;
    size_t off = 0;
    while (off < size) {
        size_t piece = size - off < step ? size - off : step;
        size_t used = 0;
        while (used < piece) {
            struct sl_h1_head hd;
            bool got;
            size_t n = sl_h1_feed(h, (const char *)data + off + used, piece - used, &hd, &got);
            if (n == 0 && !got) abort(); /* no progress */
            used += n;
            if (!got) continue;
            if (hd.start > h->pos || hd.method_len > 15 || hd.path_len > SL_H1_URL_MAX) abort();
            heads++;
            sum = sum * 31 + hd.start + hd.path_len + hd.header_len + hd.host_len;
        }
        off += piece;
    }
    if (h->pos != size) abort();
    return heads ^ (sum << 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t step = (size_t)data[0] + 1;
    struct sl_h1 a, b;
    sl_h1_init(&a, "x-api-key");
    uint64_t one = run(&a, data + 1, size - 1, step);
    sl_h1_init(&b, "x-api-key");
    struct sl_h1 c;
    sl_h1_copy(&c, &b);
    uint64_t two = run(&c, data + 1, size - 1, size);
    if (one != two) abort(); /* split feeds and one whole feed find the same heads */
    return 0;
}
