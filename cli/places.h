/* SPDX-License-Identifier: BSD-2-Clause */
/* places.h - `sluice check`'s look at the places a configuration names
 * before a program takes them: a shared table name another user made
 * first, a gossip port another program holds. Said on stderr, naming the
 * owner, with what the program will then do. */
#ifndef SL_PLACES_H
#define SL_PLACES_H

struct sl_config;

/* Notes on stderr; returns how many were said. */
int sl_say_places(const struct sl_config *cfg);

#endif
