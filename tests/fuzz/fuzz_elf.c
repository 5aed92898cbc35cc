/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_elf.c - libFuzzer target for the ELF reader `sluice run` and the
 * library use to tell which programs sluice cannot see (core/elfkind.c). */
#include <stdint.h>
#include <stdlib.h>

#include "../../core/elfkind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_elf_kind k;
    sl_elf_kind_of(data, size, &k);
    if (!k.elf && (k.dynamic || k.go || k.tls_inside)) abort(); /* nothing known when not ELF */
    (void)sl_elf_kind_unseen(&k, true);
    return 0;
}
