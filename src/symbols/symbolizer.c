/*
 * symbolizer.c - addresses of this process to modules, functions, files
 * and lines, on top of libdwfl.
 *
 * Two views of the address space are kept in step:
 *   - our module table: one module per executable file mapping (plus the
 *     vDSO), sorted by address, each with a stable id, the strings we hand
 *     out and a cache of resolved addresses;
 *   - a Dwfl session, which owns the ELF and DWARF data. Each refresh reads
 *     /proc/self/maps once and feeds the same text to libdwfl
 *     (dwfl_linux_proc_maps_report over an in-memory stream) and to our
 *     parser, so both see the same layout. libdwfl keeps a module that is
 *     re-reported with the same name and range, with everything it loaded,
 *     so a refresh only pays for new modules.
 *
 * The vDSO has no file; libdwfl reads it from memory when it is reported
 * under the name "[vdso: PID]", which dwfl_linux_proc_find_elf recognises.
 *
 * Strings handed out are copied into the owning module's arena and
 * interned there, so their number is bounded by the module's distinct
 * names and files, and they live exactly as long as the module. The
 * address cache is bounded; when it fills up, or when a module goes away,
 * it is emptied, which frees only the frame arrays, never the strings.
 */
#include "symbols/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "emberprof.h"
#include "symbols/demangle.h"
#include "symbols/procmaps.h"
#include "util/arena.h"
#include "util/error.h"

#define CACHE_MIN_SLOTS 1024u
#define CACHE_MAX_SLOTS (1u << 16) /* at most 32K cached addresses, ~2.4 MB */
#define MAX_SCOPES 64             /* inline depth we look at before trimming */

/* ---------------------------------------------------------------------- */
/* Modules                                                                 */

/* One function symbol of a module's index; name is libelf-owned. */
typedef struct sym_entry {
	uint64_t addr, size;
	const char *name;
	unsigned rank; /* preference among symbols at one address, lower wins */
} sym_entry;

/* One function's code range in the DWARF index. */
typedef struct func_range {
	uint64_t lo, hi; /* absolute addresses, [lo, hi) */
	Dwarf_Off die;   /* offset of its DW_TAG_subprogram in .debug_info */
} func_range;

typedef struct sym_module {
	ember__module_info info; /* path and build_id point into arena */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	Dwfl_Module *dm;         /* NULL if libdwfl does not know the module */
	size_t index;            /* position in the symbolizer's tables */
	int seen;                /* marked while diffing during a refresh */
	ember__arena arena;      /* every string handed out for this module */
	const char **strs;       /* interned strings: open addressing */
	size_t strs_cap, strs_count;
	sym_entry *syms;         /* sorted by addr, one per address */
	size_t nsyms;
	int syms_built;          /* syms reflects dm's symbol table */
	func_range *funcs;       /* sorted by lo */
	size_t nfuncs;
	int funcs_built;         /* funcs reflects dm's DWARF */
	Dwarf *dw;               /* dm's DWARF (owned by libdwfl), NULL if none */
	Dwarf_Addr dwbias;       /* DWARF addresses + dwbias = ours */
} sym_module;

typedef struct cache_entry {
	uint64_t addr;
	sym_module *mod;               /* NULL: empty slot */
	uint32_t nframes;
	ember__symbol_frame first;     /* frames[0] */
	ember__symbol_frame *rest;     /* frames[1..nframes-1], malloc'd */
} cache_entry;

struct ember__symbolizer {
	Dwfl *dwfl;
	pid_t pid;
	sym_module **mods;          /* sorted by start */
	ember__module_info *infos;  /* infos[i] is a copy of mods[i]->info */
	size_t nmods;
	uint32_t next_id;
	cache_entry *cache;
	size_t cache_cap, cache_count;
};

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

