/* SPDX-License-Identifier: BSD-2-Clause */
/* gossip.h - the gossip sender's thread (gossip.c), as sender.c runs it.
 * The datagrams themselves (sl_cluster_receive, sl_cluster_build) are in
 * cluster_int.h. */
#ifndef SL_GOSSIP_H
#define SL_GOSSIP_H

#include "cluster_t.h"

/* Fills c->snd (sender.h) with the gossip sender: the header's heartbeat,
 * elect_ns and sender_pid words, stale after 3 intervals and 200 ms; the
 * bind of the listen address as its lock; the thread that sends this
 * node's counts and merges its peers'; the wake-up, an empty datagram to
 * its own socket. Then sl_sender_start(&c->snd, ...) starts it here. */
void sl_gossip_sender(struct sl_cluster *c);

#endif
