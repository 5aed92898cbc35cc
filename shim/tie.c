/* SPDX-License-Identifier: BSD-2-Clause */
/* tie.c - which socket a TLS session without a descriptor of its own
 * writes to: see tie.h. Two ways in: the first send a handshake step makes
 * (curl's own BIO, GnuTLS's push function), or, for sessions over memory
 * BIOs, the ClientHello carrying the session's client random. */
#include "tie.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* Sessions over a BIO of the program's own (curl's), which SSL_get_wfd
 * cannot name, tied to the socket their handshake's first nested send
 * reached (sl_tls_tie), and inbound sessions tied by their ClientHello
 * (tiein.h). A thousand at once; beyond that, not seen. */
#define TIES 1024
static struct {
    const void *_Atomic ssl;
    _Atomic int fd;
} ties[TIES];

_Thread_local void *sl_tls_tying;

void sl_tls_tie(int fd)
{
    const void *ssl = sl_tls_tying;
    sl_tls_tying = NULL; /* the first send is the session's socket */
    sl_tls_tie_to(ssl, fd);
}

void sl_tls_tie_to(const void *ssl, int fd)
{
    for (int i = 0; i < TIES; i++) {
        const void *none = NULL;
        if (atomic_load_explicit(&ties[i].ssl, memory_order_relaxed) == ssl) {
            atomic_store(&ties[i].fd, fd);
            return;
        }
        if (atomic_compare_exchange_strong(&ties[i].ssl, &none, ssl)) {
            atomic_store(&ties[i].fd, fd);
            return;
        }
    }
}

int sl_tls_tied_fd(const void *ssl)
{
    for (int i = 0; i < TIES; i++)
        if (atomic_load_explicit(&ties[i].ssl, memory_order_acquire) == ssl)
            return atomic_load(&ties[i].fd);
    return -1;
}

void sl_tls_untie(const void *ssl)
{
    for (int i = 0; i < TIES; i++) {
        const void *mine = ssl;
        if (atomic_compare_exchange_strong(&ties[i].ssl, &mine, NULL)) return;
    }
}

/* Sessions waiting for their ClientHello to reach a socket: a few dozen
 * handshakes at once; beyond that a session is not tied (and the log says
 * its TLS was not read). */
#define WAITING   64
#define HELLO_MIN (11 + SL_TLS_RANDOM_LEN) /* record 5, handshake 4, version 2, random */
static struct {
    const void *_Atomic ssl;
    unsigned char random[SL_TLS_RANDOM_LEN];
} waiting[WAITING];

void sl_tls_wait_hello(const void *ssl, const unsigned char r[SL_TLS_RANDOM_LEN])
{
    int free_at = -1;
    for (int i = 0; i < WAITING; i++) {
        const void *s = atomic_load_explicit(&waiting[i].ssl, memory_order_acquire);
        if (s == ssl) return; /* a later step of the same handshake */
        if (!s && free_at < 0) free_at = i;
    }
    for (int i = free_at < 0 ? WAITING : free_at; i < WAITING; i++) {
        const void *none = NULL;
        if (atomic_compare_exchange_strong(&waiting[i].ssl, &none, (const void *)1)) {
            memcpy(waiting[i].random, r,
                   SL_TLS_RANDOM_LEN); /* claimed with a marker, then published */
            atomic_store_explicit(&waiting[i].ssl, ssl, memory_order_release);
            return;
        }
    }
}

void sl_tls_forget_hello(const void *ssl)
{
    for (int i = 0; i < WAITING; i++) {
        const void *mine = ssl;
        if (atomic_compare_exchange_strong(&waiting[i].ssl, &mine, NULL)) return;
    }
}

bool sl_tls_tie_hello(int fd, const void *rec, size_t len)
{
    const unsigned char *p = rec;
    if (len < HELLO_MIN || p[0] != 0x16 || p[5] != 0x01) return false; /* a ClientHello */
    for (int i = 0; i < WAITING; i++) {
        const void *s = atomic_load_explicit(&waiting[i].ssl, memory_order_acquire);
        if (!s || s == (const void *)1 || memcmp(waiting[i].random, p + 11, SL_TLS_RANDOM_LEN))
            continue;
        if (!atomic_compare_exchange_strong(&waiting[i].ssl, &s, NULL)) continue;
        sl_tls_tie_to(s, fd);
        return true;
    }
    return false;
}
