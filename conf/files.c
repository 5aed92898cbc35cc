/* SPDX-License-Identifier: BSD-2-Clause */
/* files.c - the files a configuration is or names: the config file
 * itself, reply files and the gossip key file.
 *
 * All three are opened the same way: without blocking (a FIFO must not
 * hang a load, or `sluice check`), refused unless they are regular files,
 * and read by one loop that retries EINTR. Paths a config names are
 * relative to the config file's directory (inline rules: the working
 * directory). The library loads configurations inside the host program:
 * files are opened, read and closed through core/sys.h, never through the
 * names the shim interposes.
 */
#include "conf_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/mem.h"
#include "../core/sys.h"

/* Where a path given in the config is opened: relative to the config
 * file's directory (inline rules: the working directory). */
static const char *join_path(const char *path, char *joined, size_t len, const char **open_path)
{
    *open_path = path;
    if (path[0] == 0) return "is not a file name";
    if (path[0] != '/' && conf_ctx && conf_ctx->dir) {
        if ((size_t)snprintf(joined, len, "%s/%s", conf_ctx->dir, path) >= len)
            return "is too long a path";
        *open_path = joined;
    }
    return NULL;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "<verb>: <strerror(errno)>" in a buffer of this thread. */
static const char *cannot(const char *verb)
{
    static __thread char msg[128];
    snprintf(msg, sizeof msg, "%s: %s", verb, strerror(errno));
    return msg;
}

/* Opens `path` read-only without blocking (a FIFO must not hang the load)
 * and refuses what is not a regular file. Returns NULL with fd and st
 * filled, or the message (nothing left open; `verb` starts the message of
 * a failed system call). */
static const char *open_regular(const char *path, const char *verb, int *fd, struct stat *st)
{
    *fd = sl_sys_open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
    if (*fd < 0) return cannot(verb);
    if (sl_sys_fstat(*fd, st) != 0) {
        const char *bad = cannot(verb);
        sl_sys_close(*fd);
        return bad;
    }
    if (S_ISREG(st->st_mode)) return NULL;
    sl_sys_close(*fd);
    return "is not a regular file";
}

/* Opens a small file the config names (relative to the config's
 * directory), as open_regular, with a canonical path that fits in
 * resolvedlen. Returns NULL with fd, st and real filled, or the message
 * (nothing left open). */
static const char *open_named(const char *path, size_t resolvedlen, int *fd, struct stat *st,
                              char real[PATH_MAX])
{
    char joined[PATH_MAX];
    const char *open_path, *bad;
    if ((bad = join_path(path, joined, sizeof joined, &open_path))) return bad;
    if ((bad = open_regular(open_path, "cannot be read", fd, st))) return bad;
    bad = !realpath(open_path, real)    ? cannot("cannot be read")
          : strlen(real) >= resolvedlen ? "is too long a path"
                                        : NULL;
    if (bad) sl_sys_close(*fd);
    return bad;
}

/* The one read loop: until `n` bytes or the end of the file; returns the
 * count, or -1 with errno (EINTR is retried). */
static ssize_t read_upto(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = sl_sys_read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* fstat's size is a hint: a file that grows while it is read is read on,
 * up to max + 1 bytes, so that it is refused as too large. */
const char *conf_read_file(const char *path, size_t max, char **buf, size_t *len)
{
    struct stat st;
    int fd;
    const char *bad = open_regular(path, "cannot read", &fd, &st);
    if (bad) return bad;
    size_t cap = st.st_size > 0 && (size_t)st.st_size < max ? (size_t)st.st_size + 1 : max + 1;
    char *b = sl_alloc(cap + 1);
    ssize_t n = b ? read_upto(fd, b, cap) : -1;
    if (!b) errno = ENOMEM;
    if (n == (ssize_t)cap && cap <= max) {
        char *nb = sl_alloc(max + 2);
        if (nb) memcpy(nb, b, (size_t)n);
        sl_free(b);
        b = nb;
        ssize_t more = b ? read_upto(fd, b + n, max + 1 - (size_t)n) : -1;
        if (!b) errno = ENOMEM;
        n = more < 0 ? -1 : n + more;
    }
    bad = n < 0                     ? cannot("cannot read")
          : (size_t)n > max         ? "is larger than 1 MiB"
          : memchr(b, 0, (size_t)n) ? "holds a NUL byte"
                                    : NULL;
    sl_sys_close(fd);
    if (n < 0) {
        sl_free(b);
        return bad;
    }
    b[n] = 0;
    *buf = b;
    *len = (size_t)n;
    return bad;
}

/* The key file's checks, in this order: it opens, it is a regular file,
 * other users can neither read nor write it (a key they can read is no
 * secret; one they can write is not ours), it holds 64 hex characters and
 * nothing else but white space. The text read is wiped before returning. */
const char *conf_read_key(const char *path, uint8_t key[32], char *resolved, size_t resolvedlen)
{
    static const char *const bad_text = "does not hold a key: 64 hex characters (32 bytes)";
    char real[PATH_MAX], text[256];
    struct stat st;
    int fd;
    const char *bad = open_named(path, resolvedlen, &fd, &st, real);
    if (bad) return bad;
    bad = st.st_mode & S_IROTH               ? "can be read by every user: chmod 600 it"
          : st.st_mode & S_IWOTH             ? "can be written by every user: chmod 600 it"
          : st.st_size >= (off_t)sizeof text ? bad_text
                                             : NULL;
    if (bad) {
        sl_sys_close(fd);
        return bad;
    }
    /* up to one byte more than a key with white space may use */
    ssize_t n = read_upto(fd, text, sizeof text - 1);
    int e = errno;
    sl_sys_close(fd);
    if (n < 0) {
        explicit_bzero(text, sizeof text);
        errno = e;
        return cannot("cannot be read");
    }
    size_t got = (size_t)n;
    text[got] = 0;
    bad = got >= 64 ? NULL : bad_text;
    for (size_t i = 0; !bad && i < 64; i++)
        if (hex_digit(text[i]) < 0) bad = bad_text;
    for (size_t i = 64; !bad && i < got; i++)
        if (!isspace((unsigned char)text[i])) bad = bad_text;
    if (!bad) {
        for (size_t i = 0; i < 32; i++)
            key[i] = (uint8_t)(hex_digit(text[2 * i]) << 4 | hex_digit(text[2 * i + 1]));
        strcpy(resolved, real);
    }
    explicit_bzero(text, sizeof text);
    return bad;
}

static const char *read_named(const char *path, size_t max, char **buf, size_t *len, char *resolved,
                              size_t resolvedlen)
{
    char real[PATH_MAX];
    struct stat st;
    int fd;
    const char *bad = open_named(path, resolvedlen, &fd, &st, real);
    if (bad) return bad;
    bad = st.st_size == 0                              ? "is empty"
          : max && st.st_size > (off_t)max             ? "is larger than 64 KiB"
          : (uint64_t)st.st_size >= (uint64_t)SIZE_MAX ? "is larger than memory"
                                                       : NULL;
    char *b = bad ? NULL : sl_alloc((size_t)st.st_size + 1);
    if (!bad && !b) bad = "cannot be read: out of memory";
    if (bad) {
        sl_sys_close(fd);
        return bad;
    }
    ssize_t n = read_upto(fd, b, (size_t)st.st_size);
    int e = n < 0 ? errno : EIO; /* shorter than fstat said: it changed under us */
    sl_sys_close(fd);
    if (n != (ssize_t)st.st_size) {
        sl_free(b);
        errno = e;
        return cannot("cannot be read");
    }
    strcpy(resolved, real);
    *buf = b;
    *len = (size_t)n;
    return NULL;
}

const char *conf_read_reply(const char *path, char **buf, size_t *len, char *resolved,
                            size_t resolvedlen)
{
    return read_named(path, CONF_REPLY_MAX, buf, len, resolved, resolvedlen);
}

const char *conf_read_whole(const char *path, char **buf, size_t *len, char *resolved,
                            size_t resolvedlen)
{
    return read_named(path, 0, buf, len, resolved, resolvedlen);
}
