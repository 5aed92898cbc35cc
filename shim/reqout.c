/* SPDX-License-Identifier: BSD-2-Clause */
/* reqout.c - requests on outbound connections: see reqout.h. */
#include "reqout.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../core/http/names.h"
#include "../core/http/request.h"
#include "hold.h"
#include "ready.h"
#include "reload.h"
#include "shim.h"
#include "tie.h"
#include "bursts.h"
#include "unseen.h"
#include "wait.h"

struct sl_reqout_conn {
    struct sl_gate g; /* first: the descriptor's gate (fd.h); g.conn is conn below when live */
    struct sl_runtime *rt;
    struct sl_addr dst;
    bool tls;         /* requests are written through SSL_write */
    bool hello;       /* its first write was a TLS handshake record */
    bool written;     /* something was written */
    bool h2;          /* its plaintext (through TLS, or h2c) opened with the HTTP/2 preface */
    bool tls_written; /* a plaintext write was seen */
    char *kept;       /* keep(): taken, not yet written */
    size_t nkept;
    bool bio;                  /* its records come from memory BIOs (tlsbio.h) */
    struct sl_bursts_out *rec; /* TLS sluice cannot decrypt: bursts (bursts.h) */
    /* live: conn below is started (a request rule matched). Otherwise the
     * state is this struct alone (no conn: allocated for what the rule
     * needs) and `naming` says whether the client's first bytes may still
     * name a destination a rule names (SNI, Host: see name_step). */
    bool live, naming;
    char *name;    /* the SNI that made it live, for the TLS restart (allocated), or NULL */
    uint64_t sent; /* bytes the program sent on the socket */
    bool asked;    /* counted request bytes went */
    bool bio_told; /* bio: core was told no 429 can be given here */
    int nholds;    /* bio: where the ciphertext must wait */
    struct hold {
        uint64_t at;    /* the stream offset of the held request's first record */
        uint64_t until; /* its turn */
        int err;        /* denied: the write there fails with this errno */
    } holds[8];
    _Alignas(max_align_t) unsigned char conn[]; /* a struct sl_req_conn */
};

#define CONN(o) ((struct sl_req_conn *)(void *)(o)->conn)
/* The outbound state of a descriptor whose gate is outbound (g comes first). */
#define OUT(e) ((struct sl_reqout_conn *)(void *)(e)->gate)

/* Whether a connection's first bytes are the HTTP/2 preface (h2c, or the
 * plaintext through TLS after ALPN h2): its held writes are kept
 * (keep_held). */
static bool h2_preface(const void *buf, size_t len)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n";
    return len >= sizeof preface - 1 && !memcmp(buf, preface, sizeof preface - 1);
}

void sl_reqout_connect(struct sl_runtime *rt, int fd, const struct sl_addr *dst)
{
    if (!rt->any_req_out) return;
    int saved = errno;
    struct sl_reqout_conn *o = sl_alloc(sizeof *o + sl_req_conn_size());
    struct sl_fd *e = NULL;
    bool live = o && sl_req_conn_init(CONN(o), rt, SL_OUT, NULL, dst, sl_clock_now());
    if (o && !live && rt->any_req_names) { /* the small state until a name matches */
        struct sl_reqout_conn *small = sl_realloc(o, sizeof *o);
        if (small) o = small, o->naming = true;
    }
    if (!o || (!live && !o->naming) || !(e = sl_fd_track(fd))) {
        sl_free(o);
        errno = saved;
        return;
    }
    sl_reqout_free(e);
    o->g.dir = SL_OUT;
    o->g.conn = live ? CONN(o) : NULL;
    o->rt = rt;
    o->dst = *dst;
    o->live = live;
    e->gate = &o->g;
    errno = saved;
}

/* The runtime a connection decides with now: the newest, once a `sluice
 * reload` published one (core rebinds the connection to it); NULL before
 * one exists. */
