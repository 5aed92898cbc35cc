/* SPDX-License-Identifier: BSD-2-Clause */
/* test_udpowner.c - the user of a UDP port, read from a table in the
 * format of /proc/net/udp: found past the first piece read (a busy host's
 * table is many pages), not found when no line has the port, -1 for a
 * table that cannot be read. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../core/fleet/udpowner.h"

static char path[64];

static void write_table(int lines, unsigned port_at_end)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
            "timeout inode ref pointer drops\n");
    for (int i = 0; i < lines; i++)
        fprintf(f,
                "%5d: 0100007F:%04X 00000000:0000 07 00000000:00000000 00:00000000 00000000 "
                "%5d        0 %d 2 0000000000000000 0\n",
                i, 20000 + i, 1000 + i, 40000 + i);
    if (port_at_end)
        fprintf(f,
                "%5d: 0200007F:%04X 00000000:0000 07 00000000:00000000 00:00000000 00000000 "
                "%5d        0 1 2 0000000000000000 0\n",
                lines, port_at_end, 4242);
    fclose(f);
}

static void a_port_past_the_first_page_is_found(void **unused)
{
    (void)unused;
    write_table(200, 17946); /* about 30 KB */
    assert_int_equal(sl_udp_owner(path, 17946), 4242);
    assert_int_equal(sl_udp_owner(path, 20000 + 150), 1000 + 150);
    assert_int_equal(sl_udp_owner(path, 20000), 1000);
}

static void no_line_no_owner(void **unused)
{
    (void)unused;
    write_table(200, 0);
    assert_int_equal(sl_udp_owner(path, 17946), -1);
    assert_int_equal(sl_udp_owner("/nonexistent/udp", 17946), -1);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/sluice-udp-%d", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_port_past_the_first_page_is_found),
        cmocka_unit_test(no_line_no_owner),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    return r != 0;
}
