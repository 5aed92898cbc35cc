/* SPDX-License-Identifier: BSD-2-Clause */
/* unseen.c - what sluice cannot see in this program: see unseen.h. */
#include "unseen.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/elfkind.h"
#include "../core/log.h"
#include "shim.h"

static _Atomic bool tls_inside, memory_bio;

void sl_unseen_at_start(const struct sl_runtime *rt)
{
    struct sl_elf_kind k;
    sl_elf_kind_file("/proc/self/exe", &k);
    atomic_store(&tls_inside, k.tls_inside);
    const char *why = sl_elf_kind_unseen(&k, rt->any_req_out || rt->any_req_in);
    if (!why) return;
    /* `sluice run` said it already for the program it started */
    const char *told = getenv("SLUICE_SEEN_EXE");
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) self[n] = 0;
    if (told && n > 0 && !strcmp(told, self)) return;
    sl_log(SL_LOG_WARN, "%s: %s", n > 0 ? self : "this program", why);
}

void sl_unseen_memory_bio(void)
{
    atomic_store_explicit(&memory_bio, true, memory_order_relaxed);
}

const char *sl_unseen_tls_cause(void)
{
    if (atomic_load(&tls_inside))
        return "TLS in the binary: the program carries OpenSSL inside it (as node's own build)";
    if (atomic_load_explicit(&memory_bio, memory_order_relaxed))
        return "a memory BIO: the program runs OpenSSL over memory buffers and writes the "
               "records itself, and this session could not be tied to its socket by its "
               "ClientHello (shim/tlsbio.c)";
    return "a TLS library sluice does not interpose (rustls, Java's JSSE, a static OpenSSL)";
}

bool sl_unseen_tls_certain(void)
{
    static _Atomic bool loaded; /* a library once loaded stays so */
    if (atomic_load_explicit(&tls_inside, memory_order_relaxed)) return true;
    if (atomic_load_explicit(&loaded, memory_order_relaxed)) return false;
    static const char *const libs[] = {SL_LIB_OPENSSL, SL_LIB_GNUTLS};
    int saved = errno;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            dlclose(h); /* NOLOAD took a reference of its own */
            atomic_store_explicit(&loaded, true, memory_order_relaxed);
        }
    }
    errno = saved;
    return !atomic_load_explicit(&loaded, memory_order_relaxed);
}