static struct sl_runtime *runtime_now(void)
{
    struct sl_runtime *rt = sl_runtime_now();
    return rt ? sl_reload_check(rt) : NULL;
}

/* A connection that waits for a name (o->naming): its first plain write
 * (a ClientHello's SNI, or a request head's Host) or, when the ClientHello
 * named none, its first plaintext write through TLS (Host) either matches
 * a rule by name, and the requests are counted from here on (the state
 * grows to hold them: OUT(e) changes), or ends the wait. True when the
 * connection is live. */
static bool name_step(struct sl_fd *e, const void *buf, size_t len, bool tls)
{
    struct sl_reqout_conn *o = OUT(e);
    char name[SL_HOST_MAX];
    bool hello = !tls && len && ((const unsigned char *)buf)[0] == 0x16;
    bool found = hello ? sl_name_sni(buf, len, name, sizeof name)
                       : sl_name_host(buf, len, name, sizeof name);
    if (len == 0 || (tls != o->tls) || (hello && !found)) return false; /* not yet */
    o->naming = false;
    /* the state grows (moves): not while copies of the descriptor share it */
    if (!found || sl_gate_shared(e)) return false;
    struct sl_reqout_conn *big = sl_realloc(o, sizeof *o + sl_req_conn_size());
    if (!big) return false;
    o = big;
    e->gate = &o->g;
    o->g.conn = CONN(o);
    o->live = sl_req_conn_init_named(CONN(o), o->rt, SL_OUT, NULL, &o->dst, name, sl_clock_now());
    if (o->live && hello) o->name = sl_strdup(name); /* none (no memory): by address only */
    return o->live;
}

/* A connection whose first write was a TLS handshake record and which
 * then writes application data records through send, not through an
 * interposed SSL_write or gnutls_record_send: the program encrypts with a
 * library sluice does not see (a static OpenSSL, rustls, JSSE) and its
 * requests cannot be seen. Said once. */
static void unseen_tls(struct sl_reqout_conn *o, int fd, const void *buf, size_t len)
{
    unsigned char type = ((const unsigned char *)buf)[0];
    if (!o->written) {
        o->written = true;
        o->hello = type == 0x16;
        o->h2 = h2_preface(buf, len);
        /* the ClientHello of a session over memory BIOs ties it here */
        if (o->hello && sl_tls_tie_hello(fd, buf, len))
            o->bio = true;
        else if (o->hello)
            o->rec = sl_bursts_open(o->rt, &o->dst, fd, buf, len);
        return;
    }
    if (o->bio || o->rec) return;
    static _Atomic bool told;
    if (!o->hello || type != 0x17 || atomic_exchange(&told, true)) return;
    char addr[64];
    sl_addr_format(o->dst.a, addr, sizeof addr);
    sl_log(SL_LOG_WARN,
           "a connection to %s port %u that an outbound request rule matches speaks TLS, and the "
           "program encrypts it without OpenSSL 3's SSL_write or GnuTLS's gnutls_record_send; "
           "likely cause: %s. Its requests are not counted (said once)",
           addr, o->dst.port, sl_unseen_tls_cause());
}

/* A write of ciphertext records from memory BIOs (tlsbio.h): the bytes
 * before the first hold go; at a hold, its turn is waited for (blocking:
 * sleep; non-blocking: EAGAIN, writable at the turn), or a denial fails
 * the write, once the HTTP/2 streams before it have ended. */
