/* SPDX-License-Identifier: BSD-2-Clause */
/* wire.h - the gossip datagram (format v1, see docs/gossip-wire.txt).
 *
 * Pure functions over byte buffers: no sockets, no shared state, no clock.
 * The encoder writes one authenticated datagram; the decoder checks its
 * shape and its MAC and hands back a view of the records. Replay checks
 * (per-sender boot id, sequence window, timestamp) need state and live in
 * cluster.c. The wire enums here are separate from the internal ones on
 * purpose: the numbers below are part of the format.
 */
#ifndef SL_WIRE_H
#define SL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_WIRE_VERSION  1
#define SL_WIRE_MAX      1200 /* bytes in one datagram, whole */
#define SL_WIRE_HDR      44
#define SL_WIRE_REC      24
#define SL_WIRE_MAC      32 /* crypto_auth_BYTES (HMAC-SHA-512-256) */
#define SL_WIRE_MAX_RECS ((SL_WIRE_MAX - SL_WIRE_HDR - SL_WIRE_MAC) / SL_WIRE_REC) /* 46 */
#define SL_WIRE_KEYLEN   32

/* Wire values. */
#define SL_WIRE_TYPE_COUNTS 1
#define SL_WIRE_FLAG_FULL   0x01 /* part of a full refresh */

/* Why a datagram was refused (0: accepted). Also the index of its drop
 * counter; the replay reasons are produced by cluster.c. */
enum sl_wire_status {
    SL_WIRE_OK = 0,
    SL_WIRE_TRUNCATED,    /* shorter than its header says */
    SL_WIRE_OVERSIZED,    /* longer than SL_WIRE_MAX */
    SL_WIRE_BAD_MAGIC,    /* not a sluice gossip datagram */
    SL_WIRE_BAD_VERSION,  /* a format this build does not speak */
    SL_WIRE_FORGED,       /* MAC does not verify under our key */
    SL_WIRE_MALFORMED,    /* authentic, but fields out of range */
    SL_WIRE_UNKNOWN_PEER, /* sender id is not one of our peers (or is us) */
    SL_WIRE_REPLAYED,     /* sequence number already seen, or an older boot */
    SL_WIRE_STALE,        /* timestamp too far from our clock */
    SL_WIRE_NSTATUS
};

extern const char *const sl_wire_status_names[SL_WIRE_NSTATUS];

struct sl_wire_hdr {
    uint8_t type, flags;
    uint64_t node;  /* sender identity: hash of its `listen` text */
    uint64_t boot;  /* random per sender start */
    uint64_t seq;   /* 1, 2, ... per boot */
    uint64_t ts_ms; /* sender's CLOCK_REALTIME, milliseconds */
    uint16_t nrec;
};

struct sl_wire_rec {
    uint64_t hash;   /* the key under the cluster's key-hash secret */
    uint32_t rule;   /* low 32 bits of the rule id */
    uint32_t window; /* low 32 bits of realtime / period */
    uint32_t prev;   /* sender's own count in window - 1 */
    uint32_t curr;   /* sender's own count in window */
};

/* Writes a datagram with `n` records (n <= SL_WIRE_MAX_RECS) into out
 * (SL_WIRE_MAX bytes). Returns its length. */
size_t sl_wire_encode(uint8_t *out, const struct sl_wire_hdr *h, const struct sl_wire_rec *recs,
                      size_t n, const uint8_t key[SL_WIRE_KEYLEN]);

/* Checks a datagram: size, magic, version, MAC, field ranges. On
 * SL_WIRE_OK fills *h; read the records with sl_wire_rec_at(buf, i). */
enum sl_wire_status sl_wire_decode(const uint8_t *buf, size_t len,
                                   const uint8_t key[SL_WIRE_KEYLEN], struct sl_wire_hdr *h);

/* Record i of a datagram sl_wire_decode accepted. */
void sl_wire_rec_at(const uint8_t *buf, size_t i, struct sl_wire_rec *r);

#endif
