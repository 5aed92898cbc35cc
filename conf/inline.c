/* SPDX-License-Identifier: BSD-2-Clause */
/* inline.c - inline rules, turned into libconfuse text.
 *
 *     in port=8080 rate=20/s name=web; out to=api.example:443 rate=50/m
 * becomes, rule N on line N so errors can name the rule,
 *     inbound 'web' { port = {'8080'} rate = '20/s' }
 *     outbound 'out-1' { to = {'api.example:443'} rate = '50/m' }
 *
 * Rules are separated by ';' and start with in/inbound, out/outbound,
 * global, or gossip for the gossip section:
 *     gossip listen=10.0.0.2:7946 peers=10.0.0.3:7946,10.0.0.4:7946 key_file=/etc/sluice/key
 * becomes `gossip { listen = '10.0.0.2:7946' peers = {...} ... }`.
 *
 * Words are key=value; quotes (single or double) keep spaces, ';',
 * ',' and '=' in a value, and a backslash keeps the next character. Values
 * of list options are split at unquoted commas. Every value is written as
 * a single-quoted libconfuse string: those know only the escapes \\ and
 * \' and, unlike double-quoted ones, never expand ${VARIABLES}. The same
 * option table and validators as for files then apply.
 */
#include "conf_int.h"

#include <stdio.h>
#include <string.h>

#include "../core/mem.h"

#define WORD_MAX 4096

struct word {
    char c[WORD_MAX];
    bool quoted[WORD_MAX]; /* the character was quoted or escaped */
    size_t n;
};

/* Reads one word; stops before unquoted white space or ';'. Returns an
 * error phrase or NULL; a bad word is read to its end all the same, so
 * the next word starts where it should. */
static const char *read_word(const char **pp, struct word *w)
{
    const char *p = *pp, *bad = NULL;
    char quote = 0;
    w->n = 0;
    for (; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        bool q = quote != 0;
        if (!quote && (ch <= ' ' || ch == ';')) break;
        if (!quote && (ch == '"' || ch == '\'')) {
            quote = (char)ch;
            continue;
        }
        if (quote && ch == (unsigned char)quote) {
            quote = 0;
            continue;
        }
        if (ch == '\\' && p[1]) {
            ch = (unsigned char)*++p;
            q = true;
        }
        if (!bad && (ch < ' ' || ch == 0x7f)) bad = "has a control character in a value";
        if (!bad && w->n + 1 >= WORD_MAX) bad = "has a word longer than 4095 bytes";
        if (bad) continue;
        w->c[w->n] = (char)ch;
        w->quoted[w->n++] = q;
    }
    *pp = p;
    w->c[w->n] = 0;
    return bad ? bad : quote ? "has an unterminated quote" : NULL;
}

/* read_word's quoting, without the words: a quote opens outside quotes
 * and closes at its twin; a backslash keeps the next character. */
const char *sl_conf_inline_separator(const char *p)
{
    char quote = 0;
    for (; *p; p++) {
        if (!quote && *p == ';') return p;
        if (!quote && (*p == '"' || *p == '\''))
            quote = *p;
        else if (quote && *p == quote)
            quote = 0;
        else if (*p == '\\' && p[1])
            p++;
    }
    return NULL;
}

static void put_quoted(struct conf_buf *b, const char *s, size_t n)
{
    conf_buf_putc(b, '\'');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' || s[i] == '\'') conf_buf_putc(b, '\\');
        conf_buf_putc(b, s[i]);
    }
    conf_buf_putc(b, '\'');
}

static bool is_key(const char *s, size_t n)
{
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", s[i]))
            return false;
    return true;
}

/* Converts one rule (segment `num`); appends one line to out. After an
 * error (conf_fail()) the rest of a bad rule is still read, and its
 * good words written, so the on_error scan sees every on_error that can
 * be read (the text is not parsed after a failure). */