static ssize_t cipher_turn(int fd, struct sl_fd *e, size_t len, bool nonblock_flag)
{
    struct sl_reqout_conn *o = OUT(e);
    int saved = errno;
    struct sl_hold hd = sl_hold_for(fd, e, SL_IO_SEND, nonblock_flag);
    for (;;) {
        if (o->nholds == 0 || o->holds[0].at > o->sent) {
            uint64_t room = o->nholds ? o->holds[0].at - o->sent : len;
            atomic_store_explicit(&e->ready_at[SL_IO_SEND], 0, memory_order_relaxed);
            errno = saved;
            return (ssize_t)(room < len ? room : len);
        }
        struct hold *h = &o->holds[0];
        uint64_t now = sl_clock_now();
        /* a denial waits for the HTTP/2 streams before it (request.h) */
        uint64_t wait = h->err ? sl_req_refusal_wait(CONN(o), now) : 0;
        if (h->err && !wait) {
            errno = h->err;
            return -1;
        }
        if (wait) {
            if (sl_hold_until(&hd, now, now + wait) != 0) return -1;
            continue;
        }
        if (now >= h->until) {
            memmove(o->holds, o->holds + 1, (size_t)--o->nholds * sizeof *h);
            continue;
        }
        if (sl_hold_until(&hd, now, h->until) != 0) return -1;
    }
}

/* A hold at the ciphertext offset `at`: a full list stretches its last one
 * (the requests between then leave no earlier than their turns). */
static void add_hold(struct sl_reqout_conn *o, uint64_t at, uint64_t until, int err)
{
    int n = o->nholds, max = (int)(sizeof o->holds / sizeof o->holds[0]);
    if (n == max) {
        struct hold *last = &o->holds[n - 1];
        if (until > last->until) last->until = until;
        if (err && !last->err) last->err = err;
        return;
    }
    o->holds[n] = (struct hold){.at = at, .until = until, .err = err};
    o->nholds = n + 1;
}

/* A session over memory BIOs writes n plaintext bytes with t->write in
 * parts: each request that must wait adds a hold at t->offset(t), the
 * ciphertext offset where its records begin, which the socket writes of
 * the records then honour (a denied one fails them there). SSL_write
 * always succeeds (see tlsbio.h). Returns the bytes written, or the
 * library's failure. */
static ssize_t bio_write(struct sl_fd *e, const struct sl_transport *t, const void *buf, size_t n)
{
    if (!OUT(e)->live && OUT(e)->naming) name_step(e, buf, n, true);
    struct sl_reqout_conn *o = OUT(e);
    struct sl_req_conn *c = CONN(o);
    bool denied = !o->live; /* not counted: written as they come */
    if (o->live && !o->bio_told) {
        o->bio_told = true;
        sl_req_reply_waits(c, SL_NO_REPLY_MEMORY_BIO);
    }
    struct sl_runtime *rt = runtime_now();
    const char *p = buf;
    uint64_t now = sl_clock_now(); /* decisions after a hold are made at its turn */
    size_t off = 0;
    for (int round = 0; off < n; round++) {
        struct sl_req_write w = {.what = SL_REQ_WRITE, .n = n - off};
        if (!denied && round < 64)
            sl_req_write(c, rt, p + off, n - off, now, SL_REQ_WRITE_NO_SKIP, &w);
        if (w.what == SL_REQ_WAIT) { /* this part waits for its turn */
            now += w.wait_ns ? w.wait_ns : SL_NS_PER_SEC / 1000;
            add_hold(o, t->offset(t), now, 0);
            continue;
        }
        if (w.what != SL_REQ_WRITE) {
            /* reject, or reply beyond max_delay (sl_req_reply_waits): the
             * socket write fails there; what follows is written uncounted */
            add_hold(o, t->offset(t), 0, w.err ? w.err : ECONNREFUSED);
            denied = true;
            continue;
        }
        ssize_t k = t->write(t, p + off, w.n);
        if (!denied && (k < 0 || (size_t)k < w.n))
            sl_req_unwritten(c, w.n - (k > 0 ? (size_t)k : 0));
        if (k <= 0) return off ? (ssize_t)off : k;
        off += (size_t)k;
    }
    return (ssize_t)off;
}

/* The gate's decision on a write of a live connection (gate.h), its
 * swallowed bytes named as such. */
