/* SPDX-License-Identifier: BSD-2-Clause */
/* h2frame.h - the 9-byte HTTP/2 frame header (RFC 9113, section 4.1):
 * payload length (24 bits), type, flags, and stream id (31 bits; the
 * reserved bit is dropped). h2.c reads the client's frames with it,
 * h2resp.c the server's. */
#ifndef SL_H2FRAME_H
#define SL_H2FRAME_H

#include <stdint.h>

#define SL_H2FRAME_HEADER 9

struct sl_h2frame {
    uint32_t length; /* of the payload that follows the header */
    uint8_t type;
    uint8_t flags;
    uint32_t stream;
};

static inline struct sl_h2frame sl_h2frame_parse(const uint8_t h[SL_H2FRAME_HEADER])
{
    return (struct sl_h2frame){
        .length = (uint32_t)h[0] << 16 | (uint32_t)h[1] << 8 | h[2],
        .type = h[3],
        .flags = h[4],
        .stream = ((uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8]) &
                  0x7fffffffu,
    };
}

#endif
