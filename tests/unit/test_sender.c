/* SPDX-License-Identifier: BSD-2-Clause */
/* test_sender.c - the elected sender of a fleet backend (core/fleet/sender.c):
 * the election with an injected clock, starting a thread once, stopping
 * it, errno kept on the decision path, the wake-up, and a forked child
 * left with neither the thread nor its sockets. The backend is a fake: its
 * thread waits for the stop, its words live in a struct of the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../core/fleet/sender.h"
#include "testutil.h"

#define STALE (100 * MS)

/* A fake backend: the shared words, the running word, one socket (a pipe
 * end) and what happened to it. */
struct fake {
    _Atomic uint64_t heartbeat, elect_ns;
    _Atomic int32_t pid;
    _Atomic int running;
    int fd, pipe_other;
    int prepare_rc; /* what prepare answers */
    _Atomic int prepared, ran, woken;
    struct sl_sender snd;
};

static int fake_prepare(void *arg, char *err, size_t errlen)
{
    struct fake *f = arg;
    atomic_fetch_add(&f->prepared, 1);
    errno = EADDRINUSE; /* as a bind would leave it */
    if (f->prepare_rc < 0) snprintf(err, errlen, "fake: cannot");
    return f->prepare_rc;
}

static void *fake_run(void *arg)
{
    struct fake *f = arg;
    atomic_fetch_add(&f->ran, 1);
    while (!sl_sender_stopping(&f->snd)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void fake_wake(void *arg)
{
    struct fake *f = arg;
    atomic_fetch_add(&f->woken, 1);
}

static void fake_init(struct fake *f)
{
    *f = (struct fake){.fd = -1, .pipe_other = -1};
    f->snd = (struct sl_sender){.name = "fake",
                                .verb = "sends for",
                                .target = "the test",
                                .heartbeat = &f->heartbeat,
                                .elect_ns = &f->elect_ns,
                                .pid = &f->pid,
                                .stale_ns = STALE,
                                .running = &f->running,
                                .fds = &f->fd,
                                .nfds = 1,
                                .prepare = fake_prepare,
                                .run = fake_run,
                                .wake = fake_wake,
                                .arg = f};
}

static void a_fresh_heartbeat_elects_nobody(void **unused)
{
    struct fake f;
    fake_init(&f);
    atomic_store(&f.heartbeat, T0);
    assert_false(sl_sender_elect(&f.snd, T0));
    assert_false(sl_sender_elect(&f.snd, T0 + STALE - 1));
    assert_int_equal(atomic_load(&f.elect_ns), 0);
}

static void a_stale_heartbeat_elects_one_caller_at_most_once_a_second(void **unused)
{
    struct fake f;
    fake_init(&f);
    atomic_store(&f.heartbeat, T0);
    assert_true(sl_sender_elect(&f.snd, T0 + STALE));
    assert_int_equal(atomic_load(&f.elect_ns), T0 + STALE);
    assert_false(sl_sender_elect(&f.snd, T0 + STALE));           /* the same instant */
    assert_false(sl_sender_elect(&f.snd, T0 + STALE + SEC - 1)); /* within the second */
    assert_true(sl_sender_elect(&f.snd, T0 + STALE + SEC));      /* a second later: again */
    atomic_store(&f.heartbeat, T0 + 3 * SEC);                    /* a sender beats again */
    assert_false(sl_sender_elect(&f.snd, T0 + 3 * SEC + STALE - 1));
}

/* N threads elect at the same instant: exactly one wins. */
#define ELECTORS 8
static struct fake race;
static _Atomic int won;
static pthread_barrier_t gate;

static void *elector(void *arg)
{
    pthread_barrier_wait(&gate);
    if (sl_sender_elect(&race.snd, T0 + STALE)) atomic_fetch_add(&won, 1);
    return arg;
}

static void deciders_electing_at_once_elect_exactly_one(void **unused)
{
    for (int round = 0; round < 50; round++) {
        fake_init(&race);
        atomic_store(&race.heartbeat, T0);
        atomic_store(&won, 0);
        pthread_t t[ELECTORS];
        pthread_barrier_init(&gate, NULL, ELECTORS);
        for (int i = 0; i < ELECTORS; i++)
            pthread_create(&t[i], NULL, elector, NULL);
        for (int i = 0; i < ELECTORS; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&gate);
        assert_int_equal(atomic_load(&won), 1);
    }
}

static uint64_t mono_now(void)
{
    struct timespec m;
    clock_gettime(CLOCK_MONOTONIC, &m);
    return (uint64_t)m.tv_sec * SEC + (uint64_t)m.tv_nsec;
}

static void a_check_starts_the_thread_once_and_stop_joins_it(void **unused)
{
    struct fake f;
    fake_init(&f);
    int p[2];
    assert_int_equal(pipe(p), 0);
    f.fd = p[0];
    f.pipe_other = p[1];
    uint64_t now = mono_now() + STALE; /* heartbeat 0: no sender ever ran */
    errno = 1234;
    sl_sender_check(&f.snd, now);
    assert_int_equal(errno, 1234); /* prepare's EADDRINUSE is not the program's */
    assert_int_equal(atomic_load(&f.running), 1);
    assert_int_equal(atomic_load(&f.pid), (int32_t)getpid());
    assert_true(atomic_load(&f.heartbeat) > 0);
    for (int i = 0; i < 1000 && !atomic_load(&f.ran); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(atomic_load(&f.ran), 1);
    sl_sender_check(&f.snd, now + 10 * SEC); /* it runs here: no election */
    assert_int_equal(atomic_load(&f.prepared), 1);
    sl_sender_wake(&f.snd);
    assert_int_equal(atomic_load(&f.woken), 1);

    sl_sender_stop(&f.snd);
    assert_int_equal(atomic_load(&f.running), 0);
    assert_int_equal(f.fd, -1);
    assert_int_equal(fcntl(p[0], F_GETFD), -1); /* closed */
    sl_sender_wake(&f.snd);                     /* not running: no wake-up */
    assert_int_equal(atomic_load(&f.woken), 1);
    close(p[1]);
}

static void a_lock_held_elsewhere_starts_nothing(void **unused)
{
    struct fake f;
    fake_init(&f);
    f.prepare_rc = 1;
    char err[64] = "";
    assert_int_equal(sl_sender_start(&f.snd, err, sizeof err), 1);
    assert_int_equal(atomic_load(&f.running), 0);
    f.prepare_rc = -1;
    assert_int_equal(sl_sender_start(&f.snd, err, sizeof err), -1);
    assert_string_equal(err, "fake: cannot");
    assert_int_equal(atomic_load(&f.ran), 0);
    sl_sender_stop(&f.snd); /* nothing to stop */
}

static void a_sender_no_backend_filled_never_starts(void **unused)
{
    _Atomic int running = 0;
    struct sl_sender s = {.running = &running};
    sl_sender_check(&s, T0 + 100 * SEC);
    sl_sender_wake(&s);
    sl_sender_stop(&s);
    struct sl_sender none = {0};
    sl_sender_check(&none, T0);
    sl_sender_wake(&none);
    sl_sender_stop(&none);
    assert_int_equal(atomic_load(&running), 0);
}

/* A forked child has no thread: the fork handler closes the sender's
 * socket there and clears running, so the child may be elected later;
 * the parent's sender runs on. */
static void a_forked_child_keeps_neither_the_thread_nor_its_socket(void **unused)
{
    struct fake f;
    fake_init(&f);
    int p[2];
    assert_int_equal(pipe(p), 0);
    f.fd = p[0];
    sl_sender_watch(&f.snd);
    sl_sender_watch(&f.snd); /* twice: once */
    char err[64];
    assert_int_equal(sl_sender_start(&f.snd, err, sizeof err), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        int bad = atomic_load(&f.running) != 0 || f.fd != -1 || fcntl(p[0], F_GETFD) != -1;
        _exit(bad ? 1 : 0);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(atomic_load(&f.running), 1); /* the parent's runs on */
    assert_int_equal(f.fd, p[0]);
    sl_sender_stop(&f.snd);
    close(p[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_fresh_heartbeat_elects_nobody),
        cmocka_unit_test(a_stale_heartbeat_elects_one_caller_at_most_once_a_second),
        cmocka_unit_test(deciders_electing_at_once_elect_exactly_one),
        cmocka_unit_test(a_check_starts_the_thread_once_and_stop_joins_it),
        cmocka_unit_test(a_lock_held_elsewhere_starts_nothing),
        cmocka_unit_test(a_sender_no_backend_filled_never_starts),
        cmocka_unit_test(a_forked_child_keeps_neither_the_thread_nor_its_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
