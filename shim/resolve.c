/* SPDX-License-Identifier: BSD-2-Clause */
/* resolve.c - learns what the program resolves for outbound rules' host
 * names, so a rule for api.vendor.example also matches the addresses the
 * program got from DNS after the config was loaded. The lookups themselves
 * are untouched: same results, same return codes, same errno. */
#include <errno.h>
#include <netdb.h>
#include <string.h>

#include "shim.h"

static struct sl_runtime *learner(void)
{
    struct sl_runtime *rt = sl_runtime_now();
    return rt && rt->any_hosts ? rt : NULL;
}

static void learn_hostent(const char *name, const struct hostent *h)
{
    struct sl_runtime *rt = learner();
    if (!rt || !name || !h || !h->h_addr_list) return;
    for (char **p = h->h_addr_list; *p; p++) {
        uint8_t a[16] = {0};
        if (h->h_addrtype == AF_INET && h->h_length == 4) {
            a[10] = a[11] = 0xff;
            memcpy(a + 12, *p, 4);
        } else if (h->h_addrtype == AF_INET6 && h->h_length == 16) {
            memcpy(a, *p, 16);
        } else {
            continue;
        }
        sl_learn_addr(rt, name, a);
    }
}

SL_EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                          struct addrinfo **res)
{
    int rc = REAL(getaddrinfo)(node, service, hints, res);
    struct sl_runtime *rt;
    if (rc == 0 && node && res && (rt = learner())) {
        int saved = errno;
        sl_learn_addrinfo(rt, node, *res);
        errno = saved;
    }
    return rc;
}

SL_EXPORT struct hostent *gethostbyname(const char *name)
{
    struct hostent *h = REAL(gethostbyname)(name);
    learn_hostent(name, h);
    return h;
}

SL_EXPORT struct hostent *gethostbyname2(const char *name, int af)
{
    struct hostent *h = REAL(gethostbyname2)(name, af);
    learn_hostent(name, h);
    return h;
}

SL_EXPORT int gethostbyname_r(const char *name, struct hostent *ret, char *buf, size_t buflen,
                              struct hostent **result, int *h_errnop)
{
    int rc = REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
    if (rc == 0 && result) learn_hostent(name, *result);
    return rc;
}

SL_EXPORT int gethostbyname2_r(const char *name, int af, struct hostent *ret, char *buf,
                               size_t buflen, struct hostent **result, int *h_errnop)
{
    int rc = REAL(gethostbyname2_r)(name, af, ret, buf, buflen, result, h_errnop);
    if (rc == 0 && result) learn_hostent(name, *result);
    return rc;
}
