/* SPDX-License-Identifier: BSD-2-Clause */
/* tiein.c - inbound TLS sessions without a socket of their own, tied by
 * the random of the ClientHello their server read: see tiein.h. */
#include "tiein.h"

#include <stdatomic.h>
#include <string.h>

/* Handshakes under way at once whose hello was read and whose session has
 * not yet been tied: beyond that, a session is not tied (and said, with
 * that cause). Entries of sessions tied over a socket (nginx) go when the
 * connection ends or its library's handshake starts. */
#define HELLOS  1024
#define CLAIMED (-2) /* a slot being written */
static struct {
    _Atomic int fd1; /* fd + 1; 0: free */
    unsigned char random[SL_TLS_RANDOM_LEN];
} hellos[HELLOS];

static const char *_Atomic why_untied;

void sl_tiein_hello(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    if (n < SL_TIEIN_HEAD || p[0] != 0x16 || p[5] != 0x01)
        return;          /* not a whole ClientHello head */
    sl_tiein_forget(fd); /* an earlier connection on the same number */
    for (int i = 0; i < HELLOS; i++) {
        int none = 0;
        if (!atomic_compare_exchange_strong(&hellos[i].fd1, &none, CLAIMED)) continue;
        memcpy(hellos[i].random, p + 11, SL_TLS_RANDOM_LEN); /* claimed, then published */
        atomic_store_explicit(&hellos[i].fd1, fd + 1, memory_order_release);
        return;
    }
}

void sl_tiein_forget(int fd)
{
    for (int i = 0; i < HELLOS; i++) {
        int mine = fd + 1;
        if (atomic_compare_exchange_strong(&hellos[i].fd1, &mine, 0)) return;
    }
}

int sl_tiein_find(const unsigned char r[SL_TLS_RANDOM_LEN])
{
    for (int i = 0; i < HELLOS; i++) {
        int f = atomic_load_explicit(&hellos[i].fd1, memory_order_acquire);
        if (f <= 0 || memcmp(hellos[i].random, r, SL_TLS_RANDOM_LEN)) continue;
        if (atomic_compare_exchange_strong(&hellos[i].fd1, &f, 0)) return f - 1;
    }
    return -1;
}

void sl_tiein_untied(const char *why)
{
    atomic_store_explicit(&why_untied, why, memory_order_relaxed);
}

const char *sl_tiein_why(void)
{
    return atomic_load_explicit(&why_untied, memory_order_relaxed);
}
