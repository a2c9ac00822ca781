/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer.c - addresses of this process to modules, functions, files
 * and lines, on top of libdwfl, or of libelf alone for the modules that
 * need no DWARF (symbolizer_elf.c).
 *
 * Two views of the address space are kept in step:
 *   - our module table: one module per executable file mapping (plus the
 *     vDSO), sorted by address, each with a stable id, the strings we hand
 *     out and a cache of resolved addresses;
 *   - a Dwfl session, which owns the ELF and DWARF data. Each refresh reads
 *     /proc/self/maps once; from that one parse we tell libdwfl each loaded
 *     image (dwfl_report_module, see report_dwfl) and build our table, so
 *     both see the same layout. libdwfl keeps a module that is re-reported
 *     with the same name and range, with everything it loaded, so a
 *     refresh only pays for new modules.
 *
 * The vDSO has no file; libdwfl reads it from memory when it is reported
 * under the name "[vdso: PID]", which dwfl_linux_proc_find_elf recognises.
 *
 * An addresses-only symbolizer of this process (EMBER__SYM_ADDRESSES_ONLY,
 * `--no-symbolize`) has no Dwfl at all (elf_only): the same table, each
 * module's build id read with libelf (symbolizer_elf.c), so libdw, liblzma
 * and libbz2 are never loaded into the profiled process for it
 * (util/dep_elfutils.h). A symbolizer of this process that names functions
 * (lazy) reads each module with libelf too: its build id, its debug file,
 * whether it has DWARF or MiniDebugInfo, the symbol table libdwfl would
 * choose. A module that needs no DWARF (none, or its DWARF unwanted by the
 * line policy: system libraries by default) is named from that table; the
 * Dwfl is begun, and libdw loaded, on the first lookup in a module that
 * needs it (hand_to_dwfl), which from then on goes through libdwfl as
 * before. Another process's symbolizer, and one the tools give files to
 * (debugfile.h hooks), use libdwfl for every module.
 *
 * Strings handed out are copied into the owning module's arena and
 * interned there, so their number is bounded by the module's distinct
 * names and files, and they live exactly as long as the module. The
 * address cache is bounded; when it fills up, or when a module goes away,
 * it is emptied, which frees only the frame arrays, never the strings.
 *
 * Resolving one address of a module into frames (symbol, file and line,
 * inlined calls, demangled and interned names) lives in
 * symbolizer_resolve.c (the state these files share: symbolizer_internal.h),
 * the address cache in symbolizer_cache.c, JIT code in symbolizer_jit.c,
 * the libelf path in symbolizer_elf.c, the per-module symbol and function
 * indexes in symindex.c, the local-disk search for separate debug files in
 * debugfile.c (libdwfl's callback) and util/elfdebug.c.
 *
 * Every call into elfutils runs inside a guard (elfguard.h): where libdw
 * would end the process (an allocation failure in its own allocator or its
 * hash tables), the lookup or refresh ends instead. The module it was
 * working on is then never handed to elfutils again (its frames keep their
 * addresses, no names), and the Dwfl, which may hold half-built state and
 * held locks, is leaked and replaced by a new one. After
 * EMBER__SYM_MAX_ELF_FAILURES such failures the symbolizer stops using elfutils.
 */
#include "symbols/symbolizer.h"
#include "symbols/symbolizer_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"
#include "symbols/debugfile.h"
#include "symbols/elfguard.h"
#include "symbols/perfmap.h"
#include "symbols/procmaps.h"
#include "symbols/symindex.h"
#include "util/arena.h"
#include "util/dep_elfutils.h"
#include "util/elfnote.h"
#include "util/elfopen.h"
#include "util/error.h"
#include "util/sort.h"

#define EMBER_SYM_KEEP_GONE 16     /* unmapped modules kept named (keep_gone) */

/* ---------------------------------------------------------------------- */
/* Modules                                                                 */

static void module_free(sym_module *m)
{
	if (!m)
		return;
	ember__arena_release(&m->arena);
	free(m->strs);
	ember__symindex_reset(&m->ix);
	ember__fdetab_reset(&m->fdes);
	ember__symbolizer_elf_close(m);
	free(m);
}

static int is_vdso(const ember__procmap *pm)
{
	return strcmp(pm->path, "[vdso]") == 0;
}

/* Executable mappings that become modules: files and the vDSO. JIT code,
 * anonymous memory and [vsyscall] have nothing to symbolize them with. */
static int is_module_mapping(const ember__procmap *pm)
{
	return (pm->perms & EMBER_MAP_EXEC) && (pm->path[0] == '/' || is_vdso(pm));
}

static int same_mapping(const sym_module *m, const ember__procmap *pm)
{
	return m->info.start == pm->start && m->info.limit == pm->end &&
	       m->info.file_offset == pm->offset && m->inode == pm->inode &&
	       m->dev_major == pm->dev_major && m->dev_minor == pm->dev_minor &&
	       strcmp(m->info.path, pm->path) == 0;
}

static sym_module *module_new(ember__symbolizer *s, const ember__procmap *pm)
{
	sym_module *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->arena = (ember__arena)EMBER_ARENA_INIT;
	m->info.path = ember__arena_strdup(&m->arena, pm->path);
	if (!m->info.path) {
		module_free(m);
		return NULL;
	}
	m->info.id = s->next_id++;
	m->info.start = pm->start;
	m->info.limit = pm->end;
	m->info.file_offset = pm->offset;
	m->info.build_id = "";
	m->inode = pm->inode;
	m->dev_major = pm->dev_major;
	m->dev_minor = pm->dev_minor;
	return m;
}

struct dwfl_find {
	uint64_t addr;
	Dwfl_Module *found;
};

static int dwfl_find_cb(Dwfl_Module *dm, void **ud, const char *name, Dwarf_Addr start, void *arg)
{
	(void)ud;
	(void)name;
	struct dwfl_find *f = arg;
	Dwarf_Addr end = 0;
	if (start <= f->addr && dwfl_module_info(dm, NULL, NULL, &end, NULL, NULL, NULL, NULL) &&
	    f->addr < end) {
		f->found = dm;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

/*
 * Finds the libdwfl module covering our module's mapping and checks that it
 * is the same file (a concurrent dlopen/dlclose could make them differ only
 * if the two views came from different reads; they do not, but stay safe).
 * A walk of the module list, not dwfl_addrmodule(): that builds libdwfl's
 * segment table, and elfutils 0.188 crashes when an allocation for it fails
 * (found by tests/faults); the walk allocates nothing.
 */
static Dwfl_Module *find_dwfl_module(Dwfl *dwfl, const sym_module *m)
{
	struct dwfl_find f = {m->info.start, NULL};
	if (dwfl_getmodules(dwfl, dwfl_find_cb, &f, 0) < 0 || !f.found)
		return NULL;
	Dwfl_Module *dm = f.found;
	const char *name = dwfl_module_info(dm, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	if (!name)
		return NULL;
	if (strcmp(m->info.path, "[vdso]") == 0)
		return strncmp(name, "[vdso", 5) == 0 ? dm : NULL;
	return strcmp(name, m->info.path) == 0 ? dm : NULL;
}

/*
 * Points m at libdwfl's module for its mapping now. 1 if that is another
 * module than before (compared by address and range: libdwfl may make a
 * new one where it freed the old), after dropping m's indexes, which point
 * into the old one's data; else 0.
 */
static int attach_dwfl(ember__symbolizer *s, sym_module *m)
{
	/* none once elfutils gave up on m, or on everything (elfguard.h);
	 * none for a module a lazy symbolizer names with libelf */
	Dwfl_Module *dm = s->dwfl && !m->elf_failed && (!s->lazy || m->use_dwfl == 1)
				  ? find_dwfl_module(s->dwfl, m)
				  : NULL;
	Dwarf_Addr low = 0, high = 0;
	if (dm)
		dwfl_module_info(dm, NULL, &low, &high, NULL, NULL, NULL, NULL);
	int same = dm == m->dm && low == m->dm_low && high == m->dm_high;
	m->dm = dm;
	m->dm_low = low;
	m->dm_high = high;
	if (same)
		return 0;
	ember__symindex_reset(&m->ix);
	return 1;
}

int ember__symbolizer_set_build_id(sym_module *m, const unsigned char *bits, size_t n)
{
	char *hex = ember__arena_alloc(&m->arena, n * 2 + 1);
	if (!hex)
		return ember__error_oom("build id");
	ember__build_id_hex(bits, n, hex);
	m->info.build_id = hex;
	return 0;
}

/*
 * Loads what the module table advertises about a new module up front: its
 * build id and whether it has symbols. That opens the file (and, for a
 * stripped file, finds its debug file and reads its .symtab). The DWARF,
 * which can be large and compressed, is loaded only when an address in
 * the module is first looked up; has_lines is set then. A lazy or an
 * addresses-only symbolizer reads the module with libelf
 * (symbolizer_elf.c).
 */
static int module_load(ember__symbolizer *s, sym_module *m)
{
	if (s->lazy && !m->dm)
		return ember__symbolizer_elf_load(s, m, 1);
	if (!m->dm)
		return s->elf_only ? ember__symbolizer_elf_load(s, m, 0) : 0;
	Dwarf_Addr bias;
	if (!dwfl_module_getelf(m->dm, &bias)) {
		/* Not an ELF file we can read (EMFILE, EACCES, out of memory...):
		 * no symbols for this module; counted for the log at stop. */
		s->unreadable++;
		snprintf(s->unreadable_last, sizeof(s->unreadable_last), "%s: %s", m->info.path,
			 dwfl_errmsg(-1));
		return 0;
	}

	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(m->dm, &bits, &vaddr);
	if (n > 0 && ember__symbolizer_set_build_id(m, bits, (size_t)n) != 0)
		return EMBER_ERR_NOMEM;
	/* addresses only: no symbol table read (nor debug file searched) */
	if (!(s->flags & EMBER__SYM_ADDRESSES_ONLY))
		m->info.has_symbols = dwfl_module_getsymtab(m->dm) > 0;
	return 0;
}

/* Index of the range of v[0..n) (sorted, disjoint) containing addr, or -1. */
static ptrdiff_t find_range(const ember__module_info *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < v[mid].start)
			hi = mid;
		else if (addr >= v[mid].limit)
			lo = mid + 1;
		else
			return (ptrdiff_t)mid;
	}
	return -1;
}

/* Index of the module containing addr, or -1. */
static ptrdiff_t find_module(const ember__symbolizer *s, uint64_t addr)
{
	return find_range(s->infos, s->nmods, addr);
}

uint64_t ember__symbolizer_unreadable(const ember__symbolizer *s, const char **last)
{
	*last = s && s->unreadable ? s->unreadable_last : "";
	return s ? s->unreadable : 0;
}

void ember__symbolizer_fde_stats(const ember__symbolizer *s, ember__fde_stats *out)
{
	*out = s ? s->fde : (ember__fde_stats){0};
	if (!out->last_why)
		out->last_why = "";
}

struct resolve_call {
	ember__symbolizer *s;
	sym_module *m;
	uint64_t addr;
	cache_entry *e;
};

static int resolve_cb(void *arg)
{
	struct resolve_call *c = arg;
	c->s->busy = c->m;
	return ember__symbolizer_resolve(c->s, c->m, c->addr, c->e);
}

static void elfutils_gave_up(ember__symbolizer *s, const char *why);
static int refresh(ember__symbolizer *s, int modules);
static const Dwfl_Callbacks callbacks;

struct getelf_call {
	sym_module *m;
	int ok;
};

/* Has libdwfl read m's file, the one the libelf path read (by build id)?
 * elfutils 0.188's dwfl_linux_proc_find_elf, when its strdup fails,
 * returns ENOMEM where a descriptor is expected, and libdwfl then reads
 * whatever file has that number. */
static int getelf_cb(void *arg)
{
	struct getelf_call *c = arg;
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(c->m->dm, &bias);
	uint8_t id[64];
	size_t n = elf ? ember__elf_build_id(elf, id, sizeof(id)) : 0;
	char hex[2 * sizeof(id) + 1];
	ember__build_id_hex(id, n, hex);
	c->ok = elf ? (strcmp(hex, c->m->info.build_id) == 0 ? 1 : -1) : 0;
	return 0;
}

/*
 * A lazy symbolizer's module that needs libdwfl (DWARF, MiniDebugInfo:
 * symbolizer_elf.c), at its first lookup: libdw loaded and the Dwfl begun
 * if this is the first, the layout reported again and m attached, its
 * libelf index and files dropped. If libdw cannot be loaded, or libdwfl
 * cannot read the module's file (EMFILE, EACCES, out of memory...), m
 * keeps its libelf names (counted among the unreadable, with the reason:
 * use_dwfl 2, never attached). 0 or an ember_err.
 */
static int hand_to_dwfl(ember__symbolizer *s, sym_module *m)
{
	m->use_dwfl = 1;
	if (!s->dwfl && !s->dwfl_started && !s->dwfl_refused) {
		int lrc = ember__lazydep_load(&ember__elfutils);
		s->dwfl = lrc == 0 ? dwfl_begin(&callbacks) : NULL;
		if (!s->dwfl) {
			s->dwfl_refused = 1;
			s->unreadable++;
			snprintf(s->unreadable_last, sizeof(s->unreadable_last),
				 "%.300s: no DWARF read, only its symbols: %s", m->info.path,
				 lrc == 0 ? dwfl_errmsg(-1) : ember_last_error());
			ember__error_clear();
			return 0;
		}
		s->dwfl_started = 1;
	}
	if (!s->dwfl)
		return 0;
	int err = refresh(s, 0); /* reports the layout, attaches m */
	if (!m->dm)
		return err;
	/* libdwfl opens the file as module_load would have (guarded) */
	char why[256];
	struct getelf_call c = {m, 0};
	s->busy = m;
	int g = ember__elfguard_run(getelf_cb, &c, why, sizeof(why));
	if (g == EMBER__ELFGUARD_TRIPPED) {
		elfutils_gave_up(s, why); /* m is asked no more */
		int rerr = refresh(s, 0);
		s->busy = NULL;
		return err ? err : rerr;
	}
	s->busy = NULL;
	if (c.ok != 1) {
		s->unreadable++;
		snprintf(s->unreadable_last, sizeof(s->unreadable_last),
			 "%.300s: only its symbols, no DWARF: %s", m->info.path,
			 c.ok ? "libdwfl read another file (its build id differs)" : dwfl_errmsg(-1));
		m->use_dwfl = 2;
		m->dm = NULL;
		m->dm_low = m->dm_high = 0;
		return err;
	}
	ember__symindex_reset(&m->ix); /* (built from the files closed here) */
	ember__symbolizer_elf_close(m);
	return err;
}

int ember__symbolizer_lookup(ember__symbolizer *s, uint64_t addr, ember__symbol_info *out)
{
	if (!s || !out)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_lookup: NULL argument");
	out->module = NULL;
	out->nframes = 0;
	ptrdiff_t idx = find_module(s, addr);
	if (idx < 0)
		return ember__symbolizer_jit_lookup(s, addr, out);

	cache_entry *hit = ember__symbolizer_cache_get(s, addr);
	if (hit) {
		ember__symbolizer_fill_info(s, hit, out);
		return 0;
	}
	if (s->lazy && !s->mods[idx]->use_dwfl && !(s->flags & EMBER__SYM_ADDRESSES_ONLY) &&
	    ember__symbolizer_elf_needs_dwfl(s, s->mods[idx])) {
		int err = hand_to_dwfl(s, s->mods[idx]);
		if (err)
			return err;
	}
	cache_entry e;
	char why[256];
	struct resolve_call call = {s, s->mods[idx], addr, &e};
	int err = ember__elfguard_run(resolve_cb, &call, why, sizeof(why));
	if (err == EMBER__ELFGUARD_TRIPPED) {
		/* What resolve had built is leaked with elfutils' half-built
		 * state; the address keeps no name. The other modules are
		 * re-attached to a new Dwfl (no module comes or goes). */
		elfutils_gave_up(s, why);
		e = (cache_entry){.addr = addr, .mod = s->mods[idx]};
		err = refresh(s, 0);
	}
	s->busy = NULL;
	if (err) {
		free(e.rest);
		return err;
	}
	/* Fill from the local entry: cache_put may have to drop it. */
	ember__symbolizer_fill_info(s, &e, out);
	ember__symbolizer_cache_put(s, &e);
	return 0;
}

struct scan_call {
	ember__symbolizer *s;
	sym_module *m;
	const uint64_t *addrs;
	size_t n;
};

static int scan_cb(void *arg)
{
	struct scan_call *c = arg;
	c->s->busy = c->m;
	const sym_module *m = c->m;
	return ember__symindex_scan_into_src(&c->m->ix, m->dm, m->dm ? NULL : &m->syms_src,
					     m->info.start, m->info.limit, c->addrs, c->n);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int ember__symbolizer_prefetch(ember__symbolizer *s, uint64_t *addrs, size_t n)
{
	if (!s || n == 0)
		return 0;
	ember__sort(addrs, n, sizeof(*addrs), cmp_u64);
	size_t k = 0; /* the misses of modules that may still scan, in place */
	for (size_t i = 0; i < n; i++) {
		if (k && addrs[k - 1] == addrs[i])
			continue;
		ptrdiff_t idx = find_module(s, addrs[i]);
		if (idx < 0 || ember__symbolizer_cache_get(s, addrs[i]))
			continue;
		const sym_module *m = s->mods[idx];
		/* libdwfl's module, or the libelf path's that stays there */
		int named = m->dm || (m->syms_src.main && !ember__symbolizer_elf_needs_dwfl(s, m));
		if (named && !m->elf_failed && !m->ix.syms_built &&
		    !(s->flags & EMBER__SYM_ADDRESSES_ONLY) &&
		    m->ix.scans < EMBER_SYMINDEX_MAX_SCANS)
			addrs[k++] = addrs[i];
	}
	int err = 0;
	for (size_t i = 0; i < k && !err;) {
		/* addresses are sorted, modules too: one module's are a run */
		ptrdiff_t idx = find_module(s, addrs[i]);
		size_t j = i + 1;
		while (j < k && find_module(s, addrs[j]) == idx)
			j++;
		char why[256];
		struct scan_call call = {s, s->mods[idx], addrs + i, j - i};
		err = ember__elfguard_run(scan_cb, &call, why, sizeof(why));
		if (err == EMBER__ELFGUARD_TRIPPED) {
			elfutils_gave_up(s, why); /* that module is asked no more */
			err = refresh(s, 0);
		}
		s->busy = NULL;
		i = j;
	}
	return err;
}

int ember__symbolizer_covers(const ember__symbolizer *s, uint64_t addr)
{
	return s && (find_module(s, addr) >= 0 || ember__symbolizer_find_jit(s, addr) >= 0);
}

size_t ember__symbolizer_modules(const ember__symbolizer *s, const ember__module_info **out)
{
	if (out)
		*out = s ? s->infos : NULL;
	return s ? s->nmods : 0;
}

/* ---------------------------------------------------------------------- */
/* Reporting and refreshing                                                */

static char *default_debuginfo_path = NULL; /* NULL: the standard search path */

/* libdwfl's own finder, called through the lazily loaded table
 * (util/dep_elfutils.h): a static initializer cannot name it. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	/* another process's vDSO ("[vdso: PID]", not ours): our own image */
	int pid;
	if (sscanf(name, "[vdso: %d]", &pid) == 1 && pid != (int)getpid()) {
		size_t size;
		const char *img = ember__symbolizer_vdso_copy(&size);
		*elfp = img ? elf_memory((char *)img, size) : NULL;
		if (*elfp)
			return -1; /* no file descriptor: the image is in memory */
	}
	/* the tools' choice of file (debugfile.h), for a file path */
	const ember__debugfile_hooks *h = ember__debugfile_get_hooks();
	char *use = h && h->find_elf && name[0] == '/' ? h->find_elf(h->arg, name) : NULL;
	if (use) {
		int fd = use[0] ? open(use, O_RDONLY | O_CLOEXEC) : -1;
		Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
		if (!elf) {
			if (fd >= 0)
				close(fd);
			free(use);
			return -1; /* no file for this module: no names */
		}
		*file_name = use;
		*elfp = elf;
		return fd;
	}
	/* A regular file by its path: read with no descriptor kept
	 * (util/elfopen.h). libdwfl's own finder would keep one open for the
	 * module's life, without O_CLOEXEC, at a number the program expects
	 * its own open() to return; and elfutils 0.188's returns ENOMEM as a
	 * descriptor when its strdup fails. */
	struct stat st;
	if (name[0] == '/' && stat(name, &st) == 0 && S_ISREG(st.st_mode)) {
		const char *why;
		char *copy = strdup(name);
		Elf *elf = copy ? ember__elf_open_detached(name, &why) : NULL;
		if (!elf) {
			free(copy);
			return -1; /* no file for this module: no names */
		}
		*file_name = copy;
		*elfp = elf;
		return -1; /* no descriptor: the Elf is all libdwfl needs */
	}
	/* the rest ("(deleted)" files, read through /proc; our vDSO) */
	return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = ember__debugfile_find,
	.debuginfo_path = &default_debuginfo_path,
};

/*
 * Whether pm, a mapping of the same file as the run of mappings before it
 * (prev the last of them), continues that run as one loaded image. The
 * dynamic loader maps an image's segments at rising file offsets from 0;
 * a mapping at offset 0 again, or at a lower offset, is another mapping of
 * the file: typically libelf's private copy of the whole file, which
 * libdwfl (ours too) or the program keeps while it reads the ELF, and
 * which mmap often places right below the image it was read for.
 */
static int continues_image(const ember__procmap *prev, const ember__procmap *pm)
{
	return pm->dev_major == prev->dev_major && pm->dev_minor == prev->dev_minor &&
	       pm->inode == prev->inode && strcmp(pm->path, prev->path) == 0 && pm->offset != 0 &&
	       pm->offset >= prev->offset;
}

/* Is m's mapping among `maps` (sorted by start)? */
static int still_mapped(const sym_module *m, const ember__procmaps *maps)
{
	size_t lo = 0, hi = maps->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (maps->maps[mid].start < m->info.start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < maps->n && maps->maps[lo].start == m->info.start; lo++)
		if (same_mapping(m, &maps->maps[lo]))
			return 1;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const sym_module *x = *(sym_module *const *)a, *y = *(sym_module *const *)b;
	return x->info.start < y->info.start ? -1 : x->info.start > y->info.start;
}

static int by_recent_gone(const void *a, const void *b)
{
	const sym_module *x = *(sym_module *const *)a, *y = *(sym_module *const *)b;
	return x->gone > y->gone ? -1 : x->gone < y->gone;
}

/*
 * Marks (m->keep) the modules of the table that are no longer mapped and
 * stay in it: samples taken in a library before its dlclose may wait in
 * the window being built, and the refresh that learns of the next
 * library (or JIT code) would otherwise drop the library they need for
 * their names. A module stays unless an image mapped now overlaps the
 * range it had (its address then belongs to the new one); the
 * EMBER_SYM_KEEP_GONE most recently gone stay, older ones go.
 */
static int keep_gone(ember__symbolizer *s, const ember__procmaps *maps,
		     const ember__procmap *images, size_t nimages)
{
	sym_module **cand = calloc(s->nmods + 1, sizeof(*cand));
	if (!cand)
		return ember__error_oom("modules kept");
	size_t n = 0;
	for (size_t i = 0; i < s->nmods; i++) {
		sym_module *m = s->mods[i];
		m->keep = 0;
		if (strcmp(m->info.path, "[vdso]") == 0 || still_mapped(m, maps))
			continue;
		uint64_t lo = m->dm ? m->dm_low : m->info.start, hi = m->dm ? m->dm_high : m->info.limit;
		int over = 0;
		for (size_t k = 0; k < nimages && !over; k++)
			over = images[k].start < hi && lo < images[k].end;
		if (over)
			continue;
		if (!m->gone)
			m->gone = s->refreshes;
		cand[n++] = m;
	}
	if (n > EMBER_SYM_KEEP_GONE) {
		qsort(cand, n, sizeof(*cand), by_recent_gone);
		n = EMBER_SYM_KEEP_GONE;
	}
	for (size_t i = 0; i < n; i++)
		cand[i]->keep = 1;
	free(cand);
	return 0;
}

/*
 * Tells libdwfl the current layout, from the same parse as our table: one
 * module per loaded image that holds code, from its lowest to its highest
 * mapping (anonymous mappings between them, such as .bss, are skipped),
 * and the vDSO. Not dwfl_linux_proc_maps_report(): it merges every
 * consecutive mapping of a file into one module, a private copy of the
 * file next to its image included; that module's low address, and so the
 * load bias libdwfl derives from it, is then wrong and no symbol of the
 * image falls in its range (the image loses every name).
 */
static int report_dwfl(ember__symbolizer *s, const ember__procmaps *maps)
{
	int err = 0;
	/* the images' ranges, for choosing the modules kept (keep_gone) */
	ember__procmap *images = calloc(maps->n + 1, sizeof(*images));
	size_t nimages = 0;
	if (!images)
		return ember__error_oom("image ranges");
	if (s->dwfl)
		dwfl_report_begin(s->dwfl);
	for (size_t i = 0; !err && i < maps->n;) {
		const ember__procmap *pm = &maps->maps[i];
		if (is_vdso(pm)) {
			char name[32];
			snprintf(name, sizeof(name), "[vdso: %d]", (int)s->pid);
			if (s->dwfl && !dwfl_report_module(s->dwfl, name, pm->start, pm->end))
				err = ember__error(EMBER_ERR_SYS, "libdwfl cannot report the vDSO: %s",
						   dwfl_errmsg(-1));
			i++;
			continue;
		}
		if (pm->path[0] != '/' || pm->inode == 0) {
			i++;
			continue;
		}
		/* the image starting at pm: its mappings, anonymous ones between */
		size_t last = i, j = i + 1;
		int code = (pm->perms & EMBER_MAP_EXEC) != 0;
		for (; j < maps->n; j++) {
			const ember__procmap *q = &maps->maps[j];
			if (is_vdso(q))
				break;
			if (q->path[0] != '/' || q->inode == 0)
				continue;
			if (!continues_image(&maps->maps[last], q))
				break;
			last = j;
			code |= (q->perms & EMBER_MAP_EXEC) != 0;
		}
		if (code && s->dwfl &&
		    !dwfl_report_module(s->dwfl, pm->path, pm->start, maps->maps[last].end))
			err = ember__error(EMBER_ERR_SYS, "libdwfl cannot report %s: %s", pm->path,
					   dwfl_errmsg(-1));
		if (code)
			images[nimages++] = (ember__procmap){.start = pm->start, .end = maps->maps[last].end};
		i = last + 1;
	}
	/* Modules no longer mapped that stay (keep_gone): reported again as
	 * they were, libdwfl keeps its module and the file it opened. */
	if (!err)
		err = keep_gone(s, maps, images, nimages);
	/* Libraries dlclose'd before we saw them mapped (dlclosed.h): they
	 * may take the place of kept ones, which they are newer than. */
	if (!err && s->nclosed)
		ember__symbolizer_closed_report(s, images, nimages);
	for (size_t i = 0; !err && i < s->nmods; i++) {
		sym_module *m = s->mods[i];
		if (m->keep && m->dm &&
		    !dwfl_report_module(s->dwfl, m->info.path, m->dm_low, m->dm_high))
			m->keep = 0;
	}
	free(images);
	if (s->dwfl && dwfl_report_end(s->dwfl, NULL, NULL) != 0 && !err)
		err = ember__error(EMBER_ERR_SYS, "libdwfl cannot finish reporting: %s",
				   dwfl_errmsg(-1));
	return err;
}

/* Old module with exactly this mapping, or NULL (old table is sorted). */
static sym_module *find_old(ember__symbolizer *s, const ember__procmap *pm)
{
	ptrdiff_t i = find_module(s, pm->start);
	if (i < 0 || !same_mapping(s->mods[i], pm))
		return NULL;
	return s->mods[i];
}

/*
 * Builds the new module table from `maps`, reusing modules whose mapping
 * is unchanged. On success the old table is replaced, dropped modules are
 * freed and their cache entries purged. On failure nothing changes except
 * that modules created here are freed again.
 */
static int rebuild_modules(ember__symbolizer *s, const ember__procmaps *maps)
{
	size_t nclosed = s->nclosed ? ember__symbolizer_closed_count(s) : 0;
	size_t count = s->nmods + nclosed; /* room for the kept and the closed ones */
	for (size_t i = 0; i < maps->n; i++)
		count += is_module_mapping(&maps->maps[i]);
	sym_module **mods = calloc(count ? count : 1, sizeof(*mods));
	ember__module_info *infos = calloc(count ? count : 1, sizeof(*infos));
	if (!mods || !infos) {
		free(mods);
		free(infos);
		return ember__error_oom("module table");
	}

	for (size_t i = 0; i < s->nmods; i++)
		s->mods[i]->seen = 0;
	size_t n = 0;
	int err = 0;
	for (size_t i = 0; i < maps->n && !err; i++) {
		const ember__procmap *pm = &maps->maps[i];
		if (!is_module_mapping(pm))
			continue;
		sym_module *m = find_old(s, pm);
		if (!m) {
			m = module_new(s, pm);
			if (!m) {
				err = ember__error_oom("module");
				break;
			}
			s->busy = m;
			attach_dwfl(s, m);
			err = module_load(s, m);
			s->busy = NULL;
		}
		m->seen = 1;
		mods[n++] = m;
		if (err)
			break;
	}
	if (err) {
		for (size_t i = 0; i < n; i++) {
			if (!(mods[i]->index < s->nmods && s->mods[mods[i]->index] == mods[i]))
				module_free(mods[i]);
		}
		free(mods);
		free(infos);
		return err;
	}

	/* Modules mapped now are not gone (one may have come back); those no
	 * longer mapped that report_dwfl kept stay, in address order. */
	size_t live = n;
	for (size_t i = 0; i < live; i++)
		mods[i]->gone = 0;
	for (size_t i = 0; i < s->nmods; i++) {
		sym_module *m = s->mods[i];
		if (m->seen || !m->keep)
			continue;
		int over = 0; /* a module mapped now overlaps it: it goes */
		for (size_t k = 0; k < live && !over; k++)
			over = mods[k]->info.start < m->info.limit && m->info.start < mods[k]->info.limit;
		if (over)
			continue;
		m->seen = 1; /* m->gone was set when keep_gone chose it */
		mods[n++] = m;
	}
	/* The libraries of the dlclose journal report_dwfl chose: gone
	 * already (report_dwfl keeps them from the next refresh on). No
	 * image mapped now overlaps them, nor a kept module (it went). */
	for (size_t i = 0; i < nclosed; i++) {
		ember__procmap pm;
		const ember__dlclosed_rec *r = ember__symbolizer_closed_map(s, i, &pm);
		sym_module *m = module_new(s, &pm);
		if (!m)
			break; /* out of memory: those stay unnamed */
		s->busy = m;
		attach_dwfl(s, m);
		ember__symbolizer_closed_check(s, r, m);
		if (module_load(s, m) != 0) {
			s->busy = NULL;
			module_free(m);
			break;
		}
		s->busy = NULL;
		m->gone = s->refreshes;
		m->seen = 1;
		mods[n++] = m;
	}
	if (n > live)
		qsort(mods, n, sizeof(*mods), by_start);
	/* Cache entries point at their modules: when one goes, empty the
	 * cache (unmapping is rare; refilling it is cheap). */
	for (size_t i = 0; i < s->nmods; i++) {
		if (!s->mods[i]->seen) {
			ember__symbolizer_cache_clear(s);
			break;
		}
	}
	for (size_t i = 0; i < s->nmods; i++) {
		if (!s->mods[i]->seen)
			module_free(s->mods[i]);
	}
	for (size_t i = 0; i < n; i++) {
		mods[i]->index = i;
		infos[i] = mods[i]->info;
	}
	free(s->mods);
	free(s->infos);
	s->mods = mods;
	s->infos = infos;
	s->nmods = n;
	return 0;
}

/*
 * Called when elfutils gave up inside a guarded call: the module it was
 * working on (s->busy) is never handed to it again, and the Dwfl, which
 * may hold that half-built state and held locks, is leaked and replaced
 * (none after EMBER__SYM_MAX_ELF_FAILURES). Modules are detached; refresh()
 * re-attaches them.
 */
static void elfutils_gave_up(ember__symbolizer *s, const char *why)
{
	sym_module *bad = s->busy;
	s->busy = NULL;
	s->elf_failures++;
	snprintf(s->elf_failed_last, sizeof(s->elf_failed_last), "%s: %s",
		 bad ? bad->info.path : "reading the module list", why);
	if (bad) {
		bad->elf_failed = 1;
		bad->ix = (ember__symindex)EMBER_SYMINDEX_INIT; /* leaked, maybe half-built */
		bad->dm = NULL;
	}
	for (size_t i = 0; i < s->nmods; i++) {
		sym_module *m = s->mods[i];
		if (m != bad)
			ember__symindex_reset(&m->ix); /* our arrays; libdwfl's data stays leaked */
		m->dm = NULL;
		m->dm_low = m->dm_high = 0;
	}
	s->dwfl = !s->elf_only && (!s->lazy || s->dwfl_started) &&
				  s->elf_failures < EMBER__SYM_MAX_ELF_FAILURES
			  ? dwfl_begin(&callbacks)
			  : NULL;
}

struct refresh_call {
	ember__symbolizer *s;
	int modules; /* 0: only re-report the layout and re-attach */
};

static int refresh_cb(void *arg)
{
	struct refresh_call *c = arg;
	ember__symbolizer *s = c->s;
	ember__procmaps maps = EMBER_PROCMAPS_INIT;
	/* Before the map is read: a library loaded or unloaded while it is
	 * read moves the counters again, and the next poll refreshes. */
	ember__dlgen dl = {0, 0, 0};
	if (c->modules)
		ember__dlgen_read(&dl);
	/* The dlclose journal before the map: a library the map no longer
	 * shows is in the journal by then (its record is written before the
	 * loader unmaps it). Kept if this refresh fails. */
	int err = c->modules ? ember__symbolizer_closed_take(s) : 0;
	if (err < 0)
		return err;
	err = s->remote ? 0 : ember__procmaps_read_self(&maps);
	if (err)
		return err;
	const ember__procmaps *use = s->remote ? &s->layout : &maps;
	if (c->modules) {
		s->refreshes++;
		s->dl = dl;
	}
	for (size_t i = 0; i < s->nmods; i++)
		s->mods[i]->keep = 0; /* report_dwfl decides again; none without a Dwfl */
	int rerr = s->dwfl || s->elf_only || s->lazy ? report_dwfl(s, use) : 0;

	/* libdwfl may have freed modules it no longer saw: re-attach every
	 * surviving module before anything else can fail. */
	int replaced = 0;
	for (size_t i = 0; i < s->nmods; i++) {
		s->busy = s->mods[i];
		replaced |= attach_dwfl(s, s->mods[i]);
	}
	s->busy = NULL;
	/* Cached frames of a re-attached module came from the old one's data
	 * (or from none): resolve them again. */
	if (replaced)
		ember__symbolizer_cache_clear(s);
	if (c->modules) {
		err = rebuild_modules(s, use);
		if (!err)
			err = ember__symbolizer_jit_rebuild(s, use);
		s->nclosed = 0; /* in the table now, or of no use */
	}
	ember__procmaps_free(&maps);
	return err ? err : rerr;
}

/* A refresh inside a guard; if elfutils gives up, again with a new Dwfl
 * (bounded: the last failure leaves no Dwfl, and so nothing to fail). */
static int refresh(ember__symbolizer *s, int modules)
{
	for (;;) {
		char why[256];
		struct refresh_call call = {s, modules};
		int err = ember__elfguard_run(refresh_cb, &call, why, sizeof(why));
		if (err != EMBER__ELFGUARD_TRIPPED)
			return err;
		elfutils_gave_up(s, why);
	}
}

int ember__symbolizer_refresh(ember__symbolizer *s)
{
	if (!s)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_refresh: NULL symbolizer");
	return refresh(s, 1);
}

int ember__symbolizer_poll(ember__symbolizer *s)
{
	if (!s)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_poll: NULL symbolizer");
	if (s->remote)
		return 0; /* its layout is given, not polled */
	/* A library in the dlclose journal that the table does not know was
	 * loaded and unloaded since the last refresh (its unload moved the
	 * counters, but perhaps before that refresh read the journal). */
	int unknown = ember__symbolizer_closed_take(s);
	if (unknown < 0)
		return unknown;
	ember__dlgen now;
	ember__dlgen_read(&now);
	if (!unknown && !ember__dlgen_moved(&s->dl, &now)) {
		s->nclosed = 0; /* libraries the table knows: nothing to add */
		return 0;
	}
	int err = refresh(s, 1);
	return err ? err : 1;
}

uint64_t ember__symbolizer_elf_failures(const ember__symbolizer *s, const char **last)
{
	if (last)
		*last = s ? s->elf_failed_last : "";
	return s ? s->elf_failures : 0;
}

static int symbolizer_new(ember__symbolizer **out, pid_t pid, const ember__procmaps *maps,
			  unsigned flags);

int ember__symbolizer_new(ember__symbolizer **out)
{
	return ember__symbolizer_new_opts(out, 0);
}

int ember__symbolizer_new_opts(ember__symbolizer **out, unsigned flags)
{
	if (!out)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_new: NULL out");
	return symbolizer_new(out, getpid(), NULL,
			      flags & (EMBER__SYM_ADDRESSES_ONLY | EMBER__SYM_DLCLOSED));
}

int ember__symbolizer_new_remote(ember__symbolizer **out, pid_t pid,
				 const ember__procmaps *maps)
{
	return ember__symbolizer_new_remote_opts(out, pid, maps, 0);
}

int ember__symbolizer_new_remote_opts(ember__symbolizer **out, pid_t pid,
				      const ember__procmaps *maps, unsigned flags)
{
	if (!out || !maps || pid <= 0)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_new_remote: no process or layout");
	return symbolizer_new(out, pid, maps, flags & EMBER__SYM_ADDRESSES_ONLY);
}

int ember__symbolizer_new_offline(ember__symbolizer **out, const ember__procmaps *layout)
{
	if (!out || !layout)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_new_offline: no layout");
	return symbolizer_new(out, 0, layout, EMBER__SYM_OFFLINE);
}

int ember__symbolizer_set_maps(ember__symbolizer *s, const ember__procmaps *maps)
{
	if (!s || !s->remote || !maps)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_set_maps: not a remote symbolizer");
	ember__procmaps copy = EMBER_PROCMAPS_INIT;
	int err = ember__procmaps_copy(&copy, maps);
	if (err)
		return err;
	ember__procmaps_free(&s->layout);
	s->layout = copy;
	return refresh(s, 1);
}

int ember__symbolizer_set_main(ember__symbolizer *s, const char *path)
{
	char *c = path ? strdup(path) : NULL;
	if (path && !c)
		return ember__error_oom("main executable's path");
	free(s->main_path);
	s->main_path = c;
	return 0;
}

const char *ember__symbolizer_main(const ember__symbolizer *s)
{
	return s ? s->main_path : NULL;
}

static int symbolizer_new(ember__symbolizer **out, pid_t pid, const ember__procmaps *maps,
			  unsigned flags)
{
	*out = NULL;
	/* Addresses only, of this process: libelf is enough; names for this
	 * process: libelf first, libdw when a module needs it (lazy,
	 * symbolizer_elf.c). The tools' hooks (debugfile.h) are libdwfl's. */
	int elf_only = (flags & EMBER__SYM_ADDRESSES_ONLY) && !maps;
	int lazy = !elf_only && !maps && !ember__debugfile_get_hooks();
	int lrc = ember__lazydep_load(&ember__libelf);
	if (lrc == 0 && !elf_only && !lazy)
		lrc = ember__lazydep_load(&ember__elfutils);
	if (lrc < 0)
		return lrc;
	ember__symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		return ember__error_oom("symbolizer");
	s->pid = pid;
	s->remote = maps != NULL;
	s->flags = flags;
	s->elf_only = elf_only;
	s->lazy = lazy;
	s->pmf.target = maps ? pid : 0;
	s->next_id = 1;
	if (maps && ember__procmaps_copy(&s->layout, maps) != 0) {
		free(s);
		return EMBER_ERR_NOMEM;
	}
	elf_version(EV_CURRENT); /* libdwfl does this too; we call libelf directly */
	s->dwfl = elf_only || lazy ? NULL : dwfl_begin(&callbacks);
	if (!s->dwfl && !elf_only && !lazy) {
		ember__procmaps_free(&s->layout);
		free(s);
		return ember__error(EMBER_ERR_SYS, "dwfl_begin failed: %s", dwfl_errmsg(-1));
	}
	int err = refresh(s, 1);
	if (err) {
		ember__symbolizer_free(s);
		return err;
	}
	*out = s;
	return 0;
}

void ember__symbolizer_free(ember__symbolizer *s)
{
	if (!s)
		return;
	ember__symbolizer_cache_clear(s);
	free(s->cache);
	for (size_t i = 0; i < s->nmods; i++)
		module_free(s->mods[i]);
	free(s->mods);
	free(s->infos);
	free(s->jits);
	free(s->closed);
	free(s->closed_use);
	ember__perfmap_file_reset(&s->pmf);
	ember__procmaps_free(&s->layout);
	free(s->main_path);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	free(s);
}
