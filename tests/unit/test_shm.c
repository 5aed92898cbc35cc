/* SPDX-License-Identifier: BSD-2-Clause */
/* test_shm.c - named shared objects (core/shm.c) as the table and the
 * cluster state use them: found whole or refused at once, and never taken
 * from another user. The other user is `nobody`, made by a forked child
 * that drops root (the tests need root for that and skip without it). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../core/limit/table.h"
#include "cluster_util.h"
#include "testutil.h"

#define NOBODY 65534

static char name[64], path[128];

static int named(void **unused)
{
    (void)unused;
    snprintf(name, sizeof name, "test-shm-%ld", (long)getpid());
    snprintf(path, sizeof path, "/dev/shm/sluice.%s", name);
    unlink(path);
    return 0;
}

static int unnamed(void **unused)
{
    (void)unused;
    unlink(path);
    return 0;
}

static void need_root(void)
{
    if (geteuid() != 0) skip();
}

static int inherited_fd; /* the table's descriptor a child is handed */
static int holder_pid;   /* the process that holds the table */

/* Runs fn in a forked child, as `nobody` when drop; returns its exit
 * status (100: it did not exit). */
static int in_child(void (*fn)(void), bool drop)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (drop && (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0))
            _exit(99);
        fn();
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

static int as_nobody(void (*fn)(void))
{
    return in_child(fn, true);
}

/* sl_table_open_inherited for a 64-slot table; note has 256 bytes. */
static struct sl_table *open_inherited(int inherited, int holder, int *fd, char *note)
{
    char err[256];
    *fd = -1;
    return sl_table_open_inherited(64, SL_FULL_SHARED, inherited, holder, fd, note, 256, err,
                                   sizeof err);
}

/* The child side, as nobody, after what it was handed was tried: sluice's
 * own open gives it a table of its own, with a note naming both users.
 * Exit codes say which failed. */
static void nobody_counts_in_a_table_of_its_own(int holder)
{
    char note[256];
    int fd;
    struct sl_table *t = open_inherited(inherited_fd, holder, &fd, note);
    if (!t) _exit(4);
    if (!strstr(note, "not writable by this process (uid 65534")) _exit(5);
    if (!strstr(note, "its user: uid 0")) _exit(6);
    sl_table_count(t, 0, SL_C_ALLOWED, 1000); /* its own table: the program's stays */
}

static void nobody_opens_a_small_table(void)
{
    char err[256];
    if (!sl_table_open(64, name, SL_FULL_SHARED, err, sizeof err)) _exit(1);
}

static void nobody_makes_an_empty_file(void)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0666);
    if (fd < 0) _exit(1);
    fchmod(fd, 0666);
    close(fd);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The table pre-created by nobody (64 slots) must not become root's
 * 65,536-slot table: refused, the owner named. */
static void a_table_made_by_another_user_is_refused_naming_its_owner(void **unused)
{
    (void)unused;
    need_root();
    assert_int_equal(as_nobody(nobody_opens_a_small_table), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, NOBODY);
    char err[512] = "";
    assert_null(sl_table_open(65536, name, SL_FULL_SHARED, err, sizeof err));
    assert_non_null(strstr(err, "owned by nobody (uid 65534)"));
    assert_non_null(strstr(err, name));
}

/* An empty file another user left is refused at once: no wait for a
 * creator that does not exist. */
static void an_empty_file_of_another_user_is_refused_at_once(void **unused)
{
    (void)unused;
    need_root();
    assert_int_equal(as_nobody(nobody_makes_an_empty_file), 0);
    char err[512] = "";
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_null(sl_table_open(4096, name, SL_FULL_SHARED, err, sizeof err));
    assert_true(seconds_since(&t0) < 0.5); /* it used to wait 2 s, then run unlimited */
    assert_non_null(strstr(err, "owned by nobody"));
}

