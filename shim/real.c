/* SPDX-License-Identifier: BSD-2-Clause */
/* real.c - the functions behind the hooks, found once (dlsym RTLD_NEXT),
 * and the state every hook reads first: the runtime and the thread's
 * guard. The bottom of the shim: it calls nothing of sluice's above it,
 * and knows the hooks only as "a function of this library". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/log.h"
#include "../core/sys.h"
#include "shim.h"

/* Whether p is a function of libsluice.so itself (a hook): what dlsym
 * finds after it must never be its own. */
static bool own(void *p)
{
    Dl_info mine, theirs;
    return dladdr((void *)own, &mine) && dladdr(p, &theirs) && mine.dli_fbase == theirs.dli_fbase;
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
