/* SPDX-License-Identifier: BSD-2-Clause */
/* tlsbio.c - OpenSSL sessions over memory BIOs: see tlsbio.h. */
#include "tlsbio.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "gate.h"
#include "lazy.h"
#include "shim.h"
#include "tie.h"

#define SSL_VERSION "OPENSSL_3.0.0"

static struct {
    size_t (*client_random)(const void *, unsigned char *, size_t);
    void *(*get_wbio)(const void *);
    uint64_t (*number_written)(void *);
    int (*write_ex)(void *, const void *, size_t, size_t *);
    void *(*get_rbio)(const void *);
    int (*method_type)(const void *);
} real;

#define REAL_FN(field, name, lib)                                                                  \
    ((__typeof__(real.field))sl_resolve_lazy((void *_Atomic *)&real.field, name, SSL_VERSION, lib, \
                                             NULL, false))

void sl_tlsbio_remember(const void *ssl)
{
    size_t (*cr)(const void *, unsigned char *, size_t) =
        REAL_FN(client_random, "SSL_get_client_random", "libssl.so.3");
    unsigned char r[SL_TLS_RANDOM_LEN], zero[SL_TLS_RANDOM_LEN] = {0};
    if (!cr || cr(ssl, r, sizeof r) != sizeof r || !memcmp(r, zero, sizeof r)) return;
    sl_tls_wait_hello(ssl, r);
}

bool sl_tlsbio_memory(const void *ssl)
{
    void *(*rbio)(const void *) = REAL_FN(get_rbio, "SSL_get_rbio", "libssl.so.3");
    int (*type)(const void *) = REAL_FN(method_type, "BIO_method_type", "libcrypto.so.3");
    void *b = rbio ? rbio(ssl) : NULL;
    return b && type && type(b) == (1 | 0x0400); /* BIO_TYPE_MEM */
}

void sl_tlsbio_forget(const void *ssl)
{
    sl_tls_forget_hello(ssl);
}

/* The library's write of plaintext into the session (into its write BIO). */
static ssize_t write_plain(const struct sl_transport *t, const void *buf, size_t n)
{
    int (*w)(void *, const void *, size_t, size_t *) =
        REAL_FN(write_ex, "SSL_write_ex", "libssl.so.3");
    size_t got = 0;
    return w && w(t->ctx, buf, n, &got) && got ? (ssize_t)got : -1;
}

/* Where the next record begins in the session's ciphertext stream. */
static uint64_t cipher_offset(const struct sl_transport *t)
{
    void *(*wbio)(const void *) = REAL_FN(get_wbio, "SSL_get_wbio", "libssl.so.3");
    uint64_t (*nw)(void *) = REAL_FN(number_written, "BIO_number_written", "libcrypto.so.3");
    void *b = wbio ? wbio(t->ctx) : NULL;
    return b && nw ? nw(b) : 0;
}

struct sl_transport sl_tlsbio_transport(void *ssl, int fd)
{
    return (struct sl_transport){
        .write = write_plain, .offset = cipher_offset, .fd = fd, .ctx = ssl};
}
