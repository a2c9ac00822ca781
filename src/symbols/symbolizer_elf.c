/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer_elf.c - the symbolizer's libelf path (symbolizer_internal.h):
 * a module of this process read with libelf alone, so that libdw, and
 * liblzma and libbz2 with it (util/dep_elfutils.h), are mapped into the
 * profiled process only for a module that needs them.
 *
 *   - an addresses-only symbolizer (EMBER__SYM_ADDRESSES_ONLY, elf_only)
 *     reads each module's build id, nothing more;
 *   - a symbolizer of this process that names functions (lazy) reads the
 *     build id, finds the module's separate debug file on the local disk
 *     (util/elfdebug.h: the search libdwfl's callback makes too,
 *     debugfile.c), and notes whether the file or that debug file has
 *     DWARF (.debug_info, .debug_line) or the file MiniDebugInfo
 *     (.gnu_debugdata). A module without them, or whose DWARF the line
 *     policy does not want (ember__symbolizer_wants_dwarf), is named from
 *     the symbol table libdwfl would have chosen (the file's .symtab, else
 *     its debug file's, else its .dynsym), its PLT stubs and its FDEs,
 *     relocated by the load bias its program headers give, as libdwfl
 *     computes it. Any other module goes to libdwfl (symbolizer.c starts
 *     a Dwfl on the first lookup in such a module), as before.
 *
 * The Elf handles stay open while the module lives (the index's names
 * point into them), as libdwfl keeps its own. Agent thread only; not
 * async-signal-safe.
 */
#include "symbols/symbolizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/elfdebug.h"
#include "util/elfnote.h"
#include "util/elfopen.h"
#include "util/error.h"
#include "util/vdso.h"

#define BUILD_ID_MAX 64

const char *ember__symbolizer_vdso_copy(size_t *size)
{
	static char *copy;
	static size_t len;
	if (!copy) {
		size_t n;
		const void *img = ember__vdso_image(&n);
		char *c = img ? malloc(n) : NULL;
		if (c) {
			memcpy(c, img, n);
			copy = c;
			len = n;
		}
	}
	*size = len;
	return copy;
}

void ember__symbolizer_elf_close(sym_module *m)
{
	if (m->dbg)
		elf_end(m->dbg);
	if (m->elf)
		elf_end(m->elf);
	m->elf = m->dbg = NULL;
	m->syms_src = (ember__symtab_src){0};
}

/* What e holds: DWARF, MiniDebugInfo (EMBER__MOD_*), its last .symtab and
 * first .dynsym (with entries, as libdwfl takes them), and whether libelf
 * alone cannot read its symbols as libdwfl does (extended section
 * indexes, another class, a relocatable object): EMBER__MOD_OTHER. */
static unsigned scan_sections(Elf *e, Elf_Scn **symtab, Elf_Scn **dynsym)
{
	*symtab = *dynsym = NULL;
	GElf_Ehdr eh;
	size_t shstrndx;
	if (!gelf_getehdr(e, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type == ET_REL ||
	    elf_getshdrstrndx(e, &shstrndx) != 0)
		return EMBER__MOD_OTHER;
	unsigned what = 0;
	GElf_Shdr sh;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		if (!gelf_getshdr(scn, &sh))
			return EMBER__MOD_OTHER;
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_SYMTAB && sh.sh_entsize)
			*symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize && !*symtab && !*dynsym)
			*dynsym = scn;
		else if (sh.sh_type == SHT_SYMTAB_SHNDX)
			what |= EMBER__MOD_OTHER;
		if (!name || sh.sh_type == SHT_NOBITS)
			continue;
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".debug_line") ||
		    !strcmp(name, ".zdebug_info") || !strcmp(name, ".zdebug_line"))
			what |= EMBER__MOD_DWARF; /* (.zdebug_*: the old GNU compression) */
		else if (!strcmp(name, ".gnu_debugdata"))
			what |= EMBER__MOD_MDI;
	}
	return what;
}

/* The link-time address of e's first PT_LOAD, aligned as libdwfl aligns
 * it (its main.vaddr). 0 if none. */
