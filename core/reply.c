#include "reply.h"

#include <stdio.h>

uint64_t sl_reply_seconds(uint64_t ns)
{
    return ns / SL_NS_PER_SEC + (ns % SL_NS_PER_SEC != 0);
}

size_t sl_reply_429(char *buf, size_t len, const struct sl_verdict *v)
{
    static const char body[] = "Too Many Requests\n";
    unsigned long long retry = sl_reply_seconds(v->retry_ns), reset = sl_reply_seconds(v->reset_ns);
    unsigned long long limit = v->limit, remaining = v->remaining;
    if (retry == 0) retry = 1;
    int n =
        snprintf(buf, len,
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
                 "Connection: close\r\n"
                 "\r\n"
                 "%s",
                 sizeof body - 1, retry, limit, remaining, reset, limit, remaining, reset, body);
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
