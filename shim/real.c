/* SPDX-License-Identifier: BSD-2-Clause */
/* real.c - the functions behind the hooks, found once (dlsym RTLD_NEXT),
 * and the state every hook reads first: the runtime and the thread's
 * guard. The bottom of the shim: it calls nothing of sluice's above it,
 * and knows the hooks only as "a function of this library". */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/log.h"
#include "../core/sys.h"
#include "shim.h"

/* Whether p lies in the loaded object that holds `own`'s code (what
 * dl_iterate_phdr's data names): its segments' span. */
static int holds_own(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t *span = data, me = span[0], lo = UINTPTR_MAX, hi = 0;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        if (a < lo) lo = a;
        if (b > hi) hi = b;
        mine = mine || (me >= a && me < b);
    }
    if (!mine) return 0;
    span[0] = lo;
    span[1] = hi;
    return 1;
}

/* Whether p is a function of libsluice.so itself (a hook): what dlsym
 * finds after it must never be its own. The library's span comes from the
 * program headers, a walk of a dozen objects: dladdr would search libc's
 * whole symbol table for every function resolved (4 million instructions
 * at start-up, measured with callgrind on /bin/true). */
static bool own(void *p)
{
    /* found once: the span never moves (a race finds the same one) */
    static uintptr_t lo, hi;
    if (!__atomic_load_n(&hi, __ATOMIC_ACQUIRE)) {
        uintptr_t span[2] = {(uintptr_t)holds_own, 0};
        if (dl_iterate_phdr(holds_own, span) != 1) return false;
        __atomic_store_n(&lo, span[0], __ATOMIC_RELAXED);
        __atomic_store_n(&hi, span[1], __ATOMIC_RELEASE);
    }
    return (uintptr_t)p >= __atomic_load_n(&lo, __ATOMIC_RELAXED) &&
           (uintptr_t)p < __atomic_load_n(&hi, __ATOMIC_RELAXED);
}

struct sl_real sl_real;
struct sl_runtime *_Atomic sl_runtime_ptr;
__thread int sl_guard __attribute__((tls_model("initial-exec")));

void *sl_resolve_next(const char *name, const char *version, const char *lib, void *ours)
{
    void *p = version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
    if (!p && lib) {
        void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = version ? dlvsym(h, name, version) : dlsym(h, name);
            dlclose(h); /* NOLOAD took a reference of its own */
        }
    }
    if (p && p != ours && !own(p)) return p;
    sl_log(SL_LOG_ERROR,
           p ? "the real %s is sluice's own hook: is libsluice.so loaded twice?"
             : "no real %s found after libsluice.so",
           name);
    return NULL;
}

void *sl_real_slow(size_t offset, const char *name)
{
    void *p;
    sl_shim_resolve();
    memcpy(&p, (char *)&sl_real + offset, sizeof p);
    if (p) return p;
    char msg[160];
    int n = snprintf(msg, sizeof msg,
                     "sluice: cannot complete %s: its real function was not found\n", name);
    if (n > 0 &&
        sl_syscall(SYS_write, 2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1)) {
    }
    abort();
}

void sl_shim_resolve(void)
{
#define R(name)                                                                                    \
    __atomic_store_n((void **)&sl_real.name, sl_resolve_next(#name, NULL, NULL, NULL),             \
                     __ATOMIC_RELEASE)
    R(accept);
    R(accept4);
    R(connect);
    R(getaddrinfo);
    __atomic_store_n((void **)&sl_real.freeaddrinfo,
                     sl_resolve_next("freeaddrinfo", NULL, NULL, NULL), __ATOMIC_RELEASE);
    R(gethostbyname);
    R(gethostbyname2);
    R(gethostbyname_r);
    R(gethostbyname2_r);
    R(recv);
    R(recvfrom);
    R(recvmsg);
    R(read);
    R(readv);
    R(send);
    R(sendto);
    R(sendmsg);
    R(sendmmsg);
    R(syscall);
    R(write);
    R(writev);
    R(sendfile);
    R(splice);
    R(close);
    R(dup);
    R(dup2);
    R(dup3);
    R(fcntl);
    R(getsockopt);
    R(close_range);
    R(shutdown);
    R(poll);
    R(ppoll);
    R(select);
    R(pselect);
    R(epoll_ctl);
    R(epoll_wait);
    R(epoll_pwait);
    R(epoll_pwait2);
#undef R
}