static uint64_t first_load_vaddr(Elf *e)
{
	size_t n;
	if (elf_getphdrnum(e, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			return ph.p_align > 1 ? ph.p_vaddr & -ph.p_align : ph.p_vaddr;
	}
	return 0;
}

/* Opens m's debug file (id: its build id), reads what it holds: its kind
 * bits; *symtab and *dynsym as scan_sections. 0 if none was found. */
static unsigned open_debug(sym_module *m, const uint8_t *id, size_t idlen, Elf_Scn **symtab,
			   Elf_Scn **dynsym)
{
	const char *link = NULL;
	uint32_t crc = 0;
	if (!ember__elf_debuglink(m->elf, &link, &crc))
		link = NULL;
	char *found = NULL;
	int fd = ember__elf_debug_open(m->info.path, id, idlen, link, crc, &found);
	if (fd < 0)
		return 0;
	free(found);
	const char *why;
	Elf *d = ember__elf_begin_detached(fd, &why); /* no descriptor kept */
	if (!d || elf_kind(d) != ELF_K_ELF) {
		if (d)
			elf_end(d);
		return 0;
	}
	m->dbg = d;
	return scan_sections(d, symtab, dynsym) | EMBER__MOD_DEBUG_FILE;
}

/* The symbol table libdwfl would choose, its file and bias, into
 * m->syms_src (find_symtab in elfutils' dwfl_module_getdwarf.c): the
 * file's .symtab; else, its debug file's table; else the file's .dynsym. */
static void choose_symtab(sym_module *m, Elf_Scn *tab, Elf_Scn *dyn, Elf_Scn *dtab,
			  Elf_Scn *ddyn)
{
	ember__symtab_src *src = &m->syms_src;
	*src = (ember__symtab_src){.elf = m->elf, .bias = m->bias, .main = m->elf,
				   .main_bias = m->bias};
	if (tab) {
		src->tab = tab;
		return;
	}
	if (m->dbg && (dtab || ddyn)) {
		src->elf = m->dbg;
		src->tab = dtab ? dtab : ddyn;
		/* libdwfl's debug bias: the same image, its own link address */
		src->bias = m->bias + first_load_vaddr(m->elf) - first_load_vaddr(m->dbg);
		return;
	}
	src->tab = dyn;
}

/* Counts an unreadable module (why), for the log at stop. */
static void unreadable(ember__symbolizer *s, const sym_module *m, const char *why)
{
	s->unreadable++;
	snprintf(s->unreadable_last, sizeof(s->unreadable_last), "%.400s: %s", m->info.path, why);
}

int ember__symbolizer_elf_load(ember__symbolizer *s, sym_module *m, int names)
{
	if (m->elf_failed || s->elf_failures >= EMBER__SYM_MAX_ELF_FAILURES)
		return 0;
	if (!names && m->info.build_id[0])
		return 0; /* a module of the dlclose journal: its record's */
	Elf *elf = NULL;
	const char *why = NULL;
	if (strcmp(m->info.path, "[vdso]") == 0) {
		size_t n = 0;
		const char *img = ember__symbolizer_vdso_copy(&n); /* a copy: libelf may write */
		elf = img ? elf_memory((char *)img, n) : NULL;
		why = img ? NULL : "no vDSO image";
	} else {
		elf = ember__elf_open_detached(m->info.path, &why); /* no descriptor kept */
	}
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		unreadable(s, m, why ? why : elf ? "not an ELF file" : elf_errmsg(-1));
		if (elf)
			elf_end(elf);
		return 0;
	}
	m->elf = elf;
	uint8_t id[BUILD_ID_MAX];
	size_t idlen = ember__elf_build_id(elf, id, sizeof(id));
	int err = 0;
	if (m->info.build_id[0]) {
		/* from the dlclose journal's record (symbolizer_closed.c): the
		 * file at that path must still be that library */
		char hex[2 * BUILD_ID_MAX + 1];
		ember__build_id_hex(id, idlen, hex);
		if (strcmp(hex, m->info.build_id) != 0) {
			unreadable(s, m, "not the library that was dlclose'd (its build id differs: "
					 "replaced since)");
			m->elf_failed = 1;
			ember__symbolizer_elf_close(m);
			return 0;
		}
	} else if (idlen) {
		err = ember__symbolizer_set_build_id(m, id, idlen);
	}
	if (!names || err) {
		ember__symbolizer_elf_close(m);
		return err;
	}

	Elf_Scn *tab, *dyn, *dtab = NULL, *ddyn = NULL;
	m->debug = scan_sections(elf, &tab, &dyn);
	if (!ember__elf_load_bias(elf, m->info.start, m->info.file_offset, &m->bias))
		m->debug |= EMBER__MOD_OTHER; /* libdwfl's business */
	/* the debug file, for DWARF the file lacks, or symbols */
	if (!(m->debug & (EMBER__MOD_DWARF | EMBER__MOD_MDI | EMBER__MOD_OTHER)) &&
	    m->info.path[0] == '/')
		m->debug |= open_debug(m, id, idlen, &dtab, &ddyn);
	choose_symtab(m, tab, dyn, dtab, ddyn);
	if (m->syms_src.elf != m->dbg && m->dbg) {
		/* its table is not used: only whether it has DWARF matters */
		elf_end(m->dbg);
		m->dbg = NULL;
	}
	GElf_Shdr sh;
	m->info.has_symbols = (m->syms_src.tab && gelf_getshdr(m->syms_src.tab, &sh) &&
			       sh.sh_size / sh.sh_entsize > 0) ||
			      (m->debug & EMBER__MOD_MDI);
	return 0;
}

int ember__symbolizer_elf_needs_dwfl(const ember__symbolizer *s, const sym_module *m)
{
	if (m->debug & (EMBER__MOD_MDI | EMBER__MOD_OTHER))
		return 1;
	return (m->debug & EMBER__MOD_DWARF) && ember__symbolizer_wants_dwarf(s, m);
}

int ember__symbolizer_elf_syms(sym_module *m)
{
	return ember__symindex_build_syms_elf(&m->ix, &m->syms_src, m->info.start, m->info.limit);
}

int ember__symbolizer_elf_bias(const ember__symbolizer *s, size_t i, uint64_t *bias)
{
	if (!s || i >= s->nmods || s->mods[i]->dm || !s->mods[i]->syms_src.main)
		return 0;
	*bias = s->mods[i]->bias;
	return 1;
}
