/* SPDX-License-Identifier: BSD-2-Clause */
/* conf.h - reads sluice's configuration: a libconfuse file, inline rules,
 * or both, into one immutable struct sl_config (core/rule.h).
 *
 * Inline rules are the file's options written as key=value words, for
 * one-line hotfixes. Several rules are separated by ';' and each starts
 * with its direction, `global` for global options or `gossip` for the
 * gossip section:
 *     in port=8080 rate=20/s burst=10 action=reply; out to=api.example port=443 rate=50/m
 *     in port=80 send_rate=2MB/s conns=5
 *     gossip listen=10.0.0.2:7946 peers=10.0.0.3:7946,10.0.0.4:7946 key_file=/etc/sluice/key
 * Lists are comma-separated (from=10.0.0.0/8,192.168.0.0/16).
 *
 * Every error is one line naming the source (file name or "inline rule N"),
 * the line, the option and the rejected value.
 */
#ifndef SL_CONF_H
#define SL_CONF_H

#include <netdb.h>
#include <stdio.h>

#include "../core/rule.h"

/* Resolves host names for outbound rules at load time. None by default
 * (names are kept, with no addresses, and resolved later): the shim points
 * it at the real getaddrinfo, so its own hook does not see the lookup, and
 * the sluice command at getaddrinfo. */
typedef int (*sl_resolve_fn)(const char *node, const char *service, const struct addrinfo *hints,
                             struct addrinfo **res);
typedef void (*sl_freeaddrinfo_fn)(struct addrinfo *res);
void sl_conf_set_resolver(sl_resolve_fn resolve, sl_freeaddrinfo_fn release);

/* Loads `file` (NULL: none) then `inline_rules` (NULL: none). Returns a new
 * config, or NULL with one message in err. *on_error receives the on_error
 * the operator asked for, as far as it could be read, even when the load
 * fails (so a broken file can still refuse to start when it says so). */
struct sl_config *sl_conf_load(const char *file, const char *inline_rules,
                               enum sl_on_error *on_error, char *err, size_t errlen);

void sl_conf_free(struct sl_config *cfg);

/* The first ';' of `rule` that would end it and start another inline rule
 * (one outside quotes, not escaped by a backslash), or NULL. The text of one
 * --in or --out must hold none: joined into SLUICE_RULES, the rest would
 * become a rule of its own (issue 31). */
const char *sl_conf_inline_separator(const char *rule);

/* Reports a failed load as one error line saying what on_error makes of
 * it, unless an ancestor of this process already reported the same (see
 * SL_CONF_REPORTED_ENV), and marks the environment so that the processes
 * this one execs stay silent. The caller then refuses to start (closed)
 * or runs unlimited (open). */
void sl_conf_report_failure(const char *err, enum sl_on_error on_error);
#define SL_CONF_REPORTED_ENV "SLUICE_REPORTED"

/* A configuration that loaded without a part it could not read (a plans
 * file, under on_error = open: sl_config.degraded) says so once per
 * process tree, like a failure; nothing when all of it loaded. */
void sl_conf_report_degraded(const struct sl_config *c);

/* Warnings (an option written where it has no effect, e.g. burst on a
 * sliding window rule) go to `warn`, one line each, in the shape of the
 * error messages; NULL (the default): nowhere. `sluice check` shows them. */
void sl_conf_set_warn(void (*warn)(const char *line));

/* Why `next` cannot replace `running` in a running program (sluice reload):
 * the table and fleet settings stay until a restart, and rules keep their
 * names, directions and order, new ones going at the end. NULL: it can. */
const char *sl_conf_unfit(const struct sl_config *running, const struct sl_config *next);

/* Prints the config in its normalised form, itself a valid config file. */
void sl_conf_print(const struct sl_config *cfg, FILE *out);

#endif
