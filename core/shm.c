/* SPDX-License-Identifier: BSD-2-Clause */
/* shm.c - see shm.h. Trust: an existing object is used only if it is a
 * regular file of this program's user (or root) with mode 0600. Creation: O_EXCL on "NAME.new.PID",
 * ftruncate, mmap, init, then link() to NAME, which fails with EEXIST if another process published
 * first (we then drop ours and use theirs). A process that dies between the two leaves the
 * temporary file behind, never a half-made object under the real name. */
#include "shm.h"

#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sys.h"

static void *map_fd(int fd, size_t bytes, bool readonly)
{
    void *map = mmap(NULL, bytes, readonly ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return map == MAP_FAILED ? NULL : map;
}

/* 1: created and published; 0: another process published first; -1: error. */
static int create(const struct sl_shm_spec *s, void **map, char *err, size_t errlen)
{
    char tmp[256];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.new.%d", s->name, (int)getpid()) >= sizeof tmp) {
        snprintf(err, errlen, "%s: name too long", s->name);
        return -1;
    }
    sl_sys_shm_unlink(tmp); /* left by a process of ours that died with this pid */
    int fd = sl_sys_shm_open(tmp, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "shm_open %s: %s", tmp, strerror(errno));
        return -1;
    }
    *map = NULL;
    if (sl_sys_ftruncate(fd, (off_t)s->bytes) != 0) {
        snprintf(err, errlen, "ftruncate %s: %s", tmp, strerror(errno));
    } else if (!(*map = map_fd(fd, s->bytes, false))) {
        snprintf(err, errlen, "mmap %zu bytes: %s", s->bytes, strerror(errno));
    }
    sl_sys_close(fd);
    if (!*map) {
        sl_sys_shm_unlink(tmp);
        return -1;
    }
    s->init(*map, s->arg);
    char from[300], to[300];
    snprintf(from, sizeof from, "/dev/shm%s", tmp);
    snprintf(to, sizeof to, "/dev/shm%s", s->name);
    int rc = sl_sys_link(from, to);
    int e = errno;
    sl_sys_shm_unlink(tmp);
    if (rc == 0) return 1;
    munmap(*map, s->bytes);
    *map = NULL;
    if (e == EEXIST) return 0;
    snprintf(err, errlen, "link %s: %s", s->name, strerror(e));
    return -1;
}

/* An object another local user could write is one they could switch off
 * or steer (zero its buckets, shrink it to nothing): it must be a regular
 * file owned by us or root, which no one else may read or write. Not
 * checked for a read-only attach (stats), which decides nothing. */
static bool trusted(const struct sl_shm_spec *s, const struct stat *st, char *err, size_t errlen)
{
    if (!S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "/dev/shm%s is not a regular file: refusing it", s->name);
        return false;
    }
    if (s->readonly) return true;
    uid_t me = geteuid();
    if (st->st_uid != me && st->st_uid != 0) {
        char owner[64] = "";
        struct passwd pw, *found = NULL;
        char buf[1024];
        if (getpwuid_r(st->st_uid, &pw, buf, sizeof buf, &found) == 0 && found)
            snprintf(owner, sizeof owner, "%s ", found->pw_name);
        snprintf(err, errlen,
                 "/dev/shm%s is owned by %s(uid %u), not by this program's user (uid %u) or root: "
                 "refusing it",
                 s->name, owner, (unsigned)st->st_uid, (unsigned)me);
        return false;
    }
    if (st->st_mode & 077) {
        snprintf(err, errlen,
                 "/dev/shm%s has mode %04o, not 0600: other users could change it; "
                 "refusing it",
                 s->name, (unsigned)(st->st_mode & 07777));
        return false;
    }
    return true;
}

/* -1: missing (errno ENOENT); 0: refused or failed (err says why);
 * 1: mapped; 2: stale, unlinked. */
