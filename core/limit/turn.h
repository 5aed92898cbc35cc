/* SPDX-License-Identifier: BSD-2-Clause */
/* turn.h - a connection's turn at its key's byte budget.
 *
 * Connections of one key share one bucket (sl_table_take). When it holds
 * too little, a connection does not sleep until the refill and then ask
 * again: every waiter would wake at the refill and the first to ask would
 * take everything (nginx asks sendfile for megabytes at a time). It takes
 * its quantum at once, at the bucket's far end, which moves the key's
 * shared state on, and holds it here until the bucket has refilled up to
 * it; whoever asks later queues behind it. Connections are so served in
 * the order they asked, a quantum each, in every process that shares the
 * table, and a connection alone waits exactly as long as its bytes need:
 * taking turns costs it nothing, whatever the burst. (The turn-taking
 * before this made the connection with the last grant wait one quantum
 * more; with a burst below two quanta the bucket overflowed meanwhile and
 * a lone connection got half its rate, issue 21.)
 *
 * A place is used when the program comes back for it, however late (a
 * non-blocking program may first wait for the kernel's own readiness):
 * its bytes were counted at their turn, so the total stays rate * t +
 * burst, but they may leave up to one quantum per connection later than
 * that turn. Closing the connection gives the place back.
 *
 * One struct sl_turn per connection and direction, in the program's
 * memory. Writers: the threads calling on that descriptor; what it holds
 * is claimed by exchange, so no two threads use the same bytes.
 */
#ifndef SL_TURN_H
#define SL_TURN_H

#include <stdatomic.h>
#include <stdint.h>

#include "key.h"
#include "limit.h"
#include "table.h"

struct sl_turn {
    _Atomic uint64_t bytes; /* taken from the bucket, not used yet; 0: none */
    _Atomic uint64_t at;    /* when they may be used (the caller's clock, ns) */
};

/* Up to `want` bytes for one connection at `now`. Returns > 0: use them now
 * (give back what was not used with sl_table_refund). Returns 0: come back
 * at *at; the connection's place is held in *turn until then (or, rarely,
 * the table refused the key: on_full = deny). */
uint64_t sl_turn_take(struct sl_table *t, int rule, const struct sl_key *k,
                      const struct sl_limit *l, uint64_t quantum, struct sl_turn *turn,
                      uint64_t now, uint64_t want, uint64_t *at);

/* Gives back what the connection holds (it closes, or gives up its turn). */
void sl_turn_drop(struct sl_table *t, int rule, const struct sl_key *k, const struct sl_limit *l,
                  struct sl_turn *turn, uint64_t now);

#endif