static void convert_rule(const char **pp, int num, int counts[2], struct conf_buf *out, bool *any)
{
    static __thread struct word w;
    struct conf_buf body = {0};
    char name[WORD_MAX] = "";
    bool named = false;
    enum { NONE, IN, OUT, GLOBAL, GOSSIP, REDIS, BAD } kind = NONE;
    const char *bad;

    for (;;) {
        while (**pp && (unsigned char)**pp <= ' ')
            (*pp)++;
        if (!**pp || **pp == ';') break;
        if ((bad = read_word(pp, &w))) {
            conf_fail(NULL, num, NULL, NULL, "%s", bad);
            if (kind == NONE) kind = BAD;
            continue;
        }
        if (kind == NONE) {
            const char *k = w.c;
            if (strcmp(k, "in") == 0 || strcmp(k, "inbound") == 0)
                kind = IN;
            else if (strcmp(k, "out") == 0 || strcmp(k, "outbound") == 0)
                kind = OUT;
            else if (strcmp(k, "global") == 0)
                kind = GLOBAL;
            else if (strcmp(k, "gossip") == 0)
                kind = GOSSIP;
            else if (strcmp(k, "redis") == 0)
                kind = REDIS;
            else {
                conf_fail(NULL, num, NULL, w.c, "is not in, out, global, gossip or redis");
                kind = BAD;
            }
            continue;
        }
        size_t eq = 0;
        while (eq < w.n && (w.c[eq] != '=' || w.quoted[eq]))
            eq++;
        if (eq == w.n) {
            conf_fail(NULL, num, NULL, w.c, "is not key=value");
            continue;
        }
        w.c[eq] = 0;
        if (!is_key(w.c, eq)) {
            conf_fail(NULL, num, NULL, NULL, "option '%s' is unknown", w.c);
            continue;
        }
        const char *value = w.c + eq + 1;
        size_t vn = w.n - eq - 1;
        if ((kind == IN || kind == OUT) && strcmp(w.c, "name") == 0) {
            memcpy(name, value, vn + 1);
            named = true;
            continue;
        }
        conf_buf_puts(&body, w.c);
        conf_buf_puts(&body, " = ");
        if (conf_opt_is_list(w.c)) {
            conf_buf_putc(&body, '{');
            size_t start = 0;
            for (size_t i = 0; i <= vn; i++) {
                if (i < vn && (value[i] != ',' || w.quoted[eq + 1 + i])) continue;
                if (start) conf_buf_puts(&body, ", ");
                put_quoted(&body, value + start, i - start);
                start = i + 1;
            }
            conf_buf_putc(&body, '}');
        } else {
            put_quoted(&body, value, vn);
        }
        conf_buf_putc(&body, ' ');
    }

    if (kind == IN || kind == OUT) {
        int c = ++counts[kind == OUT];
        if (!named) snprintf(name, sizeof name, "%s-%d", kind == IN ? "in" : "out", c);
        conf_buf_puts(out, kind == IN ? "inbound " : "outbound ");
        put_quoted(out, name, strlen(name));
        conf_buf_puts(out, " { ");
        if (body.s) conf_buf_puts(out, body.s);
        conf_buf_putc(out, '}');
    } else if (kind == GLOBAL && body.s) {
        conf_buf_puts(out, body.s);
    } else if (kind == GOSSIP || kind == REDIS) {
        conf_buf_puts(out, kind == GOSSIP ? "gossip { " : "redis { ");
        if (body.s) conf_buf_puts(out, body.s);
        conf_buf_putc(out, '}');
    }
    if (kind != NONE && kind != BAD) *any = true;
    conf_buf_putc(out, '\n');
    if (body.oom) conf_fail(NULL, num, NULL, NULL, "out of memory");
    sl_free(body.s);
}

char *conf_inline_to_text(const char *rules, bool *any)
{
    struct conf_buf out = {0};
    int counts[2] = {0, 0};
    const char *p = rules;
    *any = false;
    for (int num = 1;; num++) {
        convert_rule(&p, num, counts, &out, any);
        if (!*p) break;
        p++; /* the ';' */
    }
    if (!out.s) conf_buf_putc(&out, '\n');
    if (out.oom) {
        conf_fail(NULL, 1, NULL, NULL, "out of memory");
        sl_free(out.s);
        return NULL;
    }
    return out.s;
}
