/* SPDX-License-Identifier: BSD-2-Clause */
/* errors.c - the one line a failed load reports.
 *
 *   app.conf:12: inbound "web": option 'rate': '20/x' is not a rate (...)
 *   app.conf:3: option 'table_slots': '12' is out of range (64..1073741824)
 *   app.conf:9: inbound "web": needs at least one of rate, recv_rate, send_rate or conns
 *   app.conf:4: gossip: option 'interval': '20s' is out of range (1ms..10s)
 *   inline rule 2: outbound "out-1": option 'to' is missing
 *
 * Only the first error of a load is kept: later ones are consequences.
 * Quoted text is cut at 80 bytes and control characters become '?', so the
 * message stays one line whatever the input held.
 *
 * A failed load is reported once per process tree, not once per process:
 * a program started through wrappers (`bash -c 'bash -c ...'`, pyenv's
 * python3 shim) loads the library in every process it execs. Whoever
 * reports first (`sluice run` before it starts the program, else the
 * library in the first process) writes the line and sets SLUICE_REPORTED
 * in the environment to a hash of the message and its outcome; a process
 * that inherits the same hash stays silent. Another error (a child with
 * other rules) has another hash and is reported.
 */
#include "conf_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/log.h"
#include "conf.h"

struct conf_ctx *conf_ctx;

static size_t put(char *dst, size_t cap, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static size_t put(char *dst, size_t cap, size_t at, const char *fmt, ...)
{
    if (at >= cap) return at;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst + at, cap - at, fmt, ap);
    va_end(ap);
    return n < 0 ? at : at + (size_t)n;
}

/* Copies text for quoting: at most 80 bytes, no control characters. */
static const char *clean(const char *s, char *buf, size_t len)
{
    size_t n = 0;
    for (; *s && n + 4 < len && n < 80; s++)
        buf[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
    if (*s) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = 0;
    return buf;
}

/* The one line: source, line, section, option, value, then the words. */
static void format_va(char *dst, size_t cap, cfg_t *sec, int line, const char *opt,
                      const char *value, const char *fmt, va_list ap)
{
    struct conf_ctx *c = conf_ctx;
    char q[96], msg[512];
    size_t n = 0;
    if (c->is_inline)
        n = put(dst, cap, n, "inline rule %d: ", line);
    else
        n = put(dst, cap, n, "%s:%d: ", c->file, line);
    if (sec && sec->title)
        n = put(dst, cap, n, "%s \"%s\": ", sec->name, clean(sec->title, q, sizeof q));
    else if (sec && strcmp(sec->name, "root") != 0) /* a section without a title: gossip */
        n = put(dst, cap, n, "%s: ", sec->name);
    if (opt) n = put(dst, cap, n, "option '%s': ", clean(opt, q, sizeof q));
    if (value) n = put(dst, cap, n, "'%s' ", clean(value, q, sizeof q));
    vsnprintf(msg, sizeof msg, fmt, ap);
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20) *p = ' ';
    put(dst, cap, n, "%s", msg);
}

static void fail_va(cfg_t *sec, int line, const char *opt, const char *value, const char *fmt,
                    va_list ap)
{
    struct conf_ctx *c = conf_ctx;
    if (!c || c->failed) return;
    c->failed = true;
    if (c->err && c->errlen) format_va(c->err, c->errlen, sec, line, opt, value, fmt, ap);
}

static void (*warn_fn)(const char *line);

void sl_conf_set_warn(void (*warn)(const char *line))
{
    warn_fn = warn;
}

void conf_warn(cfg_t *sec, int line, const char *opt, const char *value, const char *fmt, ...)
{
    if (!warn_fn || !conf_ctx) return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    format_va(text, sizeof text, sec, line, opt, value, fmt, ap);
    va_end(ap);
    warn_fn(text);
}

bool conf_degrade(cfg_t *sec, int line, const char *opt, const char *value, const char *fmt, ...)
{
    struct conf_ctx *c = conf_ctx;
    va_list ap;
    va_start(ap, fmt);
    if (c && c->on_error == SL_ON_ERROR_CLOSED) {
        fail_va(sec, line, opt, value, fmt, ap);
        va_end(ap);
        return false;
    }
    if (c && !c->degraded[0])
        format_va(c->degraded, sizeof c->degraded, sec, line, opt, value, fmt, ap);
    va_end(ap);
    return true;
}

void conf_fail(cfg_t *sec, int line, const char *opt, const char *value, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_va(sec, line, opt, value, fmt, ap);
    va_end(ap);
}

static void fail_plain(cfg_t *sec, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_plain(cfg_t *sec, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_va(sec, line, NULL, NULL, fmt, ap);
    va_end(ap);
}

/* libconfuse's own messages (syntax, unknown options), put in the same
 * shape. "no such option" is reworded to match the messages of our own. */
void conf_libconfuse_error(cfg_t *cfg, const char *fmt, va_list ap)
{
    char msg[256], q[96];
    cfg_t *sec = cfg && strcmp(cfg->name, "root") != 0 ? cfg : NULL;
    int line = cfg ? cfg->line : 0;
    if (strcmp(fmt, "no such option '%s'") == 0) {
        const char *name = va_arg(ap, const char *);
        fail_plain(sec, line, "option '%s' is unknown", clean(name ? name : "", q, sizeof q));
        return;
    }
    vsnprintf(msg, sizeof msg, fmt, ap);
    fail_plain(sec, line, "%s", msg);
}

/* FNV-1a, 64 bits: enough to tell one message from another. */
static uint64_t hash_text(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* True the first time this process tree meets the message `err` with this
 * outcome: marks the environment so the processes it execs stay silent. */
static bool first_report(const char *err, char outcome)
{
    char mark[24];
    uint64_t h = hash_text(0xcbf29ce484222325ull, err);
    snprintf(mark, sizeof mark, "%016" PRIx64 "%c", h, outcome);
    const char *seen = getenv(SL_CONF_REPORTED_ENV);
    if (seen && strcmp(seen, mark) == 0) return false;
    setenv(SL_CONF_REPORTED_ENV, mark, 1);
    return true;
}

void sl_conf_report_failure(const char *err, enum sl_on_error on_error)
{
    bool closed = on_error == SL_ON_ERROR_CLOSED;
    if (!first_report(err, closed ? 'c' : 'o')) return;
    if (closed)
        sl_log(SL_LOG_ERROR, "%s; on_error = closed: refusing to start", err);
    else
        sl_log(SL_LOG_ERROR, "%s; running unlimited (on_error = open)", err);
}

void sl_conf_report_degraded(const struct sl_config *c)
{
    if (!c->degraded[0] || !first_report(c->degraded, 'd')) return;
    sl_log(SL_LOG_ERROR, "%s; the rule keeps its own limits (on_error = open)", c->degraded);
}
