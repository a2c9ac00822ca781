/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pltsyms.c - "foo@plt" names for PLT stubs, from the relocations of the
 * GOT slots the stubs jump through (see pltsyms.h for the layouts).
 */
#include "symbols/pltsyms.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#ifndef R_AARCH64_GLOB_DAT
#define R_AARCH64_GLOB_DAT 1025
#endif
#ifndef R_AARCH64_JUMP_SLOT
#define R_AARCH64_JUMP_SLOT 1026
#endif
#ifndef R_AARCH64_IRELATIVE
#define R_AARCH64_IRELATIVE 1032
#endif

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int ember__plt_x86_64_entry(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *slot,
			    uint32_t *index)
{
	size_t i = 0;
	if (len >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa)
		i = 4; /* endbr64 */
	if (i < len && code[i] == 0xf2)
		i++; /* bnd prefix */
	if (i + 6 <= len && code[i] == 0xff && code[i + 1] == 0x25) {
		/* jmp *disp32(%rip): the slot is relative to the next instruction */
		int32_t disp = (int32_t)rd32(code + i + 2);
		*slot = vaddr + i + 6 + (uint64_t)(int64_t)disp;
		return 1;
	}
	if (i + 5 <= len && code[i] == 0x68) { /* push imm32: a lazy IBT entry */
		*index = rd32(code + i + 1);
		return 2;
	}
	return 0;
}

int ember__plt_aarch64_pair(const uint8_t *code, uint64_t vaddr, uint64_t *slot)
{
	uint32_t adrp = rd32(code), ldr = rd32(code + 4);
	/* adrp x16, page: op=1, 10000 at bits 28-24, Rd = 16 */
	if ((adrp & 0x9f00001fu) != 0x90000010u)
		return 0;
	/* ldr x17, [x16, #imm12 * 8] (64-bit, unsigned offset) */
	if ((ldr & 0xffc003ffu) != (0xf9400000u | 16u << 5 | 17u))
		return 0;
	uint64_t imm = ((uint64_t)((adrp >> 5) & 0x7ffff) << 2) | ((adrp >> 29) & 3);
	int64_t off = (int64_t)(imm << 43) >> 31; /* sign-extend 21 bits, times 4096 */
	uint64_t page = (vaddr & ~(uint64_t)0xfff) + (uint64_t)off;
	*slot = page + (uint64_t)((ldr >> 10) & 0xfff) * 8;
	return 1;
}

/* ---------------------------------------------------------------------- */
/* Relocations                                                             */

typedef struct reloc {
	uint64_t slot;
	const char *name; /* libelf's or the arena's; NULL: an IRELATIVE not named yet */
	uint64_t addend;  /* IRELATIVE: the ifunc resolver's address */
} reloc;

typedef struct relocs {
	reloc *v; /* sorted by slot once collected */
	size_t n, cap;
	const char **jump; /* .rela.plt's names in order, for lazy IBT entries */
	size_t njump, jump_cap;
} relocs;

static int push_name(const char ***v, size_t *n, size_t *cap, const char *name)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		const char **nv = realloc(*v, ncap * sizeof(*nv));
		if (!nv)
			return ember__error_oom("PLT names");
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = name;
	return 0;
}

static int push_reloc(relocs *r, uint64_t slot, const char *name, uint64_t addend)
{
	if (r->n == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 64;
		reloc *nv = realloc(r->v, ncap * sizeof(*nv));
		if (!nv)
			return ember__error_oom("PLT relocations");
		r->v = nv;
		r->cap = ncap;
	}
	r->v[r->n++] = (reloc){slot, name, addend};
	return 0;
}

static int is_slot_type(int machine, uint32_t type)
{
	if (machine == EM_X86_64)
		return type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT;
	return type == R_AARCH64_JUMP_SLOT || type == R_AARCH64_GLOB_DAT;
}

static int is_irelative(int machine, uint32_t type)
{
	return machine == EM_X86_64 ? type == R_X86_64_IRELATIVE : type == R_AARCH64_IRELATIVE;
}

/* The name of symbol `idx` of the symbol table section `symscn`, or NULL. */
static const char *sym_name(Elf *elf, Elf_Scn *symscn, size_t idx)
{
	GElf_Shdr sh;
	Elf_Data *d = symscn ? elf_getdata(symscn, NULL) : NULL;
	GElf_Sym sym;
	if (!d || !gelf_getshdr(symscn, &sh) || !gelf_getsym(d, (int)idx, &sym) || !sym.st_name)
		return NULL;
	return elf_strptr(elf, sh.sh_link, sym.st_name);
}