static ssize_t gate_write(struct sl_fd *e, int fd, const void *buf, size_t len, bool nonblock,
                          bool whole, enum sl_reqout_fate *fate)
{
    bool swallowed;
    ssize_t k = sl_gate_write(e->gate, e, fd, buf, len, runtime_now(), nonblock, whole, &swallowed);
    *fate = swallowed ? SL_REQOUT_SWALLOWED : SL_REQOUT_LET;
    return k;
}

/* What a write whose decision was `fate` counted as passed of the k bytes
 * it gave: sl_reqout_sent's `let`. */
static size_t counted(enum sl_reqout_fate fate, ssize_t k)
{
    return fate == SL_REQOUT_LET && k > 0 ? (size_t)k : 0;
}

/* One part of the program's plaintext written through a TLS library
 * (whole: it goes, waits or fails as one): how many of the len bytes,
 * which *fate says what to do with (SL_REQOUT_LET, SL_REQOUT_PASS: no
 * rule matches yet; SL_REQOUT_SWALLOWED), or -1 with errno (EAGAIN held,
 * EINTR, the rule's). */
static ssize_t tls_part(int fd, struct sl_fd *e, const void *buf, size_t len,
                        enum sl_reqout_fate *fate)
{
    *fate = SL_REQOUT_PASS;
    if (!OUT(e)->live && !(OUT(e)->naming && name_step(e, buf, len, true)))
        return (ssize_t)len; /* no request rule matches (yet) */
    struct sl_reqout_conn *o = OUT(e);
    if (!o->tls_written && len) {
        o->tls_written = true;
        o->h2 = h2_preface(buf, len);
    }
    return gate_write(e, fd, buf, len, false, true, fate);
}

bool sl_reqout_live(const struct sl_fd *e)
{
    return OUT(e)->live;
}

bool sl_reqout_bio(struct sl_fd *e)
{
    return OUT(e)->bio;
}

struct sl_gate *sl_reqout_replying(struct sl_fd *e, bool tls)
{
    struct sl_reqout_conn *o = OUT(e);
    return o->live && o->tls == tls && sl_req_replies(CONN(o)) ? &o->g : NULL;
}

bool sl_reqout_plain(const struct sl_fd *e)
{
    return !OUT(e)->tls || OUT(e)->bio;
}

bool sl_reqout_tls(struct sl_fd *e)
{
    struct sl_reqout_conn *o = OUT(e);
    if (o->tls) return o->live || o->naming;
    o->tls = true;
    if (!o->live) return o->naming; /* its Host may still name it (name_step) */
    /* the plain scanner saw the handshake (and passed it through): the
     * requests start afresh in what the program gives the library */
    sl_req_conn_fini(CONN(o));
    o->live =
        sl_req_conn_init_named(CONN(o), o->rt, SL_OUT, NULL, &o->dst, o->name, sl_clock_now());
    return o->live;
}

/* Takes n bytes the program wrote through the library (reported written)
 * to write them itself when their turn comes; false: no room, at most
 * SL_REQOUT_KEEP_MAX kept. */
static bool keep(struct sl_fd *e, const void *buf, size_t n)
{
    struct sl_reqout_conn *o = OUT(e);
    if (n > SL_REQOUT_KEEP_MAX - o->nkept) return false;
    char *k = sl_realloc(o->kept, o->nkept + n);
    if (!k) return false;
    memcpy(k + o->nkept, buf, n);
    o->kept = k;
    o->nkept += n;
    return true;
}

/* When the kept bytes can go again: their turn, else soon (a write the
 * library could not finish). */
static void announce_kept(int fd, struct sl_fd *e)
{
    uint64_t at = atomic_load_explicit(&e->ready_at[SL_IO_SEND], memory_order_relaxed);
    sl_ready_held(fd, e, at ? at : sl_clock_now() + SL_NS_PER_SEC / 1000);
}

