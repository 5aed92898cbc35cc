/* SPDX-License-Identifier: BSD-2-Clause */
/* text.c - the raw text of a config file, before libconfuse sees it.
 *
 * libconfuse 3.3 counts one line too many for every comment (a '#' line
 * comment moves every later line number down by two), so comments are
 * blanked out here first, keeping newlines: line numbers then hold. An
 * unterminated string or comment is reported here too, because
 * libconfuse's lexer stops on one without a message.
 *
 * The on_error scan reads the same tokens libconfuse would, crudely, so a
 * file that fails to parse can still say `on_error = closed`.
 */
#include "conf_int.h"

#include <string.h>

#include "../core/mem.h"

int conf_strip_comments(char *t)
{
    int line = 1;
    for (char *p = t; *p; p++) {
        if (*p == '\n') {
            line++;
        } else if (*p == '"' || *p == '\'') {
            char q = *p;
            int start = line;
            for (p++; *p && *p != q; p++) {
                if (*p == '\\' && p[1]) p++;
                if (*p == '\n') line++;
            }
            if (!*p) {
                conf_fail(NULL, start, NULL, NULL, "unterminated string");
                return -1;
            }
        } else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
            for (; *p && *p != '\n'; p++)
                *p = ' ';
            if (!*p) break;
            line++;
        } else if (p[0] == '/' && p[1] == '*') {
            int start = line;
            p[0] = p[1] = ' ';
            for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++) {
                if (*p == '\n')
                    line++;
                else
                    *p = ' ';
            }
            if (!*p) {
                conf_fail(NULL, start, NULL, NULL, "unterminated comment");
                return -1;
            }
            p[0] = ' ';
            p[1] = ' ';
            p++;
        }
    }
    return 0;
}

/* Next token: a quoted or bare word (copied into word), or one of the
 * characters {}(),=+ (returned as itself). 0 at the end. */
static int next_token(const char **pp, char *word, size_t len)
{
    const char *p = *pp;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (!*p) return 0;
    size_t n = 0;
    int tok = 'w';
    if (strchr("{}(),=+", *p)) {
        tok = (unsigned char)*p++;
    } else if (*p == '"' || *p == '\'') {
        char q = *p++;
        for (; *p && *p != q; p++) {
            if (*p == '\\' && p[1]) p++;
            if (n + 1 < len) word[n++] = *p;
        }
        if (*p) p++;
    } else {
        for (; *p && !strchr(" \t\n\r\"'={}()+,", *p); p++)
            if (n + 1 < len) word[n++] = *p;
    }
    word[n] = 0;
    *pp = p;
    return tok;
}

void conf_scan_on_error(const char *text, enum sl_on_error *out)
{
    char w[3][16] = {{0}};
    int t[3] = {0, 0, 0}, depth = 0;
    for (const char *p = text;;) {
        t[0] = t[1];
        t[1] = t[2];
        memcpy(w[0], w[1], sizeof w[0]);
        memcpy(w[1], w[2], sizeof w[0]);
        t[2] = next_token(&p, w[2], sizeof w[2]);
        if (!t[2]) break;
        if (t[2] == '{') depth++;
        if (t[2] == '}' && depth > 0) depth--;
        if (depth == 0 && t[0] == 'w' && strcmp(w[0], "on_error") == 0 && t[1] == '=' &&
            t[2] == 'w') {
            if (strcmp(w[2], "closed") == 0) *out = SL_ON_ERROR_CLOSED;
            if (strcmp(w[2], "open") == 0) *out = SL_ON_ERROR_OPEN;
        }
    }
}

void conf_buf_putc(struct conf_buf *b, char c)
{
    if (b->oom) return;
    if (b->len + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        char *s = sl_alloc(cap);
        if (!s) {
            b->oom = true;
            return;
        }
        if (b->s) memcpy(s, b->s, b->len);
        sl_free(b->s);
        b->s = s;
        b->cap = cap;
    }
    b->s[b->len++] = c;
    b->s[b->len] = 0;
}

void conf_buf_puts(struct conf_buf *b, const char *s)
{
    while (*s)
        conf_buf_putc(b, *s++);
}
