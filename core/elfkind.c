/* SPDX-License-Identifier: BSD-2-Clause */
/* elfkind.c - the ELF facts elfkind.h describes, from section and program
 * headers and the dynamic symbol table. Only what is needed is read, every
 * offset is checked against the file's size, and anything odd means "not
 * known" rather than a guess. */
#include "elfkind.h"
#include "sys.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* [off, off + len) lies within n bytes. */
static bool within(size_t n, uint64_t off, uint64_t len)
{
    return off <= n && len <= n - off;
}

static const char *str_at(const unsigned char *p, size_t n, uint64_t tab, uint64_t tablen,
                          uint64_t i)
{
    if (!within(n, tab, tablen) || i >= tablen) return NULL;
    const char *s = (const char *)p + tab + i;
    return memchr(s, 0, tablen - i) ? s : NULL; /* terminated inside its table */
}

static bool defines_ssl_write(const unsigned char *p, size_t n, const Elf64_Shdr *sym,
                              const Elf64_Shdr *str)
{
    if (sym->sh_entsize != sizeof(Elf64_Sym) || !within(n, sym->sh_offset, sym->sh_size))
        return false;
    size_t count = sym->sh_size / sizeof(Elf64_Sym);
    for (size_t i = 1; i < count; i++) {
        Elf64_Sym s;
        memcpy(&s, p + sym->sh_offset + i * sizeof s, sizeof s);
        if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) != STT_FUNC) continue;
        const char *name = str_at(p, n, str->sh_offset, str->sh_size, s.st_name);
        if (name && (!strcmp(name, "SSL_write") || !strcmp(name, "SSL_write_ex"))) return true;
    }
    return false;
}

void sl_elf_kind_of(const unsigned char *p, size_t n, struct sl_elf_kind *k)
{
    memset(k, 0, sizeof *k);
    Elf64_Ehdr h;
    if (n < sizeof h) return;
    memcpy(&h, p, sizeof h);
    if (memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 || h.e_ident[EI_CLASS] != ELFCLASS64 ||
        h.e_ident[EI_DATA] != ELFDATA2LSB)
        return;
    k->elf = true;
    if (h.e_phentsize == sizeof(Elf64_Phdr) &&
        within(n, h.e_phoff, (uint64_t)h.e_phnum * sizeof(Elf64_Phdr)))
        for (unsigned i = 0; i < h.e_phnum; i++) {
            Elf64_Phdr ph;
            memcpy(&ph, p + h.e_phoff + i * sizeof ph, sizeof ph);
            if (ph.p_type == PT_INTERP) k->dynamic = true;
        }
    if (h.e_shentsize != sizeof(Elf64_Shdr) || h.e_shnum == 0 ||
        !within(n, h.e_shoff, (uint64_t)h.e_shnum * sizeof(Elf64_Shdr)) ||
        h.e_shstrndx >= h.e_shnum)
        return;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(p + h.e_shoff);
    Elf64_Shdr names, s;
    memcpy(&names, &sh[h.e_shstrndx], sizeof names);
    for (unsigned i = 0; i < h.e_shnum; i++) {
        memcpy(&s, &sh[i], sizeof s);
        const char *name = str_at(p, n, names.sh_offset, names.sh_size, s.sh_name);
        if (name && (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid")))
            k->go = true;
        if (s.sh_type == SHT_DYNSYM && s.sh_link < h.e_shnum && !k->tls_inside) {
            Elf64_Shdr str;
            memcpy(&str, &sh[s.sh_link], sizeof str);
            k->tls_inside = defines_ssl_write(p, n, &s, &str);
        }
    }
}

void sl_elf_kind_file(const char *path, struct sl_elf_kind *k)
{
    memset(k, 0, sizeof *k);
    int fd = sl_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return;
    struct stat st;
    if (sl_sys_fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            sl_elf_kind_of(p, (size_t)st.st_size, k);
            munmap(p, (size_t)st.st_size);
        }
    }
    sl_sys_close(fd);
}

const char *sl_elf_kind_unseen(const struct sl_elf_kind *k, bool requests)
{
    if (!k->elf) return NULL;
    if (k->go)
        return "a Go program makes its system calls itself (raw system calls, also when "
               "dynamically linked): sluice sees none of its connections, nothing is limited or "
               "counted";
    if (!k->dynamic)
        return "a statically linked program never loads libsluice.so (raw system calls): "
               "nothing is limited or counted";
    if (k->tls_inside && requests)
        return "the program carries OpenSSL inside its binary (TLS in the binary, as node's own "
               "build): its requests over TLS are counted from the records it writes, one per "
               "write burst (shim/tlsrec.c: exact for HTTP/1.1 without pipelining, approximate "
               "when h2 is offered)";
    return NULL;
}