/* After a write of HTTP/2 on a non-blocking socket was held: keeps its
 * bytes and announces the socket readable at their turn; false (not
 * HTTP/2, blocking, no room): the wait is reported as before. Keeps errno. */
static bool keep_held(int fd, struct sl_fd *e, const void *buf, size_t n)
{
    int saved = errno;
    bool kept = OUT(e)->h2 && sl_fd_nonblocking(fd) && keep(e, buf, n);
    if (kept) announce_kept(fd, e);
    errno = saved;
    return kept;
}

/* Writes the kept bytes whose turn came with t->write. True when none are
 * left kept. */
static bool flush(struct sl_fd *e, const struct sl_transport *t)
{
    struct sl_reqout_conn *o = OUT(e);
    if (!o->nkept) return true;
    int saved = errno;
    while (o->nkept) {
        enum sl_reqout_fate fate;
        ssize_t ok = o->tls ? tls_part(t->fd, e, o->kept, o->nkept, &fate)
                            : gate_write(e, t->fd, o->kept, o->nkept, true, false, &fate);
        if (ok <= 0) break; /* not yet (or refused: kept until the connection ends) */
        bool swallowed = fate == SL_REQOUT_SWALLOWED;
        ssize_t n = swallowed ? ok : t->write(t, o->kept, (size_t)ok);
        if (!swallowed) sl_reqout_sent(e, o->kept, counted(fate, ok), n);
        o = OUT(e);
        if (n <= 0) break;
        memmove(o->kept, o->kept + n, o->nkept - (size_t)n);
        o->nkept -= (size_t)n;
    }
    if (o->nkept)
        announce_kept(t->fd, e);
    else
        sl_ready_held(t->fd, e, 0);
    errno = saved;
    return o->nkept == 0;
}

void sl_reqout_tls_flush(struct sl_fd *e, const struct sl_transport *t)
{
    if (OUT(e)->nkept) flush(e, t);
}

/* A refused request that is the connection's first: nothing was sent, so
 * nothing will come, and a program that reads after its write failed
 * (php's http wrapper) would wait for its read timeout (60 s by default).
 * Its reads meet the end at once instead: SHUT_RD, which raises no signal,
 * leaves writes as they were and tells the peer nothing. A connection that
 * sent earlier requests is left alone: their answers may be unread. */
static void refused_first(int fd, struct sl_reqout_conn *o)
{
    if (o->asked || o->h2) return;
    int saved = errno;
    REAL(shutdown)(fd, SHUT_RD);
    errno = saved;
}

/* The socket itself as the transport of kept h2c bytes: never waits, and
 * no SIGPIPE (the program's own write was reported done already). */
