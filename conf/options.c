/* options.c - the option table, and the parsers that check each value
 * where libconfuse reads it.
 *
 * One table of rule options serves both `inbound "name" { }` and
 * `outbound "name" { }`; options that make sense in one direction only are
 * refused in the other by the validator, on the line they appear. Options
 * whose default depends on other options (per, prefix4, burst, recv_burst,
 * send_burst, action, errno, dry_run; peer_timeout, alone_share) have no
 * libconfuse default: "not set" is visible as cfg_size() == 0 and load.c
 * fills the default in.
 *
 * A rule limits at least one of: the connection rate (rate), bytes each
 * way (recv_rate, send_rate: GCRA over bytes per second) and connections
 * open at once (conns). The gossip section (at most one, untitled) is what
 * scope = cluster rules share their counts through; its key file is read
 * and checked here, and again at build, like a reply file.
 *
 * Every value is checked twice with the same parser: by a libconfuse
 * validator while the file is read (so the message has the right line),
 * and again by load.c when it builds the struct (which then cannot fail,
 * but for files that changed in between: reply and key_file).
 */
#include "conf_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/key.h"
#include "../core/mem.h"

const char *const conf_on_error_names[] = {"open", "closed", NULL};
const char *const conf_on_full_names[] = {"shared", "deny", "allow", NULL};
const char *const conf_log_names[] = {"stderr", "syslog", "none", NULL};
const char *const conf_log_level_names[] = {"error", "warn", "info", "debug", NULL};
const char *const conf_alg_names[] = {"gcra", "sliding", "fixed", NULL};
/* In the order of enum sl_per and enum sl_action. */
const char *const conf_per_names[] = {"peer", "prefix", "destination", "rule", NULL};
const char *const conf_action_names[] = {"reject", "reply", "delay", NULL};
const char *const conf_scope_names[] = {"local", "cluster", NULL};

static int parse_int(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result);
static int parse_bool(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result);
static int note_section_line(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result);

/* clang-format off */
static cfg_opt_t rule_opts[] = {
    /*           name          default    flags                       parser */
    CFG_STR_LIST("port",       NULL,      CFGF_NONE),                 /* {}: every port */
    CFG_STR_LIST("local",      NULL,      CFGF_NONE),                 /* inbound; {}: any local address */
    CFG_STR_LIST("from",       NULL,      CFGF_NONE),                 /* inbound; {}: every peer */
    CFG_STR_LIST("to",         NULL,      CFGF_NONE),                 /* outbound, required */
    CFG_STR_LIST("exempt",     NULL,      CFGF_NONE),                 /* {}: nobody */
    CFG_STR     ("rate",       NULL,      CFGF_NODEFAULT),            /* N/s N/m N/h N/d N/<duration>; none: no connection rate */
    CFG_INT_CB  ("burst",      0,         CFGF_NODEFAULT, parse_int), /* the rate's N */
    CFG_STR     ("algorithm",  "gcra",    CFGF_NONE),                 /* gcra | sliding | fixed */
    CFG_STR     ("recv_rate",  NULL,      CFGF_NODEFAULT),            /* bytes received: 2MB/s, 512KiB/s; none: no limit */
    CFG_STR     ("recv_burst", NULL,      CFGF_NODEFAULT),            /* bytes: a tenth of recv_rate's second, at least 1 */
    CFG_STR     ("send_rate",  NULL,      CFGF_NODEFAULT),            /* bytes sent; none: no limit */
    CFG_STR     ("send_burst", NULL,      CFGF_NODEFAULT),            /* bytes: a tenth of send_rate's second, at least 1 */
    CFG_INT_CB  ("conns",      0,         CFGF_NODEFAULT, parse_int), /* open at once per key, 0..1000000; 0: no limit */
    CFG_STR     ("scope",      "local",   CFGF_NONE),                 /* local | cluster (needs gossip and rate) */
    CFG_STR     ("per",        NULL,      CFGF_NODEFAULT),            /* inbound peer, outbound rule */
    CFG_INT_CB  ("prefix4",    0,         CFGF_NODEFAULT, parse_int), /* inbound: 32, 24 for per = prefix */
    CFG_INT_CB  ("prefix6",    0,         CFGF_NODEFAULT, parse_int), /* inbound: 64, 48 for per = prefix */
    CFG_STR     ("action",     NULL,      CFGF_NODEFAULT),            /* inbound reject, outbound delay */
    CFG_STR     ("reply",      NULL,      CFGF_NODEFAULT),            /* inbound; none: built-in 429 */
    CFG_STR     ("max_delay",  "10s",     CFGF_NONE),                 /* outbound */
    CFG_STR     ("errno",      NULL,      CFGF_NODEFAULT),            /* outbound: ETIMEDOUT (delay), ECONNREFUSED (reject) */
    CFG_BOOL_CB ("dry_run",    cfg_false, CFGF_NODEFAULT, parse_bool), /* the global dry_run */
    CFG_PTR_CB  (CONF_SECTION_LINE, "0",  CFGF_NONE, note_section_line, NULL),
    CFG_END()
};

static cfg_opt_t gossip_opts[] = {
    /*           name            default  flags                       parser */
    CFG_STR     ("listen",       NULL,    CFGF_NODEFAULT),            /* required: 10.0.0.2:7946, [2001:db8::2]:7946 */
    CFG_STR_LIST("peers",        NULL,    CFGF_NONE),                 /* required: 1..16 of the same form */
    CFG_STR     ("interval",     "100ms", CFGF_NONE),                 /* 1ms..10s */
    CFG_STR     ("peer_timeout", NULL,    CFGF_NODEFAULT),            /* 10 x interval; longer than interval */
    CFG_INT_CB  ("alone_share",  0,       CFGF_NODEFAULT, parse_int), /* 1..100 %; ceil(100 / (peers + 1)) */
    CFG_STR     ("key_file",     NULL,    CFGF_NODEFAULT),            /* required: 64 hex characters, mode 600 */
    CFG_PTR_CB  (CONF_SECTION_LINE, "0",  CFGF_NONE, note_section_line, NULL),
    CFG_END()
};

