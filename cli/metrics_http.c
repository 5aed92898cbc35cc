/* SPDX-License-Identifier: BSD-2-Clause */
/* metrics_http.c - `sluice metrics`: a running program's table in the
 * Prometheus text exposition format (metrics.c), printed once, or
 * served over HTTP with --listen for a Prometheus server to scrape.
 *
 * The server is this small separate process (libmicrohttpd, one thread
 * polling), reading the shared table on each scrape: nothing runs inside
 * the program under sluice. The same server answers / with a live page
 * and /stats.json with what it shows (live.c). The top of the metrics
 * files: this calls the text (metrics.c), the live page (live.c) and the
 * source (metrics_source.c), which both of those read; nothing calls back
 * up.
 *
 * Who may read it (issue 31): a port alone binds loopback; another
 * address is the operator's choice, said on stderr when it is not
 * loopback. With --token FILE every path asks for `Authorization: Bearer
 * <the file's text>` (Prometheus's `authorization: credentials_file`),
 * else 401. The token is kept only as a BLAKE2b digest, compared with
 * sodium_memcmp: the time an answer takes tells nothing of the token,
 * not even its length; it is never printed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <microhttpd.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../conf/conf.h"
#include "../core/fleet/hostport.h"
#include "live.h"
#include "locate.h"
#include "metrics.h"
#include "metrics_source.h"

int sl_cmd_metrics(int argc, char **argv);

/* The token's digest; `token_set` false: no token asked (no --token). */
static unsigned char token_digest[crypto_generichash_BYTES];
static bool token_set;

/* Reads the --token file: a regular file other users cannot read, one
 * line of printable characters (trailing white space dropped), at most
 * 4 KiB. Keeps its digest; NULL, or why not (never the token). */
static const char *read_token(const char *path)
{
    char text[4098];
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return strerror(errno);
    const char *bad = fstat(fd, &st) != 0     ? strerror(errno)
                      : !S_ISREG(st.st_mode)  ? "is not a regular file"
                      : st.st_mode & S_IROTH  ? "can be read by every user: chmod 600 it"
                      : st.st_size > 4096 + 1 ? "is larger than 4 KiB"
                                              : NULL;
    ssize_t n = bad ? 0 : read(fd, text, sizeof text - 1);
    if (!bad && n < 0) bad = strerror(errno);
    close(fd);
    if (bad) return bad;
    size_t len = (size_t)n;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ' ||
                   text[len - 1] == '\t'))
        len--;
    if (len == 0) bad = "is empty";
    for (size_t i = 0; i < len && !bad; i++)
        if (text[i] < 0x21 || text[i] > 0x7e)
            bad = "does not hold a token: one line of printable characters, no spaces";
    if (!bad) {
        crypto_generichash(token_digest, sizeof token_digest, (const unsigned char *)text, len,
                           NULL, 0);
        token_set = true;
    }
    sodium_memzero(text, sizeof text);
    return bad;
}

/* The request carries `Authorization: Bearer <token>` (the scheme in any
 * case, RFC 7235), or no token is asked. */
static bool authorized(struct MHD_Connection *c)
{
    if (!token_set) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return false;
    for (h += 7; *h == ' ';)
        h++;
    unsigned char got[crypto_generichash_BYTES];
    crypto_generichash(got, sizeof got, (const unsigned char *)h, strlen(h), NULL, 0);
    return sodium_memcmp(got, token_digest, sizeof got) == 0;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *len, void **state)
{
    (void)version, (void)data, (void)len, (void)state;
    struct sl_metrics_source *s = cls;
    char *text = NULL, err[256];
    size_t n = 0;
    unsigned status = MHD_HTTP_OK;
    const char *type = "text/plain; version=0.0.4; charset=utf-8";
    FILE *out = open_memstream(&text, &n);
    if (!out) return MHD_NO;
    bool denied = !authorized(c);
    if (denied) {
        status = MHD_HTTP_UNAUTHORIZED;
        type = "text/plain; charset=utf-8";
        fputs("this exporter asks for Authorization: Bearer <token> (sluice metrics --token)\n",
              out);
    } else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        fputs("only GET\n", out);
    } else if (strcmp(url, "/") == 0) {
        type = "text/html; charset=utf-8";
        fputs(sl_live_page, out);
    } else if (strcmp(url, "/stats.json") == 0) {
        type = "application/json";
        if (sl_live_json(out, s, err, sizeof err) != 0) {
            status = MHD_HTTP_SERVICE_UNAVAILABLE;
            fprintf(out, "{\"error\": \"table unavailable\"}\n");
        }
    } else if (strcmp(url, "/metrics") != 0) {
        status = MHD_HTTP_NOT_FOUND;
        fputs("the metrics are at /metrics, the live page at /\n", out);
    } else if (sl_metrics_text(out, s, err, sizeof err) != 0) {
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        fprintf(out, "table %s: %s\n", s->label, err);
    }
    fclose(out);
    struct MHD_Response *r = MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (denied)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"sluice\"");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static volatile sig_atomic_t stopping;
