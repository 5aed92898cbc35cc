/* SPDX-License-Identifier: BSD-2-Clause */
/* init.c - loads the configuration and the table in a constructor
 * (before the program can fork or clear its environment, as nginx does
 * for its workers), and keeps fork safe. The top of the shim: it calls
 * down into every part that keeps state across fork.
 *
 * Outcome of a configuration that cannot be loaded: one message naming the
 * file, line, option and value; the program then runs unlimited, unless the
 * operator asked for on_error = closed, in which case it exits with status
 * 78 (EX_CONFIG) before main().
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../conf/conf.h"
#include "../core/fleet/cluster.h"
#include "../core/fleet/redis.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "fd.h"
#include "ready.h"
#include "reload.h"
#include "shim.h"
#include "unseen.h"

/* inherit = no: children started with exec run unlimited. */
static void drop_inheritance(void)
{
    static const char *const vars[] = {"SLUICE_CONFIG", "SLUICE_RULES", "SLUICE_ON_ERROR",
                                       "SLUICE_TABLE_FD", "SLUICE_TABLE_PID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
    const char *pre = getenv("LD_PRELOAD");
    if (!pre) return;
    char kept[4096] = "";
    char *copy = sl_strdup(pre);
    if (!copy) return;
    char *save = NULL;
    for (char *w = strtok_r(copy, " :", &save); w; w = strtok_r(NULL, " :", &save)) {
        const char *base = strrchr(w, '/');
        if (strcmp(base ? base + 1 : w, "libsluice.so") == 0) continue;
        if (*kept) strncat(kept, " ", sizeof kept - strlen(kept) - 1);
        strncat(kept, w, sizeof kept - strlen(kept) - 1);
    }
    sl_free(copy);
    if (*kept)
        setenv("LD_PRELOAD", kept, 1);
    else
        unsetenv("LD_PRELOAD");
}

static int parent_pid;

/* Names the program in its table, so `sluice ps`, `stats -c FILE` and
 * `reload` find it without a `shared` name (only the table's first process
 * does: its children and exec'd programs share what it wrote). */
static void describe(struct sl_table *table, const char *file, const char *rules)
{
    int saved = errno;
    char path[PATH_MAX] = "";
    if (file && *file && !realpath(file, path)) snprintf(path, sizeof path, "%s", file);
    sl_table_describe(table, (int)getpid(), program_invocation_short_name, path, rules);
    errno = saved;
}

static void before_fork(void)
{
    parent_pid = getpid();
    sl_fd_prefork();
}

static void after_fork_child(void)
{
    sl_linger_after_fork_child();
    sl_ready_after_fork_child();
    sl_fd_postfork_child(parent_pid);
}

__attribute__((constructor)) static void sl_init(void)
{
    sl_guard = 1;
    sl_shim_resolve();
    const char *file = getenv("SLUICE_CONFIG");
    const char *rules = getenv("SLUICE_RULES");
    if ((!file || !*file) && (!rules || !*rules)) goto out;

    sl_conf_set_resolver(sl_real.getaddrinfo, sl_real.freeaddrinfo);
    char err[1024];
    enum sl_on_error on_error = SL_ON_ERROR_OPEN;
    struct sl_config *cfg =
        sl_conf_load(file && *file ? file : NULL, rules, &on_error, err, sizeof err);
    if (!cfg) {
        sl_conf_report_failure(err, on_error);
        if (on_error == SL_ON_ERROR_CLOSED) _exit(78);
        goto out;
    }
    sl_log_setup(cfg->log, cfg->log_level);
    sl_conf_report_degraded(cfg);
    if (!cfg->inherit) drop_inheritance();

    struct sl_table *table;
    if (*cfg->shared || !cfg->inherit) {
        table = sl_table_open(cfg->table_slots, cfg->shared, cfg->on_full, err, sizeof err);
        if (!table && *cfg->shared && cfg->on_error != SL_ON_ERROR_CLOSED) {
            /* a name another user made first (or a broken file) never
             * means no limits: this program counts alone */
            sl_log(SL_LOG_ERROR,
                   "table: %s; counting in a table of this program's own (on_error = open): "
                   "other programs that name \"%s\" do not count with it",
                   err, cfg->shared);
            table = sl_table_open(cfg->table_slots, NULL, cfg->on_full, err, sizeof err);
        }
    } else { /* one table for the program and every program it starts with exec */
        const char *inh = getenv("SLUICE_TABLE_FD"), *holder = getenv("SLUICE_TABLE_PID");
        int fd = -1;
        char note[256];
        table = sl_table_open_inherited(
            cfg->table_slots, cfg->on_full, inh && *inh ? atoi(inh) : -1,
            holder && *holder ? atoi(holder) : -1, &fd, note, sizeof note, err, sizeof err);
        if (*note) sl_log(SL_LOG_WARN, "%s", note);
        char num[16];
        snprintf(num, sizeof num, "%d", fd);
        if (fd >= 0) { /* this process holds it for the programs it starts */
            setenv("SLUICE_TABLE_FD", num, 1);
            snprintf(num, sizeof num, "%d", (int)getpid());
            setenv("SLUICE_TABLE_PID", num, 1);
        } else { /* numbers that name nothing of ours */
            unsetenv("SLUICE_TABLE_FD");
            unsetenv("SLUICE_TABLE_PID");
        }
    }
    struct sl_runtime *rt = table ? sl_alloc(sizeof *rt) : NULL;
    if (!rt || sl_runtime_init(rt, cfg, table, err, sizeof err) != 0) {
        if (table && !rt) snprintf(err, sizeof err, "out of memory"); /* else err says why */
        if (cfg->on_error == SL_ON_ERROR_CLOSED) {
            sl_log(SL_LOG_ERROR, "table: %s; on_error = closed: refusing to start", err);
            _exit(78);
        }
        sl_log(SL_LOG_ERROR, "table: %s; running unlimited (on_error = open)", err);
        goto out;
    }
    if (cfg->gossip.enabled) {
        rt->cluster = sl_cluster_open(cfg, err, sizeof err);
        if (!rt->cluster) {
            if (cfg->on_error == SL_ON_ERROR_CLOSED) {
                sl_log(SL_LOG_ERROR, "gossip: %s; on_error = closed: refusing to start", err);
                _exit(78);
            }
            sl_log(SL_LOG_ERROR, "gossip: %s; cluster rules count on this host only", err);
        }
    }
    if (cfg->redis.enabled) { /* the sender only fails to start; Redis itself is never waited for */
        rt->redis = sl_redis_open(cfg, err, sizeof err);
        if (!rt->redis) {
            if (cfg->on_error == SL_ON_ERROR_CLOSED) {
                sl_log(SL_LOG_ERROR, "redis: %s; on_error = closed: refusing to start", err);
                _exit(78);
            }
            sl_log(SL_LOG_ERROR, "redis: %s; redis rules count on this host only", err);
        }
    }
    describe(table, file, rules);
    pthread_atfork(before_fork, NULL, after_fork_child);
    sl_log(SL_LOG_DEBUG, "%d rules from %s, table of %u slots%s%s", cfg->nrules, cfg->source,
           sl_table_slots(table), *cfg->shared ? " shared as " : "", cfg->shared);
    rt->config_gen = sl_table_config_gen(table);
    sl_reload_remember(file, rules);
    atomic_store_explicit(&sl_runtime_ptr, rt, memory_order_release);
    sl_unseen_at_start(rt);
out:
    sl_guard = 0;
}
