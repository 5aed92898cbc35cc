/* SPDX-License-Identifier: BSD-2-Clause */
/* proxy.h - a local forwarding HTTP proxy through which `sluice run` paces
 * the programs libsluice.so cannot see (Go, statically linked: raw system
 * calls; core/elfkind.h).
 *
 * `sluice run` listens on 127.0.0.1 (an ephemeral port) and starts the
 * proxy as its own child, `sluice proxy-serve`, with libsluice.so preloaded
 * and the program's SLUICE_CONFIG/SLUICE_RULES: its connects and writes are
 * decided by the shim as any client's. Then it names the proxy in the
 * program's HTTPS_PROXY, HTTP_PROXY and ALL_PROXY (and the lowercase
 * twins) and execs the program, which becomes the proxy's parent: the
 * proxy dies with it (PR_SET_PDEATHSIG, and it watches getppid()).
 */
#ifndef SL_PROXY_H
#define SL_PROXY_H

#include <stddef.h>

/* What the proxy covers and what it does not, one clause for `sluice run`'s
 * warning and `sluice check`'s note. */
extern const char sl_proxy_covers[];

/* How many of the three proxy variables (HTTPS_PROXY, HTTP_PROXY,
 * ALL_PROXY, each in either case) the user left unset: 0 means the
 * program's proxies are the user's and no proxy is started. */
int sl_proxy_unset_vars(void);

/* Starts the proxy (see above): preload is the LD_PRELOAD it runs with.
 * Fills url ("http://127.0.0.1:PORT") and returns 0, or returns -1 with
 * why in err. Call it last before exec: the child outlives only this
 * process image. */
int sl_proxy_start(const char *preload, char *url, size_t len, char *err, size_t errlen);

/* Names url in the proxy variables the user left unset; writes the ones
 * the user set ("HTTPS_PROXY=...", space separated) to kept ("" if none). */
void sl_proxy_name(const char *url, char *kept, size_t len);

/* `sluice proxy-serve FD PPID`: serves the listening socket FD until the
 * process PPID is gone. Not for users: `sluice run` starts it. */
int sl_cmd_proxy_serve(int argc, char **argv);

#endif
