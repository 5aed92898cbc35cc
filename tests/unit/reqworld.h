/* SPDX-License-Identifier: BSD-2-Clause */
/* reqworld.h - the world the request tests share (test_request.c,
 * test_gate.c): one request rule "api" on 127.0.0.1, its table and
 * runtime, and one core connection object, inbound from 127.0.0.1 port
 * 5000 or outbound to 127.0.0.1 port 80. The tests change the rule after
 * the start too: the runtime reads it where it is (cfg).
 *
 * Include after testutil.h and <cmocka.h>'s prerequisites. */
#ifndef SL_REQWORLD_H
#define SL_REQWORLD_H

#include <stdlib.h>
#include <string.h>

#include "../../core/log.h"
#include "../../core/http/request.h"
#include "../../core/limit/table.h"
#include "reqrule.h"
#include "testutil.h"

struct req_world {
    struct sl_config cfg;
    struct sl_table *table;
    struct sl_runtime rt;
    struct sl_req_conn *c;
};

/* The rule, inbound from 127.0.0.1: count requests a second, burst, the
 * action on a denial, up to a second's delay; the caller may change it
 * before req_world_start. */
static inline struct sl_rule *req_world_rule(struct req_world *w, uint64_t count, uint64_t burst,
                                             enum sl_action action)
{
    sl_log_setup(SL_LOG_NONE, SL_LOG_ERROR);
    struct sl_rule *r = req_rule_add(&w->cfg, "api", SL_IN, action);
    r->prefix4 = 32;
    r->prefix6 = 64;
    r->max_delay_ns = SEC;
    assert_int_equal(sl_limit_init(&r->req_limit, SL_ALG_GCRA, count, SEC, burst), 0);
    return r;
}

/* 127.0.0.1 as an IPv4-mapped address, port `port`. */
static inline struct sl_addr req_world_localhost(unsigned port)
{
    struct sl_addr a = {.v4 = true, .port = port};
    a.a[10] = a.a[11] = 0xff;
    a.a[12] = 127;
    a.a[15] = 1;
    return a;
}

/* The table, the runtime and the inbound connection (w->c). */
static inline void req_world_start(struct req_world *w)
{
    char err[256];
    w->table = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    assert_non_null(w->table);
    assert_int_equal(sl_runtime_init(&w->rt, &w->cfg, w->table, err, sizeof err), 0);
    w->c = calloc(1, sl_req_conn_size());
    struct sl_addr peer = req_world_localhost(5000);
    assert_true(sl_req_conn_init(w->c, &w->rt, SL_IN, NULL, &peer, T0));
}

/* The rule turned outbound (to 127.0.0.1, any port), and the connection
 * with it: the program's, to port 80. */
static inline void req_world_outbound(struct req_world *w)
{
    sl_req_conn_fini(w->c);
    struct sl_rule *r = &w->cfg.rules[0];
    r->dir = SL_OUT;
    struct sl_addr peer = req_world_localhost(80);
    r->to[0] = (struct sl_cidr){.plen = 128};
    memcpy(r->to[0].addr, peer.a, 16);
    r->nto = 1;
    assert_true(sl_req_conn_init(w->c, &w->rt, SL_OUT, NULL, &peer, T0));
}

static inline void req_world_stop(struct req_world *w)
{
    sl_req_conn_fini(w->c);
    free(w->c);
    sl_table_close(w->table);
}

#endif