static void module_free(sym_module *m)
{
	if (!m)
		return;
	ember__arena_release(&m->arena);
	free(m->strs);
	free(m->syms);
	free(m->funcs);
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

/*
 * Finds the libdwfl module covering our module's mapping and checks that it
 * is the same file (a concurrent dlopen/dlclose could make them differ only
 * if the two views came from different reads; they do not, but stay safe).
 */
static Dwfl_Module *find_dwfl_module(Dwfl *dwfl, const sym_module *m)
{
	Dwfl_Module *dm = dwfl_addrmodule(dwfl, m->info.start);
	if (!dm)
		return NULL;
	const char *name = dwfl_module_info(dm, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	if (!name)
		return NULL;
	if (strcmp(m->info.path, "[vdso]") == 0)
		return strncmp(name, "[vdso", 5) == 0 ? dm : NULL;
	return strcmp(name, m->info.path) == 0 ? dm : NULL;
}

/*
 * Loads what the module table advertises about a new module up front: its
 * build id and whether it has symbols. That opens the file (and, for a
 * stripped file, finds its debug file and reads its .symtab). The DWARF,
 * which can be large and compressed, is loaded only when an address in
 * the module is first looked up; has_lines is set then.
 */
static int module_load(sym_module *m)
{
	if (!m->dm)
		return 0;
	Dwarf_Addr bias;
	if (!dwfl_module_getelf(m->dm, &bias))
		return 0; /* not an ELF file we can read: no symbols */

	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(m->dm, &bits, &vaddr);
	if (n > 0) {
		char *hex = ember__arena_alloc(&m->arena, (size_t)n * 2 + 1);
		if (!hex)
			return ember__error_oom("build id");
		for (int i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", bits[i]);
		m->info.build_id = hex;
	}
	m->info.has_symbols = dwfl_module_getsymtab(m->dm) > 0;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The address cache                                                       */

static size_t cache_slot(uint64_t addr, size_t cap)
{
	return (size_t)((addr * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static void cache_clear(ember__symbolizer *s)
{
	for (size_t i = 0; i < s->cache_cap; i++) {
		free(s->cache[i].rest);
		s->cache[i] = (cache_entry){0};
	}
	s->cache_count = 0;
}

static cache_entry *cache_get(ember__symbolizer *s, uint64_t addr)
{
	if (!s->cache_count)
		return NULL;
	for (size_t i = cache_slot(addr, s->cache_cap);; i = (i + 1) & (s->cache_cap - 1)) {
		if (!s->cache[i].mod)
			return NULL;
		if (s->cache[i].addr == addr)
			return &s->cache[i];
	}
}

static void cache_place(cache_entry *table, size_t cap, const cache_entry *e)
{
	size_t i = cache_slot(e->addr, cap);
	while (table[i].mod)
		i = (i + 1) & (cap - 1);
	table[i] = *e;
}

/* Moves every entry into a new table of `cap` slots. */
static int cache_grow(ember__symbolizer *s, size_t cap)
{
	cache_entry *n = calloc(cap, sizeof(*n));
	if (!n)
		return ember__error_oom("symbol cache");
	for (size_t i = 0; i < s->cache_cap; i++) {
		if (s->cache[i].mod)
			cache_place(n, cap, &s->cache[i]);
	}
	free(s->cache);
	s->cache = n;
	s->cache_cap = cap;
	return 0;
}

/* Takes ownership of e->rest. Never fails: when it cannot grow, it empties. */
static void cache_put(ember__symbolizer *s, cache_entry *e)
{
	if ((s->cache_count + 1) * 2 > s->cache_cap) {
		if (s->cache_cap >= CACHE_MAX_SLOTS ||
		    cache_grow(s, s->cache_cap ? s->cache_cap * 2 : CACHE_MIN_SLOTS))
			cache_clear(s);
	}
	if (!s->cache_cap) { /* could not even allocate the first table */
		free(e->rest);
		return;
	}
	cache_place(s->cache, s->cache_cap, e);
	s->cache_count++;
}

/* ---------------------------------------------------------------------- */
/* The symbol index                                                        */

/*
 * dwfl_module_addrinfo() scans the whole symbol table on every call (about
 * 0.3 ms per lookup in libc with its debug symbols), so each module gets a
 * sorted index instead, built once from the same symbols, enumerated with
 * dwfl_module_getsym_info(): .symtab (the file's or its debug file's),
 * else .dynsym, with addresses already relocated to this process.
 */

static unsigned leading_underscores(const char *s)
{
	unsigned n = 0;
	while (s[n] == '_')
		n++;
	return n;
}

/* Orders by address; at one address the preferred symbol comes first:
 * sized over sizeless, global over weak over local, a typed function over
 * a bare label, fewer leading underscores ("printf" over "_IO_printf"). */
static int cmp_sym(const void *a, const void *b)
{
	const sym_entry *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if ((x->size == 0) != (y->size == 0))
		return x->size == 0 ? 1 : -1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	unsigned ux = leading_underscores(x->name), uy = leading_underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	return strcmp(x->name, y->name);
}

static unsigned sym_rank(const GElf_Sym *sym)
{
	int bind = GELF_ST_BIND(sym->st_info);
	unsigned r = bind == STB_GLOBAL || bind == STB_GNU_UNIQUE ? 0 : bind == STB_WEAK ? 1 : 2;
	return GELF_ST_TYPE(sym->st_info) == STT_NOTYPE ? r + 3 : r;
}

static int build_index(sym_module *m)
{
	free(m->syms);
	m->syms = NULL;
	m->nsyms = 0;
	m->syms_built = 1;
	int total = m->dm ? dwfl_module_getsymtab(m->dm) : -1;
	if (total <= 1)
		return 0;
	sym_entry *v = malloc((size_t)total * sizeof(*v));
	if (!v) {
		m->syms_built = 0;
		return ember__error_oom("symbol index");
	}
	size_t n = 0;
	for (int i = 1; i < total; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf;
		Dwarf_Addr bias;
		const char *name = dwfl_module_getsym_info(m->dm, i, &sym, &addr, &shndx, &elf, &bias);
		int type = name ? GELF_ST_TYPE(sym.st_info) : -1;
		if (!name || !name[0] || shndx == SHN_UNDEF || shndx == SHN_ABS ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		if (addr < m->info.start || addr >= m->info.limit)
			continue;
		v[n++] = (sym_entry){addr, sym.st_size, name, sym_rank(&sym)};
	}
	qsort(v, n, sizeof(*v), cmp_sym);
	size_t k = 0; /* keep the preferred symbol of each address */
	for (size_t i = 0; i < n; i++) {
		if (k == 0 || v[k - 1].addr != v[i].addr)
			v[k++] = v[i];
	}
	m->syms = v;
	m->nsyms = k;
	return 0;
}

/* How far back to look for a sized symbol enclosing a later one. */
#define ENCLOSING_LOOKBACK 16

/*
 * The symbol covering addr: the closest one at or below it if it is
 * sizeless (it then runs to the next symbol) or its size reaches addr;
 * otherwise a nearby earlier symbol whose size encloses addr; else NULL.
 */
static const char *symbol_at(sym_module *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const sym_entry *e = &m->syms[lo - 1];
	if (e->size == 0 || addr - e->addr < e->size)
		return e->name;
	for (size_t j = lo - 1; j-- > 0 && lo - 1 - j <= ENCLOSING_LOOKBACK;) {
		e = &m->syms[j];
		if (e->size && addr - e->addr < e->size)
			return e->name;
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The function index and inline expansion                                 */

/*
 * dwarf_getscopes() walks the compilation unit's DIE tree from its root on
 * every call, about 0.1 ms per address in libc, so each module with DWARF
 * gets an index of its functions' code ranges instead, built once by a
 * dwarf_getfuncs-style walk over the top of every unit. A lookup then
 * binary-searches the function and descends only into its own scopes.
 */

/* A frame before its strings are interned: they are libdw/libelf-owned. */
typedef struct raw_frame {
	const char *system_name, *file;
	int line;
} raw_frame;

static const char *die_string(Dwarf_Die *die, unsigned name)
{
	Dwarf_Attribute attr;
	if (!dwarf_attr_integrate(die, name, &attr))
		return NULL;
	return dwarf_formstring(&attr);
}

static const char *die_linkage_name(Dwarf_Die *die)
{
	const char *n = die_string(die, DW_AT_linkage_name);
	return n ? n : die_string(die, DW_AT_MIPS_linkage_name);
}

/* The caller's position for an inlined call: DW_AT_call_file/call_line. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inlined, const char **file, int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	*file = NULL;
	*line = 0;
	if (dwarf_attr(inlined, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &v) == 0 &&
	    v <= (Dwarf_Word)INT32_MAX)
		*line = (int)v;
	Dwarf_Files *files;
	size_t nfiles;
	if (dwarf_attr(inlined, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &v) == 0 &&
	    dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && v < nfiles)
		*file = dwarf_filesrc(files, v, NULL, NULL);
}

typedef struct func_vec {
	func_range *v;
	size_t n, cap;
} func_vec;

static int add_func_ranges(sym_module *m, Dwarf_Die *die, func_vec *fv)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		uint64_t lo = start + m->dwbias, hi = end + m->dwbias;
		if (end <= start || hi <= m->info.start || lo >= m->info.limit)
			continue;
		if (fv->n == fv->cap) {
			size_t ncap = fv->cap ? fv->cap * 2 : 256;
			func_range *nv = realloc(fv->v, ncap * sizeof(*nv));
			if (!nv)
				return ember__error_oom("function index");
			fv->v = nv;
			fv->cap = ncap;
		}
		fv->v[fv->n++] = (func_range){lo, hi, dwarf_dieoffset(die)};
	}
	return 0;
}

/* Functions are children of the unit, or of namespaces (and Fortran
 * modules) within it; member functions are defined at the top with
 * DW_AT_specification, so class bodies need no visit. */
static int index_scope(sym_module *m, Dwarf_Die *parent, func_vec *fv, int depth)
{
	Dwarf_Die child;
	if (dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int err = 0;
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			err = add_func_ranges(m, &child, fv);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
			if (depth < 32)
				err = index_scope(m, &child, fv, depth + 1);
			break;
		default:
			break;
		}
		if (err)
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	const func_range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi > y->hi ? -1 : x->hi < y->hi; /* wider first */
}

static int build_funcs(sym_module *m)
{
	m->funcs_built = 1;
	m->dw = m->dm ? dwfl_module_getdwarf(m->dm, &m->dwbias) : NULL;
	if (!m->dw)
		return 0;
	func_vec fv = {0};
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	while (dwarf_get_units(m->dw, cu, &next, &version, &unit_type, &cudie, &subdie) == 0) {
		cu = next;
		/* Type units hold no code; split units live in other files. */
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		int err = index_scope(m, &cudie, &fv, 0);
		if (err) {
			free(fv.v);
			m->funcs_built = 0;
			return err;
		}
	}
	qsort(fv.v, fv.n, sizeof(*fv.v), cmp_func);
	m->funcs = fv.v;
	m->nfuncs = fv.n;
	return 0;
}

/* How far back to look for a range enclosing a later one (nested
 * functions, GNU C). */
#define FUNC_LOOKBACK 4

static const func_range *func_at(const sym_module *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nfuncs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->funcs[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t j = lo; j-- > 0 && lo - j <= FUNC_LOOKBACK;) {
		if (addr < m->funcs[j].hi)
			return &m->funcs[j];
	}
	return NULL;
}

/* The child scope of `parent` that contains pc and may contain inlined
 * code, if any. */
static int child_at(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out)
{
	if (dwarf_child(parent, out) != 0)
		return 0;
	do {
		switch (dwarf_tag(out)) {
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_with_stmt:
			if (dwarf_haspc(out, pc) == 1)
				return 1;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(out, out) == 0);
	return 0;
}

/*
 * Finds the function containing addr and the chain of inlined calls at
 * addr, innermost first: each inlined subroutine is a frame, ending with the
 * subprogram that contains them. Frame i's position is where frame i-1 was
 * called from (DW_AT_call_file/line); frame 0's is the line-table position,
 * filled in by the caller. Returns the number of frames (0 without usable
 * debug info), at most `max`; when there are more, the innermost max-1 and
 * the outermost are kept.
 */
static int inline_frames(sym_module *m, uint64_t addr, raw_frame *out, int max)
{
	const func_range *fr = func_at(m, addr);
	Dwarf_Die path[MAX_SCOPES]; /* path[0] the subprogram, then inlined */
	if (!fr || !dwarf_offdie(m->dw, fr->die, &path[0]))
		return 0;
	Dwarf_Addr pc = addr - m->dwbias;
	int depth = 1;
	Dwarf_Die cur = path[0], child;
	while (depth < MAX_SCOPES && child_at(&cur, pc, &child)) {
		cur = child;
		if (dwarf_tag(&cur) == DW_TAG_inlined_subroutine)
			path[depth++] = cur;
	}
	Dwarf_Die cudie;
	if (!dwarf_diecu(&path[0], &cudie, NULL, NULL))
		return 0;

	raw_frame all[MAX_SCOPES];
	const char *file = NULL;
	int line = 0, n = 0;
	for (int k = depth - 1; k >= 0; k--, n++) {
		const char *linkage = die_linkage_name(&path[k]);
		all[n] = (raw_frame){linkage ? linkage : die_string(&path[k], DW_AT_name), file,
				     line};
		if (k > 0)
			call_site(&cudie, &path[k], &file, &line);
	}
	if (n > max) {
		all[max - 1] = all[n - 1];
		n = max;
	}
	memcpy(out, all, (size_t)n * sizeof(*out));
	return n;
}

/* ---------------------------------------------------------------------- */
/* Resolving one address                                                   */

/* Interns one raw frame's strings into the module; demangles the name. */
static int finish_frame(sym_module *m, const raw_frame *raw, ember__symbol_frame *f)
{
	*f = (ember__symbol_frame){0};
	f->line = raw->line;
	if (raw->file && !(f->file = intern(m, raw->file)))
		return ember__error_oom("symbol strings");
	if (!raw->system_name)
		return 0;
	if (!(f->system_name = intern(m, raw->system_name)))
		return ember__error_oom("symbol strings");
	char *demangled = ember__demangle(raw->system_name);
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

/* Resolves addr in module m into a new cache entry (not yet inserted). */
static int resolve(ember__symbolizer *s, sym_module *m, uint64_t addr, cache_entry *e)
{
	raw_frame raw[EMBER_MAX_INLINE];
	int n = 0;
	*e = (cache_entry){.addr = addr, .mod = m};
	if (!m->dm)
		return 0;

	if (!m->syms_built) {
		int err = build_index(m);
		if (err)
			return err;
	}
	const char *symname = symbol_at(m, addr);
	const char *file = NULL;
	int line = 0;
	Dwfl_Line *dl = dwfl_module_getsrc(m->dm, addr);
	if (dl)
		file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);
	if (!file)
		line = 0;

	if (!m->funcs_built) {
		int err = build_funcs(m);
		if (err)
			return err;
		m->info.has_lines = m->dw != NULL;
		s->infos[m->index].has_lines = m->info.has_lines;
	}
	n = inline_frames(m, addr, raw, EMBER_MAX_INLINE);
	if (n > 0) {
		raw[0].file = file;
		raw[0].line = line;
		/* The symbol table names the real (outermost) function best: it
		 * is what the linker saw, e.g. "foo.cold" for a split function. */
		if (symname)
			raw[n - 1].system_name = symname;
	} else if (symname || file) {
		raw[0] = (raw_frame){symname, file, line};
		n = 1;
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

static void fill_info(const ember__symbolizer *s, const cache_entry *e, ember__symbol_info *out)
{
	out->module = &s->infos[e->mod->index];
	out->nframes = e->nframes;
	if (e->nframes > 0)
		out->frames[0] = e->first;
	for (uint32_t i = 1; i < e->nframes; i++)
		out->frames[i] = e->rest[i - 1];
}

/* Index of the module containing addr, or -1. */
static ptrdiff_t find_module(const ember__symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nmods;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < s->infos[mid].start)
			hi = mid;
		else if (addr >= s->infos[mid].limit)
			lo = mid + 1;
		else
			return (ptrdiff_t)mid;
	}
	return -1;
}

int ember__symbolizer_lookup(ember__symbolizer *s, uint64_t addr, ember__symbol_info *out)
{
	if (!s || !out)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_lookup: NULL argument");
	out->module = NULL;
	out->nframes = 0;
	ptrdiff_t idx = find_module(s, addr);
	if (idx < 0)
		return 0;

	cache_entry *hit = cache_get(s, addr);
	if (hit) {
		fill_info(s, hit, out);
		return 0;
	}
	cache_entry e;
	int err = resolve(s, s->mods[idx], addr, &e);
	if (err) {
		free(e.rest);
		return err;
	}
	/* Fill from the local entry: cache_put may have to drop it. */
	fill_info(s, &e, out);
	cache_put(s, &e);
	return 0;
}

int ember__symbolizer_covers(const ember__symbolizer *s, uint64_t addr)
{
	return s && find_module(s, addr) >= 0;
}

size_t ember__symbolizer_modules(const ember__symbolizer *s, const ember__module_info **out)
{
	if (out)
		*out = s ? s->infos : NULL;
	return s ? s->nmods : 0;
}

/* ---------------------------------------------------------------------- */
/* Finding debug files                                                     */

/*
 * Checks that fd is the debug file of mod: by build id when the module has
 * one, else by the CRC-32 that .gnu_debuglink records (zlib's crc32 is the
 * same function). Leaves the file offset at 0.
 */
static int debug_file_matches(Dwfl_Module *mod, int fd, GElf_Word crc)
{
	const unsigned char *want;
	GElf_Addr vaddr;
	int wlen = dwfl_module_build_id(mod, &want, &vaddr);
	if (wlen > 0) {
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *got = NULL;
		ssize_t glen = elf ? dwelf_elf_gnu_build_id(elf, &got) : -1;
		int ok = glen == wlen && memcmp(got, want, (size_t)wlen) == 0;
		elf_end(elf);
		return ok;
	}
	unsigned char buf[16384];
	uLong c = crc32(0L, Z_NULL, 0);
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)r);
	if (lseek(fd, 0, SEEK_SET) != 0)
		return 0;
	return r == 0 && (GElf_Word)c == crc;
}

/* Opens dir/sub/name if it exists, is not the main file and matches. */
static int try_debug_file(Dwfl_Module *mod, const struct stat *main_st, const char *dir,
			  const char *sub, const char *name, GElf_Word crc, char **found)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s%s/%s", dir, sub, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || (st.st_dev == main_st->st_dev && st.st_ino == main_st->st_ino) ||
	    !debug_file_matches(mod, fd, crc) || !(*found = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * libdwfl's find_debuginfo callback. It does what
 * dwfl_standard_find_debuginfo does on the local disk: first the build-id
 * tree (/usr/lib/debug/.build-id/xx/yyyy.debug, through
 * dwfl_build_id_find_debuginfo), then the .gnu_debuglink name next to the
 * file, in its .debug subdirectory and under /usr/lib/debug/<dir>. It
 * deliberately does not call dwfl_standard_find_debuginfo: elfutils 0.188
 * ends that search by dlopen'ing libdebuginfod (which pulls about thirty
 * libraries such as libcurl, gnutls and krb5 into the profiled process even
 * when DEBUGINFOD_URLS is unset) and, when it is set, by downloading debug
 * info over the network from inside the profiled process.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
					      debuglink_file, debuglink_crc,
					      debuginfo_file_name);
	if (fd >= 0 || !debuglink_file || !file_name || file_name[0] != '/')
		return fd;

	struct stat main_st;
	if (stat(file_name, &main_st) != 0)
		return -1;
	const char *slash = strrchr(file_name, '/');
	char dir[PATH_MAX];
	size_t dlen = (size_t)(slash - file_name);
	if (dlen >= sizeof(dir))
		return -1;
	memcpy(dir, file_name, dlen);
	dir[dlen] = '\0';
	const char *link = strchr(debuglink_file, '/') ? strrchr(debuglink_file, '/') + 1
						    : debuglink_file;
	char global[PATH_MAX];
	int n = snprintf(global, sizeof(global), "/usr/lib/debug%s", dir);
	const char *places[3][2] = {{dir, ""}, {dir, "/.debug"}, {global, ""}};
	for (int i = 0; i < 3; i++) {
		if (i == 2 && (n < 0 || (size_t)n >= sizeof(global)))
			break;
		fd = try_debug_file(mod, &main_st, places[i][0], places[i][1], link,
				    debuglink_crc, debuginfo_file_name);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Reporting and refreshing                                                */

static char *default_debuginfo_path = NULL; /* NULL: the standard search path */

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = find_debuginfo,
	.debuginfo_path = &default_debuginfo_path,
};

/* Tells libdwfl the current layout, from the same maps text we parsed. */
static int report_dwfl(ember__symbolizer *s, char *text, size_t len, const ember__procmaps *maps)
{
	int err = 0;
	dwfl_report_begin(s->dwfl);
	FILE *f = fmemopen(text, len ? len : 1, "r");
	if (!f) {
		err = ember__error_errno(EMBER_ERR_SYS, errno, "fmemopen of maps text");
	} else {
		int rc = dwfl_linux_proc_maps_report(s->dwfl, f);
		fclose(f);
		if (rc != 0)
			err = ember__error(EMBER_ERR_SYS, "libdwfl cannot report modules: %s",
					   rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
	}
	for (size_t i = 0; !err && i < maps->n; i++) {
		const ember__procmap *pm = &maps->maps[i];
		if (!is_vdso(pm))
			continue;
		char name[32];
		snprintf(name, sizeof(name), "[vdso: %d]", (int)s->pid);
		if (!dwfl_report_module(s->dwfl, name, pm->start, pm->end))
			err = ember__error(EMBER_ERR_SYS, "libdwfl cannot report the vDSO: %s",
					   dwfl_errmsg(-1));
	}
	if (dwfl_report_end(s->dwfl, NULL, NULL) != 0 && !err)
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
	size_t count = 0;
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
			m->dm = find_dwfl_module(s->dwfl, m);
			err = module_load(m);
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

	/* Cache entries point at their modules: when one goes, empty the
	 * cache (unmapping is rare; refilling it is cheap). */
	for (size_t i = 0; i < s->nmods; i++) {
		if (!s->mods[i]->seen) {
			cache_clear(s);
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

int ember__symbolizer_refresh(ember__symbolizer *s)
{
	if (!s)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_refresh: NULL symbolizer");
	char *text;
	size_t len;
	int err = ember__procmaps_slurp("/proc/self/maps", &text, &len);
	if (err)
		return err;
	ember__procmaps maps = EMBER_PROCMAPS_INIT;
	err = ember__procmaps_parse(text, len, &maps);
	if (err) {
		free(text);
		return err;
	}
	int rerr = report_dwfl(s, text, len, &maps);
	free(text);

	/* libdwfl may have freed modules it no longer saw: re-attach every
	 * surviving module before anything else can fail. */
	for (size_t i = 0; i < s->nmods; i++) {
		sym_module *m = s->mods[i];
		Dwfl_Module *dm = find_dwfl_module(s->dwfl, m);
		if (dm != m->dm) {
			/* The indexes point into the old module's data. */
			free(m->syms);
			free(m->funcs);
			m->syms = NULL;
			m->funcs = NULL;
			m->nsyms = m->nfuncs = 0;
			m->syms_built = m->funcs_built = 0;
			m->dw = NULL;
			m->dm = dm;
		}
	}
	err = rebuild_modules(s, &maps);
	ember__procmaps_free(&maps);
	return err ? err : rerr;
}

int ember__symbolizer_new(ember__symbolizer **out)
{
	if (!out)
		return ember__error(EMBER_ERR_INVALID, "symbolizer_new: NULL out");
	*out = NULL;
	ember__symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		return ember__error_oom("symbolizer");
	s->pid = getpid();
	s->next_id = 1;
	elf_version(EV_CURRENT); /* libdwfl does this too; we call libelf directly */
	s->dwfl = dwfl_begin(&callbacks);
	if (!s->dwfl) {
		free(s);
		return ember__error(EMBER_ERR_SYS, "dwfl_begin failed: %s", dwfl_errmsg(-1));
	}
	int err = ember__symbolizer_refresh(s);
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
	cache_clear(s);
	free(s->cache);
	for (size_t i = 0; i < s->nmods; i++)
		module_free(s->mods[i]);
	free(s->mods);
	free(s->infos);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	free(s);
}
