/* SPDX-License-Identifier: BSD-2-Clause */
/* locate.c - see locate.h. */
#include "locate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../conf/conf.h"

#define SHM_PREFIX   "/dev/shm/sluice."
#define MEMFD_PREFIX "/memfd:sluice-table"

static struct sl_place *find(struct sl_place *p, size_t n, unsigned long dev,
                             unsigned long long ino)
{
    for (size_t i = 0; i < n; i++)
        if (p[i].dev == dev && p[i].ino == ino) return &p[i];
    return NULL;
}

/* A descriptor of pid's that holds the memory file (dev, ino). */
static bool fd_path(int pid, unsigned long dev, unsigned long long ino, char *out, size_t len)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/%.200s", dir, de->d_name);
        if (stat(p, &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
            snprintf(out, len, "%s", p);
            found = true;
        }
    }
    closedir(d);
    return found;
}

/* The creator of a named table maps it under the temporary name it made
 * it with (core/shm.c), NAME.new.PID, unlinked once linked as NAME: the
 * same file if NAME has its inode. Rewrites path to NAME; false when the
 * mapping is no table under a name any more. */
static bool published_name(char *path, unsigned long dev, unsigned long long ino)
{
    char *del = strstr(path, " (deleted)");
    if (del) *del = 0;
    char *tmp = strstr(path, ".new.");
    if (tmp) *tmp = 0;
    if (!del) return !tmp;
    struct stat st;
    return tmp && stat(path, &st) == 0 && (unsigned long)st.st_dev == dev && st.st_ino == ino;
}

/* A line of /proc/PID/maps that maps a file from its start. */
struct mapping {
    unsigned long start, end, dev;
    unsigned long long ino;
    char *path; /* in the line, its newline cut */
};

static bool mapping(char *line, struct mapping *m)
{
    unsigned long maj, min;
    unsigned long long off;
    char perms[8];
    int at = 0;
    if (sscanf(line, "%lx-%lx %7s %llx %lx:%lx %llu %n", &m->start, &m->end, perms, &off, &maj,
               &min, &m->ino, &at) < 7 ||
        !at || off != 0)
        return false;
    m->dev = (unsigned long)makedev(maj, min);
    m->path = line + at;
    m->path[strcspn(m->path, "\n")] = 0;
    return true;
}

static void add_pid(struct sl_place *p, int pid)
{
    for (int i = 0; i < p->npids && i < SL_PLACE_PIDS; i++)
        if (p->pids[i] == pid) return;
    if (p->npids < SL_PLACE_PIDS) p->pids[p->npids] = pid;
    p->npids++;
}

/* Adds the tables pid maps to out[0..*n). */
static void scan_pid(int pid, struct sl_place *out, size_t max, size_t *n, size_t *total)
{
    char name[64], line[PATH_MAX + 128];
    snprintf(name, sizeof name, "/proc/%d/maps", pid);
    FILE *f = fopen(name, "re");
    if (!f) return;
    struct mapping m;
    while (fgets(line, sizeof line, f)) {
        if (!mapping(line, &m)) continue;
        char *path = m.path;
        unsigned long dev = m.dev, start = m.start, end = m.end;
        unsigned long long ino = m.ino;
        bool memfd = strncmp(path, MEMFD_PREFIX, strlen(MEMFD_PREFIX)) == 0;
        bool named = strncmp(path, SHM_PREFIX, strlen(SHM_PREFIX)) == 0;
        if (named && !published_name(path, dev, ino)) continue;
        if (!memfd && !named) continue;
        struct sl_place *p = find(out, *n, dev, ino);
        if (!p) {
            char open_path[PATH_MAX] = "";
            if (named)
                snprintf(open_path, sizeof open_path, "%s", path);
            else if (!fd_path(pid, dev, ino, open_path, sizeof open_path))
                snprintf(open_path, sizeof open_path, "/proc/%d/map_files/%lx-%lx", pid, start,
                         end); /* a program that closed the descriptor: root can still read it */
            (*total)++;
            if (*n >= max) continue;
            p = &out[(*n)++];
            memset(p, 0, sizeof *p);
            p->dev = dev;
            p->ino = ino;
            snprintf(p->path, sizeof p->path, "%s", open_path);
            if (named) snprintf(p->shared, sizeof p->shared, "%s", path + strlen(SHM_PREFIX));
        }
        add_pid(p, pid);
    }
    fclose(f);
}

/* What the table says about its program. */
static void describe(struct sl_place *p)
{
    char err[256];
    struct sl_table *t = sl_place_open(p, false, err, sizeof err);
    if (!t) return;
    sl_table_origin(t, &p->origin_pid, p->command, sizeof p->command);
    if (p->npids) { /* what runs now: the first process may have exec'd since it wrote its name */
        char comm[64];
        snprintf(comm, sizeof comm, "/proc/%d/comm", p->pids[0]);
        FILE *f = fopen(comm, "re");
        if (f && fgets(p->command, sizeof p->command, f)) p->command[strcspn(p->command, "\n")] = 0;
        if (f) fclose(f);
    }
    sl_table_config_path(t, p->config, sizeof p->config);
    char rules[8];
    sl_table_config_rules(t, rules, sizeof rules);
    p->inline_rules = *rules != 0;
    sl_table_close(t);
}

