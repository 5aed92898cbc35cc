/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_wire.c - libFuzzer target for the gossip datagram decoder, and for
 * the whole receive path (replay checks and merge into a cluster state).
 *
 * Half of the inputs are signed with the test key before decoding, so the
 * fuzzer reaches past the MAC into the value checks and the merge: the
 * first input byte chooses, the rest is the datagram. */
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/fleet/cluster_int.h"
#include "../../core/fleet/wire.h"
#include "../unit/cluster_util.h"

static struct sl_cluster *node;
static struct sl_config *cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!node) {
        char err[256];
        cfg = cu_config(0, 3, 100, 1000000000ull, 100000000ull, 4096);
        node = sl_cluster_create(cfg, NULL, err, sizeof err);
        if (!node) abort();
        sl_cluster_set_offset(node, 0);
    }
    if (size < 1) return 0;
    uint8_t buf[SL_WIRE_MAX + 64];
    size_t len = size - 1 > sizeof buf ? sizeof buf : size - 1;
    memcpy(buf, data + 1, len);
    if ((data[0] & 1) && len >= SL_WIRE_HDR + SL_WIRE_MAC && len <= SL_WIRE_MAX) {
        /* re-sign whatever is there, so the checks after the MAC run */
        crypto_auth(buf + len - SL_WIRE_MAC, buf, len - SL_WIRE_MAC, cfg->gossip.key);
    }
    struct sl_wire_hdr h;
    enum sl_wire_status s = sl_wire_decode(buf, len, cfg->gossip.key, &h);
    if (s == SL_WIRE_OK) {
        struct sl_wire_rec r;
        for (size_t i = 0; i < h.nrec; i++)
            sl_wire_rec_at(buf, i, &r);
    }
    /* the oversize check must hold without reading the bytes */
    sl_cluster_receive(node, buf, size - 1 > sizeof buf ? size - 1 : len,
                       1700000000ull * 1000000000ull);
    return 0;
}
