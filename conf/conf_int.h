/* SPDX-License-Identifier: BSD-2-Clause */
/* conf_int.h - what the files of conf/ share, and nothing outside sees.
 *
 * A load runs under one lock (libconfuse's lexer keeps global state) and
 * reports through one context: the source being parsed, where the first
 * error goes, and the rules seen so far in declaration order.
 */
#ifndef SL_CONF_INT_H
#define SL_CONF_INT_H

#include <confuse.h>
#include <string.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/rule.h"
#include "../core/tokens.h"

#define CONF_FILE_MAX  (1u << 20) /* a config file larger than this is refused */
#define CONF_REPLY_MAX (64u << 10)
#define CONF_CONNS_MAX 1000000 /* conns: connections open at once per key */

/* The hidden option that records the line a section opens on (see
 * options.c). The leading space keeps it out of reach of unquoted text. */
#define CONF_SECTION_LINE " line"

struct conf_seen {
    char name[SL_NAME_MAX];
    enum sl_dir dir;
    int line;
    bool is_inline;
};

struct conf_ctx {
    const char *file; /* the file path as given, for messages */
    const char *dir;  /* its directory: relative reply paths start here */
    bool is_inline;   /* parsing inline rules: lines are rule numbers */
    char *err;
    size_t errlen;
    bool failed;
    cfg_t *section;     /* the rule section being parsed */
    int gossip_line;    /* where the gossip section opens; 0: none yet */
    bool gossip_inline; /* ... and gossip_line is an inline rule number */
    int redis_line;     /* where the redis section opens; 0: none yet */
    bool redis_inline;  /* ... and redis_line is an inline rule number */
    int nseen;
    struct conf_seen seen[SL_MAX_RULES + 1];
    uint64_t log_words;        /* the table's log region the algorithm = log rules take */
    enum sl_on_error on_error; /* as known when the rules are built (the file's, the env's) */
    char degraded[512];        /* the first thing left out under on_error = open */
};

/* The context of the load in progress (the load lock is held). */
extern struct conf_ctx *conf_ctx;

/* lookup.c: an option of sec by name, as cfg_getopt finds it, at a
 * fraction of its cost (a process pays for every lookup at start-up).
 * libconfuse's getters by name are redefined over it for every conf/ file
 * (confuse.h is included above, so its declarations stand): they read the
 * same values and defaults through libconfuse's cfg_opt_* getters. */
cfg_opt_t *conf_opt(cfg_t *sec, const char *name);
#define cfg_getstr(sec, name)     cfg_opt_getnstr(conf_opt(sec, name), 0)
#define cfg_getnstr(sec, name, i) cfg_opt_getnstr(conf_opt(sec, name), i)
#define cfg_getint(sec, name)     cfg_opt_getnint(conf_opt(sec, name), 0)
#define cfg_getbool(sec, name)    cfg_opt_getnbool(conf_opt(sec, name), 0)
#define cfg_size(sec, name)       cfg_opt_size(conf_opt(sec, name))

/* options.c: the option table */
cfg_t *conf_cfg_new(void);
int conf_section_line(cfg_t *sec);
bool conf_opt_is_list(const char *name);
static inline enum sl_dir conf_section_dir(const cfg_t *sec)
{
    return strcmp(sec->name, "outbound") == 0 ? SL_OUT : SL_IN;
}

/* values.c: value parsers. Each returns NULL, or the words that end the
 * message "'<value>' <words>". */
const char *conf_parse_rate(const char *text, uint64_t *count, uint64_t *period_ns);
const char *conf_parse_duration(const char *text, uint64_t *ns);
const char *conf_parse_errno(const char *text, int *err);
const char *conf_parse_port_range(const char *text, struct sl_port_range *r);
const char *conf_parse_cidr(const char *text, struct sl_cidr *c);
const char *conf_parse_name(const char *text);
/* One of names (NULL-terminated), *out its index. A name ending in ':'
 * takes a parameter (per = header:X-API-Key matches "header:"). */