static cfg_opt_t global_opts[] = {
    /*          name           default    flags      parser */
    CFG_INT_CB ("table_slots", 65536,    CFGF_NONE, parse_int),  /* 64 .. 1<<30 */
    CFG_STR    ("shared",      "",       CFGF_NONE),             /* "": private to this program */
    CFG_BOOL_CB("dry_run",     cfg_false, CFGF_NONE, parse_bool),
    CFG_STR    ("on_error",    "open",   CFGF_NONE),             /* open | closed */
    CFG_STR    ("on_full",     "shared", CFGF_NONE),             /* shared | deny | allow */
    CFG_BOOL_CB("inherit",     cfg_true, CFGF_NONE, parse_bool),
    CFG_STR    ("log",         "stderr", CFGF_NONE),             /* stderr | syslog | none */
    CFG_STR    ("log_level",   "info",   CFGF_NONE),             /* error | warn | info | debug */
    CFG_SEC    ("gossip",      gossip_opts, CFGF_MULTI),         /* at most one (checked); none: no cluster */
    CFG_SEC    ("inbound",     rule_opts, CFGF_MULTI | CFGF_TITLE),
    CFG_SEC    ("outbound",    rule_opts, CFGF_MULTI | CFGF_TITLE),
    CFG_END()
};
/* clang-format on */

/* Where an option may appear. */
enum where { IN = 1, OUT = 2, RULE = IN | OUT, GLOBAL = 4, GOSSIP = 8 };

struct option_rule {
    const char *name;
    unsigned where;
    int max; /* lists: entries */
};

static const struct option_rule option_rules[] = {
    {"port", RULE, SL_MAX_PORTS},
    {"local", IN, SL_MAX_CIDRS},
    {"from", IN, SL_MAX_CIDRS},
    {"to", OUT, SL_MAX_CIDRS},
    {"exempt", RULE, SL_MAX_CIDRS},
    {"rate", RULE, 0},
    {"burst", RULE, 0},
    {"algorithm", RULE, 0},
    {"recv_rate", RULE, 0},
    {"recv_burst", RULE, 0},
    {"send_rate", RULE, 0},
    {"send_burst", RULE, 0},
    {"conns", RULE, 0},
    {"scope", RULE, 0},
    {"per", RULE, 0},
    {"prefix4", IN, 0},
    {"prefix6", IN, 0},
    {"action", RULE, 0},
    {"reply", IN, 0},
    {"max_delay", OUT, 0},
    {"errno", OUT, 0},
    {"dry_run", RULE | GLOBAL, 0},
    {"table_slots", GLOBAL, 0},
    {"shared", GLOBAL, 0},
    {"on_error", GLOBAL, 0},
    {"on_full", GLOBAL, 0},
    {"inherit", GLOBAL, 0},
    {"log", GLOBAL, 0},
    {"log_level", GLOBAL, 0},
    {"listen", GOSSIP, 0},
    {"peers", GOSSIP, SL_MAX_PEERS},
    {"interval", GOSSIP, 0},
    {"peer_timeout", GOSSIP, 0},
    {"alone_share", GOSSIP, 0},
    {"key_file", GOSSIP, 0},
};

#define NRULES (sizeof option_rules / sizeof option_rules[0])

bool conf_opt_is_list(const char *name)
{
    for (size_t i = 0; i < NRULES; i++)
        if (strcmp(option_rules[i].name, name) == 0) return option_rules[i].max > 0;
    return false;
}

enum sl_dir conf_section_dir(const cfg_t *sec)
{
    return strcmp(sec->name, "outbound") == 0 ? SL_OUT : SL_IN;
}

/* ---- value parsers ------------------------------------------------------ */

