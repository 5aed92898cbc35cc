/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_plans.c - arbitrary bytes as a rule's plans file: the load must
 * return a config (with the plans, or without them and one line in
 * `degraded`, on_error = open) or one error line, never crash or leak,
 * and the rule always keeps its own limits. The file is rewritten in
 * place for each input. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../conf/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64], rules[160];
    static int fd = -1;
    if (fd < 0) {
        unsetenv("SLUICE_ON_ERROR");
        snprintf(path, sizeof path, "/tmp/sluice-fuzz-plans-%d.txt", (int)getpid());
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) abort();
        snprintf(rules, sizeof rules, "in port=80 req_rate=10/s per=header:K plans=%s", path);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
    char err[512] = "";
    enum sl_on_error oe;
    struct sl_config *c = sl_conf_load(NULL, rules, &oe, err, sizeof err);
    if (!c) {
        if (!err[0] || strchr(err, '\n')) abort(); /* one line that explains */
        return 0;
    }
    if (strchr(c->degraded, '\n')) abort();
    if (c->degraded[0] && c->rules[0].plans) abort();
    if (c->rules[0].req_limit.count != 10) abort(); /* the rule's own limits, always */
    sl_conf_free(c);
    return 0;
}