static void stop(int sig)
{
    (void)sig;
    stopping = 1;
}

static bool loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

static int serve(struct sl_metrics_source *s, const char *arg)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    char listen[80];
    /* a port alone (9464 or :9464): loopback, only this host's users */
    const char *port_only = arg[0] == ':' ? arg + 1 : arg;
    if (*port_only && strspn(port_only, "0123456789") == strlen(port_only))
        snprintf(listen, sizeof listen, "127.0.0.1:%s", port_only);
    else
        snprintf(listen, sizeof listen, "%s", arg);
    const char *bad = sl_hostport_parse(listen, &ss, &sslen);
    if (bad) {
        fprintf(stderr, "sluice metrics: --listen %s: %s, or a port alone (loopback)\n", arg, bad);
        return 2;
    }
    if (!loopback(&ss))
        fprintf(stderr, "sluice metrics: warning: --listen %s is not a loopback address: %s\n",
                listen,
                token_set ? "other hosts reach it; they need the token, which plain HTTP carries "
                            "in clear"
                          : "whoever can reach it reads the rule names and counters (--token FILE "
                            "asks for a bearer token; a port alone binds 127.0.0.1)");
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    uint16_t port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    struct sockaddr *sa = (struct sockaddr *)&ss;
    struct MHD_Daemon *d =
        MHD_start_daemon(flags, port, NULL, NULL, answer, (void *)s, MHD_OPTION_SOCK_ADDR, sa,
                         MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "sluice metrics: cannot listen on %s: %s\n", listen, strerror(errno));
        return 1;
    }
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    fprintf(stderr, "sluice metrics: table of %s on http://%s/metrics, live page at http://%s/\n",
            s->label, listen, listen);
    while (!stopping)
        pause();
    MHD_stop_daemon(d);
    return 0;
}

int sl_cmd_metrics(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"shared", required_argument, NULL, 's'},
        {"listen", required_argument, NULL, 'l'}, {"pid", required_argument, NULL, 'p'},
        {"token", required_argument, NULL, 't'},  {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *shared = NULL, *listen = NULL, *token = NULL;
    int pid = 0;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "c:s:l:", opts, NULL)) != -1;) {
        if (c == 'c')
            config = optarg;
        else if (c == 's')
            shared = optarg;
        else if (c == 'p')
            pid = atoi(optarg);
        else if (c == 'l')
            listen = optarg;
        else if (c == 't')
            token = optarg;
        else
            return 2;
    }
    if (token) {
        const char *bad = !listen             ? "is for --listen"
                          : sodium_init() < 0 ? "needs libsodium, which cannot initialise"
                                              : read_token(token);
        if (bad) {
            fprintf(stderr, "sluice metrics: --token %s: %s\n", token, bad);
            return 2;
        }
    }
    struct sl_metrics_source s = {.config = config, .pid = pid};
    struct sl_config *cfg = NULL;
    char err[1024];
    if (config) {
        enum sl_on_error on_error;
        cfg = sl_conf_load(config, NULL, &on_error, err, sizeof err);
        if (!cfg) {
            fprintf(stderr, "sluice: %s\n", err);
            return 1;
        }
        s.cfg = cfg;
    }
    struct sl_place found[2];
    size_t n = sl_locate(config,
                         shared                ? shared
                         : cfg && *cfg->shared ? cfg->shared
                                               : NULL,
                         pid, found, 2, err, sizeof err);
    if (n != 1) {
        if (n > 1)
            fprintf(stderr,
                    "sluice metrics: more than one program runs with %s: name one with "
                    "--pid (`sluice ps` lists them)\n",
                    config);
        else
            fprintf(stderr, "sluice metrics: %s\n", err);
        if (cfg) sl_conf_free(cfg);
        return n ? 2 : 1;
    }
    s.place = found[0];
    sl_place_label(&s.place, s.label, sizeof s.label);
    if (!cfg && *s.place.config) { /* found by --pid or --shared: what it runs from */
        enum sl_on_error on_error;
        s.cfg = cfg = sl_conf_load(s.place.config, NULL, &on_error, err, sizeof err);
    }
    int rc;
    if (listen) {
        rc = serve(&s, listen);
    } else {
        rc = sl_metrics_text(stdout, &s, err, sizeof err) == 0 ? 0 : 1;
        if (rc) fprintf(stderr, "sluice metrics: %s: %s\n", s.label, err);
    }
    free(s.top.v);
    if (cfg) sl_conf_free(cfg);
    return rc;
}
