/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_conf.c - arbitrary bytes as inline rules: sl_conf_load must return
 * a config or one error line, never crash or leak. Input that starts with
 * "F\n" is a config file instead (the rest, in a memfd), so the comment
 * stripper and libconfuse's lexer get fuzzed too. A fake resolver answers
 * every name with one address, so no real DNS is ever asked. */
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "../../conf/conf.h"

static int fake_resolve(const char *node, const char *service, const struct addrinfo *hints,
                        struct addrinfo **res)
{
    struct addrinfo *ai = calloc(1, sizeof *ai + sizeof(struct sockaddr_in));
    if (!ai) return EAI_MEMORY;
    struct sockaddr_in *sin = (struct sockaddr_in *)(ai + 1);
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(0x7f000007);
    ai->ai_family = AF_INET;
    ai->ai_addr = (struct sockaddr *)sin;
    ai->ai_addrlen = sizeof *sin;
    *res = ai;
    return 0;
}

static void fake_release(struct addrinfo *res)
{
    free(res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        sl_conf_set_resolver(fake_resolve, fake_release);
        unsetenv("SLUICE_ON_ERROR");
        ready = 1;
    }
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char err[512], path[64] = "";
    enum sl_on_error oe;
    int fd = -1;
    if (size >= 2 && memcmp(data, "F\n", 2) == 0) {
        fd = memfd_create("fuzz.conf", MFD_CLOEXEC);
        if (fd < 0 || write(fd, data + 2, size - 2) != (ssize_t)(size - 2)) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    struct sl_config *c =
        sl_conf_load(fd >= 0 ? path : NULL, fd >= 0 ? NULL : text, &oe, err, sizeof err);
    if (fd >= 0) close(fd);
    if (c) {
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            sl_conf_print(c, null);
            fclose(null);
        }
        sl_conf_free(c);
    } else if (!err[0] || strchr(err, '\n')) {
        abort(); /* a failure must explain itself in one line */
    }
    free(text);
    return 0;
}