const char *conf_parse_enum(const char *text, const char *const *names, int *out);
/* The parameter of a value that matched a name ending in ':'. */
const char *conf_enum_param(const char *text);
const char *conf_parse_whole(const char *text, long *out);
/* Bytes: N or N<unit>, unit B, KB, MB, GB (powers of 1000) or KiB, MiB,
 * GiB (powers of 1024); 1 byte to 1000GB. A byte rate is that and "/s". */
const char *conf_parse_bytes(const char *text, uint64_t *bytes);
const char *conf_parse_byte_rate(const char *text, uint64_t *bytes_per_sec);
/* In the largest unit that divides exactly, KB before KiB (and so on)
 * when both do: "2MB", "1MiB", "512KB", "1500B". */
void conf_format_bytes(uint64_t bytes, char *buf, size_t len);
/* A byte rate's burst when none is given: a tenth of a second's worth. */
uint64_t conf_default_byte_burst(uint64_t bytes_per_sec);
/* The largest burst, or request cost, a GCRA limit of count per period
 * can keep: burst x interval (period / count) must stay within the 2^62 ns
 * (146 years) core/limit/limit.c keeps a bucket's depth in, and so must a
 * request's cost x interval. 0: the rate itself cannot be kept (an
 * interval under a picosecond). */
uint64_t conf_gcra_max_burst(uint64_t count, uint64_t period_ns);
/* A gossip address: a.b.c.d:port or [v6]:port, no host names (core's
 * sl_hostport_parse, shared with gossip.c). Writes the normalised form
 * ("[2001:db8::2]:7946") to out. */
const char *conf_parse_hostport(const char *text, char *out, size_t outlen);

/* A destination of an outbound rule: an address block or a host name,
 * either with an optional port. */
struct conf_dest {
    bool is_host;
    struct sl_cidr cidr;
    char host[SL_HOST_MAX];
    uint16_t port;
};
const char *conf_parse_dest(const char *text, struct conf_dest *d);

/* files.c: the files a config is or names. */

/* Reads a whole config file (a regular file, opened without blocking) into
 * a NUL-terminated sl_alloc'd buffer. Returns NULL, or the words of the
 * error: "cannot read: <why>", "is not a regular file", "is larger than
 * 1 MiB" (max), "holds a NUL byte". After the last two the text read (at
 * most max + 1 bytes, NUL bytes kept) is handed back all the same, for
 * the on_error scan; the caller frees *buf whenever it is set. */
const char *conf_read_file(const char *path, size_t max, char **buf, size_t *len);

/* Reads a reply file: resolves `path` against ctx->dir, returns NULL and a
 * new sl_alloc'd buffer, or the words of an error. `resolved` receives the
 * absolute path. */
const char *conf_read_reply(const char *path, char **buf, size_t *len, char *resolved,
                            size_t resolvedlen);
/* The same for a file of any size (a plans file: 100,000 keys are
 * megabytes): the limit is the file system's and memory's. */
const char *conf_read_whole(const char *path, char **buf, size_t *len, char *resolved,
                            size_t resolvedlen);

/* Reads the gossip key file: resolves `path` like a reply file; it must
 * be a regular file other users cannot read or write, holding 64 hex
 * characters (then only white space). Returns NULL, the key and in
 * `resolved` the absolute path, or the words of an error. */
const char *conf_read_key(const char *path, uint8_t key[32], char *resolved, size_t resolvedlen);

extern const char *const conf_on_error_names[];
extern const char *const conf_on_full_names[];
extern const char *const conf_log_names[];
extern const char *const conf_log_level_names[];
extern const char *const conf_alg_names[];
extern const char *const conf_per_names[];
extern const char *const conf_action_names[];
extern const char *const conf_scope_names[];
extern const char *const conf_backend_error_names[];
const char *conf_errno_name(int err);
void conf_format_duration(uint64_t ns, char *buf, size_t len);

