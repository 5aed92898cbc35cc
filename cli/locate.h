/* SPDX-License-Identifier: BSD-2-Clause */
/* locate.h - finds the tables of running programs, for `sluice ps`, `stats`,
 * `reload`, `metrics` and `top`: by `shared` name, by the configuration file
 * a program was started with, by the pid of one of its processes, or all.
 *
 * Every process under sluice maps its table, so /proc/PID/maps names it:
 * /dev/shm/sluice.NAME for a named table, /memfd:sluice-table for the
 * others, which /proc/PID/fd (or map_files, as root) reaches. A named
 * table that no process maps any more is "left": it keeps its counts for
 * the next start (quotas must survive a restart) until `sluice ps --clean`.
 */
#ifndef SL_LOCATE_H
#define SL_LOCATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "../core/rule.h"
#include "../core/limit/table.h"

#define SL_PLACE_PIDS 16
#define SL_LOCATE_MAX 256 /* tables a listing holds */

struct sl_place {
    char path[PATH_MAX];      /* opens it: /dev/shm/sluice.NAME or /proc/PID/fd/N */
    char shared[SL_NAME_MAX]; /* "" : unnamed */
    unsigned long long ino;   /* identity, with dev */
    unsigned long dev;
    int pids[SL_PLACE_PIDS]; /* processes mapping it, lowest first */
    int npids;               /* all of them (more than SL_PLACE_PIDS are counted, not kept) */
    int origin_pid;          /* the process that described it (0: none) */
    char command[64];
    char config[1024]; /* the file it runs from ("" : inline rules only) */
    bool inline_rules;
};

/* Every table this user can see, ordered by their first pid; left-over
 * named tables last. Returns how many (at most max); *total counts all. */
size_t sl_locate_all(struct sl_place *out, size_t max, size_t *total);

/* The tables a command names: --shared NAME (even with no program running),
 * --pid PID, or -c FILE (its `shared` name if it has one, else every running
 * program started with FILE). Returns how many, or 0 with err saying why. */
size_t sl_locate(const char *config, const char *shared, int pid, struct sl_place *out, size_t max,
                 char *err, size_t errlen);

/* Opens a located table; writable for reload. NULL with err on failure. */
struct sl_table *sl_place_open(const struct sl_place *p, bool writable, char *err, size_t errlen);

/* A memory file of sluice's named `memfd` ("sluice-redis") that process
 * pid maps, as a path that opens it; false when it maps none. */
bool sl_locate_memfd(int pid, const char *memfd, char *path, size_t len);

/* "shared NAME" or "pid P (COMMAND)": how the commands name a table. */
void sl_place_label(const struct sl_place *p, char *out, size_t len);

#endif
