/* SPDX-License-Identifier: BSD-2-Clause */
/* shm.h - shared memory objects by name (/dev/shm), for the tables that
 * separately started programs share (table.c, cluster.c), and the unnamed
 * memory files one program tree shares (its table, the Redis state).
 *
 * An object is published only once whole: the creator makes it under a
 * temporary name, sizes and initialises it, then links it to its name. So
 * an object found under its name is complete, and one that is not (empty,
 * too small, another layout) is judged at once: no process ever waits for
 * another to finish creating one. An object another user owns or could
 * write is refused, with a message naming its owner (or mode).
 */
#ifndef SL_SHM_H
#define SL_SHM_H

#include <stdbool.h>
#include <stddef.h>

enum sl_shm_judgement {
    SL_SHM_USE,   /* map it, *bytes long */
    SL_SHM_STALE, /* made for another layout: unlink it and create a new one */
    SL_SHM_BAD,   /* refuse it (the judge wrote why) */
};

/* Judges an existing object from its first bytes (`hdr`, `len` of them
 * read: fewer than the header when the file is shorter) and its size. */
typedef enum sl_shm_judgement (*sl_shm_judge_fn)(const void *hdr, size_t len, size_t size,
                                                 void *arg, size_t *bytes, char *why,
                                                 size_t whylen);
/* Fills a new object's header before it is published. */
typedef void (*sl_shm_init_fn)(void *map, void *arg);

struct sl_shm_spec {
    const char *name; /* "/NAME" */
    size_t hdr_len;   /* bytes the judge reads; at most 4096 */
    size_t bytes;     /* size of a new object */
    bool create;      /* create it when missing */
    bool readonly;    /* map an existing one read-only (stats) */
    sl_shm_judge_fn judge;
    sl_shm_init_fn init;
    void *arg;
};

/* Maps the object named s->name: the existing one if the judge accepts it,
 * else (s->create) a new one. Returns the mapping, its length in *bytes
 * and whether this call created it, or NULL with a message in err. */
void *sl_shm_open(const struct sl_shm_spec *s, size_t *bytes, bool *created, char *err,
                  size_t errlen);

/* A shared mapping of `bytes` that no other program opens by name: in a
 * memory file of its own (`name`, as /proc/PID/fd shows it, so `sluice ps`
 * and `sluice metrics` find it), mode 0600, its descriptor kept above the
 * program's own numbers; an anonymous mapping when the kernel has no memfd
 * (*fd -1). Unless `cloexec`, *fd is a read-only descriptor that children
 * started with exec inherit, and reopen read-write through /proc only
 * while they run as the file's owner (or root); without /proc, a
 * read-write one closed at exec. NULL with a message in err. */
void *sl_shm_unnamed(const char *name, size_t bytes, bool cloexec, int *fd, char *err,
                     size_t errlen);

#endif
