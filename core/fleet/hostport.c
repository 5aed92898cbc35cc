/* SPDX-License-Identifier: BSD-2-Clause */
/* hostport.c - see hostport.h. An address without brackets is IPv4, one in
 * brackets IPv6: "::1:80" would be ambiguous. */
#include "hostport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *const not_hostport =
    "is not address:port (like 10.0.0.2:7946 or [2001:db8::2]:7946; no host names)";

static int parse_port(const char *s, uint16_t *port)
{
    uint32_t n = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        n = n * 10 + (uint32_t)(*s - '0');
        if (n > 65535) return -1;
    }
    if (n == 0) return -1;
    *port = (uint16_t)n;
    return 0;
}

const char *sl_hostport_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[INET6_ADDRSTRLEN];
    const char *port;
    size_t n;
    int family;
    if (text[0] == '[') {
        const char *end = strchr(text, ']');
        if (!end || end[1] != ':') return not_hostport;
        family = AF_INET6;
        n = (size_t)(end - text - 1);
        text++;
        port = end + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (!colon) return not_hostport;
        family = AF_INET;
        n = (size_t)(colon - text);
        port = colon + 1;
    }
    if (n == 0 || n >= sizeof host) return not_hostport;
    memcpy(host, text, n);
    host[n] = 0;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(family, host,
                  family == AF_INET ? (void *)&a4->sin_addr : (void *)&a6->sin6_addr) != 1)
        return not_hostport;
    uint16_t p;
    if (parse_port(port, &p) != 0) return "has a port that is not 1..65535";
    if (family == AF_INET) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(p);
        *len = sizeof *a4;
    } else {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(p);
        *len = sizeof *a6;
    }
    return NULL;
}

int sl_hostport_format(const struct sockaddr_storage *ss, char *out, size_t outlen)
{
    char text[INET6_ADDRSTRLEN];
    const struct sockaddr_in *a4 = (const struct sockaddr_in *)ss;
    const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)ss;
    int n;
    if (ss->ss_family == AF_INET) {
        inet_ntop(AF_INET, &a4->sin_addr, text, sizeof text);
        n = snprintf(out, outlen, "%s:%u", text, ntohs(a4->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &a6->sin6_addr, text, sizeof text);
        n = snprintf(out, outlen, "[%s]:%u", text, ntohs(a6->sin6_port));
    } else {
        return -1;
    }
    return n >= 0 && (size_t)n < outlen ? 0 : -1;
}