/* errors.c: the first error of a load, one line:
 *   <source>:<line>: <section> "<name>": option '<opt>': '<value>' <what>
 * (section for options inside a rule; opt and value when there are some;
 * inline rules are "inline rule N" with no line). */
void conf_fail(cfg_t *sec, int line, const char *opt, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void conf_libconfuse_error(cfg_t *cfg, const char *fmt, va_list ap);
/* A line of the same shape for what is allowed but probably not meant;
 * goes to the hook sl_conf_set_warn() set, if any. */
void conf_warn(cfg_t *sec, int line, const char *opt, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A part of a rule that cannot be loaded (a plans file) under on_error =
 * open: the load goes on without it, the rule keeping its own limits, and
 * the first such message is kept in sl_config.degraded, in the shape of an
 * error. Returns true; under on_error = closed it fails the load
 * (conf_fail) and returns false. */
bool conf_degrade(cfg_t *sec, int line, const char *opt, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* text.c */
/* Blanks out comments in place, keeping newlines so line numbers hold.
 * Returns 0, or -1 after conf_fail() for an unterminated string or comment. */
int conf_strip_comments(char *text);
/* Looks for the last top-level `on_error = open|closed` in comment-free
 * text; leaves *out alone if there is none. */
void conf_scan_on_error(const char *text, enum sl_on_error *out);

/* inline.c: turns inline rules into libconfuse text, rule N on line N.
 * Returns a new sl_alloc'd string, or NULL when out of memory. After an
 * error (conf_fail(), the load has failed) the text still holds every
 * rule and word that could be read, for the on_error scan. */
char *conf_inline_to_text(const char *rules, bool *any);

/* A growing string in sl_alloc'd memory. */
struct conf_buf {
    char *s;
    size_t len, cap;
    bool oom;
};
void conf_buf_putc(struct conf_buf *b, char c);
void conf_buf_puts(struct conf_buf *b, const char *s);

/* Request options (reqopts.c). */
#include <stdio.h>
extern const char *const conf_per_missing_names[];
extern const char *const conf_per_copy_names[];
extern const char *const conf_on_odd_names[];
bool conf_req_per(const char *text, enum sl_req_per *kind, const char **name);
const char *conf_parse_req_per_name(const char *name);
const char *conf_parse_quota(const char *text, uint64_t *n, enum sl_quota_window *w);
const char *conf_parse_utc_offset(const char *text, int32_t *seconds);
/* "2026-12-01" or "2026-12-01T09:30[:00][Z]", UTC, as unix seconds. */
const char *conf_parse_utc_time(const char *text, int64_t *unix_s);
const char *conf_parse_route(const char *text);
const char *conf_parse_method(const char *text);
const char *conf_parse_req_host(const char *text);
bool conf_is_request_rule(cfg_t *sec);
/* Fills the request fields; -1 after conf_fail() (a bad plans file under
 * on_error = closed; under open, conf_degrade() and the rule's own limits). */
int conf_build_request(cfg_t *sec, struct sl_rule *r, int line);
void conf_print_request(FILE *out, const struct sl_rule *r);
/* answers.c: count_status ("401" to *status; status may be NULL) */
const char *conf_parse_status(const char *text, uint16_t *status);
int conf_build_answers(cfg_t *sec, struct sl_rule *r, int line);
void conf_print_answers(FILE *out, const struct sl_rule *r);
const char *conf_per_text(const struct sl_rule *r, char *buf, size_t len);
/* costs.c: cost_from, cost_rate, cost_burst (a token budget); from and
 * name may be NULL */
const char *conf_parse_cost_from(const char *text, enum sl_cost_from *from, char *name, size_t len);
int conf_build_costs(cfg_t *sec, struct sl_rule *r, int line);
void conf_print_costs(FILE *out, const struct sl_rule *r);

#endif
