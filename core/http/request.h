/* SPDX-License-Identifier: BSD-2-Clause */
/* request.h - HTTP requests on one connection, and what the rules decide
 * about each.
 *
 * The shim hands a connection's bytes here before they pass (inbound: what
 * a peek shows before the program reads; outbound: what the program is
 * writing). Request heads are found with the scanner (core/http/http1.h), each
 * complete head is decided once against every request rule that matches
 * it, and the caller learns how many bytes may pass now. The bytes are
 * never changed. Decisions are remembered by stream offset, so showing the
 * same bytes again (a short read, a retried peek) never charges twice.
 *
 * A connection is one direction of one socket: inbound requests are what
 * the program receives, outbound requests what it sends. Not thread-safe:
 * one connection's calls are serialised by the caller.
 */
#ifndef SL_REQUEST_H
#define SL_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../limit/key.h"
#include "../policy/policy.h"
#include "../rule.h"

struct sl_req_conn; /* per connection; sl_req_conn_size() bytes, any alignment of max_align_t */

enum sl_req_status {
    SL_REQ_PASS,      /* every byte returned may pass; nothing stopped at the boundary */
    SL_REQ_NEED_MORE, /* stopped at an incomplete head: ask again with more bytes */
    SL_REQ_HOLD,      /* stopped at a head that waits its turn: ask again after wait_ns */
    SL_REQ_DENY,      /* stopped at a denied head: it and everything after never pass */
    SL_REQ_SWALLOW,   /* stopped at a request an outbound `reply` rule denied (HTTP/1):
                         pass the bytes returned, then call sl_req_swallow */
};

struct sl_req_verdict {
    enum sl_req_status status;
    int rule;              /* DENY, SWALLOW: the rule's index in the config; -1 otherwise */
    enum sl_action action; /* DENY: SL_ACT_REPLY (write reply, then close) or
                              SL_ACT_REJECT (reset the connection) */
    uint64_t wait_ns;      /* HOLD: how long until the head may pass */
    const char *reply;     /* DENY, SL_ACT_REPLY: the bytes to write, owned by the
                              connection (valid until sl_req_conn_fini) */
    size_t reply_len;
};

size_t sl_req_conn_size(void);

/* True when some rule of that direction counts requests: without one the
 * shim needs no request state at all. */
bool sl_req_any(const struct sl_runtime *rt, enum sl_dir dir);

/* Starts tracking a connection: `peer` is the remote address (inbound: the
 * client; outbound: the destination), `local` the local one (may be NULL
 * outbound). Returns false when no request rule matches the connection:
 * the caller then tracks nothing (and need not call fini). */
bool sl_req_conn_init(struct sl_req_conn *c, struct sl_runtime *rt, enum sl_dir dir,
                      const struct sl_addr *local, const struct sl_addr *peer, uint64_t now);

/* The same for an outbound connection whose client named its destination
 * (TLS SNI, or the Host of its first request; NULL: not known): a rule
 * with `to=NAME` then matches by that name too, whatever address was
 * reached. Address and name both count: a rule matches when either does
 * (see README, "Outbound request rules and names"). */
bool sl_req_conn_init_named(struct sl_req_conn *c, struct sl_runtime *rt, enum sl_dir dir,
                            const struct sl_addr *local, const struct sl_addr *peer,
                            const char *name, uint64_t now);

/* An outbound HTTP/2 denial fails the write that carries its stream, and
 * a client then drops the whole connection (grpc does): the streams sent
 * before it would fail too, answered ones included, though the server
 * ran them. So before a denial's write fails, the caller asks how long
 * it waits for their ends (their answers read): up to 5 ms at a time,
 * within the rule's max_delay from the first ask; 0: fail now (nothing
 * in flight, not HTTP/2, answers not read, or its time is up). */
uint64_t sl_req_refusal_wait(struct sl_req_conn *c, uint64_t now);

/* Looks at `len` bytes not yet passed, starting at the connection's stream
 * position (buf[0] is the first byte the next sl_req_passed will count).
 * Decides every complete request head among them not decided before and
 * returns how many of the len bytes may pass now (possibly 0). *v says why
 * it stopped: see enum sl_req_status. Bytes of a connection that is not
 * HTTP from its first bytes always pass (v->status PASS); after an
 * Upgrade or CONNECT request, or a head the parser refuses, requests are
 * still found and decided (the rule of doubt, core/http/http1.h). */
size_t sl_req_admit(struct sl_req_conn *c, const void *buf, size_t len, uint64_t now,
                    struct sl_req_verdict *v);

/* sl_req_admit and sl_req_passed in one, for a read the program has taken
 * already (inbound): true when every one of the len bytes may pass, and
 * they are passed. False: nothing passed; sl_req_admit then gives the
 * verdict (the heads decided here are not decided again). */
bool sl_req_admit_all(struct sl_req_conn *c, const void *buf, size_t len, uint64_t now);

