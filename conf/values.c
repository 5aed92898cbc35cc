/* SPDX-License-Identifier: BSD-2-Clause */
/* values.c - the parsers of single values: durations, rates, byte counts
 * and byte rates, errno names, ports and port ranges, address blocks,
 * names, enumerations, outbound destinations and gossip addresses.
 *
 * Each parser takes the text of one value and returns NULL, or the words
 * that end the message "'<value>' <words>" (see errors.c). They know
 * nothing of libconfuse or of where an option may appear: the option
 * table (options.c) says which parser checks which option. The formatters
 * beside them write values back in the form print.c uses.
 */
#include "conf_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../core/fleet/hostport.h"
#include "../core/limit/key.h"
#include "../core/limit/limit.h"

const char *const conf_on_error_names[] = {"open", "closed", NULL};
const char *const conf_on_full_names[] = {"shared", "deny", "allow", NULL};
const char *const conf_log_names[] = {"stderr", "syslog", "none", NULL};
const char *const conf_log_level_names[] = {"error", "warn", "info", "debug", NULL};
const char *const conf_alg_names[] = {"gcra", "sliding", "fixed", "log", NULL};
/* In the order of enum sl_per and enum sl_action. */
const char *const conf_per_names[] = {"peer", "prefix", "destination", "rule", NULL};
const char *const conf_action_names[] = {"reject", "reply", "delay", NULL};
const char *const conf_scope_names[] = {"local", "cluster", "redis", NULL};
const char *const conf_backend_error_names[] = {"local", "open", "closed", NULL};

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

uint64_t conf_default_byte_burst(uint64_t bytes_per_sec)
{
    return bytes_per_sec >= 10 ? bytes_per_sec / 10 : 1;
}

uint64_t conf_gcra_max_burst(uint64_t count, uint64_t period_ns)
{
    struct sl_limit l;
    if (sl_limit_init(&l, SL_ALG_GCRA, count, period_ns, 1) != 0) return 0;
    /* the largest n with n * interval_ps / 1000 <= UINT64_MAX / 4, the
     * bound of sl_limit_init and sl_gcra_cost_ns (tests/unit/test_reqconf.c
     * checks that sl_limit_init takes n and refuses n + 1) */
    unsigned __int128 n = (((unsigned __int128)(UINT64_MAX / 4) + 1) * 1000 - 1) / l.interval_ps;
    return n > UINT64_MAX ? UINT64_MAX : (uint64_t)n;
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

/* A name ending in ':' takes a parameter: "header:" matches
 * "header:X-API-Key" (conf_enum_param finds the parameter), never a bare
 * "header:". The parameter is printable, without spaces or quotes. */
static bool enum_matches(const char *text, const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || name[n - 1] != ':') return strcmp(text, name) == 0;
    if (strncmp(text, name, n) != 0 || text[n] == 0) return false;
    for (const char *p = text + n; *p; p++)
        if (*p <= ' ' || *p >= 0x7f || *p == '"' || *p == '\'') return false;
    return true;
}

const char *conf_parse_enum(const char *text, const char *const *names, int *out)
{
    static __thread char msg[256];
    for (int i = 0; names[i]; i++) {
        if (enum_matches(text, names[i])) {
            *out = i;
            return NULL;
        }
    }
    size_t n = (size_t)snprintf(msg, sizeof msg, "is not one of");
    for (int i = 0; names[i] && n < sizeof msg; i++) {
        bool param = names[i][strlen(names[i]) - 1] == ':';
        n += (size_t)snprintf(msg + n, sizeof msg - n, "%s %s%s", i ? "," : "", names[i],
                              param ? "NAME" : "");
    }
    return msg;
}

const char *conf_enum_param(const char *text)
{
    const char *colon = strchr(text, ':');
    return colon ? colon + 1 : NULL;
}

/* A whole number 0..LONG_MAX, digits only. */
const char *conf_parse_whole(const char *text, long *out)
{
    const char *end;
    uint64_t n;
    if (!parse_u64(text, &end, &n) || *end || n > LONG_MAX) return "is not a whole number";
    *out = (long)n;
    return NULL;
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
    struct sockaddr_storage ss;
    socklen_t len;
    const char *bad = sl_hostport_parse(text, &ss, &len);
    if (bad) return bad;
    if (sl_hostport_format(&ss, out, outlen) != 0) /* cannot happen: 128 bytes hold any */
        return "is not address:port (like 10.0.0.2:7946 or [2001:db8::2]:7946; no host names)";
    return NULL;
}

const char *conf_parse_utc_time(const char *text, int64_t *unix_s)
{
    static const char *const bad =
        "is not a UTC date or time (like 2026-12-01 or 2026-12-01T09:30:00Z)";
    struct tm tm = {0};
    int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
    if (sscanf(text, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3) return bad;
    const char *rest = text + n;
    if (*rest == 'T' || *rest == ' ') {
        int m = 0;
        if (sscanf(rest + 1, "%2d:%2d%n", &h, &mi, &m) != 2) return bad;
        rest += 1 + m;
        if (*rest == ':') {
            if (sscanf(rest + 1, "%2d%n", &sec, &m) != 1) return bad;
            rest += 1 + m;
        }
        if (*rest == 'Z') rest++;
    }
    if (*rest || y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
        mi > 59 || sec > 60)
        return bad;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    if (tm.tm_mday != d) return bad; /* 2026-02-30 */
    *unix_s = (int64_t)t;
    return NULL;
}