static int open_existing(const struct sl_shm_spec *s, void **map, size_t *bytes, char *err,
                         size_t errlen)
{
    int fd = sl_sys_shm_open(s->name, s->readonly ? O_RDONLY : O_RDWR, 0);
    if (fd < 0) {
        if (errno == ENOENT) return -1;
        snprintf(err, errlen, "shm_open %s: %s", s->name, strerror(errno));
        return 0;
    }
    struct stat st;
    uint8_t hdr[4096];
    ssize_t got = 0;
    int rc = 0;
    if (sl_sys_fstat(fd, &st) != 0) {
        snprintf(err, errlen, "fstat %s: %s", s->name, strerror(errno));
    } else if (!trusted(s, &st, err, errlen)) {
        /* err says why */
    } else if ((got = sl_sys_pread(fd, hdr, s->hdr_len, 0)) < 0) {
        snprintf(err, errlen, "read %s: %s", s->name, strerror(errno));
    } else {
        char why[200] = "";
        switch (s->judge(hdr, (size_t)got, (size_t)st.st_size, s->arg, bytes, why, sizeof why)) {
        case SL_SHM_USE:
            if ((*map = map_fd(fd, *bytes, s->readonly)))
                rc = 1;
            else
                snprintf(err, errlen, "mmap %zu bytes: %s", *bytes, strerror(errno));
            break;
        case SL_SHM_STALE:
            if (s->create) {
                sl_sys_shm_unlink(s->name); /* users of the old one keep their mapping */
                rc = 2;
                break;
            }
            /* fall through */
        case SL_SHM_BAD:
            snprintf(err, errlen, "/dev/shm%s %s", s->name, why);
            break;
        }
    }
    sl_sys_close(fd);
    return rc;
}

void *sl_shm_open(const struct sl_shm_spec *s, size_t *bytes, bool *created, char *err,
                  size_t errlen)
{
    *created = false;
    if (s->hdr_len > 4096) {
        snprintf(err, errlen, "%s: header of %zu bytes", s->name, s->hdr_len);
        return NULL;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        void *map = NULL;
        int found = open_existing(s, &map, bytes, err, errlen);
        if (found == 1) return map;
        if (found == 0) return NULL;
        if (found == -1 && !s->create) {
            snprintf(err, errlen, "shm_open %s: %s", s->name, strerror(ENOENT));
            return NULL;
        }
        int made = create(s, &map, err, errlen);
        if (made < 0) return NULL;
        if (made == 1) {
            *bytes = s->bytes;
            *created = true;
            return map;
        }
    }
    snprintf(err, errlen, "%s: replaced by other processes while opening it; try again", s->name);
    return NULL;
}

/* What children started with exec inherit of a memory file: a read-only
 * descriptor, kept above the program's own numbers. Each child reopens it
 * read-write through /proc (sl_sys_reopen), which the kernel allows only
 * to the file's owner, since it is 0600: a child running as another user
 * (setpriv, su, a worker that dropped privileges, then exec) can read the
 * table but never write it. -1 without /proc: nothing is inherited. */
static int inheritable(int fd)
{
    int ro = sl_sys_reopen(fd, O_RDONLY);
    if (ro < 0) return -1;
    int high = sl_sys_dupfd(ro, 512, false);
    sl_sys_close(ro);
    return high;
}

void *sl_shm_unnamed(const char *name, size_t bytes, bool cloexec, int *fd_out, char *err,
                     size_t errlen)
{
    int fd = sl_sys_memfd(name, true); /* read-write: this process's alone */
    if (fd >= 0) {
        int high = sl_sys_dupfd(fd, 512, true);
        if (high >= 0) {
            sl_sys_close(fd);
            fd = high;
        }
    }
    if (fd >= 0 && sl_sys_fchmod(fd, 0600) != 0) { /* memfd makes it 0777 */
        sl_sys_close(fd);
        fd = -1;
    }
    if (fd >= 0 && sl_sys_ftruncate(fd, (off_t)bytes) != 0) {
        sl_sys_close(fd);
        fd = -1;
    }
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     fd >= 0 ? MAP_SHARED : MAP_SHARED | MAP_ANONYMOUS, fd, 0);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "mmap %zu bytes: %s", bytes, strerror(errno));
        if (fd >= 0) sl_sys_close(fd);
        return NULL;
    }
    if (fd >= 0 && !cloexec) {
        int ro = inheritable(fd);
        if (ro >= 0) {
            sl_sys_close(fd); /* the mapping stays */
            fd = ro;
        }
    }
    *fd_out = fd;
    return map;
}
