/* SPDX-License-Identifier: BSD-2-Clause */
/* lookup.c - finds an option of a parsed section by name.
 *
 * libconfuse's cfg_getopt splits the name as a path and compares it with
 * each option in turn (about 600 instructions for one of ~60 rule
 * options); the load asks ~70 times, so a process that loads sluice paid
 * ~45,000 instructions for lookups at start-up. Here: the first letter
 * before strcmp, over the section's own array (cfg_t's opts, ended by a
 * NULL name). A name it does not find (a path "a|b", a typo) goes to
 * cfg_getopt, which says what libconfuse says.
 */
#include <string.h>

#include "conf_int.h"

cfg_opt_t *conf_opt(cfg_t *sec, const char *name)
{
    if (sec && sec->opts && !(sec->flags & CFGF_NOCASE))
        for (cfg_opt_t *o = sec->opts; o->name; o++)
            if (o->name[0] == name[0] && strcmp(o->name, name) == 0) return o;
    return cfg_getopt(sec, name);
}
