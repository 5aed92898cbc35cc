/* SPDX-License-Identifier: BSD-2-Clause */
/* reply.c - the built-in 429 (see reply.h). */
#include "reply.h"

#include <stdio.h>

uint64_t sl_reply_seconds(uint64_t ns)
{
    return ns / SL_NS_PER_SEC + (ns % SL_NS_PER_SEC != 0);
}

/* The name as the inside of a structured-field string (RFC 8941 3.3.3):
 * printable ASCII with '"' and '\' escaped. Names come from the config,
 * but a header must never be broken by one. */
static void sf_string(char *out, size_t len, const char *name)
{
    size_t n = 0;
    for (const char *s = name; *s && n + 3 < len; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') out[n++] = '\\';
        out[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '_';
    }
    out[n] = 0;
}

static size_t build(char *buf, size_t len, const struct sl_verdict *v,
                    const struct sl_reply_policy *p, const char *connection)
{
    static const char body[] = "Too Many Requests\n";
    unsigned long long retry = sl_reply_seconds(v->retry_ns), reset = sl_reply_seconds(v->reset_ns);
    unsigned long long limit = v->limit, remaining = v->remaining;
    if (retry == 0) retry = 1;

    char fields[384] = "";
    if (p) {
        char name[2 * 48 + 1];
        sf_string(name, sizeof name, p->name ? p->name : "");
        snprintf(fields, sizeof fields,
                 "RateLimit-Policy: \"%s\";q=%llu;w=%llu\r\n"
                 "RateLimit: \"%s\";r=%llu;t=%llu\r\n",
                 name, (unsigned long long)p->quota,
                 (unsigned long long)(p->window_s ? p->window_s : 1), name, remaining, reset);
    }
    int n = snprintf(buf, len,
                     "HTTP/1.1 429 Too Many Requests\r\n"
                     "Content-Type: text/plain\r\n"
                     "Content-Length: %zu\r\n"
                     "Retry-After: %llu\r\n"
                     "RateLimit-Limit: %llu\r\n"
                     "RateLimit-Remaining: %llu\r\n"
                     "RateLimit-Reset: %llu\r\n"
                     "X-RateLimit-Limit: %llu\r\n"
                     "X-RateLimit-Remaining: %llu\r\n"
                     "X-RateLimit-Reset: %llu\r\n"
                     "%s"
                     "%s"
                     "\r\n"
                     "%s",
                     sizeof body - 1, retry, limit, remaining, reset, limit, remaining, reset,
                     fields, connection, body);
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

size_t sl_reply_429_policy(char *buf, size_t len, const struct sl_verdict *v,
                           const struct sl_reply_policy *p)
{
    return build(buf, len, v, p, "Connection: close\r\n");
}

size_t sl_reply_429_keep(char *buf, size_t len, const struct sl_verdict *v,
                         const struct sl_reply_policy *p)
{
    return build(buf, len, v, p, "");
}

size_t sl_reply_429(char *buf, size_t len, const struct sl_verdict *v)
{
    return sl_reply_429_policy(buf, len, v, NULL);
}
