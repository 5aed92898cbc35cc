/* SPDX-License-Identifier: BSD-2-Clause */
/* print.c - a config in its normalised form: every option of every rule
 * written out with its defaults filled in, itself a config file that loads
 * back into the same struct and prints the same again. Limits a rule does
 * not have (rate, recv_rate, send_rate, conns) are left out rather than
 * written as zero; the gossip section names its key file, never the key.
 *
 * Strings are double-quoted with \\, \", \$ (libconfuse expands ${VAR} in
 * double quotes) and octal escapes for control characters.
 */
#include "conf.h"

#include <string.h>

#include "../core/limit/key.h"
#include "conf_int.h"

#include <sodium.h>

static void put_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\' || c == '"' || c == '$')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\%03o", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void put_key(FILE *out, const char *indent, const char *key)
{
    fprintf(out, "%s%-11s = ", indent, key);
}

static void put_cidrs(FILE *out, const char *key, const struct sl_cidr *list, int n)
{
    char buf[64];
    put_key(out, "    ", key);
    fputc('{', out);
    for (int i = 0; i < n; i++) {
        sl_cidr_format(&list[i], buf, sizeof buf);
        fprintf(out, "%s\"%s\"", i ? ", " : "", buf);
    }
    fputs("}\n", out);
}

static void put_ports(FILE *out, const struct sl_rule *r)
{
    put_key(out, "    ", "port");
    fputc('{', out);
    for (int i = 0; i < r->nports; i++) {
        fprintf(out, i ? ", " : "");
        if (r->ports[i].lo == r->ports[i].hi)
            fprintf(out, "\"%u\"", r->ports[i].lo);
        else
            fprintf(out, "\"%u-%u\"", r->ports[i].lo, r->ports[i].hi);
    }
    fputs("}\n", out);
}

static void put_to(FILE *out, const struct sl_rule *r)
{
    char buf[64];
    put_key(out, "    ", "to");
    fputc('{', out);
    for (int i = 0; i < r->nto; i++) {
        sl_cidr_format(&r->to[i], buf, sizeof buf);
        fprintf(out, "%s\"%s\"", i ? ", " : "", buf);
    }
    for (int i = 0; i < r->nhosts; i++) {
        fprintf(out, "%s", i || r->nto ? ", " : "");
        if (r->hosts[i].port)
            fprintf(out, "\"%s:%u\"", r->hosts[i].name, r->hosts[i].port);
        else
            fprintf(out, "\"%s\"", r->hosts[i].name);
    }
    fputs("}\n", out);
}

static void put_bytes(FILE *out, const char *rate_key, const char *burst_key,
                      const struct sl_limit *l, const char *rate_text)
{
    char buf[32];
    if (!l->count) return;
    put_key(out, "    ", rate_key);
    fprintf(out, "\"%s\"\n", rate_text);
    conf_format_bytes(l->burst, buf, sizeof buf);
    put_key(out, "    ", burst_key);
    fprintf(out, "\"%s\"\n", buf);
}

/* The gossip section: the key file's path, never the key. */
static void put_gossip(FILE *out, const struct sl_gossip *g)
{
    char buf[32];
    fputs("\ngossip {\n", out);
    fprintf(out, "    %-12s = ", "listen");
    put_string(out, g->listen);
    fprintf(out, "\n    %-12s = {", "peers");
    for (int i = 0; i < g->npeers; i++) {
        fputs(i ? ", " : "", out);
        put_string(out, g->peers[i]);
    }
    conf_format_duration(g->interval_ns, buf, sizeof buf);
    fprintf(out, "}\n    %-12s = %s\n", "interval", buf);
    conf_format_duration(g->peer_timeout_ns, buf, sizeof buf);
    fprintf(out, "    %-12s = %s\n", "peer_timeout", buf);
    fprintf(out, "    %-12s = %u\n", "alone_share", g->alone_share_pct);
    fprintf(out, "    %-12s = ", "key_file");
    put_string(out, g->key_file);
    fputs("\n}\n", out);
}

/* The redis section: a password is a secret, shown as 6 hex digits of its
 * SHA-256, in a comment (the printed file names no password). */
