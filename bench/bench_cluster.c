/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_cluster.c - cluster limits in simulation: fleet accuracy against
 * gossip interval and number of nodes, and gossip bytes per second per node
 * against the number of active keys. Prints markdown.
 *
 * The fleet is simulated in one process on a virtual clock (so the table
 * is exact and repeatable, and takes seconds, not hours): n cluster states,
 * each sending its real authenticated datagrams every interval (phases
 * staggered), delivered to every peer 1 ms later. One client key floods
 * every node at 2000 requests/s per node against a fleet limit of 1000/s
 * (sliding window, 1 s). Accuracy is admitted / limit over seconds 2..10.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/unit/cluster_util.h"

#define SEC   1000000000ull
#define MS    1000000ull
#define T0    (1000000 * SEC)
#define LIMIT 1000
#define DELAY (1 * MS)

struct inflight {
    uint64_t due;
    int from;
    size_t len;
    uint8_t data[SL_WIRE_MAX];
};

static struct inflight *q;
static int nq, capq;
static uint64_t emit_due;
static int emit_from;

static void enqueue(void *arg, const uint8_t *pkt, size_t len)
{
    (void)arg;
    if (nq == capq) {
        capq = capq ? 2 * capq : 1024;
        q = realloc(q, (size_t)capq * sizeof *q);
    }
    q[nq].due = emit_due;
    q[nq].from = emit_from;
    q[nq].len = len;
    memcpy(q[nq].data, pkt, len);
    nq++;
}

static double accuracy(int n, uint64_t interval)
{
    struct sl_config *cfg[CU_MAX_NODES];
    struct sl_cluster *c[CU_MAX_NODES];
    char err[256];
    for (int i = 0; i < n; i++) {
        cfg[i] = cu_config(i, n, LIMIT, SEC, interval, 4096);
        c[i] = sl_cluster_create(cfg[i], NULL, err, sizeof err);
        if (!c[i]) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
        sl_cluster_set_offset(c[i], 0);
    }
    struct sl_key k = cu_key(cfg[0], 1);
    const uint64_t step = SEC / 2000; /* each node: one request per step */
    uint64_t next_send[CU_MAX_NODES];
    for (int i = 0; i < n; i++)
        next_send[i] = T0 + interval * (uint64_t)i / (uint64_t)n;
    uint64_t admitted = 0, tick[CU_MAX_NODES] = {0};
    nq = 0;
    for (uint64_t now = T0; now < T0 + 10 * SEC; now += step) {
        for (int i = 0; i < n; i++) {
            if (now >= next_send[i]) {
                emit_due = now + DELAY;
                emit_from = i;
                sl_cluster_build(c[i], now, tick[i]++ % (SEC / interval ? SEC / interval : 1) == 0,
                                 enqueue, NULL);
                next_send[i] += interval;
            }
        }
        int kept = 0;
        for (int j = 0; j < nq; j++) {
            if (q[j].due > now) {
                if (kept != j) q[kept] = q[j];
                kept++;
                continue;
            }
            for (int i = 0; i < n; i++)
                if (i != q[j].from) sl_cluster_receive(c[i], q[j].data, q[j].len, now);
        }
        nq = kept;
        for (int i = 0; i < n; i++) {
            struct sl_verdict v;
            sl_cluster_decide(c[i], 0, &cfg[i]->rules[0], &k, now, 1, &v);
            if (v.allowed && now >= T0 + 2 * SEC) admitted++;
        }
    }
    for (int i = 0; i < n; i++) {
        sl_cluster_close(c[i]);
        free(cfg[i]);
    }
    return (double)admitted / (8.0 * LIMIT);
}

/* The worst realtime window, over 6 s of requests that start mid-window
 * (the first window included), as a share of the limit: n nodes, limit
 * `limit`/s, `rate` requests/s in all spread round robin over the nodes,
 * ticks every 100 ms; with `early`, a node whose decision raised the
 * urgent word sends at once, heard WAKE + DELAY later (its sender's
 * wake-up and the network), as the sender thread does. */
#define WAKE (1 * MS)
static double worst_window(int n, uint64_t limit, uint64_t rate, bool early)
{
    struct sl_config *cfg[CU_MAX_NODES] = {0};
    struct sl_cluster *c[CU_MAX_NODES] = {0};
    char err[256];
    const uint64_t interval = 100 * MS;
    for (int i = 0; i < n; i++) {
        cfg[i] = cu_config(i, n, limit, SEC, interval, 4096);
        c[i] = sl_cluster_create(cfg[i], NULL, err, sizeof err);
        if (!c[i]) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
        sl_cluster_set_offset(c[i], 0);
    }
    struct sl_key k = cu_key(cfg[0], 1);
    uint64_t next_send[CU_MAX_NODES], tick[CU_MAX_NODES] = {0}, per_win[8] = {0};
    for (int i = 0; i < n; i++)
        next_send[i] = T0 + interval * (uint64_t)i / (uint64_t)n;
    nq = 0;
    const uint64_t step = SEC / rate, start = T0 + SEC / 2;
    int node = 0;
    for (uint64_t now = T0; now < start + 6 * SEC; now += step) {
        for (int i = 0; i < n; i++) {
            if (now >= next_send[i]) {
                emit_due = now + DELAY;
                emit_from = i;
                sl_cluster_build(c[i], now, tick[i]++ % 10 == 0, enqueue, NULL);
                next_send[i] += interval;
            }
        }
        int kept = 0;
        for (int j = 0; j < nq; j++) {
            if (q[j].due > now) {
                if (kept != j) q[kept] = q[j];
                kept++;
                continue;
            }
            for (int i = 0; i < n; i++)
                if (i != q[j].from) sl_cluster_receive(c[i], q[j].data, q[j].len, now);
        }
        nq = kept;
        if (now < start) continue;
        struct sl_verdict v;
        sl_cluster_decide(c[node], 0, &cfg[node]->rules[0], &k, now, 1, &v);
        if (v.allowed) per_win[(now - T0) / SEC]++;
        if (sl_cluster_take_urgent(c[node]) && early) {
            emit_due = now + WAKE + DELAY;
            emit_from = node;
            sl_cluster_build(c[node], now, false, enqueue, NULL);
        }
        node = (node + 1) % n;
    }
    uint64_t worst = 0;
    for (int w = 0; w < 7; w++)
        worst = per_win[w] > worst ? per_win[w] : worst;
    for (int i = 0; i < n; i++) {
        sl_cluster_close(c[i]);
        free(cfg[i]);
    }
    return (double)worst / (double)limit;
}

