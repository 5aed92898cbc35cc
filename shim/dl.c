/* SPDX-License-Identifier: BSD-2-Clause */
/* dl.c - libraries the program opens with RTLD_DEEPBIND still call sluice.
 *
 * A library opened with RTLD_DEEPBIND (PHP's extensions: php-curl's
 * libcurl, its libssl and libcrypto) looks symbols up in itself and its
 * own dependencies before the global scope, so its connect, send, poll and
 * SSL_write bind straight to libc and libssl, past LD_PRELOAD: nothing
 * would be paced or logged. So dlopen is interposed, and after the real
 * one loaded such a library, the references of every object it brought in
 * to a name this library exports (only the interposed calls are exported,
 * shim/exports.map) are bound to this library's definitions, exactly what
 * the global scope gives them without RTLD_DEEPBIND; every other symbol
 * keeps the deep binding the program asked for. This is chosen over
 * dropping RTLD_DEEPBIND, which would change how the library binds names
 * that have nothing to do with sluice (the reason programs use it: two
 * copies of one symbol). The slots are the objects' GOT entries
 * (JUMP_SLOT and GLOB_DAT relocations), made writable for the moment of
 * the write when they lie in a read-only (RELRO) page.
 *
 * Not bound, said once naming the library: a name without '/' opened with
 * RTLD_DEEPBIND (opening it from here would search this library's RUNPATH
 * instead of the caller's, so it is opened by the real call, untouched),
 * and dlmopen into a new namespace (its objects, libc included, are
 * separate copies that sluice's own calls cannot serve).
 * A dlopen without RTLD_DEEPBIND is a tail call to the real one: glibc
 * sees the program's return address, so the caller's RUNPATH still
 * applies.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../core/log.h"
#include "shim.h"

/* 64-bit ELF with RELA relocations: x86-64 and AArch64 */
#if defined(__x86_64__)
#define SL_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define SL_R_GLOB_DAT  R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define SL_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define SL_R_GLOB_DAT  R_AARCH64_GLOB_DAT
#endif

typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);

static void *real_fn(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, p, memory_order_release);
    }
    return p;
}

static void *_Atomic real_dlopen, *_Atomic real_dlmopen;

/* The objects loaded before the call: their base addresses (a new object
 * is one whose base is not among them). */
#define SEEN_MAX 1024
struct seen {
    uintptr_t base[SEEN_MAX];
    int n;
    bool full;
};

static int note_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct seen *s = arg;
    if (s->n < SEEN_MAX)
        s->base[s->n++] = info->dlpi_addr;
    else
        s->full = true;
    return 0;
}

static bool was_seen(const struct seen *s, uintptr_t base)
{
    for (int i = 0; i < s->n; i++)
        if (s->base[i] == base) return true;
    return false;
}

/* This library's own definition of `name`, or NULL (not one it exports). */
static void *ours(const char *name)
{
    static void *_Atomic self;
    static uintptr_t self_base;
    void *h = atomic_load_explicit(&self, memory_order_acquire);
    if (!h) {
        Dl_info di;
        if (!dladdr((void *)ours, &di) || !di.dli_fname) return NULL;
        h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (!h) return NULL;
        self_base = (uintptr_t)di.dli_fbase;
        atomic_store_explicit(&self, h, memory_order_release);
    }
    void *p = dlsym(h, name); /* searches its dependencies too: keep only ours */
    Dl_info di;
    if (!p || !dladdr(p, &di) || (uintptr_t)di.dli_fbase != self_base) return NULL;
    return p;
}

#ifdef SL_R_JUMP_SLOT
/* A dynamic entry's address: glibc has usually relocated it in place. */
static uintptr_t dyn_ptr(uintptr_t base, Elf64_Addr p)
{
    return p < base ? base + p : p;
}

static void write_slot(void **slot, void *value, uintptr_t relro, size_t relro_len)
{
    if (*slot == value) return;
    uintptr_t a = (uintptr_t)slot;
    bool ro = a >= relro && a < relro + relro_len;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t page = a & ~((uintptr_t)pg - 1);
    if (ro && mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE) != 0) return;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (ro) mprotect((void *)page, (size_t)pg, PROT_READ);
}

static int bind_relocs(uintptr_t base, const Elf64_Rela *rel, size_t n, const Elf64_Sym *symtab,
                       const char *strtab, uintptr_t relro, size_t relro_len)
{
    int bound = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned long type = ELF64_R_TYPE(rel[i].r_info), sym = ELF64_R_SYM(rel[i].r_info);
        if ((type != SL_R_JUMP_SLOT && type != SL_R_GLOB_DAT) || sym == 0) continue;
        const Elf64_Sym *s = &symtab[sym];
        if (s->st_shndx != SHN_UNDEF || ELF64_ST_TYPE(s->st_info) == STT_OBJECT) continue;
        void *mine = ours(strtab + s->st_name);
        if (!mine) continue;
        write_slot((void **)(base + rel[i].r_offset), mine, relro, relro_len);
        bound++;
    }
    return bound;
}

/* The objects the call brought in, collected under the loader's lock and
 * bound after it is released (dlsym takes another of its locks). */
