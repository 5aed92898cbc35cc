/* SPDX-License-Identifier: BSD-2-Clause */
/* tlsrec.h - what can be read from TLS that sluice cannot decrypt: the
 * ClientHello (the server name and the ALPN offer) and the record layer of
 * what the client writes, cut into request bursts.
 *
 * For TLS inside the program's binary (node's own build), JSSE or rustls,
 * sluice sees only ciphertext. A request/response client writes a request,
 * then reads its answer: so a burst of application-data records written
 * after the server sent something (or as the first on the connection) is
 * one request. That is exact for a client that offers only http/1.1 and
 * does not pipeline (node's https agent, fetch over HTTP/1.1), and
 * approximate when h2 is offered (several streams in one burst count
 * once; a WINDOW_UPDATE or PING answer after a read counts as one).
 *
 * TLS 1.3 (RFC 8446, middlebox compatibility mode, appendix D.4): the
 * client's Finished is an application-data record right after a
 * ChangeCipherSpec record; it is not a request (sl_tlsrec_feed skips it),
 * whereas in TLS 1.2 the Finished after ChangeCipherSpec is a handshake
 * record. No clock, no system call: the shim says where reads happened.
 */
#ifndef SL_TLSREC_H
#define SL_TLSREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_tls_hello {
    char sni[256];   /* the server_name (host_name) offered, "" when none */
    bool alpn;       /* an ALPN extension was offered */
    bool alpn_h2;    /* ... and it names "h2" */
    bool alpn_h1;    /* ... and it names "http/1.1" */
    bool alpn_other; /* ... and it names some other protocol */
};

/* Parses the ClientHello at the start of a connection's first write (one
 * or more handshake records). Returns 1 with *h filled, 0 when the bytes
 * end before the ClientHello does, -1 when they are not a ClientHello. */
int sl_tls_hello_parse(const void *buf, size_t len, struct sl_tls_hello *h);

/* True when counting bursts is exact for such a hello: no h2 (nor any
 * other protocol) is offered. */
bool sl_tls_hello_exact(const struct sl_tls_hello *h);

/* The record layer of what one client writes, across writes. */
struct sl_tlsrec {
    uint8_t hdr[5];  /* the header being read */
    uint8_t nhdr;    /* bytes of it seen */
    uint8_t type;    /* the current record's content type */
    uint32_t left;   /* bytes of the current record's body still to come */
    bool after_ccs;  /* the last complete record was a ChangeCipherSpec */
    bool answered;   /* the server sent something since the last burst began */
    bool in_burst;   /* application data was written since */
    bool bad;        /* not a TLS record stream: nothing more is found */
    uint64_t bursts; /* request bursts begun */
};

/* A new connection: the first application-data burst counts. */
void sl_tlsrec_init(struct sl_tlsrec *r);

/* The server sent bytes (the shim saw a read, or the kernel's count of
 * received bytes grew): the next application-data record begins a burst. */
void sl_tlsrec_answered(struct sl_tlsrec *r);

/* Looks at the len bytes the program is about to write, from the stream
 * position, without moving it: the offset in buf where a request burst
 * begins (the header of its first application-data record), or len when
 * none begins in these bytes. */
size_t sl_tlsrec_peek(const struct sl_tlsrec *r, const void *buf, size_t len);

/* The n bytes at the stream position were written: advances over them
 * (counting the bursts begun among them). */
void sl_tlsrec_feed(struct sl_tlsrec *r, const void *buf, size_t n);

#endif