static bool parse_u64(const char *s, const char **end, uint64_t *out)
{
    if (!isdigit((unsigned char)*s)) return false;
    uint64_t v = 0;
    for (; isdigit((unsigned char)*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *end = s;
    *out = v;
    return true;
}

static const struct {
    const char *unit;
    uint64_t ns;
} units[] = {
    {"d", 86400 * SL_NS_PER_SEC},
    {"h", 3600 * SL_NS_PER_SEC},
    {"m", 60 * SL_NS_PER_SEC},
    {"s", SL_NS_PER_SEC},
    {"ms", 1000000},
    {"us", 1000},
    {"ns", 1},
};

#define NUNITS (sizeof units / sizeof units[0])

const char *conf_parse_duration(const char *text, uint64_t *ns)
{
    static const char *const bad = "is not a duration (like 250us, 500ms, 10s, 2m, 1h, 1d)";
    const char *end;
    uint64_t n;
    if (!parse_u64(text, &end, &n)) return bad;
    if (*end == 0) {
        if (n != 0) return bad; /* only 0 goes without a unit */
        *ns = 0;
        return NULL;
    }
    for (size_t i = 0; i < NUNITS; i++) {
        if (strcmp(end, units[i].unit) != 0) continue;
        if (n > UINT64_MAX / 4 / units[i].ns) return "is too long";
        *ns = n * units[i].ns;
        return NULL;
    }
    return bad;
}

void conf_format_duration(uint64_t ns, char *buf, size_t len)
{
    if (ns == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    for (size_t i = 0; i < NUNITS; i++) {
        if (ns % units[i].ns == 0) {
            snprintf(buf, len, "%" PRIu64 "%s", ns / units[i].ns, units[i].unit);
            return;
        }
    }
}

const char *conf_parse_rate(const char *text, uint64_t *count, uint64_t *period_ns)
{
    static const char *const bad = "is not a rate (N/s, N/m, N/h, N/d or N/<duration>)";
    const char *end;
    uint64_t n, period = 0;
    if (!parse_u64(text, &end, &n) || *end != '/') return bad;
    if (n == 0) return "is not a rate: N must be at least 1";
    if (n > 1000000000) return "is not a rate: N must be at most 1000000000";
    const char *per = end + 1;
    for (size_t i = 0; i < 4; i++) /* a bare unit: d h m s */
        if (strcmp(per, units[i].unit) == 0) period = units[i].ns;
    if (!period) {
        if (conf_parse_duration(per, &period)) return bad;
        if (period == 0) return "is not a rate: the period must be longer than 0";
    }
    if (period > 366 * units[0].ns) return "is not a rate: the period must be at most 366d";
    *count = n;
    *period_ns = period;
    return NULL;
}

/* Byte counts: decimal units are powers of 1000, binary ones of 1024, and
 * the case matters (Mb would be megabits: refused, not guessed at). */
static const struct {
    const char *unit;
    uint64_t bytes;
} byte_units[] = {
    /* conf_format_bytes takes the first that divides: the largest rank,
     * and in a rank the decimal unit first (512000 is 512KB, not 500KiB) */
    {"GB", 1000000000}, {"GiB", 1ull << 30}, {"MB", 1000000}, {"MiB", 1ull << 20},
    {"KB", 1000},       {"KiB", 1ull << 10}, {"B", 1},        {"", 1},
};

#define NBYTE_UNITS (sizeof byte_units / sizeof byte_units[0])

/* What a byte rate or burst may reach: 1000 GB (a GCRA interval is kept in
 * whole picoseconds, so a second cannot be split into more parts). */
#define BYTES_MAX 1000000000000ull

/* N, or N and a unit, up to `end` (NULL: the end of the text). */
static const char *parse_bytes(const char *text, const char *end, uint64_t *out)
{
    const char *p;
    uint64_t n;
    if (!parse_u64(text, &p, &n)) return "";
    size_t len = end ? (size_t)(end - p) : strlen(p);
    for (size_t i = 0; i < NBYTE_UNITS; i++) {
        if (strlen(byte_units[i].unit) != len || strncmp(p, byte_units[i].unit, len) != 0) continue;
        if (n == 0) return "must be at least 1B";
        if (n > BYTES_MAX / byte_units[i].bytes) return "must be at most 1000GB";
        *out = n * byte_units[i].bytes;
        return NULL;
    }
    return "";
}

const char *conf_parse_bytes(const char *text, uint64_t *bytes)
{
    static __thread char msg[64];
    const char *bad = parse_bytes(text, NULL, bytes);
    if (!bad) return NULL;
    if (!*bad) return "is not a number of bytes (N or N with B, KB, MB, GB, KiB, MiB or GiB)";
    snprintf(msg, sizeof msg, "is not a number of bytes: it %s", bad);
    return msg;
}

const char *conf_parse_byte_rate(const char *text, uint64_t *bytes_per_sec)
{
    static __thread char msg[64];
    const char *slash = strchr(text, '/');
    const char *bad =
        slash && strcmp(slash, "/s") == 0 ? parse_bytes(text, slash, bytes_per_sec) : "";
    if (!bad) return NULL;
    if (!*bad)
        return "is not a byte rate (N/s with B, KB, MB, GB, KiB, MiB or GiB: 512KB/s, 2MB/s, "
               "1GiB/s)";
    snprintf(msg, sizeof msg, "is not a byte rate: it %s/s", bad);
    return msg;
}

void conf_format_bytes(uint64_t bytes, char *buf, size_t len)
{
    for (size_t i = 0; i < NBYTE_UNITS; i++) {
        if (bytes % byte_units[i].bytes == 0) {
            snprintf(buf, len, "%" PRIu64 "%s", bytes / byte_units[i].bytes, byte_units[i].unit);
            return;
        }
    }
}

static const struct {
    const char *name;
    int value;
} errno_names[] = {
    {"ECONNREFUSED", ECONNREFUSED},
    {"ETIMEDOUT", ETIMEDOUT},
    {"EHOSTUNREACH", EHOSTUNREACH},
    {"ENETUNREACH", ENETUNREACH},
    {"ECONNRESET", ECONNRESET},
    {"EAGAIN", EAGAIN},
    {"EACCES", EACCES},
    {"EPERM", EPERM},
    {"ECONNABORTED", ECONNABORTED},
    {"EADDRNOTAVAIL", EADDRNOTAVAIL},
};

#define NERRNO (sizeof errno_names / sizeof errno_names[0])

const char *conf_parse_errno(const char *text, int *err)
{
    for (size_t i = 0; i < NERRNO; i++) {
        if (strcmp(text, errno_names[i].name) == 0) {
            *err = errno_names[i].value;
            return NULL;
        }
    }
    const char *end;
    uint64_t n;
    if (parse_u64(text, &end, &n) && *end == 0 && n >= 1 && n <= 4095) {
        *err = (int)n;
        return NULL;
    }
    return "is not an errno (ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, ECONNRESET, "
           "EAGAIN, EACCES, EPERM, ECONNABORTED, EADDRNOTAVAIL or a number 1..4095)";
}

const char *conf_errno_name(int err)
{
    for (size_t i = 0; i < NERRNO; i++)
        if (errno_names[i].value == err) return errno_names[i].name;
    return NULL;
}

static bool parse_port(const char *s, const char **end, uint16_t *port)
{
    uint64_t n;
    if (!parse_u64(s, end, &n) || n < 1 || n > 65535) return false;
    *port = (uint16_t)n;
    return true;
}

const char *conf_parse_port_range(const char *text, struct sl_port_range *r)
{
    static const char *const bad = "is not a port (1..65535) or a range of ports (8000-8100)";
    const char *end;
    if (!parse_port(text, &end, &r->lo)) return bad;
    r->hi = r->lo;
    if (*end == '-' && !parse_port(end + 1, &end, &r->hi)) return bad;
    if (*end) return bad;
    if (r->hi < r->lo) return "is not a range: it ends before it starts";
    return NULL;
}

const char *conf_parse_cidr(const char *text, struct sl_cidr *c)
{
    return sl_cidr_parse(c, text) ? NULL : "is not an address or address block";
}

const char *conf_parse_name(const char *text)
{
    size_t n = strlen(text);
    if (n == 0 || n >= SL_NAME_MAX ||
        strspn(text, "abcdefghijklmnopqrstuvwxyz"
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.-") != n)
        return "is not a name (1 to 47 of A-Z a-z 0-9 _ . -)";
    return NULL;
}

const char *conf_parse_enum(const char *text, const char *const *names, int *out)
{
    static __thread char msg[160];
    for (int i = 0; names[i]; i++) {
        if (strcmp(text, names[i]) == 0) {
            *out = i;
            return NULL;
        }
    }
    size_t n = (size_t)snprintf(msg, sizeof msg, "is not one of");
    for (int i = 0; names[i] && n < sizeof msg; i++)
        n += (size_t)snprintf(msg + n, sizeof msg - n, "%s %s", i ? "," : "", names[i]);
    return msg;
}

/* A host name: letters, digits, '-', '_' and dots, the last label not all
 * digits (so a mistyped address is not taken for a name). Lower-cased,
 * without its trailing dot. */
static const char *parse_host(const char *text, size_t n, char *out)
{
    static const char *const bad = "is not an address, address block or host name";
    if (n > 0 && text[n - 1] == '.') n--;
    if (n == 0 || n > 253) return bad;
    size_t label = 0;
    bool digits_only = true;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (c == '.') {
            if (label == 0) return bad;
            label = 0;
            digits_only = true;
            out[i] = c;
            continue;
        }
        if (!isalnum((unsigned char)c) && c != '-' && c != '_') return bad;
        if (!isdigit((unsigned char)c)) digits_only = false;
        if (++label > 63) return bad;
        out[i] = (char)tolower((unsigned char)c);
    }
    if (label == 0 || digits_only) return bad;
    out[n] = 0;
    return NULL;
}

const char *conf_parse_dest(const char *text, struct conf_dest *d)
{
    static const char *const bad = "is not an address, address block or host name";
    char addr[SL_HOST_MAX];
    const char *port = NULL;
    size_t n = strlen(text);
    memset(d, 0, sizeof *d);
    if (n >= sizeof addr) return bad;

    if (text[0] == '[') { /* [v6], [v6]:port, [v6/plen]:port */
        const char *close = strchr(text, ']');
        if (!close) return bad;
        if (close[1] == ':')
            port = close + 2;
        else if (close[1])
            return bad;
        memcpy(addr, text + 1, (size_t)(close - text - 1));
        addr[close - text - 1] = 0;
    } else {
        const char *colon = strchr(text, ':');
        if (colon && !strchr(colon + 1, ':')) { /* one colon: host:port */
            port = colon + 1;
            n = (size_t)(colon - text);
        }
        memcpy(addr, text, n);
        addr[n] = 0;
    }
    if (port) {
        const char *end;
        if (!parse_port(port, &end, &d->port) || *end) return "has a port that is not 1..65535";
    }
    if (sl_cidr_parse(&d->cidr, addr)) return NULL;
    if (text[0] == '[') return bad;
    d->is_host = true;
    return parse_host(addr, strlen(addr), d->host);
}

const char *conf_parse_hostport(const char *text, char *out, size_t outlen)
{
    static const char *const bad =
        "is not address:port (like 10.0.0.2:7946 or [2001:db8::2]:7946; no host names)";
    char addr[INET6_ADDRSTRLEN], norm[INET6_ADDRSTRLEN];
    const char *port;
    int family;
    size_t n;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':') return bad;
        family = AF_INET6;
        n = (size_t)(close - text - 1);
        text++;
        port = close + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (!colon) return bad;
        family = AF_INET;
        n = (size_t)(colon - text);
        port = colon + 1;
    }
    if (n == 0 || n >= sizeof addr) return bad;
    memcpy(addr, text, n);
    addr[n] = 0;
    unsigned char bin[16];
    if (inet_pton(family, addr, bin) != 1) return bad;
    const char *end;
    uint16_t p;
    if (!parse_port(port, &end, &p) || *end) return "has a port that is not 1..65535";
    inet_ntop(family, bin, norm, sizeof norm);
    if ((size_t)snprintf(out, outlen, family == AF_INET6 ? "[%s]:%u" : "%s:%u", norm, p) >= outlen)
        return bad; /* cannot happen: 128 bytes hold any */
    return NULL;
}

/* Where a path given in the config is opened: relative to the config
 * file's directory (inline rules: the working directory). */
static const char *join_path(const char *path, char *joined, size_t len, const char **open_path)
{
    *open_path = path;
    if (path[0] == 0) return "is not a file name";
    if (path[0] != '/' && conf_ctx && conf_ctx->dir) {
        if ((size_t)snprintf(joined, len, "%s/%s", conf_ctx->dir, path) >= len)
            return "is too long a path";
        *open_path = joined;
    }
    return NULL;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Opens a small file the config names (relative to the config's
 * directory): it must open without blocking (a FIFO must not hang the
 * load), be a regular file, and have a canonical path that fits in
 * resolvedlen. Returns NULL with fd, st and real filled, or the message
 * (nothing left open). */
static const char *open_regular(const char *path, size_t resolvedlen, int *fd, struct stat *st,
                                char real[PATH_MAX])
{
    static __thread char msg[128];
    char joined[PATH_MAX];
    const char *open_path, *bad;
    if ((bad = join_path(path, joined, sizeof joined, &open_path))) return bad;
    *fd = open(open_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0) goto fail;
    if (fstat(*fd, st) != 0 || !realpath(open_path, real)) {
        int e = errno;
        close(*fd);
        errno = e;
        goto fail;
    }
    bad = !S_ISREG(st->st_mode)         ? "is not a regular file"
          : strlen(real) >= resolvedlen ? "is too long a path"
                                        : NULL;
    if (bad) close(*fd);
    return bad;
fail:
    snprintf(msg, sizeof msg, "cannot be read: %s", strerror(errno));
    return msg;
}

/* Reads until `n` bytes or the end of the file; returns the count, or -1
 * with errno (EINTR is retried). */
static ssize_t read_upto(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static const char *read_failed(void)
{
    static __thread char msg[128];
    snprintf(msg, sizeof msg, "cannot be read: %s", strerror(errno));
    return msg;
}

/* The key file's checks, in this order: it opens, it is a regular file,
 * other users can neither read nor write it (a key they can read is no
 * secret; one they can write is not ours), it holds 64 hex characters and
 * nothing else but white space. The text read is wiped before returning. */
const char *conf_read_key(const char *path, uint8_t key[32], char *resolved, size_t resolvedlen)
{
    static const char *const bad_text = "does not hold a key: 64 hex characters (32 bytes)";
    char real[PATH_MAX], text[256];
    struct stat st;
    int fd;
    const char *bad = open_regular(path, resolvedlen, &fd, &st, real);
    if (bad) return bad;
    bad = st.st_mode & S_IROTH               ? "can be read by every user: chmod 600 it"
          : st.st_mode & S_IWOTH             ? "can be written by every user: chmod 600 it"
          : st.st_size >= (off_t)sizeof text ? bad_text
                                             : NULL;
    if (bad) {
        close(fd);
        return bad;
    }
    /* up to one byte more than a key with white space may use */
    ssize_t n = read_upto(fd, text, sizeof text - 1);
    int e = errno;
    close(fd);
    if (n < 0) {
        explicit_bzero(text, sizeof text);
        errno = e;
        return read_failed();
    }
    size_t got = (size_t)n;
    text[got] = 0;
    bad = got >= 64 ? NULL : bad_text;
    for (size_t i = 0; !bad && i < 64; i++)
        if (hex_digit(text[i]) < 0) bad = bad_text;
    for (size_t i = 64; !bad && i < got; i++)
        if (!isspace((unsigned char)text[i])) bad = bad_text;
    if (!bad) {
        for (size_t i = 0; i < 32; i++)
            key[i] = (uint8_t)(hex_digit(text[2 * i]) << 4 | hex_digit(text[2 * i + 1]));
        strcpy(resolved, real);
    }
    explicit_bzero(text, sizeof text);
    return bad;
}

const char *conf_read_reply(const char *path, char **buf, size_t *len, char *resolved,
                            size_t resolvedlen)
{
    char real[PATH_MAX];
    struct stat st;
    int fd;
    const char *bad = open_regular(path, resolvedlen, &fd, &st, real);
    if (bad) return bad;
    bad = st.st_size == 0                      ? "is empty"
          : st.st_size > (off_t)CONF_REPLY_MAX ? "is larger than 64 KiB"
                                               : NULL;
    char *b = bad ? NULL : sl_alloc((size_t)st.st_size + 1);
    if (!bad && !b) bad = "cannot be read: out of memory";
    if (bad) {
        close(fd);
        return bad;
    }
    ssize_t n = read_upto(fd, b, (size_t)st.st_size);
    int e = n < 0 ? errno : EIO; /* shorter than fstat said: it changed under us */
    close(fd);
    if (n != (ssize_t)st.st_size) {
        sl_free(b);
        errno = e;
        return read_failed();
    }
    strcpy(resolved, real);
    *buf = b;
    *len = (size_t)n;
    return NULL;
}

/* ---- libconfuse callbacks ----------------------------------------------- */

/* Integers are parsed here, not by libconfuse, so the message can quote
 * the value. */
static int parse_int(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    const char *end;
    uint64_t n;
    if (!value || !parse_u64(value, &end, &n) || *end || n > LONG_MAX) {
        conf_fail(cfg, cfg->line, opt->name, value ? value : "", "is not a whole number");
        return -1;
    }
    *(long *)result = (long)n;
    return 0;
}

static int parse_bool(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    int b = value ? cfg_parse_boolean(value) : -1;
    if (b < 0) {
        conf_fail(cfg, cfg->line, opt->name, value ? value : "", "is not yes or no");
        return -1;
    }
    *(int *)result = b;
    return 0;
}

/* Runs when libconfuse creates a rule section (it parses this option's
 * default then), with the section's line still that of its opening brace:
 * libconfuse has no other hook there. The line is kept as the option's
 * value; the section becomes the one being parsed. Must not fail: a
 * failing default makes libconfuse abort(). */
static int note_section_line(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    *(void **)result = (void *)(intptr_t)cfg->line;
    if (conf_ctx) conf_ctx->section = cfg;
    return 0;
}

int conf_section_line(cfg_t *sec)
{
    return (int)(intptr_t)cfg_getptr(sec, CONF_SECTION_LINE);
}

static const struct option_rule *find_rule(const char *name)
{
    for (size_t i = 0; i < NRULES; i++)
        if (strcmp(option_rules[i].name, name) == 0) return &option_rules[i];
    return NULL;
}

static const char *check_enum_dir(const char *v, const char *const *names, const unsigned *dirs,
                                  enum sl_dir dir)
{
    int i;
    const char *bad = conf_parse_enum(v, names, &i);
    if (bad) return bad;
    unsigned want = dir == SL_IN ? IN : OUT;
    if (!(dirs[i] & want))
        return dir == SL_IN ? "is only for outbound rules" : "is only for inbound rules";
    return NULL;
}

static const char *check_duration_range(const char *v, uint64_t lo, uint64_t hi)
{
    static __thread char msg[96];
    uint64_t ns;
    const char *bad = conf_parse_duration(v, &ns);
    if (bad || (ns >= lo && ns <= hi)) return bad;
    char a[32], b[32];
    conf_format_duration(lo, a, sizeof a);
    conf_format_duration(hi, b, sizeof b);
    snprintf(msg, sizeof msg, "is out of range (%s..%s)", a, b);
    return msg;
}

static const char *check_value(const char *name, const char *v, enum sl_dir dir)
{
    static const unsigned per_dirs[] = {IN, IN, OUT, IN | OUT};
    static const unsigned action_dirs[] = {IN | OUT, IN, OUT};
    uint64_t u, w;
    int i;
    struct sl_port_range r;
    struct sl_cidr c;
    struct conf_dest d;
    char text[128];

    if (strcmp(name, "port") == 0) return conf_parse_port_range(v, &r);
    if (strcmp(name, "local") == 0 || strcmp(name, "from") == 0 || strcmp(name, "exempt") == 0)
        return conf_parse_cidr(v, &c);
    if (strcmp(name, "to") == 0) return conf_parse_dest(v, &d);
    if (strcmp(name, "rate") == 0) return conf_parse_rate(v, &u, &w);
    if (strcmp(name, "algorithm") == 0) return conf_parse_enum(v, conf_alg_names, &i);
    if (strcmp(name, "recv_rate") == 0 || strcmp(name, "send_rate") == 0)
        return conf_parse_byte_rate(v, &u);
    if (strcmp(name, "recv_burst") == 0 || strcmp(name, "send_burst") == 0)
        return conf_parse_bytes(v, &u);
    if (strcmp(name, "scope") == 0) return conf_parse_enum(v, conf_scope_names, &i);
    if (strcmp(name, "per") == 0) return check_enum_dir(v, conf_per_names, per_dirs, dir);
    if (strcmp(name, "action") == 0) return check_enum_dir(v, conf_action_names, action_dirs, dir);
    if (strcmp(name, "max_delay") == 0) return conf_parse_duration(v, &u);
    if (strcmp(name, "errno") == 0) return conf_parse_errno(v, &i);
    if (strcmp(name, "reply") == 0) {
        char *buf, path[256];
        size_t len;
        const char *bad = conf_read_reply(v, &buf, &len, path, sizeof path);
        if (!bad) sl_free(buf);
        return bad;
    }
    if (strcmp(name, "shared") == 0) return *v ? conf_parse_name(v) : NULL;
    if (strcmp(name, "on_error") == 0) return conf_parse_enum(v, conf_on_error_names, &i);
    if (strcmp(name, "on_full") == 0) return conf_parse_enum(v, conf_on_full_names, &i);
    if (strcmp(name, "log") == 0) return conf_parse_enum(v, conf_log_names, &i);
    if (strcmp(name, "log_level") == 0) return conf_parse_enum(v, conf_log_level_names, &i);
    if (strcmp(name, "listen") == 0 || strcmp(name, "peers") == 0)
        return conf_parse_hostport(v, text, sizeof text);
    if (strcmp(name, "interval") == 0)
        return check_duration_range(v, CONF_GOSSIP_INTERVAL_MIN, CONF_GOSSIP_INTERVAL_MAX);
    if (strcmp(name, "peer_timeout") == 0) /* against interval: at the section's end */
        return conf_parse_duration(v, &u);
    if (strcmp(name, "key_file") == 0) {
        uint8_t key[32];
        char path[256];
        const char *bad = conf_read_key(v, key, path, sizeof path);
        explicit_bzero(key, sizeof key);
        return bad;
    }
    return NULL;
}

static int check_int(cfg_t *cfg, cfg_opt_t *opt, long v)
{
    long lo = 0, hi = LONG_MAX;
    if (strcmp(opt->name, "table_slots") == 0)
        lo = 64, hi = 1L << 30;
    else if (strcmp(opt->name, "burst") == 0)
        lo = 1;
    else if (strcmp(opt->name, "prefix4") == 0)
        hi = 32;
    else if (strcmp(opt->name, "prefix6") == 0)
        hi = 128;
    else if (strcmp(opt->name, "conns") == 0)
        hi = CONF_CONNS_MAX;
    else if (strcmp(opt->name, "alone_share") == 0)
        lo = 1, hi = 100;
    if (v >= lo && v <= hi) return 0;
    char value[32], msg[64];
    snprintf(value, sizeof value, "%ld", v);
    if (hi == LONG_MAX)
        snprintf(msg, sizeof msg, "must be at least %ld", lo);
    else
        snprintf(msg, sizeof msg, "is out of range (%ld..%ld)", lo, hi);
    conf_fail(cfg, cfg->line, opt->name, value, "%s", msg);
    return -1;
}

/* Checks the value just read: the last one of the option. Lists call it
 * once per entry and again at their closing brace. */
static int validate_option(cfg_t *cfg, cfg_opt_t *opt)
{
    const struct option_rule *rule = find_rule(opt->name);
    bool in_rule = cfg->title != NULL;
    enum sl_dir dir = in_rule ? conf_section_dir(cfg) : SL_IN;
    if (!rule || opt->nvalues == 0) return 0;
    if (in_rule && !(rule->where & (dir == SL_IN ? IN : OUT))) {
        conf_fail(cfg, cfg->line, NULL, NULL, "option '%s' is only for %s rules", opt->name,
                  dir == SL_IN ? "outbound" : "inbound");
        return -1;
    }
    if (opt->type == CFGT_INT) return check_int(cfg, opt, cfg_opt_getnint(opt, 0));
    if (opt->type != CFGT_STR) return 0;

    const char *v = cfg_opt_getnstr(opt, opt->nvalues - 1);
    const char *bad = check_value(opt->name, v ? v : "", dir);
    if (bad) {
        conf_fail(cfg, cfg->line, opt->name, v ? v : "", "%s", bad);
        return -1;
    }
    if (strcmp(opt->name, "to") == 0) { /* two limits: addresses and names */
        int hosts = 0, addrs = 0;
        for (unsigned i = 0; i < opt->nvalues; i++) {
            struct conf_dest d;
            conf_parse_dest(cfg_opt_getnstr(opt, i), &d);
            d.is_host ? hosts++ : addrs++;
        }
        if (hosts > SL_MAX_HOSTS) {
            conf_fail(cfg, cfg->line, opt->name, v, "is one host name too many (at most %d)",
                      SL_MAX_HOSTS);
            return -1;
        }
        if (addrs > SL_MAX_CIDRS) {
            conf_fail(cfg, cfg->line, opt->name, v, "is one address too many (at most %d)",
                      SL_MAX_CIDRS);
            return -1;
        }
    } else if (rule->max && opt->nvalues > (unsigned)rule->max) {
        conf_fail(cfg, cfg->line, opt->name, v, "is one entry too many (at most %d)", rule->max);
        return -1;
    }
    if (strcmp(opt->name, "peers") == 0) { /* the same peer twice would count twice */
        char a[128], b[128];
        conf_parse_hostport(v, a, sizeof a);
        for (unsigned i = 0; i + 1 < opt->nvalues; i++) {
            conf_parse_hostport(cfg_opt_getnstr(opt, i), b, sizeof b);
            if (strcmp(a, b) == 0) {
                conf_fail(cfg, cfg->line, opt->name, v, "is listed twice");
                return -1;
            }
        }
    }
    return 0;
}

static const struct conf_seen *seen_find(const char *name)
{
    for (int i = 0; i < conf_ctx->nseen; i++)
        if (strcmp(conf_ctx->seen[i].name, name) == 0) return &conf_ctx->seen[i];
    return NULL;
}

/* The numbers of the connection rate must work for the algorithm. */
static int check_rate(cfg_t *sec, int line, const char *rate)
{
    uint64_t count, period;
    int alg;
    conf_parse_rate(rate, &count, &period);
    conf_parse_enum(cfg_getstr(sec, "algorithm"), conf_alg_names, &alg);
    uint64_t burst = cfg_size(sec, "burst") ? (uint64_t)cfg_getint(sec, "burst") : count;
    struct sl_limit l;
    if (sl_limit_init(&l, (enum sl_alg)alg, count, period, count) != 0) {
        if (alg == SL_ALG_SLIDING || alg == SL_ALG_FIXED)
            conf_fail(
                sec, line, "rate", rate,
                "is more than algorithm %s can count (at most %" PRIu64 " per period)",
                conf_alg_names[alg],
                (uint64_t)(alg == SL_ALG_SLIDING ? SL_SLIDING_MAX_COUNT : SL_FIXED_MAX_COUNT));
        else
            conf_fail(sec, line, "rate", rate, "is too fast or too slow to keep");
        return -1;
    }
    if (sl_limit_init(&l, (enum sl_alg)alg, count, period, burst) != 0) {
        char b[32];
        snprintf(b, sizeof b, "%" PRIu64, burst);
        conf_fail(sec, line, "burst", b, "is too large for rate %s", rate);
        return -1;
    }
    return 0;
}

uint64_t conf_default_byte_burst(uint64_t bytes_per_sec)
{
    return bytes_per_sec >= 10 ? bytes_per_sec / 10 : 1;
}

/* A byte rate and its burst: the burst needs the rate, and must fit it. */
static int check_bytes(cfg_t *sec, int line, const char *rate_opt, const char *burst_opt)
{
    const char *rate = cfg_getstr(sec, rate_opt), *burst_text = cfg_getstr(sec, burst_opt);
    if (!rate) {
        if (!burst_text) return 0;
        conf_fail(sec, line, burst_opt, burst_text, "needs %s", rate_opt);
        return -1;
    }
    uint64_t bps, burst;
    conf_parse_byte_rate(rate, &bps);
    if (burst_text)
        conf_parse_bytes(burst_text, &burst);
    else
        burst = conf_default_byte_burst(bps);
    struct sl_limit l;
    if (sl_limit_init(&l, SL_ALG_GCRA, bps, SL_NS_PER_SEC, burst) != 0) {
        conf_fail(sec, line, burst_opt, burst_text, "is too large for %s %s", rate_opt, rate);
        return -1;
    }
    return 0;
}

/* Checks what needs more than one option, once the rule's closing brace
 * is read. Messages carry the line the rule opens on. */
static int validate_rule(cfg_t *parent, cfg_opt_t *opt)
{
    cfg_t *sec = conf_ctx->section;
    if (!sec) return 0;
    conf_ctx->section = NULL;
    int line = conf_section_line(sec);
    const char *name = cfg_title(sec);
    enum sl_dir dir = conf_section_dir(sec);
    const char *bad;

    if ((bad = conf_parse_name(name))) {
        conf_fail(sec, line, NULL, name, "%s", bad);
        return -1;
    }
    const struct conf_seen *prev = seen_find(name);
    if (prev) {
        if (prev->is_inline)
            conf_fail(sec, line, NULL, NULL, "rule name '%s' is already used by inline rule %d",
                      name, prev->line);
        else
            conf_fail(sec, line, NULL, NULL, "rule name '%s' is already used on line %d", name,
                      prev->line);
        return -1;
    }
    if (conf_ctx->nseen >= SL_MAX_RULES) {
        conf_fail(sec, line, NULL, NULL, "is one rule too many (at most %d)", SL_MAX_RULES);
        return -1;
    }
    const char *rate = cfg_getstr(sec, "rate");
    const char *recv_rate = cfg_getstr(sec, "recv_rate");
    const char *send_rate = cfg_getstr(sec, "send_rate");
    long conns = cfg_size(sec, "conns") ? cfg_getint(sec, "conns") : 0;
    if (!rate && !recv_rate && !send_rate && conns == 0) {
        conf_fail(sec, line, NULL, NULL,
                  "needs at least one of rate, recv_rate, send_rate or conns");
        return -1;
    }
    if (dir == SL_OUT && cfg_size(sec, "to") == 0) {
        conf_fail(sec, line, NULL, NULL, "option 'to' is missing");
        return -1;
    }
    const char *action = cfg_getstr(sec, "action");
    const char *reply = cfg_getstr(sec, "reply");
    if (reply && (!action || strcmp(action, "reply") != 0)) {
        conf_fail(sec, line, "reply", reply, "needs action = reply");
        return -1;
    }
    if (dir == SL_OUT && cfg_size(sec, "port") > 0) {
        for (unsigned i = 0; i < cfg_size(sec, "to"); i++) {
            struct conf_dest d;
            const char *to = cfg_getnstr(sec, "to", i);
            conf_parse_dest(to, &d);
            if (!d.is_host && d.port) {
                conf_fail(sec, line, "to", to, "has a port, and the rule a port list: use one");
                return -1;
            }
        }
    }

    const char *scope = cfg_getstr(sec, "scope");
    if (!rate && strcmp(scope, "cluster") == 0) {
        conf_fail(sec, line, "scope", scope,
                  "needs a rate (a cluster shares the connection rate only)");
        return -1;
    }
    if (check_bytes(sec, line, "recv_rate", "recv_burst") != 0 ||
        check_bytes(sec, line, "send_rate", "send_burst") != 0)
        return -1;
    if (rate && check_rate(sec, line, rate) != 0) return -1;

    struct conf_seen *s = &conf_ctx->seen[conf_ctx->nseen++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->dir = dir;
    s->line = line;
    s->is_inline = conf_ctx->is_inline;
    return 0;
}

/* Checks the gossip section once its closing brace is read: at most one,
 * the required options, and peer_timeout against interval. */
static int validate_gossip(cfg_t *parent, cfg_opt_t *opt)
{
    cfg_t *sec = cfg_opt_getnsec(opt, opt->nvalues - 1);
    conf_ctx->section = NULL;
    int line = conf_section_line(sec);
    if (conf_ctx->gossip_line) {
        if (conf_ctx->gossip_inline)
            conf_fail(sec, line, NULL, NULL, "there is already a gossip section in inline rule %d",
                      conf_ctx->gossip_line);
        else
            conf_fail(sec, line, NULL, NULL, "there is already a gossip section on line %d",
                      conf_ctx->gossip_line);
        return -1;
    }
    static const char *const required[] = {"listen", "peers", "key_file"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        if (cfg_size(sec, required[i]) == 0) {
            conf_fail(sec, line, NULL, NULL, "option '%s' is missing", required[i]);
            return -1;
        }
    }
    const char *timeout = cfg_getstr(sec, "peer_timeout");
    uint64_t interval, peer_timeout;
    conf_parse_duration(cfg_getstr(sec, "interval"), &interval);
    if (timeout && conf_parse_duration(timeout, &peer_timeout) == NULL &&
        peer_timeout <= interval) {
        char d[32];
        conf_format_duration(interval, d, sizeof d);
        conf_fail(sec, line, "peer_timeout", timeout, "must be longer than interval (%s)", d);
        return -1;
    }
    conf_ctx->gossip_line = line;
    conf_ctx->gossip_inline = conf_ctx->is_inline;
    return 0;
}

cfg_t *conf_cfg_new(void)
{
    cfg_t *cfg = cfg_init(global_opts, CFGF_NONE);
    if (!cfg) return NULL;
    cfg_set_error_function(cfg, conf_libconfuse_error);
    char path[64];
    for (size_t i = 0; i < NRULES; i++) {
        const struct option_rule *r = &option_rules[i];
        if (r->where & GLOBAL) cfg_set_validate_func(cfg, r->name, validate_option);
        if (r->where & GOSSIP) {
            snprintf(path, sizeof path, "gossip|%s", r->name);
            cfg_set_validate_func(cfg, path, validate_option);
        }
        if (r->where & RULE) {
            /* every rule option is known to both sections; the validator
             * refuses the ones for the other direction */
            snprintf(path, sizeof path, "inbound|%s", r->name);
            cfg_set_validate_func(cfg, path, validate_option);
            snprintf(path, sizeof path, "outbound|%s", r->name);
            cfg_set_validate_func(cfg, path, validate_option);
        }
    }
    cfg_set_validate_func(cfg, "inbound", validate_rule);
    cfg_set_validate_func(cfg, "outbound", validate_rule);
    cfg_set_validate_func(cfg, "gossip", validate_gossip);
    return cfg;
}