struct fresh {
    const struct seen *before;
    uintptr_t self;
    struct {
        uintptr_t base;
        const Elf64_Phdr *phdr;
        int phnum;
    } obj[SEEN_MAX];
    int n;
};

static int note_fresh(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct fresh *f = arg;
    uintptr_t base = info->dlpi_addr;
    if (base == f->self || was_seen(f->before, base) || f->n >= SEEN_MAX) return 0;
    f->obj[f->n].base = base;
    f->obj[f->n].phdr = info->dlpi_phdr;
    f->obj[f->n].phnum = info->dlpi_phnum;
    f->n++;
    return 0;
}

static int bind_object(uintptr_t base, const Elf64_Phdr *phdr, int phnum)
{
    const Elf64_Dyn *dyn = NULL;
    uintptr_t relro = 0;
    size_t relro_len = 0;
    for (int i = 0; i < phnum; i++) {
        const Elf64_Phdr *ph = &phdr[i];
        if (ph->p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn *)(base + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) relro = base + ph->p_vaddr, relro_len = ph->p_memsz;
    }
    if (!dyn) return 0;
    const Elf64_Sym *symtab = NULL;
    const char *strtab = NULL;
    const Elf64_Rela *rela = NULL, *jmprel = NULL;
    size_t relasz = 0, pltsz = 0;
    bool is_rela = true;
    for (const Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB:
            symtab = (const Elf64_Sym *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            strtab = (const char *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_RELA:
            rela = (const Elf64_Rela *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_RELASZ:
            relasz = d->d_un.d_val;
            break;
        case DT_JMPREL:
            jmprel = (const Elf64_Rela *)dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            pltsz = d->d_un.d_val;
            break;
        case DT_PLTREL:
            is_rela = d->d_un.d_val == DT_RELA;
            break;
        }
    }
    if (!symtab || !strtab || !is_rela) return 0;
    int n = 0;
    if (rela) n += bind_relocs(base, rela, relasz / sizeof *rela, symtab, strtab, relro, relro_len);
    if (jmprel)
        n += bind_relocs(base, jmprel, pltsz / sizeof *jmprel, symtab, strtab, relro, relro_len);
    return n;
}
#endif

static void say_unbound(const char *file, const char *why)
{
    static _Atomic bool told;
    if (atomic_exchange(&told, true)) return;
    sl_log(SL_LOG_WARN,
           "%s was opened %s: its socket and TLS calls bypass sluice and are neither limited nor "
           "counted (said once)",
           file ? file : "(the program)", why);
}

/* After the real dlopen loaded `file` with RTLD_DEEPBIND. */
static void bind_new_objects(const struct seen *before, const char *file)
{
#ifdef SL_R_JUMP_SLOT
    static struct fresh f; /* large: not on the program's stack (calls are serialised) */
    Dl_info di;
    if (before->full || !dladdr((void *)bind_new_objects, &di)) {
        say_unbound(file, "with RTLD_DEEPBIND while more libraries were loaded than sluice tracks");
        return;
    }
    f.before = before;
    f.self = (uintptr_t)di.dli_fbase;
    f.n = 0;
    dl_iterate_phdr(note_fresh, &f);
    int bound = 0;
    for (int i = 0; i < f.n; i++)
        bound += bind_object(f.obj[i].base, f.obj[i].phdr, f.obj[i].phnum);
    static _Atomic bool told;
    if (bound && !atomic_exchange(&told, true))
        sl_log(SL_LOG_INFO,
               "%s was opened with RTLD_DEEPBIND: %d references of the %d libraries it loaded to "
               "socket and TLS calls were bound to sluice (said for the first such library)",
               file, bound, f.n);
#else
    (void)before;
    say_unbound(file, "with RTLD_DEEPBIND on an architecture sluice cannot rebind");
#endif
}

/* optimised even in a -O0 build: the pass-through must stay a tail call */
__attribute__((optimize("O2"))) SL_EXPORT void *dlopen(const char *file, int mode)
{
    dlopen_fn real = (dlopen_fn)real_fn(&real_dlopen, "dlopen");
    if (!(mode & RTLD_DEEPBIND) || !file || !sl_runtime_now())
        return real(file, mode); /* a tail call: the caller's RUNPATH applies */
    if (!strchr(file, '/')) {
        say_unbound(file, "with RTLD_DEEPBIND by a name without a path");
        return real(file, mode);
    }
    static struct seen before; /* large: not on the program's stack */
    static _Atomic int busy;   /* one binding at a time; others pass as they are */
    if (atomic_exchange(&busy, 1)) {
        say_unbound(file, "with RTLD_DEEPBIND by two threads at once");
        return real(file, mode);
    }
    before.n = 0;
    before.full = false;
    dl_iterate_phdr(note_object, &before);
    void *h = real(file, mode);
    if (h) bind_new_objects(&before, file);
    atomic_store(&busy, 0);
    return h;
}

SL_EXPORT void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
    dlmopen_fn real = (dlmopen_fn)real_fn(&real_dlmopen, "dlmopen");
    if (lmid != LM_ID_BASE && file && sl_runtime_now())
        say_unbound(file, "with dlmopen in a new namespace");
    return real(lmid, file, mode);
}
