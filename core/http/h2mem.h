/* SPDX-License-Identifier: BSD-2-Clause */
/* h2mem.h - the allocator libnghttp2's HPACK inflaters use: core/mem.h, so
 * the host's allocator never sees their tables (h2.c for requests,
 * h2resp.c for responses). */
#ifndef SL_H2MEM_H
#define SL_H2MEM_H

#include <nghttp2/nghttp2.h>

nghttp2_mem *sl_h2_mem(void);

#endif