static ssize_t sock_write(const struct sl_transport *t, const void *buf, size_t n)
{
    return REAL(send)(t->fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static struct sl_transport sock_transport(int fd)
{
    return (struct sl_transport){.write = sock_write, .fd = fd};
}

ssize_t sl_reqout_before_write(int fd, struct sl_fd *e, const void *buf, size_t len,
                               bool nonblock_flag, enum sl_reqout_fate *fate)
{
    *fate = SL_REQOUT_PASS;
    if (len && !OUT(e)->tls) unseen_tls(OUT(e), fd, buf, len);
    bool live = OUT(e)->live || (OUT(e)->naming && name_step(e, buf, len, false));
    struct sl_reqout_conn *o = OUT(e); /* name_step may have moved it */
    if (o->bio) return cipher_turn(fd, e, len, nonblock_flag);
    if (!o->tls && o->rec) return sl_bursts_before_write(o->rec, fd, e, buf, len, nonblock_flag);
    /* no request rule matches (yet); or ciphertext of a library sluice reads */
    if (!live || o->tls) return (ssize_t)len;
    struct sl_transport t = sock_transport(fd);
    bool behind = o->nkept && !flush(e, &t); /* kept h2c bytes go first */
    ssize_t k =
        behind ? (errno = EAGAIN, -1) : gate_write(e, fd, buf, len, nonblock_flag, false, fate);
    /* h2c: a held write is kept and reported written (curl 7.88 fails an
     * HTTP/2 write that returns EAGAIN), and sent at its turn (flush) */
    if (k < 0 && errno == EAGAIN && (behind ? keep(e, buf, len) : keep_held(fd, e, buf, len))) {
        *fate = SL_REQOUT_KEPT;
        return (ssize_t)len;
    }
    if (k < 0 && errno != EAGAIN) refused_first(fd, o);
    return k;
}

void sl_reqout_flush(int fd, struct sl_fd *e)
{
    struct sl_transport t = sock_transport(fd);
    if (OUT(e)->nkept && !OUT(e)->tls) flush(e, &t);
}

bool sl_reqout_kept(const struct sl_fd *e)
{
    return OUT(e)->nkept != 0;
}

void sl_reqout_sent(struct sl_fd *e, const void *buf, size_t let, ssize_t sent)
{
    struct sl_reqout_conn *o = OUT(e);
    size_t went = sent > 0 ? (size_t)sent : 0;
    if (let > went) sl_req_unwritten(CONN(o), let - went); /* counted, but not all went */
    if (let && went) o->asked = true; /* counted bytes: never a TLS library's records */
    if (!sl_reqout_plain(e)) return;  /* plaintext a TLS library wrote: not the socket's bytes */
    o->sent += went;
    if (went && !o->tls && o->rec) sl_bursts_written(o->rec, buf, went);
}

/* The program's write of n bytes, in parts when a swallowed request
 * (outbound `reply`) is among them: the parts before and after it are
 * written, its own bytes are not. Returns the count handled (n, or fewer
 * when a part failed after earlier ones went: a short count, which
 * python's sendall and the like go on from), or, when nothing went, -1
 * with *refused (the gate's errno) or the library's failure. */
static ssize_t write_parts(struct sl_fd *e, const struct sl_transport *t, const char *buf, size_t n,
                           bool *refused)
{
    size_t off = 0;
    while (off < n) {
        enum sl_reqout_fate fate;
        ssize_t k = tls_part(t->fd, e, buf + off, n - off, &fate);
        if (k < 0) return off ? (ssize_t)off : (*refused = true, -1);
        if (fate == SL_REQOUT_SWALLOWED) {
            off += (size_t)k;
            continue;
        }
        ssize_t got = t->write(t, buf + off, (size_t)k);
        sl_reqout_sent(e, buf + off, counted(fate, k), got);
        if (got <= 0) return off ? (ssize_t)off : got;
        off += (size_t)got;
    }
    return (ssize_t)off;
}

ssize_t sl_reqout_tls_write(struct sl_fd *e, const struct sl_transport *t, const void *buf,
                            size_t n, bool *refused)
{
    *refused = false;
    if (OUT(e)->bio && t->offset) return bio_write(e, t, buf, n);
    if (!flush(e, t)) { /* behind what is kept, or kept itself */
        if (keep(e, buf, n)) return (ssize_t)n;
        *refused = true;
        errno = EAGAIN;
        return -1;
    }
    ssize_t k = write_parts(e, t, buf, n, refused);
    if (k < 0 && *refused && errno == EAGAIN && keep_held(t->fd, e, buf, n)) {
        *refused = false;
        return (ssize_t)n;
    }
    if (k < 0 && *refused && errno != EAGAIN) refused_first(t->fd, OUT(e));
    return k;
}

void sl_reqout_free(struct sl_fd *e)
{
    struct sl_reqout_conn *o = OUT(e);
    if (!sl_gate_out(e) || sl_gate_let_go(e)) return;
    e->gate = NULL;
    sl_free(o->kept);
    sl_bursts_close(o->rec);
    sl_free(o->name);
    if (o->live) sl_req_conn_fini(CONN(o));
    sl_free(o);
}