/* Heads this thread's connections passed by the lane (request.c; tests). */
uint64_t sl_req_lane_heads(void);

/* Reads of one whole request this thread's connections decided before
 * their scanner moved (request.c's whole(); tests). */
uint64_t sl_req_whole_heads(void);

/* The n bytes at the stream position were passed (read by the program, or
 * sent): advances the position. n never exceeds what sl_req_admit last
 * returned for them. buf is needed: the scanner reads what passed. */
void sl_req_passed(struct sl_req_conn *c, const void *buf, size_t n);

/* The last n bytes sl_req_passed counted did not go after all (a write
 * that sent fewer): the position moves back; they are decided again when
 * they come again (a head already decided is not charged twice). */
void sl_req_unpassed(struct sl_req_conn *c, size_t n);

/* Outbound `reply` (HTTP/1 only: an HTTP/2 denial stays a DENY, see
 * request.c). A denied request is swallowed: its head and body (by
 * Content-Length or chunked framing) are reported written but never sent,
 * and a 429 keep-alive response (core/http/reply.h) is queued for the program
 * to read in place of the vendor's; the requests after it go on.
 *
 * At a swallowed request (status SL_REQ_SWALLOW with 0 bytes to pass): how
 * many of the len bytes of buf at the stream position belong to it; they
 * count as passed. Its 429 is queued at its first byte, and only once the
 * program has read the final responses of every request sent before it
 * (sl_req_responses), so that the 429 arrives in order: until then the
 * call returns 0 (the caller holds the write and asks again). */
size_t sl_req_swallow(struct sl_req_conn *c, const void *buf, size_t len, uint64_t now);

/* True when the responses can no longer be counted (core/http/h1resp.h: a
 * malformed or unsolicited response, an upgrade): a swallowed request's
 * turn would never come, so the caller fails it like reject. */
bool sl_req_swallow_lost(const struct sl_req_conn *c);

/* The bytes of queued 429s the program has not read yet (*p set; 0 when
 * none); sl_req_inject_take(n) marks n of them read. */
size_t sl_req_inject_peek(const struct sl_req_conn *c, const char **p);
void sl_req_inject_take(struct sl_req_conn *c, size_t n);

/* True once the program has read, whole, a 429 that ends the stream: the
 * one of a request that asked to close (Connection: close, HTTP/1.0),
 * which a client then reads to its end (PHP's file_get_contents). Its
 * reads then meet the end. */
bool sl_req_replied_end(const struct sl_req_conn *c);

/* No 429 can be given on this connection (`why`: HTTP/2, a memory BIO,
 * TLS sluice cannot decrypt): from now on a `reply` rule's request over
 * the limit waits its turn within the rule's max_delay, as under `delay`,
 * and is refused (as `reject`) only beyond it. Said once per process and
 * cause, when a `reply` rule matches. */
enum sl_no_reply {
    SL_NO_REPLY_H2,         /* HTTP/2: a client's stream cannot be answered */
    SL_NO_REPLY_MEMORY_BIO, /* a memory BIO (python asyncio's TLS) */
    SL_NO_REPLY_RECORDS,    /* TLS that sluice cannot decrypt, counted from its records */
};
void sl_req_reply_waits(struct sl_req_conn *c, enum sl_no_reply why);

/* True when some outbound `reply` rule matches the connection: the
 * program's reads must then be shown to sl_req_responses. */
bool sl_req_replies(const struct sl_req_conn *c);

/* True when some inbound `count_status` or `req_conns` rule matches the
 * connection: the program's writes (its responses) must then be shown to
 * sl_req_responses_at. (sl_req_replies is true outbound with `req_conns`
 * too: a request is in flight until the program has read its response.) */
bool sl_req_answers(const struct sl_req_conn *c);

/* Outbound: the program read n bytes the server sent; inbound: the
 * program wrote n bytes to its client (n 0: the end of the stream). */
void sl_req_responses(struct sl_req_conn *c, const void *buf, size_t n);

/* sl_req_responses at time `now` (what the responses charge is charged
 * then: inbound count_status). */
void sl_req_responses_at(struct sl_req_conn *c, const void *buf, size_t n, uint64_t now);

/* Bytes of the responses went that could not be read: they are no longer
 * counted on the connection (h1resp.h, lost). */
void sl_req_responses_unread(struct sl_req_conn *c);

/* True once nothing more will be limited on the connection (passed
 * through, see sl_req_admit): the caller may stop calling. */
bool sl_req_done(const struct sl_req_conn *c);

/* A reloaded configuration (shim/reload.c) replaced the runtime: later
 * decisions on the connection use rt's limits (its rules keep their
 * places: the ones the connection matched stay the ones it matches). */
void sl_req_conn_rebind(struct sl_req_conn *c, struct sl_runtime *rt);

/* The runtime the connection decides with. */
struct sl_runtime *sl_req_conn_runtime(const struct sl_req_conn *c);

void sl_req_conn_fini(struct sl_req_conn *c);

#endif
