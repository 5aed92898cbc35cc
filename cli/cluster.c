/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster.c - `sluice keygen [FILE]` and `sluice cluster-stats`.
 *
 * keygen writes a new gossip key: 32 random bytes from libsodium's
 * randombytes_buf as 64 hex characters and a newline, to FILE (created
 * with mode 0600, never overwritten) or to standard output.
 *
 * cluster-stats reads the cluster state of a running node from shared
 * memory (/dev/shm/sluice-cluster.<listen>): datagrams sent and received,
 * drops by reason, and each peer's liveness and the age of its data.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../conf/conf.h"
#include "../core/clock.h"
#include "../core/fleet/fleet_stats.h"

int sl_cmd_keygen(int argc, char **argv);
int sl_cmd_cluster_stats(int argc, char **argv);

int sl_cmd_keygen(int argc, char **argv)
{
    if (argc > 2) {
        fprintf(stderr, "usage: sluice keygen [FILE]\n");
        return 2;
    }
    if (sodium_init() < 0) {
        fprintf(stderr, "sluice keygen: libsodium cannot initialise\n");
        return 1;
    }
    uint8_t key[32];
    char hex[65];
    randombytes_buf(key, sizeof key);
    sodium_bin2hex(hex, sizeof hex, key, sizeof key);
    sodium_memzero(key, sizeof key);
    int fd = 1;
    if (argc == 2) {
        fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
            fprintf(stderr, "sluice keygen: %s: %s\n", argv[1], strerror(errno));
            return 1;
        }
    }
    hex[64] = '\n';
    ssize_t n = write(fd, hex, 65);
    sodium_memzero(hex, sizeof hex);
    if (n != 65 || (fd != 1 && close(fd) != 0)) {
        fprintf(stderr, "sluice keygen: write: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

int sl_cmd_cluster_stats(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"listen", required_argument, NULL, 'l'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *listen = NULL;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
        if (ch == 'c')
            config = optarg;
        else if (ch == 'l')
            listen = optarg;
        else
            goto usage;
    }
    char addr[128] = "";
    if (listen) {
        snprintf(addr, sizeof addr, "%s", listen);
    } else if (config) {
        char err[1024];
        enum sl_on_error on_error;
        struct sl_config *cfg = sl_conf_load(config, NULL, &on_error, err, sizeof err);
        if (!cfg) {
            fprintf(stderr, "sluice: %s\n", err);
            return 1;
        }
        if (!cfg->gossip.enabled) {
            fprintf(stderr, "sluice cluster-stats: %s has no gossip section\n", config);
            sl_conf_free(cfg);
            return 2;
        }
        snprintf(addr, sizeof addr, "%s", cfg->gossip.listen);
        sl_conf_free(cfg);
    } else {
        goto usage;
    }
    char name[200], err[256];
    sl_cluster_shm_name(addr, name, sizeof name);
    struct sl_cluster *c = sl_cluster_attach(name, err, sizeof err);
    if (!c) {
        fprintf(stderr, "sluice cluster-stats: %s\n", err);
        return 1;
    }
    uint64_t now = sl_clock_now();
    int pid;
    uint64_t age = sl_cluster_sender_age(c, now, &pid);
    printf("cluster %s: %u entries, %u in use; sender pid %d, last loop %llu ms ago\n",
           sl_cluster_self(c), sl_cluster_slots(c), sl_cluster_used(c), pid,
           (unsigned long long)(age / 1000000));
    for (int k = 0; k < SL_CC_NCOUNTERS; k++)
        printf("  %-18s %llu\n", sl_cluster_counter_names[k],
               (unsigned long long)sl_cluster_counter(c, (enum sl_cluster_counter)k));
    for (int k = 1; k < SL_WIRE_NSTATUS; k++)
        printf("  drop_%-13s %llu\n", sl_wire_status_names[k],
               (unsigned long long)sl_cluster_drops(c, (enum sl_wire_status)k));
    printf("  %-24s %-6s %12s %10s\n", "peer", "alive", "age_ms", "packets");
    for (int i = 0; i < sl_cluster_npeers(c); i++) {
        struct sl_cluster_peer_info p;
        sl_cluster_peer(c, i, now, &p);
        char agebuf[32] = "never";
        if (p.heard)
            snprintf(agebuf, sizeof agebuf, "%llu", (unsigned long long)(p.age_ns / 1000000));
        printf("  %-24s %-6s %12s %10llu\n", p.name, p.alive ? "yes" : "no", agebuf,
               (unsigned long long)p.packets);
    }
    sl_cluster_unmap(c);
    return 0;
usage:
    fprintf(stderr, "usage: sluice cluster-stats (-c FILE | --listen ADDRESS:PORT)\n");
    return 2;
}
