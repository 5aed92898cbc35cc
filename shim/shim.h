/* SPDX-License-Identifier: BSD-2-Clause */
/* shim.h - what the interposed entry points share: the real functions,
 * the published runtime, the re-entrancy guard.
 *
 * An entry point is a handful of lines: make sure the real symbol is known,
 * step aside when there is no runtime or the guard is set, ask core/policy
 * for a verdict, act on it. */
#ifndef SL_SHIM_H
#define SL_SHIM_H

#include <netdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/socket.h>

#include "../core/policy/policy.h"

#define SL_EXPORT __attribute__((visibility("default")))

struct msghdr;
struct pollfd;
struct epoll_event;
struct iovec;
struct sl_real {
    int (*accept)(int, struct sockaddr *, socklen_t *);
    int (*accept4)(int, struct sockaddr *, socklen_t *, int);
    int (*connect)(int, const struct sockaddr *, socklen_t);
    int (*getaddrinfo)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    void (*freeaddrinfo)(struct addrinfo *);
    struct hostent *(*gethostbyname)(const char *);
    struct hostent *(*gethostbyname2)(const char *, int);
    int (*gethostbyname_r)(const char *, struct hostent *, char *, size_t, struct hostent **,
                           int *);
    int (*gethostbyname2_r)(const char *, int, struct hostent *, char *, size_t, struct hostent **,
                            int *);
    ssize_t (*recv)(int, void *, size_t, int);
    ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
    ssize_t (*recvmsg)(int, struct msghdr *, int);
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*send)(int, const void *, size_t, int);
    ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
    ssize_t (*sendmsg)(int, const struct msghdr *, int);
    int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
    long (*syscall)(long, ...);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*sendfile)(int, int, off_t *, size_t);
    ssize_t (*splice)(int, loff_t *, int, loff_t *, size_t, unsigned int);
    int (*close)(int);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*fcntl)(int, int, ...);
    int (*getsockopt)(int, int, int, void *, socklen_t *);
    int (*close_range)(unsigned int, unsigned int, int);
    int (*shutdown)(int, int);
    int (*poll)(struct pollfd *, unsigned long /* nfds_t */, int);
    int (*ppoll)(struct pollfd *, unsigned long /* nfds_t */, const struct timespec *,
                 const sigset_t *);
    int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
    int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
    int (*epoll_ctl)(int, int, int, struct epoll_event *);
    int (*epoll_wait)(int, struct epoll_event *, int, int);
    int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
    int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
};

extern struct sl_real sl_real;

/* Resolves every sl_real member once; safe to call from any thread, before
 * the constructor has run. */
void sl_shim_resolve(void);

/* The one way to find a real function: the next definition of `name`
 * after this library (dlvsym with `version` when not NULL, as for
 * OpenSSL's SSL_read@OPENSSL_3.0.0), or, for a library the program loaded
 * later with RTLD_LOCAL, the definition in `lib` (a soname such as
 * "libssl.so.3", looked up without loading it; NULL: none). Returns NULL,
 * said once on stderr naming the symbol, when there is none or when what
 * is found is our own hook `ours` (the library loaded twice). */
void *sl_resolve_next(const char *name, const char *version, const char *lib, void *ours);

/* The real function at `offset` in struct sl_real, resolving them all
 * first if needed. An interposed call whose real function cannot be found
 * cannot be completed, and calling through NULL would crash without a
 * word: the program is stopped with a message naming the function. */
void *sl_real_slow(size_t offset, const char *name);

#define REAL(name)                                                                                 \
    (__builtin_expect(sl_real.name != NULL, 1)                                                     \
         ? sl_real.name                                                                            \
         : (__typeof__(sl_real.name))sl_real_slow(offsetof(struct sl_real, name), #name))

/* The runtime, or NULL while sluice is not (or no longer) limiting. */
extern struct sl_runtime *_Atomic sl_runtime_ptr;

/* Set while sluice itself calls into libc, so its own calls pass through. */
extern __thread int sl_guard __attribute__((tls_model("initial-exec")));

/* The runtime a hook decides with now: NULL while the guard is up (sluice's
 * own calls) or while nothing limits. */
static inline struct sl_runtime *sl_runtime_now(void)
{
    if (sl_guard) return NULL;
    return atomic_load_explicit(&sl_runtime_ptr, memory_order_acquire);
}

/* Some rule limits bytes, reads requests or watches outbound connections:
 * without one no descriptor is ever tracked, throttled, held or held back,
 * and every wrapped call can go straight to the kernel. No guard: the
 * wrappers' fast halves ask this first and look at the guard after. */
static inline bool sl_watching(void)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_acquire);
    return rt && (rt->any_bytes || rt->any_out);
}

/* Inbound denials that wrote a reply: closed later, see linger.c. */
void sl_linger_add(int fd);
void sl_linger_service_slow(void);
extern _Atomic int sl_nlingering;

/* Closes the lingering descriptors that are done (inline: usually none). */
static inline void sl_linger_service(void)
{
    if (atomic_load_explicit(&sl_nlingering, memory_order_relaxed)) sl_linger_service_slow();
}
void sl_linger_after_fork_child(void);

#endif
