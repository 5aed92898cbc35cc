/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_names.c - a client's first bytes through sl_name_sni and
 * sl_name_host. Checks: a name found is NUL-terminated within the room
 * given, non-empty, and made of host name characters only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/names.h"

static void check(const char *name, size_t room)
{
    size_t n = strnlen(name, room);
    if (n == 0 || n >= room) abort();
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", name[i]))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[64];
    /* a copy of exactly size bytes: ASan sees any read past them */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    if (sl_name_sni(buf, size, name, sizeof name)) check(name, sizeof name);
    if (sl_name_host(buf, size, name, sizeof name)) check(name, sizeof name);
    free(buf);
    return 0;
}
