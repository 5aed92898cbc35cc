/* SPDX-License-Identifier: BSD-2-Clause */
/* lazy.h - a TLS library's real functions (tls.c, tlsbio.c, gnutls.c),
 * found at their first call and kept: a program that never loads the
 * library never looks, and one that loads it later with dlopen
 * (RTLD_LOCAL, as python does) is found through sl_resolve_next's NOLOAD
 * lookup of `lib`. */
#ifndef SL_LAZY_H
#define SL_LAZY_H

#include <stdatomic.h>
#include <stdbool.h>

#include "shim.h"

/* The real `name` (the `version` of it; with `any`, the unversioned one
 * when that is missing, for a library built without versions), kept in
 * *slot; NULL when there is none. ours: our own hook, never the answer. */
static inline void *sl_resolve_lazy(void *_Atomic *slot, const char *name, const char *version,
                                    const char *lib, void *ours, bool any)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (!p) {
        p = sl_resolve_next(name, version, lib, ours);
        if (!p && any) p = sl_resolve_next(name, NULL, lib, ours);
        atomic_store_explicit(slot, p, memory_order_release);
    }
    return p;
}

#endif