static void put_redis(FILE *out, const struct sl_redis *r)
{
    char buf[32];
    fputs("\nredis {\n", out);
    fprintf(out, "    %-16s = ",
            r->mode == SL_REDIS_SENTINEL  ? "sentinels"
            : r->mode == SL_REDIS_CLUSTER ? "cluster"
                                          : "address");
    put_string(out, r->address);
    if (r->mode == SL_REDIS_SENTINEL) {
        fprintf(out, "\n    %-16s = ", "master");
        put_string(out, r->master);
    }
    if (*r->user) {
        fprintf(out, "\n    %-16s = ", "user");
        put_string(out, r->user);
    }
    if (*r->password) {
        unsigned char h[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(h, (const unsigned char *)r->password, strlen(r->password));
        fprintf(out, "\n    # password is set (sha-256 %02x%02x%02x...)", h[0], h[1], h[2]);
    }
    fprintf(out, "\n    %-16s = ", "prefix");
    put_string(out, r->prefix);
    conf_format_duration(r->interval_ns, buf, sizeof buf);
    fprintf(out, "\n    %-16s = %s\n", "interval", buf);
    conf_format_duration(r->timeout_ns, buf, sizeof buf);
    fprintf(out, "    %-16s = %s\n", "timeout", buf);
    fprintf(out, "    %-16s = %s\n", "on_backend_error", conf_backend_error_names[r->on_error]);
    fprintf(out, "    %-16s = %u\n", "local_share", r->local_share_pct);
    if (*r->key_file) {
        fprintf(out, "    %-16s = ", "key_file");
        put_string(out, r->key_file);
        fputc('\n', out);
    }
    fputs("}\n", out);
}

static void put_rule(FILE *out, const struct sl_rule *r)
{
    char buf[64];
    bool in = r->dir == SL_IN;
    fprintf(out, "\n%s \"%s\" {\n", in ? "inbound" : "outbound", r->name);
    put_ports(out, r);
    if (in) {
        put_cidrs(out, "local", r->local, r->nlocal);
        put_cidrs(out, "from", r->from, r->nfrom);
    } else {
        put_to(out, r);
    }
    put_cidrs(out, "exempt", r->exempt, r->nexempt);
    if (r->limit.count) {
        put_key(out, "    ", "rate");
        fprintf(out, "\"%s\"\n", r->rate_text);
        put_key(out, "    ", "burst");
        fprintf(out, "%llu\n", (unsigned long long)r->limit.burst);
        put_key(out, "    ", "algorithm");
        fprintf(out, "%s\n", conf_alg_names[r->limit.alg]);
    }
    put_bytes(out, "recv_rate", "recv_burst", &r->recv_limit, r->recv_rate_text);
    put_bytes(out, "send_rate", "send_burst", &r->send_limit, r->send_rate_text);
    if (r->conns) {
        put_key(out, "    ", "conns");
        fprintf(out, "%u\n", r->conns);
    }
    put_key(out, "    ", "scope");
    fprintf(out, "%s\n", conf_scope_names[r->scope]);
    char per[SL_REQ_NAME_MAX + 16];
    put_key(out, "    ", "per");
    fprintf(out, "%s\n", conf_per_text(r, per, sizeof per));
    conf_print_request(out, r);
    if (in) {
        put_key(out, "    ", "prefix4");
        fprintf(out, "%u\n", r->prefix4);
        put_key(out, "    ", "prefix6");
        fprintf(out, "%u\n", r->prefix6);
    }
    put_key(out, "    ", "action");
    fprintf(out, "%s\n", conf_action_names[r->action]);
    if (in && r->reply) {
        put_key(out, "    ", "reply");
        put_string(out, r->reply_path);
        fputc('\n', out);
    }
    if (!in || r->request) {
        conf_format_duration(r->max_delay_ns, buf, sizeof buf);
        put_key(out, "    ", "max_delay");
        fprintf(out, "%s\n", buf);
    }
    if (!in) {
        put_key(out, "    ", "errno");
        const char *name = conf_errno_name(r->err);
        if (name)
            fprintf(out, "%s\n", name);
        else
            fprintf(out, "%d\n", r->err);
    }
    put_key(out, "    ", "dry_run");
    fprintf(out, "%s\n", r->dry_run ? "yes" : "no");
    fputs("}\n", out);
}

void sl_conf_print(const struct sl_config *c, FILE *out)
{
    /* no source here: the output of a printed config prints the same */
    fputs("# sluice configuration, normalised\n", out);
    put_key(out, "", "table_slots");
    fprintf(out, "%u\n", c->table_slots);
    put_key(out, "", "shared");
    put_string(out, c->shared);
    fputc('\n', out);
    put_key(out, "", "dry_run");
    fprintf(out, "%s\n", c->dry_run ? "yes" : "no");
    put_key(out, "", "on_error");
    fprintf(out, "%s\n", conf_on_error_names[c->on_error]);
    put_key(out, "", "on_full");
    fprintf(out, "%s\n", conf_on_full_names[c->on_full]);
    put_key(out, "", "inherit");
    fprintf(out, "%s\n", c->inherit ? "yes" : "no");
    put_key(out, "", "log");
    fprintf(out, "%s\n", conf_log_names[c->log]);
    put_key(out, "", "log_level");
    fprintf(out, "%s\n", conf_log_level_names[c->log_level]);
    if (c->gossip.enabled) put_gossip(out, &c->gossip);
    if (c->redis.enabled) put_redis(out, &c->redis);
    for (int i = 0; i < c->nrules; i++)
        put_rule(out, &c->rules[i]);
}