/* Reads one SHT_RELA or SHT_REL section's slot relocations into r. */
static int read_relocs(Elf *elf, int machine, Elf_Scn *scn, const GElf_Shdr *sh, int is_plt,
		       relocs *r)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh->sh_entsize)
		return 0;
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	size_t count = sh->sh_size / sh->sh_entsize;
	/* A 64-bit file's RELA entries are read in place: a big library's
	 * .rela.dyn holds 100 k+ of them, nearly all R_*_RELATIVE, and
	 * gelf_getrela's copy of each was most of the time spent here. */
	GElf_Ehdr eh;
	const Elf64_Rela *raw = NULL;
	if (sh->sh_type == SHT_RELA && d->d_type == ELF_T_RELA && d->d_buf &&
	    gelf_getehdr(elf, &eh) && eh.e_ident[EI_CLASS] == ELFCLASS64) {
		raw = d->d_buf;
		if (count > d->d_size / sizeof(Elf64_Rela))
			count = d->d_size / sizeof(Elf64_Rela);
	}
	for (size_t i = 0; i < count && i <= INT32_MAX; i++) {
		GElf_Rela rela = {0};
		GElf_Rel rel;
		if (raw) {
			rela.r_offset = raw[i].r_offset;
			rela.r_info = raw[i].r_info;
			rela.r_addend = raw[i].r_addend;
		} else if (sh->sh_type == SHT_RELA) {
			if (!gelf_getrela(d, (int)i, &rela))
				break;
		} else {
			if (!gelf_getrel(d, (int)i, &rel))
				break;
			rela.r_offset = rel.r_offset;
			rela.r_info = rel.r_info;
		}
		uint32_t type = (uint32_t)GELF_R_TYPE(rela.r_info);
		const char *name = NULL;
		if (is_slot_type(machine, type))
			name = sym_name(elf, symscn, GELF_R_SYM(rela.r_info));
		if (name && !name[0])
			name = NULL;
		int err = 0;
		if (name)
			err = push_reloc(r, rela.r_offset, name, 0);
		else if (is_irelative(machine, type) && sh->sh_type == SHT_RELA)
			err = push_reloc(r, rela.r_offset, NULL, (uint64_t)rela.r_addend);
		/* the lazy entries push their index in .rela.plt, names or not */
		if (!err && is_plt)
			err = push_name(&r->jump, &r->njump, &r->jump_cap, name);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_reloc(const void *a, const void *b)
{
	const reloc *x = a, *y = b;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int cmp_addend(const void *a, const void *b)
{
	const reloc *x = *(reloc *const *)a, *y = *(reloc *const *)b;
	return x->addend < y->addend ? -1 : x->addend > y->addend;
}

/*
 * Names the IRELATIVE slots (a local ifunc, as memcpy in libc): the
 * addend is the resolver's address, which is also the value of the ifunc's
 * symbol. binutils writes "*ABS*+0xADDR@plt"; the function's name says
 * more, so it is looked up in .dynsym and .symtab, and the binutils form is
 * the fallback.
 */
static int name_irelative(Elf *elf, relocs *r, ember__arena *names)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++)
		n += !r->v[i].name;
	if (!n)
		return 0;
	reloc **by = malloc(n * sizeof(*by));
	if (!by)
		return ember__error_oom("PLT relocations");
	n = 0;
	for (size_t i = 0; i < r->n; i++)
		if (!r->v[i].name)
			by[n++] = &r->v[i];
	qsort(by, n, sizeof(*by), cmp_addend);
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		size_t count = sh.sh_size / sh.sh_entsize;
		for (size_t k = 1; k < count && k <= INT32_MAX; k++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)k, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_name)
				continue;
			int type = GELF_ST_TYPE(sym.st_info);
			if (type != STT_GNU_IFUNC && type != STT_FUNC)
				continue;
			size_t lo = 0, hi = n; /* first with addend >= value */
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (by[mid]->addend < sym.st_value)
					lo = mid + 1;
				else
					hi = mid;
			}
			const char *name = NULL;
			for (; lo < n && by[lo]->addend == sym.st_value; lo++) {
				/* an ifunc symbol beats the resolver's own name */
				if (by[lo]->name && type != STT_GNU_IFUNC)
					continue;
				if (!name && !(name = elf_strptr(elf, sh.sh_link, sym.st_name)))
					break;
				by[lo]->name = name;
			}
		}
	}
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		if (by[i]->name)
			continue;
		char buf[40];
		snprintf(buf, sizeof(buf), "*ABS*+0x%llx", (unsigned long long)by[i]->addend);
		if (!(by[i]->name = ember__arena_strdup(names, buf)))
			err = ember__error_oom("PLT names");
	}
	free(by);
	return err;
}

static const char *slot_name(const relocs *r, uint64_t slot)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->v[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n && r->v[lo].slot == slot ? r->v[lo].name : NULL;
}

/* ---------------------------------------------------------------------- */
/* Stubs                                                                   */

typedef struct stubs {
	ember__plt_stub *v;
	size_t n, cap;
	ember__arena *names;
} stubs;