/* Our own empty or undersized file is no table either: refused at once. */
static void an_empty_or_undersized_file_is_refused_at_once(void **unused)
{
    (void)unused;
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    char err[512] = "";
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_null(sl_table_open(4096, name, SL_FULL_SHARED, err, sizeof err));
    assert_non_null(strstr(err, "empty"));

    /* a real table's header, cut short */
    unlink(path);
    struct sl_table *t = sl_table_open(4096, name, SL_FULL_SHARED, err, sizeof err);
    if (!t) fail_msg("%s", err);
    sl_table_close(t);
    assert_int_equal(truncate(path, 8192), 0);
    assert_null(sl_table_open(4096, name, SL_FULL_SHARED, err, sizeof err));
    assert_non_null(strstr(err, "smaller than"));
    assert_true(seconds_since(&t0) < 0.5);
    close(fd);
}

/* Mode 0600 only: a table others may write is refused, even our own. */
static void a_table_others_may_write_is_refused(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_table *t = sl_table_open(64, name, SL_FULL_SHARED, err, sizeof err);
    if (!t) fail_msg("%s", err);
    sl_table_close(t);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(chmod(path, 0666), 0);
    assert_null(sl_table_open(64, name, SL_FULL_SHARED, err, sizeof err));
    assert_non_null(strstr(err, "mode 0666"));
    assert_int_equal(chmod(path, 0600), 0);
    t = sl_table_open(64, name, SL_FULL_SHARED, err, sizeof err);
    if (!t) fail_msg("%s", err);
    sl_table_close(t);
}

/* Two processes of one user find one table. */
static void a_second_opener_shares_the_first_ones_table(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_table *a = sl_table_open(64, name, SL_FULL_SHARED, err, sizeof err);
    if (!a) fail_msg("%s", err);
    struct sl_table *b = sl_table_open(4096, name, SL_FULL_SHARED, err, sizeof err);
    if (!b) fail_msg("%s", err);
    assert_int_equal(sl_table_slots(b), sl_table_slots(a));
    int ra = sl_table_rule(a, 42, "x"), rb = sl_table_rule(b, 42, "x");
    sl_table_count(a, ra, SL_C_ALLOWED, 5);
    assert_int_equal(sl_table_counter(b, rb, SL_C_ALLOWED), 5);
    sl_table_close(a);
    sl_table_close(b);
}

static char cluster_name[128];
static struct sl_config *cluster_cfg;

static void nobody_opens_the_cluster_state(void)
{
    char err[256];
    if (!sl_cluster_create(cluster_cfg, cluster_name, err, sizeof err)) _exit(1);
}

/* The cluster state file follows the same rule. */
static void a_cluster_state_made_by_another_user_is_refused(void **unused)
{
    (void)unused;
    need_root();
    cluster_cfg = cu_config(0, 2, 100, SEC, 100 * MS, 4096);
    snprintf(cluster_cfg->gossip.listen, sizeof cluster_cfg->gossip.listen, "127.0.0.2:%d",
             20000 + (int)(getpid() % 20000));
    sl_cluster_shm_name(cluster_cfg->gossip.listen, cluster_name, sizeof cluster_name);
    char file[200];
    snprintf(file, sizeof file, "/dev/shm%s", cluster_name);
    unlink(file);
    assert_int_equal(as_nobody(nobody_opens_the_cluster_state), 0);
    char err[512] = "";
    struct sl_cluster *c = sl_cluster_create(cluster_cfg, cluster_name, err, sizeof err);
    unlink(file);
    if (c) fail_msg("root attached nobody's cluster state");
    assert_non_null(strstr(err, "owned by nobody"));
    free(cluster_cfg);
}

/* The table a program's exec'd children inherit (issue 31, defect 3):
 * before, the descriptor was read-write, and a child running as another
 * user (setpriv, su, a dropped worker) could reload or rewrite the root
 * program's table. */
