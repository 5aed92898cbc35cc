/* SPDX-License-Identifier: BSD-2-Clause */
/* log.c - rate-limited messages.
 *
 * The limiter is a GCRA bucket (see admit) on a process-local word:
 * 10 lines at once, then 5 a second. Lines it refuses are counted in
 * `suppressed`; the next line that passes reports and resets the count
 * (exchange, so two threads never report the same lines twice).
 *
 * Escaping is done once, on the whole formatted message, so no caller can
 * forget it: a request path with "\n" and escape codes (issue 18.8) is
 * written as "\n" and "\x1b", on the line it belongs to.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <syslog.h>
#include <unistd.h>

#include "clock.h"
#include "verdict.h" /* SL_NS_PER_SEC */
#include "sys.h"

static enum sl_log_target target = SL_LOG_STDERR;
static enum sl_log_level threshold = SL_LOG_INFO;
static _Atomic uint64_t bucket;
static _Atomic uint64_t suppressed;
static uint64_t (*clock_fn)(void);

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void sl_log_setup(enum sl_log_target t, enum sl_log_level level)
{
    target = t;
    threshold = level;
}

void sl_log_set_clock(uint64_t (*now)(void))
{
    clock_fn = now;
    atomic_store(&bucket, 0);
    atomic_store(&suppressed, 0);
}

uint64_t sl_log_suppressed(void)
{
    return atomic_load(&suppressed);
}

/* 5 a second, 10 at once, as GCRA over one word: the theoretical arrival
 * time of the next message. log.c is under every subsystem of core, the
 * limit algorithms included (they log), so it keeps this eight-line copy
 * of the step rather than depend on core/limit. */
static bool admit(void)
{
    const uint64_t interval = SL_NS_PER_SEC / 5, tolerance = 9 * interval;
    uint64_t now = clock_fn ? clock_fn() : sl_clock_now();
    uint64_t tat = atomic_load_explicit(&bucket, memory_order_relaxed);
    for (;;) {
        uint64_t start = tat > now ? tat : now;
        if (start - now > tolerance) return false;
        if (atomic_compare_exchange_weak(&bucket, &tat, start + interval)) return true;
    }
}

/* Straight to the kernel: write() is one of the shim's hooks. */
static void emit(const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = sl_sys_write(2, buf, n);
        if (w <= 0) return;
        buf += w;
        n -= (size_t)w;
    }
}

/* The escape of byte c into e (its length), or 0 when c stands as it is. */
static size_t escape_of(unsigned char c, char e[4])
{
    static const char hex[] = "0123456789abcdef";
    e[0] = '\\';
    switch (c) {
    case '\n':
        e[1] = 'n';
        return 2;
    case '\r':
        e[1] = 'r';
        return 2;
    case '\t':
        e[1] = 't';
        return 2;
    case '\\':
        e[1] = '\\';
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) return 0;
    e[1] = 'x';
    e[2] = hex[c >> 4];
    e[3] = hex[c & 15];
    return 4;
}

size_t sl_log_escape(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = 0;
    if (cap == 0) return 0;
    for (size_t i = 0; i < len; i++) {
        char e[4];
        size_t w = escape_of((unsigned char)src[i], e);
        if (n + (w ? w : 1) >= cap) break;
        if (w == 0) {
            dst[n++] = src[i];
            continue;
        }
        for (size_t k = 0; k < w; k++)
            dst[n++] = e[k];
    }
    dst[n] = 0;
    return n;
}

static void vlog(enum sl_log_level level, bool limited, const char *fmt, va_list ap);

void sl_log(enum sl_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, true, fmt, ap);
    va_end(ap);
}

void sl_log_state(enum sl_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, false, fmt, ap);
    va_end(ap);
}

static void vlog(enum sl_log_level level, bool limited, const char *fmt, va_list ap)
{
    if (level > threshold || target == SL_LOG_NONE) return;
    int saved = errno;
    if (limited && !admit()) {
        atomic_fetch_add_explicit(&suppressed, 1, memory_order_relaxed);
        errno = saved;
        return;
    }
    char raw[1024], msg[1024];
    int n = 0;
    uint64_t lost = atomic_exchange_explicit(&suppressed, 0, memory_order_relaxed);
    if (target == SL_LOG_STDERR)
        n = snprintf(msg, sizeof msg, "sluice[%d]: %s: ", (int)getpid(), level_names[level]);
    int m = vsnprintf(raw, sizeof raw, fmt, ap);
    if (m < 0) m = 0;
    if (m >= (int)sizeof raw) m = (int)sizeof raw - 1;
    /* room left for the suppressed count and the newline */
    n += (int)sl_log_escape(msg + n, sizeof msg - (size_t)n - 64, raw, (size_t)m);
    if (lost)
        n += snprintf(msg + n, sizeof msg - (size_t)n, " (%llu earlier messages suppressed)",
                      (unsigned long long)lost);
    if (target == SL_LOG_SYSLOG) {
        static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
        syslog(LOG_USER | prio[level], "%.*s", n, msg);
    } else {
        msg[n++] = '\n';
        emit(msg, (size_t)n);
    }
    errno = saved;
}

void sl_log_no_memory(const char *what)
{
    static _Atomic bool told;
    if (atomic_exchange(&told, true)) return;
    sl_log(SL_LOG_WARN,
           "out of sluice's own memory for %s: the rest of that connection passes without "
           "its requests counted (said once)",
           what);
}