static size_t bytes;
static void count_bytes(void *arg, const uint8_t *pkt, size_t len)
{
    (void)arg;
    (void)pkt;
    bytes += len;
}

/* Every key gets a request every interval (the worst case for deltas);
 * 10 intervals of 100 ms, the first a full refresh, as the sender does. */
static double bytes_per_sec(uint32_t keys, uint64_t interval)
{
    char err[256];
    uint32_t slots = 64;
    while (slots / 4 < keys * 2)
        slots <<= 1;
    struct sl_config *cfg = cu_config(0, 3, 1000000, SEC, interval, slots);
    struct sl_cluster *c = sl_cluster_create(cfg, NULL, err, sizeof err);
    if (!c) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    sl_cluster_set_offset(c, 0);
    bytes = 0;
    int ticks = (int)(SEC / interval);
    for (int t = 0; t < ticks; t++) {
        uint64_t now = T0 + (uint64_t)t * interval;
        for (uint32_t i = 0; i < keys; i++) {
            struct sl_key k = cu_key(cfg, i);
            struct sl_verdict v;
            sl_cluster_decide(c, 0, &cfg->rules[0], &k, now, 1, &v);
        }
        sl_cluster_build(c, now, t == 0, count_bytes, NULL);
    }
    sl_cluster_close(c);
    free(cfg);
    return (double)bytes; /* over one second */
}

int main(void)
{
    static const uint64_t intervals[] = {10 * MS, 50 * MS, 100 * MS, 250 * MS};
    printf("### Cluster limits: fleet accuracy (admitted / limit)\n\n");
    printf("Simulated fleet, one client flooding every node at 2000/s each, limit %d/s "
           "(sliding, 1 s), gossip delivered after 1 ms, seconds 2-10. "
           "In brackets: the documented steady-state bound 1 + (n-1)s/(nW-(n-1)s), "
           "s = interval + 1 ms.\n\n",
           LIMIT);
    printf("| nodes |");
    for (size_t i = 0; i < 4; i++)
        printf(" %llu ms |", (unsigned long long)(intervals[i] / MS));
    printf("\n|---|---|---|---|---|\n");
    for (int n = 2; n <= 8; n++) {
        printf("| %d |", n);
        for (size_t i = 0; i < 4; i++) {
            double s = (double)(intervals[i] + DELAY) / SEC;
            double bound = 1 + (n - 1) * s / (n - (n - 1) * s);
            printf(" %.3f (%.3f) |", accuracy(n, intervals[i]), bound);
            fflush(stdout);
        }
        printf("\n");
    }
    printf("\n### Cluster limits: worst window under a flood, early sends on and off\n\n");
    printf("Simulated fleet, interval 100 ms, requests spread round robin from the "
           "middle of a window for 6 s: flood = 10 x the limit, steady = 1.2 x; worst "
           "realtime window (the first included) / limit, early sends off -> on. "
           "Bound with early sends: 1 + (n-1)(T + a)/L, T = max(1, L/16n), a = what "
           "a node admits in the 2 ms wake-up + delay.\n\n");
    printf("| nodes | limit/s | flood: off -> on | steady: off -> on | bound |\n"
           "|---|---|---|---|---|\n");
    static const int fleet[] = {2, 3, 5};
    static const uint64_t limits[] = {100, 10000};
    for (size_t li = 0; li < 2; li++) {
        for (size_t ni = 0; ni < 3; ni++) {
            int n = fleet[ni];
            uint64_t L = limits[li], T = L / (16 * (uint64_t)n) ? L / (16 * (uint64_t)n) : 1;
            double a = 10.0 * (double)L / (double)n * 0.002; /* flood, per node, 2 ms */
            printf("| %d | %llu | %.3f -> %.3f | %.3f -> %.3f | %.3f |\n", n, (unsigned long long)L,
                   worst_window(n, L, 10 * L, false), worst_window(n, L, 10 * L, true),
                   worst_window(n, L, 12 * L / 10, false), worst_window(n, L, 12 * L / 10, true),
                   1 + (double)(n - 1) * ((double)T + a) / (double)L);
            fflush(stdout);
        }
    }
    printf("\n### Cluster limits: gossip bytes per second per node (interval 100 ms)\n\n");
    printf("Every key changes every interval (the worst case for sending only what "
           "changed); bytes are UDP payload, sent to each peer.\n\n");
    printf("| active keys | bytes/s per peer | datagrams/s per peer |\n|---|---|---|\n");
    static const uint32_t keys[] = {1000, 10000, 100000};
    for (size_t i = 0; i < 3; i++) {
        double b = bytes_per_sec(keys[i], 100 * MS);
        double per = SL_WIRE_HDR + SL_WIRE_MAC + SL_WIRE_MAX_RECS * SL_WIRE_REC;
        printf("| %u | %.0f | %.0f |\n", keys[i], b, b / per + 0.5);
        fflush(stdout);
    }
    return 0;
}
