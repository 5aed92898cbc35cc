/* SPDX-License-Identifier: BSD-2-Clause */
/* test_log.c - the rate-limited logger: a burst of 10 lines, then 5 a
 * second of the injected clock; the lines held back are counted and
 * reported on the next line written; errno is never disturbed.
 *
 * sl_log writes to file descriptor 2 with a raw write(2). Each test points
 * fd 2 at a temporary file while it logs, puts cmocka's stderr back, then
 * reads the file and asserts: no assertion runs while fd 2 is captured.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/log.h"
#include "testutil.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
    return __atomic_load_n(&fake_now, __ATOMIC_RELAXED);
}

static void set_now(uint64_t t)
{
    __atomic_store_n(&fake_now, t, __ATOMIC_RELAXED);
}

/* ---- capturing fd 2 -------------------------------------------------- */

static FILE *capture_file;
static int saved_stderr = -1;
static char captured[1 << 20];

static void capture_begin(void)
{
    fflush(stderr);
    capture_file = tmpfile();
    assert_non_null(capture_file);
    saved_stderr = dup(2);
    assert_true(saved_stderr >= 0);
    assert_int_equal(dup2(fileno(capture_file), 2), 2);
}

/* Restores fd 2 and returns everything written to it meanwhile. */
static const char *capture_end(void)
{
    dup2(saved_stderr, 2);
    close(saved_stderr);
    saved_stderr = -1;
    rewind(capture_file);
    size_t n = fread(captured, 1, sizeof captured - 1, capture_file);
    captured[n] = 0;
    fclose(capture_file);
    capture_file = NULL;
    return captured;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static int count_of(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Each test starts with a full bucket at T0 and the default setup. */
static int fresh_logger(void **unused)
{
    (void)unused;
    set_now(T0);
    sl_log_setup(SL_LOG_STDERR, SL_LOG_INFO);
    sl_log_set_clock(fake_clock); /* also empties the bucket and the count */
    return 0;
}

static int real_clock(void **unused)
{
    (void)unused;
    if (saved_stderr >= 0) capture_end(); /* a test failed mid-capture */
    sl_log_set_clock(NULL);
    return 0;
}

/* ---- tests ----------------------------------------------------------- */

static void log_writes_a_burst_of_10_lines_then_holds_the_rest_back(void **unused)
{
    (void)unused;
    capture_begin();
    for (int i = 0; i < 50; i++)
        sl_log(SL_LOG_INFO, "line %d", i);
    const char *out = capture_end();
    assert_int_equal(count_lines(out), 10);
    assert_non_null(strstr(out, "line 9\n"));
    assert_null(strstr(out, "line 10\n"));
    assert_int_equal(sl_log_suppressed(), 40);
}

static void log_then_writes_5_lines_a_second(void **unused)
{
    (void)unused;
    capture_begin();
    for (int i = 0; i < 10; i++)
        sl_log(SL_LOG_INFO, "burst");
    for (uint64_t ms = 10; ms <= 10000; ms += 10) {
        set_now(T0 + ms * MS);
        sl_log(SL_LOG_INFO, "flood at %llu ms", (unsigned long long)ms);
    }
    const char *out = capture_end();
    assert_int_equal(count_of(out, "flood"), 50); /* one each 200 ms for 10 s */
    assert_non_null(strstr(out, "flood at 200 ms"));
    assert_null(strstr(out, "flood at 190 ms"));
    assert_non_null(strstr(out, "flood at 10000 ms"));
}

static void log_reports_the_suppressed_count_on_the_next_line_it_writes(void **unused)
{
    (void)unused;
    capture_begin();
    for (int i = 0; i < 17; i++)
        sl_log(SL_LOG_INFO, "early");
    set_now(T0 + 200 * MS);
    sl_log(SL_LOG_WARN, "next");
    uint64_t after_report = sl_log_suppressed();
    set_now(T0 + 400 * MS);
    sl_log(SL_LOG_WARN, "quiet");
    const char *out = capture_end();
    assert_non_null(strstr(out, "next (7 earlier messages suppressed)\n"));
    assert_non_null(strstr(out, "quiet\n"));
    assert_int_equal(count_of(out, "suppressed"), 1);
    assert_int_equal(after_report, 0);
}

static void log_preserves_errno_when_it_writes(void **unused)
{
    (void)unused;
    capture_begin();
    errno = ECONNRESET;
    sl_log(SL_LOG_ERROR, "written");
    int after = errno;
    capture_end();
    assert_int_equal(after, ECONNRESET);
}

static void log_preserves_errno_when_it_suppresses(void **unused)
{
    (void)unused;
    capture_begin();
    for (int i = 0; i < 10; i++)
        sl_log(SL_LOG_INFO, "burst");
    errno = EAGAIN;
    sl_log(SL_LOG_ERROR, "held back");
    int after = errno;
    const char *out = capture_end();
    assert_null(strstr(out, "held back"));
    assert_int_equal(after, EAGAIN);
}

static void log_preserves_errno_when_the_write_fails(void **unused)
{
    (void)unused;
    int saved = dup(2);
    assert_true(saved >= 0);
    close(2); /* every write to fd 2 now fails with EBADF */
    errno = EINTR;
    sl_log(SL_LOG_ERROR, "into the void");
    int after = errno;
    dup2(saved, 2);
    close(saved);
    assert_int_equal(after, EINTR);
}

static void log_line_names_the_process_and_the_level(void **unused)
{
    (void)unused;
    capture_begin();
    sl_log(SL_LOG_WARN, "table is %d%% full", 93);
    const char *out = capture_end();
    char want[128];
    snprintf(want, sizeof want, "sluice[%d]: warning: table is 93%% full\n", (int)getpid());
    assert_string_equal(out, want);
}

static void log_drops_messages_above_the_level_without_spending_the_budget(void **unused)
{
    (void)unused;
    sl_log_setup(SL_LOG_STDERR, SL_LOG_WARN);
    capture_begin();
    for (int i = 0; i < 20; i++)
        sl_log(SL_LOG_INFO, "chatter");
    for (int i = 0; i < 20; i++)
        sl_log(SL_LOG_DEBUG, "chatter");
    for (int i = 0; i < 10; i++)
        sl_log(SL_LOG_ERROR, "matters");
    const char *out = capture_end();
    assert_int_equal(count_of(out, "chatter"), 0);
    assert_int_equal(count_of(out, "matters"), 10);
    assert_int_equal(sl_log_suppressed(), 0);
}

static void log_writes_nothing_when_the_target_is_none(void **unused)
{
    (void)unused;
    sl_log_setup(SL_LOG_NONE, SL_LOG_DEBUG);
    capture_begin();
    for (int i = 0; i < 5; i++)
        sl_log(SL_LOG_ERROR, "silence");
    const char *out = capture_end();
    assert_string_equal(out, "");
}

static void log_cuts_a_long_message_but_keeps_the_suppressed_count(void **unused)
{
    (void)unused;
    static char big[5000];
    memset(big, 'x', sizeof big - 1);
    capture_begin();
    for (int i = 0; i < 12; i++)
        sl_log(SL_LOG_INFO, "burst");
    set_now(T0 + 200 * MS);
    sl_log(SL_LOG_INFO, "%s", big);
    const char *out = capture_end();
    const char *last = strstr(out, "xxx");
    assert_non_null(last);
    while (last > out && last[-1] != '\n')
        last--;
    size_t len = strlen(last);
    assert_true(len <= 1024);
    assert_non_null(strstr(last, "x (2 earlier messages suppressed)\n"));
    assert_int_equal(last[len - 1], '\n');
}

#define LOG_THREADS 4
#define LOG_CALLS   1000

static void *log_worker(void *unused)
{
    (void)unused;
    for (int i = 0; i < LOG_CALLS; i++)
        sl_log(SL_LOG_INFO, "from a thread");
    return NULL;
}

static void log_threads_share_one_budget_and_one_count(void **unused)
{
    (void)unused;
    pthread_t th[LOG_THREADS];
    capture_begin();
    for (int i = 0; i < LOG_THREADS; i++)
        pthread_create(&th[i], NULL, log_worker, NULL);
    for (int i = 0; i < LOG_THREADS; i++)
        pthread_join(th[i], NULL);
    uint64_t held = sl_log_suppressed();
    set_now(T0 + 200 * MS);
    sl_log(SL_LOG_INFO, "after");
    const char *out = capture_end();
    assert_int_equal(count_of(out, "from a thread"), 10);
    assert_int_equal(held, LOG_THREADS * LOG_CALLS - 10);
    char want[80];
    snprintf(want, sizeof want, "after (%d earlier messages suppressed)\n",
             LOG_THREADS * LOG_CALLS - 10);
    assert_non_null(strstr(out, want));
}

/* Issue 18.8: a denied request whose path held "\n" and escape codes
 * forged a second line in nginx's error log. */
static void log_escapes_control_characters_so_a_path_cannot_forge_a_line(void **unused)
{
    (void)unused;
    const char path[] = "/x\n2026/11/23 [error] forged\r\x1b[31mred\x7f\xc3\x9b\\";
    capture_begin();
    sl_log(SL_LOG_INFO, "limited request GET %s from 127.0.0.1", path);
    const char *out = capture_end();
    assert_int_equal(count_lines(out), 1);
    assert_non_null(strstr(out, "GET /x\\n2026/11/23 [error] forged\\r\\x1b[31mred\\x7f"
                                "\\xc3\\x9b\\\\ from 127.0.0.1\n"));
    for (const char *p = out; *p; p++)
        assert_true(*p == '\n' || (*p >= 0x20 && *p < 0x7f));
}

static void log_escape_never_cuts_an_escape_in_two(void **unused)
{
    (void)unused;
    char out[8];
    static const char ctl[] = {'a', 'b', 1, 'c', 'd'};
    assert_int_equal(sl_log_escape(out, sizeof out, ctl, 5), 7);
    assert_string_equal(out, "ab\\x01c");
    assert_int_equal(sl_log_escape(out, 5, "ab\x01", 3), 2); /* "\x01" does not fit */
    assert_string_equal(out, "ab");
    assert_int_equal(sl_log_escape(out, sizeof out, "a\0b", 3), 6);
    assert_string_equal(out, "a\\x00b");
}

#define T(name) cmocka_unit_test_setup_teardown(name, fresh_logger, real_clock)

/* sluice's heap exhausted: what passes unlimited is said, once (the
 * scanner calls it where a head's copies find no memory: core/http). */
static void running_out_of_memory_is_said_once(void **unused)
{
    (void)unused;
    capture_begin();
    sl_log_no_memory("a request head's copies");
    sl_log_no_memory("a connection's HTTP/2 state");
    const char *out = capture_end();
    assert_non_null(strstr(out, "warning: out of sluice's own memory for a request head's copies: "
                                "the rest of that connection passes without its requests counted"));
    assert_null(strstr(out, "HTTP/2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(log_writes_a_burst_of_10_lines_then_holds_the_rest_back),
        T(log_then_writes_5_lines_a_second),
        T(log_reports_the_suppressed_count_on_the_next_line_it_writes),
        T(log_preserves_errno_when_it_writes),
        T(log_preserves_errno_when_it_suppresses),
        T(log_preserves_errno_when_the_write_fails),
        T(log_line_names_the_process_and_the_level),
        T(log_drops_messages_above_the_level_without_spending_the_budget),
        T(log_writes_nothing_when_the_target_is_none),
        T(log_cuts_a_long_message_but_keeps_the_suppressed_count),
        T(log_threads_share_one_budget_and_one_count),
        T(log_escapes_control_characters_so_a_path_cannot_forge_a_line),
        T(log_escape_never_cuts_an_escape_in_two),
        T(running_out_of_memory_is_said_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
