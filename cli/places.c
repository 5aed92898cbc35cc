/* SPDX-License-Identifier: BSD-2-Clause */
/* places.c - see places.h. */
#include "places.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../conf/conf.h"
#include "../core/fleet/udpowner.h"

static void user_name(unsigned uid, char *out, size_t len)
{
    struct passwd *pw = getpwuid(uid);
    snprintf(out, len, "%s (uid %u)", pw ? pw->pw_name : "a user", uid);
}

int sl_say_places(const struct sl_config *cfg)
{
    int said = 0;
    char who[96];
    if (*cfg->shared) {
        char path[300];
        struct stat st;
        snprintf(path, sizeof path, "/dev/shm/sluice.%s", cfg->shared);
        if (stat(path, &st) == 0 &&
            ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 0077))) {
            user_name((unsigned)st.st_uid, who, sizeof who);
            fprintf(stderr,
                    "sluice: note: %s already exists, owned by %s, mode %o: a program started "
                    "with this configuration refuses it and %s\n",
                    path, who, (unsigned)(st.st_mode & 07777),
                    cfg->on_error == SL_ON_ERROR_CLOSED
                        ? "does not start (on_error = closed)"
                        : "counts in a table of its own (on_error = open): other programs that "
                          "name it do not count with it");
            said++;
        }
    }
    if (cfg->gossip.enabled) {
        const char *colon = strrchr(cfg->gossip.listen, ':');
        unsigned port = colon ? (unsigned)atoi(colon + 1) : 0;
        long uid = port ? sl_udp_owner("/proc/net/udp", port) : -1;
        if (uid < 0 && port) uid = sl_udp_owner("/proc/net/udp6", port);
        if (uid >= 0) {
            user_name((unsigned)uid, who, sizeof who);
            fprintf(stderr,
                    "sluice: note: UDP port %u (gossip listen %s) is bound now, by %s: unless "
                    "that is this program already running, its node will neither send its counts "
                    "nor hear its peers, and cluster rules will count on this host alone (the "
                    "program's log says so)\n",
                    port, cfg->gossip.listen, who);
            said++;
        }
    }
    return said;
}