/* Adds a stub named "name@plt", or `section` when name is NULL. A stub
 * named after its section right after another is merged into it. */
static int add_stub(stubs *s, uint64_t addr, uint64_t size, const char *name, const char *section)
{
	if (!name && s->n && s->v[s->n - 1].name == section &&
	    s->v[s->n - 1].addr + s->v[s->n - 1].size == addr) {
		s->v[s->n - 1].size += size;
		return 0;
	}
	const char *full = section;
	if (name) {
		size_t len = strlen(name);
		const char *at = strchr(name, '@'); /* a version, should one be there */
		if (at)
			len = (size_t)(at - name);
		char *buf = ember__arena_alloc(s->names, len + sizeof("@plt"));
		if (!buf)
			return ember__error_oom("PLT names");
		memcpy(buf, name, len);
		memcpy(buf + len, "@plt", sizeof("@plt"));
		full = buf;
	}
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		ember__plt_stub *nv = realloc(s->v, ncap * sizeof(*nv));
		if (!nv)
			return ember__error_oom("PLT stubs");
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = (ember__plt_stub){addr, size, full};
	return 0;
}

static int x86_64_section(stubs *s, const relocs *r, const uint8_t *code, uint64_t size,
			  uint64_t addr, uint64_t entsize, const char *section)
{
	if (entsize < 8 || entsize > 64)
		entsize = 16;
	for (uint64_t off = 0; off + entsize <= size; off += entsize) {
		uint64_t slot = 0;
		uint32_t index = 0;
		const char *name = NULL;
		switch (ember__plt_x86_64_entry(code + off, entsize, addr + off, &slot, &index)) {
		case 1:
			name = slot_name(r, slot);
			break;
		case 2:
			name = index < r->njump ? r->jump[index] : NULL;
			break;
		default:
			break;
		}
		int err = add_stub(s, addr + off, entsize, name, section);
		if (err)
			return err;
	}
	return 0;
}

static int aarch64_section(stubs *s, const relocs *r, const uint8_t *code, uint64_t size,
			   uint64_t addr, const char *section)
{
	const uint32_t bti_c = 0xd503245fu;
	uint64_t words = size / 4, start = 0; /* start: of the stub being built */
	const char *name = NULL;
	for (uint64_t w = 0; w + 2 <= words; w++) {
		uint64_t slot;
		if (!ember__plt_aarch64_pair(code + w * 4, addr + w * 4, &slot))
			continue;
		uint64_t at = w > 0 && rd32(code + (w - 1) * 4) == bti_c ? w - 1 : w;
		if (at > start) {
			int err = add_stub(s, addr + start * 4, (at - start) * 4, name, section);
			if (err)
				return err;
		}
		start = at;
		name = slot_name(r, slot);
		w++; /* the ldr */
	}
	if (words > start)
		return add_stub(s, addr + start * 4, (words - start) * 4, name, section);
	return 0;
}

static int is_plt_section(const char *name)
{
	return !strcmp(name, ".plt") || !strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got") ||
	       !strcmp(name, ".plt.bnd");
}

static int cmp_stub(const void *a, const void *b)
{
	const ember__plt_stub *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int ember__plt_stubs(Elf *elf, ember__arena *names, ember__plt_stub **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	GElf_Ehdr eh;
	size_t shstrndx;
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	int machine = eh.e_machine;
	if (machine != EM_X86_64 && machine != EM_AARCH64)
		return 0;

	relocs r = {0};
	int err = 0;
	for (Elf_Scn *scn = NULL; !err && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		int is_plt = name && (!strcmp(name, ".rela.plt") || !strcmp(name, ".rel.plt"));
		err = read_relocs(elf, machine, scn, &sh, is_plt, &r);
	}
	if (!err)
		err = name_irelative(elf, &r, names);
	if (!err && r.n > 1)
		qsort(r.v, r.n, sizeof(*r.v), cmp_reloc);

	stubs s = {.names = names};
	for (Elf_Scn *scn = NULL; !err && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || !is_plt_section(name))
			continue;
		const char *section = ember__arena_strdup(names, name);
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!section) {
			err = ember__error_oom("PLT names");
			break;
		}
		if (!d || !d->d_buf)
			continue;
		uint64_t size = d->d_size < sh.sh_size ? d->d_size : sh.sh_size;
		if (machine == EM_X86_64)
			err = x86_64_section(&s, &r, d->d_buf, size, sh.sh_addr, sh.sh_entsize, section);
		else
			err = aarch64_section(&s, &r, d->d_buf, size, sh.sh_addr, section);
	}
	free(r.v);
	free(r.jump);
	if (err) {
		free(s.v);
		return err;
	}
	if (s.n > 1)
		qsort(s.v, s.n, sizeof(*s.v), cmp_stub);
	*out = s.v;
	*n = s.n;
	return 0;
}