/* The child side, as nobody: neither a writable mapping of the inherited
 * descriptor nor a write open through /proc is had. */
static void nobody_inherits_the_table(void)
{
    void *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, inherited_fd, 0);
    if (w != MAP_FAILED) _exit(2);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", inherited_fd);
    if (open(proc, O_RDWR) >= 0) _exit(3);
    nobody_counts_in_a_table_of_its_own(-1);
}

static void an_inherited_table_is_writable_by_its_user_alone(void **unused)
{
    (void)unused;
    need_root();
    int fd;
    char note[256];
    struct sl_table *t = open_inherited(-1, -1, &fd, note);
    assert_non_null(t);
    assert_int_not_equal(fd, -1);
    assert_string_equal(note, "");
    assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
    assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    /* its own user's child shares it, read-write */
    int fd2;
    struct sl_table *same = open_inherited(fd, -1, &fd2, note);
    assert_non_null(same);
    assert_int_equal(fd2, fd);
    assert_string_equal(note, "");
    sl_table_count(same, 0, SL_C_ALLOWED, 5);
    assert_int_equal(sl_table_counter(t, 0, SL_C_ALLOWED), 5);
    /* another user's does not */
    inherited_fd = fd;
    assert_int_equal(as_nobody(nobody_inherits_the_table), 0);
    assert_int_equal(sl_table_counter(t, 0, SL_C_ALLOWED), 5);
    sl_table_close(same);
    sl_table_close(t);
    close(fd);
}

/* A child whose program closed the inherited descriptor before exec
 * (python's multiprocessing spawn, uvicorn's workers) finds the table
 * through the process that handed it down (issue 34, item 3); before, it
 * made a table of its own and the workers' budgets were separate. Another
 * user's child still gets none of it. */
static void child_finds_the_table_through_its_holder(void)
{
    close(inherited_fd);
    char note[256];
    int fd;
    struct sl_table *t = open_inherited(inherited_fd, holder_pid, &fd, note);
    if (!t || *note) _exit(1);
    sl_table_count(t, 0, SL_C_ALLOWED, 7);
    if (fd < 0 || (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY) _exit(2); /* for its children */
    _exit(0);
}

static void nobody_finds_no_table_through_the_holder(void)
{
    close(inherited_fd);
    nobody_counts_in_a_table_of_its_own(holder_pid);
}

static void a_closed_inherited_descriptor_is_found_through_its_holder(void **unused)
{
    (void)unused;
    need_root();
    int fd;
    char note[256];
    struct sl_table *t = open_inherited(-1, -1, &fd, note);
    assert_non_null(t);
    inherited_fd = fd;
    holder_pid = (int)getpid();
    assert_int_equal(in_child(child_finds_the_table_through_its_holder, false), 0);
    assert_int_equal(sl_table_counter(t, 0, SL_C_ALLOWED), 7);
    assert_int_equal(as_nobody(nobody_finds_no_table_through_the_holder), 0);
    assert_int_equal(sl_table_counter(t, 0, SL_C_ALLOWED), 7);
    sl_table_close(t);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_table_made_by_another_user_is_refused_naming_its_owner,
                                        named, unnamed),
        cmocka_unit_test_setup_teardown(an_empty_file_of_another_user_is_refused_at_once, named,
                                        unnamed),
        cmocka_unit_test_setup_teardown(an_empty_or_undersized_file_is_refused_at_once, named,
                                        unnamed),
        cmocka_unit_test_setup_teardown(a_table_others_may_write_is_refused, named, unnamed),
        cmocka_unit_test_setup_teardown(a_second_opener_shares_the_first_ones_table, named,
                                        unnamed),
        cmocka_unit_test(a_cluster_state_made_by_another_user_is_refused),
        cmocka_unit_test(an_inherited_table_is_writable_by_its_user_alone),
        cmocka_unit_test(a_closed_inherited_descriptor_is_found_through_its_holder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
