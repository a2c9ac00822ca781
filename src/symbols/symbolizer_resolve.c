/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer_resolve.c - one address of a module into frames for the
 * symbolizer (symbolizer_internal.h): the symbol that covers it (symindex.c's
 * index of the module's symbol table), its file and line and the calls
 * inlined there from DWARF (for the modules the line policy wants:
 * ember__symbolizer_set_lines), each name demangled, every string
 * interned into the module's arena. The module table, the address cache
 * and the elfutils guard around each call are symbolizer.c's.
 *
 * Agent thread only; not async-signal-safe.
 */
#include "symbols/symbolizer_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "symbols/demangle.h"
#include "symbols/elfguard.h"
#include "util/error.h"

/* ---------------------------------------------------------------------- */
/* Strings of the module                                                   */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/*
 * Returns the module's copy of s, adding it if needed, or NULL on OOM.
 * NULL in gives NULL out without error (callers check `s` first).
 */
static const char *intern(sym_module *m, const char *s)
{
	if (m->strs_count * 2 >= m->strs_cap) {
		size_t ncap = m->strs_cap ? m->strs_cap * 2 : 64;
		const char **n = calloc(ncap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; i < m->strs_cap; i++) {
			if (!m->strs[i])
				continue;
			size_t j = hash_str(m->strs[i]) & (ncap - 1);
			while (n[j])
				j = (j + 1) & (ncap - 1);
			n[j] = m->strs[i];
		}
		free(m->strs);
		m->strs = n;
		m->strs_cap = ncap;
	}
	size_t j = hash_str(s) & (m->strs_cap - 1);
	for (; m->strs[j]; j = (j + 1) & (m->strs_cap - 1)) {
		if (strcmp(m->strs[j], s) == 0)
			return m->strs[j];
	}
	const char *copy = ember__arena_strdup(&m->arena, s);
	if (!copy)
		return NULL;
	m->strs[j] = copy;
	m->strs_count++;
	return copy;
}

/* ---------------------------------------------------------------------- */
/* Resolving one address                                                   */

/* Demangles a name, keeping a PLT stub's "@plt" suffix (as perf does:
 * "_ZN3foo3barEv@plt" is "foo::bar()@plt"). Malloc'd, or NULL if the name
 * is not mangled. */
static char *demangle_stub(const char *name)
{
	size_t len = strlen(name);
	if (len <= 4 || strcmp(name + len - 4, "@plt") != 0)
		return ember__demangle(name);
	char *base = strndup(name, len - 4);
	char *d = base ? ember__demangle(base) : NULL;
	free(base);
	if (!d)
		return NULL;
	size_t dl = strlen(d);
	char *full = realloc(d, dl + 5);
	if (!full) {
		free(d);
		return NULL;
	}
	memcpy(full + dl, "@plt", 5);
	return full;
}

/* Interns one raw frame's strings into the module; demangles the name. */
static int finish_frame(sym_module *m, const ember__raw_frame *raw, ember__symbol_frame *f)
{
	*f = (ember__symbol_frame){0};
	f->line = raw->line;
	if (raw->file && !(f->file = intern(m, raw->file)))
		return ember__error_oom("symbol strings");
	if (!raw->system_name)
		return 0;
	if (!(f->system_name = intern(m, raw->system_name)))
		return ember__error_oom("symbol strings");
	char *demangled = demangle_stub(raw->system_name);
	if (demangled) {
		f->function = intern(m, demangled);
		free(demangled);
		if (!f->function)
			return ember__error_oom("symbol strings");
	} else {
		f->function = f->system_name;
	}
	return 0;
}

/* System libraries live here; their debug info is usually a separate,
 * compressed file of tens of MB (libc6-dbg), costly to load. */
static int system_path(const char *path)
{
	static const char *const dirs[] = {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/",
					   "/usr/libexec/"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++)
		if (!strncmp(path, dirs[i], strlen(dirs[i])))
			return 1;
	return path[0] == '['; /* [vdso] and friends */
}

int ember__symbolizer_wants_dwarf(const ember__symbolizer *s, const sym_module *m)
{
	switch (s->lines) {
	case EMBER__LINES_ALL:
		return 1;
	case EMBER__LINES_NONE:
		return 0;
	default:
		return !system_path(m->info.path);
	}
}

void ember__symbolizer_set_lines(ember__symbolizer *s, int policy)
{
	s->lines = policy;
}

/* ---------------------------------------------------------------------- */
/* Functions without symbols                                               */

/* The module's own ELF file and its load bias: libdwfl's, or the libelf
 * path's (symbolizer_elf.c). NULL if neither has it. */
static Elf *module_elf(const sym_module *m, uint64_t *bias)
{
	Dwarf_Addr b = 0;
	Elf *elf = m->dm ? dwfl_module_getelf(m->dm, &b) : m->syms_src.main;
	*bias = m->dm ? b : m->bias;
	return elf;
}

/*
 * The start of the function holding addr by the module's FDEs (ELF
 * virtual address, fdetab.h), reading the table on the module's first
 * such address: 1 or 2 (ember__fdetab_find) and *start, 0 when no FDE is
 * at or below it, or EMBER_ERR_NOMEM.
 */
static int fde_start(ember__symbolizer *s, sym_module *m, uint64_t addr, uint64_t *start)
{
	uint64_t bias = 0;
	Elf *elf = module_elf(m, &bias);
	if (!m->fdes.built) {
		int err = ember__fdetab_build_file(&m->fdes, elf, m->info.path);
		if (err)
			return err;
		s->fde.modules++;
		s->fde.fdes += m->fdes.n;
		s->fde.bytes += m->fdes.n * 2 * sizeof(uint32_t);
		if (m->fdes.why) {
			s->fde.empty++;
			s->fde.last_why = m->fdes.why;
		}
	}
	return elf ? ember__fdetab_find(&m->fdes, addr - bias, start) : 0;
}

/*
 * The symbol that names addr, by "nearest start wins" (symbolizer.h,
 * "Functions without symbols"): *symname is what the symbol table says
 * covers addr (NULL: nothing); it becomes the floor symbol when that one
 * starts at or after the start of the FDE holding addr and does not
 * reach it (a sized symbol that ends before, exported with a short or
 * wrong size), or NULL when the only cover is a sizeless floor symbol
 * that starts before that FDE (it is taken to run to the next symbol,
 * but a function starts in between). *fde is set to 1 and *start to the
 * FDE's start when the caller may name addr after it. 0 or
 * EMBER_ERR_NOMEM.
 */
static int nearest_start(ember__symbolizer *s, sym_module *m, uint64_t addr, const char **symname,
			 int *fde, uint64_t *start)
{
	*fde = 0;
	ember__sym_floor fl; /* (an address only scanned: the scan kept its floor) */
	int has = ember__symindex_floor(&m->ix, addr, &fl);
	if (has < 0)
		return has;
	/* a sized symbol covering addr is the function: nothing to compare */
	if (*symname && !(has && fl.size == 0))
		return 0;
	int found = fde_start(s, m, addr, start);
	if (found < 0)
		return found;
	if (!found)
		return 0; /* no FDE to compare with: what the symbols say */
	uint64_t bias = 0;
	(void)module_elf(m, &bias);
	if (has && fl.addr - bias >= *start) {
		*symname = fl.name; /* the symbol starts closer */
		return 0;
	}
	*symname = NULL;
	*fde = 1;
	return 0;
}

/* "MODULE+0xSTART" (symbolizer.h) into buf. */
static void fde_name(ember__symbolizer *s, const sym_module *m, uint64_t start, char *buf,
		     size_t len)
{
	const char *slash = strrchr(m->info.path, '/');
	snprintf(buf, len, "%s+0x%" PRIx64, slash ? slash + 1 : m->info.path, start);
	s->fde.named++;
}

int ember__symbolizer_resolve(ember__symbolizer *s, sym_module *m, uint64_t addr, cache_entry *e)
{
	ember__raw_frame raw[EMBER_MAX_INLINE];
	int n = 0;
	*e = (cache_entry){.addr = addr, .mod = m};
	/* named through libdwfl, or with libelf alone (symbolizer_elf.c) */
	int by_elf = !m->dm && m->syms_src.main && !m->elf_failed;
	if ((!m->dm && !by_elf) || (s->flags & EMBER__SYM_ADDRESSES_ONLY))
		return 0;

	const char *symname = NULL;
	if (m->ix.syms_built || !ember__symindex_scanned(&m->ix, addr, &symname)) {
		if (!m->ix.syms_built) {
			int err = by_elf ? ember__symbolizer_elf_syms(m)
					 : ember__symindex_build_syms(&m->ix, m->dm, m->info.start,
								      m->info.limit);
			if (err)
				return err;
		}
		symname = ember__symindex_symbol_at(&m->ix, addr);
	}
	int by_fde = 0;
	uint64_t fstart = 0;
	int nerr = nearest_start(s, m, addr, &symname, &by_fde, &fstart);
	if (nerr)
		return nerr;
	const char *file = NULL;
	int line = 0;
	int dwarf = !by_elf && ember__symbolizer_wants_dwarf(s, m); /* none there */
	if (dwarf) {
		/* Before libdw allocates anything for it: its own handler exits. */
		Dwarf_Addr dwbias;
		Dwarf *dw = dwfl_module_getdwarf(m->dm, &dwbias);
		if (dw)
			dwarf_new_oom_handler(dw, ember__elfguard_oom);
	}
	Dwfl_Line *dl = dwarf ? dwfl_module_getsrc(m->dm, addr) : NULL;
	if (dl)
		file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);
	/* A failed allocation in there may have poisoned the module's
	 * state for the calls below (elfguard.h). */
	ember__elfguard_poll();
	if (!file)
		line = 0;

	if (!dwarf) {
		n = 0; /* symbols only: no inline expansion without DWARF */
	} else if (!m->ix.funcs_built) {
		int err = ember__symindex_build_funcs(&m->ix, m->dm, m->info.start, m->info.limit);
		if (err)
			return err;
		m->info.has_lines = m->ix.dw != NULL;
		s->infos[m->index].has_lines = m->info.has_lines;
	}
	if (dwarf)
		n = ember__symindex_inline_frames(&m->ix, addr, raw, EMBER_MAX_INLINE);
	if (n > 0) {
		raw[0].file = file;
		raw[0].line = line;
		/* The symbol table names the real (outermost) function best: it
		 * is what the linker saw, e.g. "foo.cold" for a split function. */
		if (symname)
			raw[n - 1].system_name = symname;
	} else if (symname || file) {
		raw[0] = (ember__raw_frame){symname, file, line};
		n = 1;
	}
	/* No name for the function holding the code (no symbol; perhaps a
	 * line from DWARF): the placeholder of its FDE. */
	char placeholder[256];
	if (n == 0 || !raw[n - 1].system_name) {
		if (by_fde) {
			fde_name(s, m, fstart, placeholder, sizeof(placeholder));
			if (n == 0)
				raw[n++] = (ember__raw_frame){placeholder, NULL, 0};
			else
				raw[n - 1].system_name = placeholder;
		} else if (!symname) {
			s->fde.unnamed++;
		}
	}

	ember__symbol_frame frames[EMBER_MAX_INLINE];
	for (int i = 0; i < n; i++) {
		int err = finish_frame(m, &raw[i], &frames[i]);
		if (err)
			return err;
	}
	if (n > 1) {
		e->rest = malloc((size_t)(n - 1) * sizeof(*e->rest));
		if (!e->rest)
			return ember__error_oom("symbol frames");
		memcpy(e->rest, frames + 1, (size_t)(n - 1) * sizeof(*e->rest));
	}
	if (n > 0)
		e->first = frames[0];
	e->nframes = (uint32_t)n;
	return 0;
}

void ember__symbolizer_fill_info(const ember__symbolizer *s, const cache_entry *e,
				 ember__symbol_info *out)
{
	out->module = &s->infos[e->mod->index];
	out->nframes = e->nframes;
	if (e->nframes > 0)
		out->frames[0] = e->first;
	for (uint32_t i = 1; i < e->nframes; i++)
		out->frames[i] = e->rest[i - 1];
}