/* Named tables in /dev/shm that no process maps. */
static void scan_left(struct sl_place *out, size_t max, size_t *n, size_t *total)
{
    DIR *d = opendir("/dev/shm");
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "sluice.", 7) != 0 || strstr(de->d_name, ".new.")) continue;
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "/dev/shm/%s", de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) continue;
        if (find(out, *n, (unsigned long)st.st_dev, st.st_ino)) continue;
        (*total)++;
        if (*n >= max) continue;
        struct sl_place *p = &out[(*n)++];
        memset(p, 0, sizeof *p);
        p->dev = (unsigned long)st.st_dev;
        p->ino = st.st_ino;
        snprintf(p->path, sizeof p->path, "%s", path);
        snprintf(p->shared, sizeof p->shared, "%s", de->d_name + 7);
    }
    closedir(d);
}

static int by_pid(const void *a, const void *b)
{
    const struct sl_place *x = a, *y = b;
    if (!x->npids != !y->npids) return x->npids ? -1 : 1;
    return x->npids ? (x->pids[0] > y->pids[0]) - (x->pids[0] < y->pids[0])
                    : strcmp(x->shared, y->shared);
}

static int by_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static size_t locate(int only_pid, struct sl_place *out, size_t max, size_t *total)
{
    size_t n = 0;
    *total = 0;
    if (only_pid > 0) {
        scan_pid(only_pid, out, max, &n, total);
    } else {
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            char *end;
            long pid = strtol(de->d_name, &end, 10);
            if (*end || pid <= 0) continue;
            scan_pid((int)pid, out, max, &n, total);
        }
        if (d) closedir(d);
        scan_left(out, max, &n, total);
    }
    for (size_t i = 0; i < n; i++) {
        int k = out[i].npids < SL_PLACE_PIDS ? out[i].npids : SL_PLACE_PIDS;
        qsort(out[i].pids, (size_t)k, sizeof(int), by_int);
        describe(&out[i]);
    }
    qsort(out, n, sizeof *out, by_pid);
    return n;
}

size_t sl_locate_all(struct sl_place *out, size_t max, size_t *total)
{
    return locate(0, out, max, total);
}

size_t sl_locate(const char *config, const char *shared, int pid, struct sl_place *out, size_t max,
                 char *err, size_t errlen)
{
    size_t total, n;
    char name[SL_NAME_MAX] = "";
    if (shared) snprintf(name, sizeof name, "%s", shared);
    if (!*name && pid <= 0 && config) {
        enum sl_on_error on_error;
        struct sl_config *cfg = sl_conf_load(config, NULL, &on_error, err, errlen);
        if (!cfg) return 0;
        snprintf(name, sizeof name, "%s", cfg->shared);
        sl_conf_free(cfg);
    }
    if (*name) {
        memset(out, 0, sizeof *out);
        snprintf(out->shared, sizeof out->shared, "%s", name);
        snprintf(out->path, sizeof out->path, SHM_PREFIX "%s", name);
        struct stat st;
        if (stat(out->path, &st) == 0) {
            out->dev = (unsigned long)st.st_dev;
            out->ino = st.st_ino;
        }
        describe(out);
        return 1;
    }
    if (pid > 0) {
        n = locate(pid, out, max, &total);
        if (!n) snprintf(err, errlen, "process %d runs no table (is it under sluice?)", pid);
        return n;
    }
    if (!config) {
        snprintf(err, errlen, "say which program: -c FILE, --pid PID or --shared NAME");
        return 0;
    }
    char want[PATH_MAX];
    if (!realpath(config, want)) {
        snprintf(err, errlen, "%s: %s", config, strerror(errno));
        return 0;
    }
    struct sl_place *all = calloc(SL_LOCATE_MAX, sizeof *all);
    if (!all) {
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    n = locate(0, all, SL_LOCATE_MAX, &total);
    size_t kept = 0;
    for (size_t i = 0; i < n && kept < max; i++)
        if (all[i].npids && !*all[i].shared && strcmp(all[i].config, want) == 0)
            out[kept++] = all[i];
    free(all);
    if (!kept)
        snprintf(err, errlen,
                 "no running program was started with %s (`sluice ps` lists those that run)", want);
    return kept;
}

struct sl_table *sl_place_open(const struct sl_place *p, bool writable, char *err, size_t errlen)
{
    if (*p->shared)
        return writable ? sl_table_attach_rw(p->shared, err, errlen)
                        : sl_table_attach(p->shared, err, errlen);
    int fd = open(p->path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", p->path, strerror(errno));
        return NULL;
    }
    struct sl_table *t = sl_table_attach_fd(fd, writable, err, errlen);
    close(fd);
    return t;
}

void sl_place_label(const struct sl_place *p, char *out, size_t len)
{
    if (*p->shared)
        snprintf(out, len, "shared %s", p->shared);
    else
        snprintf(out, len, "pid %d (%s)", p->npids ? p->pids[0] : p->origin_pid,
                 *p->command ? p->command : "?");
}

bool sl_locate_memfd(int pid, const char *memfd, char *path, size_t len)
{
    char name[64], line[PATH_MAX + 128], want[96];
    snprintf(name, sizeof name, "/proc/%d/maps", pid);
    snprintf(want, sizeof want, "/memfd:%s (deleted)", memfd);
    FILE *f = fopen(name, "re");
    if (!f) return false;
    bool found = false;
    struct mapping m;
    while (!found && fgets(line, sizeof line, f))
        if (mapping(line, &m) && strncmp(m.path, want, strlen(want)) == 0)
            found = fd_path(pid, m.dev, m.ino, path, len);
    fclose(f);
    return found;
}
