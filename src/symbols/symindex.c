/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symindex.c - the symbolizer's per-module indexes: function symbols
 * sorted by address, and the code ranges of the functions in the module's
 * DWARF, through which the inlined calls at an address are found.
 */
#include "symbols/symindex.h"

#include <stdlib.h>
#include <string.h>

#include "symbols/elfguard.h"
#include "symbols/pltsyms.h"
#include "util/error.h"
#include "util/sort.h"

#define MAX_SCOPES 64 /* inline depth we look at before trimming */
#define RANK_NAME_DONE 0x80000000u /* in a symbol's rank: its name is final */

void ember__symindex_reset(ember__symindex *ix)
{
	free(ix->syms);
	free(ix->funcs);
	ember__arena_release(&ix->names);
	ember__u64map_free(&ix->scanned);
	ember__u64map_free(&ix->scanned_floor);
	*ix = (ember__symindex)EMBER_SYMINDEX_INIT;
}

/* ---------------------------------------------------------------------- */
/* The symbol index                                                        */

/*
 * dwfl_module_addrinfo() scans the whole symbol table on every call (about
 * 0.3 ms per lookup in libc with its debug symbols), so each module gets a
 * sorted index instead, built once from the same symbols, enumerated with
 * dwfl_module_getsym_info(): .symtab (the file's or its debug file's),
 * else .dynsym, with addresses already relocated to this process.
 *
 * The build reads no name (only the symbols at one address are compared
 * by name): a name is looked at, and its version dropped, when a lookup
 * returns it. A big module's string table is mostly never read: in
 * librustc_driver it is 20 MB against 4 MB of symbols, and reading every
 * name at the build faulted in all of it for the few hundred functions a
 * short run's samples land in.
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
	const ember__sym_entry *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if ((x->size == 0) != (y->size == 0))
		return x->size == 0 ? 1 : -1;
	unsigned rx = x->rank & ~RANK_NAME_DONE, ry = y->rank & ~RANK_NAME_DONE;
	if (rx != ry)
		return rx < ry ? -1 : 1;
	/* an empty name loses (it names nothing) */
	if ((x->name[0] == '\0') != (y->name[0] == '\0'))
		return x->name[0] == '\0' ? 1 : -1;
	unsigned ux = leading_underscores(x->name), uy = leading_underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	return strcmp(x->name, y->name);
}

static uint32_t clamp_size(uint64_t size)
{
	return size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
}

static unsigned sym_rank(const GElf_Sym *sym)
{
	int bind = GELF_ST_BIND(sym->st_info);
	unsigned r = bind == STB_GLOBAL || bind == STB_GNU_UNIQUE ? 0 : bind == STB_WEAK ? 1 : 2;
	return GELF_ST_TYPE(sym->st_info) == STT_NOTYPE ? r + 3 : r;
}

/* The name without a symbol version: "memcpy@@GLIBC_2.14" and
 * "memcpy@GLIBC_2.2.5" are "memcpy" (a copy in the index's arena), any
 * other name is itself. NULL on OOM. */

static const char *unversioned(ember__symindex *ix, const char *name)
{
	const char *at = strchr(name, '@');
	if (!at || at == name)
		return name;
	return ember__arena_strndup(&ix->names, name, (size_t)(at - name));
}

/* Appends the PLT stubs of the module's file elf (bias: its load bias)
 * that lie in [start, limit) to v, which holds *n entries (grown). */
static int add_plt_stubs(ember__symindex *ix, Elf *elf, uint64_t bias, uint64_t start,
			 uint64_t limit, ember__sym_entry **v, size_t *n)
{
	ember__plt_stub *stubs;
	size_t ns;
	int err = ember__plt_stubs(elf, &ix->names, &stubs, &ns);
	if (err || !ns)
		return err;
	ember__sym_entry *nv = realloc(*v, (*n + ns) * sizeof(*nv));
	if (!nv) {
		free(stubs);
		return ember__error_oom("symbol index");
	}
	*v = nv;
	for (size_t i = 0; i < ns; i++) {
		uint64_t addr = stubs[i].addr + bias;
		if (addr >= start && addr < limit)
			nv[(*n)++] = (ember__sym_entry){addr, stubs[i].name, clamp_size(stubs[i].size),
							RANK_NAME_DONE};
	}
	free(stubs);
	return 0;
}

/* Symbol i of dm as an index entry, if it is code in [start, limit): a
 * function, an ifunc or a bare label, defined in a section. Reads no
 * name (the name's address only: see above). */
static int code_symbol(Dwfl_Module *dm, int i, uint64_t start, uint64_t limit,
		       ember__sym_entry *out)
{
	GElf_Sym sym;
	GElf_Addr addr;
	GElf_Word shndx;
	Elf *elf;
	Dwarf_Addr bias;
	const char *name = dwfl_module_getsym_info(dm, i, &sym, &addr, &shndx, &elf, &bias);
	int type = name ? GELF_ST_TYPE(sym.st_info) : -1;
	if (!name || shndx == SHN_UNDEF || shndx == SHN_ABS ||
	    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
		return 0;
	if (addr < start || addr >= limit)
		return 0;
	*out = (ember__sym_entry){addr, name, clamp_size(sym.st_size), sym_rank(&sym)};
	return 1;
}

/*
 * The symbols as libdwfl enumerates them, read in place. Going through
 * dwfl_module_getsym_info costs about 70 ns a symbol (a section header
 * looked up and a symbol converted for each); librustc_driver has 165 k of
 * them and libLLVM as many, so a short rustc run spent more on that than
 * on its samples. A 64-bit module whose symbols are one table of the ELF
 * file libdwfl reads them from (no minidebuginfo merged in, no extended
 * section indexes, not a relocatable object) is read directly instead:
 * st_value plus the bias libdwfl reports for that file, for symbols of an
 * allocated section, as libdwfl computes it. A sample of symbols is
 * checked against libdwfl first; any difference, and every other module,
 * goes through libdwfl.
 */
typedef struct sym_iter {
	Dwfl_Module *dm;
	uint64_t start, limit;
	const Elf64_Sym *syms; /* NULL: through libdwfl */
	const char *str;       /* the string table, NUL-terminated at its end */
	size_t nstr;
	unsigned char *alloc;  /* per section index: SHF_ALLOC */
	size_t nsec;
	uint64_t bias;
} sym_iter;

static int raw_symbol(const sym_iter *it, int i, ember__sym_entry *out)
{
	const Elf64_Sym *y = &it->syms[i];
	int type = ELF64_ST_TYPE(y->st_info);
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
		return 0;
	unsigned shndx = y->st_shndx;
	if (shndx == SHN_UNDEF || shndx == SHN_ABS || y->st_name >= it->nstr)
		return 0;
	if (shndx >= SHN_LORESERVE) /* (none but SHN_ABS in code: libdwfl's say) */
		return it->dm ? code_symbol(it->dm, i, it->start, it->limit, out) : 0;
	uint64_t addr = y->st_value;
	if (shndx >= it->nsec || it->alloc[shndx])
		addr += it->bias;
	if (addr < it->start || addr >= it->limit)
		return 0;
	GElf_Sym g = {.st_info = y->st_info};
	*out = (ember__sym_entry){addr, it->str + y->st_name, clamp_size(y->st_size), sym_rank(&g)};
	return 1;
}

static int sym_next(const sym_iter *it, int i, ember__sym_entry *out)
{
	return it->syms ? raw_symbol(it, i, out)
			: code_symbol(it->dm, i, it->start, it->limit, out);
}

static void sym_iter_done(sym_iter *it)
{
	free(it->alloc);
	it->alloc = NULL;
	it->syms = NULL;
}

/* Do the raw reading and libdwfl agree on a sample of the symbols? */
static int raw_agrees(const sym_iter *it, int total)
{
	int step = total / 64 > 0 ? total / 64 : 1;
	for (int i = 1; i < total; i += i < 32 ? 1 : step) {
		ember__sym_entry a, b;
		int ra = raw_symbol(it, i, &a), rb = code_symbol(it->dm, i, it->start, it->limit, &b);
		if (ra != rb || (ra && (a.addr != b.addr || a.size != b.size || a.rank != b.rank ||
					strcmp(a.name, b.name) != 0)))
			return 0;
	}
	return 1;
}

/* Points it at table tab of elf (total entries, 64-bit) for reading in
 * place, with bias added to the symbols of allocated sections. 1 if it
 * can, else 0 (it->syms stays NULL). */
static int sym_iter_table(sym_iter *it, Elf *elf, Elf_Scn *tab, size_t total, uint64_t bias)
{
	GElf_Shdr tsh, sh;
	size_t nsec = 1;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)); nsec++)
		if (!gelf_getshdr(scn, &sh))
			return 0;
	Elf_Data *d = tab ? elf_getdata(tab, NULL) : NULL;
	if (!d || d->d_type != ELF_T_SYM || d->d_size < total * sizeof(Elf64_Sym) ||
	    !gelf_getshdr(tab, &tsh))
		return 0;
	Elf_Scn *strscn = elf_getscn(elf, tsh.sh_link);
	Elf_Data *sd = strscn ? elf_getdata(strscn, NULL) : NULL;
	if (!sd || !sd->d_buf || sd->d_size == 0 || ((const char *)sd->d_buf)[sd->d_size - 1] != '\0')
		return 0;
	it->alloc = calloc(nsec, 1);
	if (!it->alloc)
		return 0;
	size_t k = 1;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) && k < nsec; k++)
		it->alloc[k] = gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC);
	it->nsec = nsec;
	it->syms = d->d_buf;
	it->str = sd->d_buf;
	it->nstr = sd->d_size;
	it->bias = bias;
	return 1;
}

static void sym_iter_init(sym_iter *it, Dwfl_Module *dm, int total, uint64_t start, uint64_t limit)
{
	*it = (sym_iter){.dm = dm, .start = start, .limit = limit};
	GElf_Sym sym;
	GElf_Addr addr;
	GElf_Word shndx;
	Elf *elf = NULL;
	Dwarf_Addr bias;
	GElf_Ehdr eh;
	if (total < 2 || !dwfl_module_getsym_info(dm, 1, &sym, &addr, &shndx, &elf, &bias) || !elf ||
	    !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type == ET_REL)
		return;
	Elf_Scn *tab = NULL, *dyn = NULL;
	GElf_Shdr sh;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		if (!gelf_getshdr(scn, &sh))
			return;
		if (sh.sh_type == SHT_SYMTAB_SHNDX)
			return; /* extended section indexes: libdwfl's way */
		int fits = sh.sh_entsize == sizeof(Elf64_Sym) &&
			   sh.sh_size / sizeof(Elf64_Sym) == (uint64_t)total;
		if (sh.sh_type == SHT_SYMTAB && fits && !tab)
			tab = scn;
		else if (sh.sh_type == SHT_DYNSYM && fits && !dyn)
			dyn = scn;
	}
	if (!tab)
		tab = dyn; /* libdwfl prefers .symtab, as here */
	if (sym_iter_table(it, elf, tab, (size_t)total, bias) && !raw_agrees(it, total))
		sym_iter_done(it);
}

int ember__symindex_build_syms(ember__symindex *ix, Dwfl_Module *dm, uint64_t start,
			       uint64_t limit)
{
	return ember__symindex_build_syms_ex(ix, dm, start, limit, 0);
}

/* Opens the iteration over dm's symbols (through libdwfl, or in place
 * when they agree), or with dm NULL over src's table (in place): *total
 * entries (1 when there are none to read). */
static void iter_open(sym_iter *it, Dwfl_Module *dm, const ember__symtab_src *src,
		      uint64_t start, uint64_t limit, int via_dwfl, int *total)
{
	*total = dm ? dwfl_module_getsymtab(dm) : -1;
	GElf_Shdr tsh;
	if (!dm && src && src->tab && gelf_getshdr(src->tab, &tsh) &&
	    tsh.sh_entsize == sizeof(Elf64_Sym) && tsh.sh_size / sizeof(Elf64_Sym) <= INT32_MAX)
		*total = (int)(tsh.sh_size / sizeof(Elf64_Sym));
	if (*total < 1)
		*total = 1;
	if (dm) {
		sym_iter_init(it, dm, via_dwfl ? 0 : *total, start, limit);
		return;
	}
	*it = (sym_iter){.start = start, .limit = limit};
	if (*total < 2 || !sym_iter_table(it, src->elf, src->tab, (size_t)*total, src->bias))
		*total = 1; /* nothing to read in place */
}

/* The module's own file and its load bias, for its PLT stubs. */
static Elf *plt_file(Dwfl_Module *dm, const ember__symtab_src *src, uint64_t *bias)
{
	Dwarf_Addr b = 0;
	Elf *elf = dm ? dwfl_module_getelf(dm, &b) : src ? src->main : NULL;
	*bias = dm ? b : src ? src->main_bias : 0;
	return elf;
}

/* The index from dm's symbols (through libdwfl, or read in place when
 * they agree), or with dm NULL from src's table (read in place). */
static int build_syms(ember__symindex *ix, Dwfl_Module *dm, const ember__symtab_src *src,
		      uint64_t start, uint64_t limit, int via_dwfl)
{
	free(ix->syms);
	ix->syms = NULL;
	ix->nsyms = 0;
	ember__arena_release(&ix->names);
	ember__u64map_free(&ix->scanned); /* (its names were in the arena) */
	ember__u64map_free(&ix->scanned_floor);
	ix->syms_built = 1;
	int total; /* 1 without a symbol table: the PLT stubs may still be named */
	sym_iter it;
	iter_open(&it, dm, src, start, limit, via_dwfl, &total);
	ember__sym_entry *v = malloc((size_t)total * sizeof(*v));
	if (!v) {
		sym_iter_done(&it);
		ix->syms_built = 0;
		return ember__error_oom("symbol index");
	}
	size_t n = 0;
	int err = 0;
	ix->syms_raw = it.syms != NULL;
	for (int i = 1; i < total; i++)
		if (sym_next(&it, i, &v[n]))
			n++;
	sym_iter_done(&it);
	uint64_t bias;
	Elf *main = plt_file(dm, src, &bias);
	if (!err && (dm || main))
		err = add_plt_stubs(ix, main, bias, start, limit, &v, &n);
	if (err) {
		free(v);
		ember__arena_release(&ix->names);
		ix->syms_built = 0;
		return err;
	}
	if (n > 1)
		ember__sort(v, n, sizeof(*v), cmp_sym); /* no second array (util/sort.h) */
	size_t k = 0; /* keep the preferred symbol of each address */
	for (size_t i = 0; i < n; i++) {
		if (k == 0 || v[k - 1].addr != v[i].addr)
			v[k++] = v[i];
	}
	ix->syms = v;
	ix->nsyms = k;
	return 0;
}

int ember__symindex_build_syms_ex(ember__symindex *ix, Dwfl_Module *dm, uint64_t start,
				  uint64_t limit, int via_dwfl)
{
	return build_syms(ix, dm, NULL, start, limit, via_dwfl);
}

int ember__symindex_build_syms_elf(ember__symindex *ix, const ember__symtab_src *src,
				   uint64_t start, uint64_t limit)
{
	return build_syms(ix, NULL, src, start, limit, 0);
}

/* How far back to look for a sized symbol enclosing a later one. */
#define ENCLOSING_LOOKBACK 16

/* The entry's name, final: without its version (once; NULL on OOM, and
 * for an empty name). */
static const char *entry_name(ember__symindex *ix, ember__sym_entry *e)
{
	if (!(e->rank & RANK_NAME_DONE)) {
		const char *name = unversioned(ix, e->name);
		if (!name)
			return NULL;
		e->name = name;
		e->rank |= RANK_NAME_DONE;
	}
	return e->name[0] ? e->name : NULL;
}

/* How many symbols of the index start at or below addr (a binary search):
 * the floor of addr is the one before. */
static size_t count_at_or_below(const ember__symindex *ix, uint64_t addr)
{
	size_t lo = 0, hi = ix->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *ember__symindex_symbol_at(ember__symindex *ix, uint64_t addr)
{
	size_t lo = count_at_or_below(ix, addr);
	if (lo == 0)
		return NULL;
	ember__sym_entry *e = &ix->syms[lo - 1];
	const char *name;
	if ((e->size == 0 || addr - e->addr < e->size) && (name = entry_name(ix, e)))
		return name;
	for (size_t j = lo - 1; j-- > 0 && lo - 1 - j <= ENCLOSING_LOOKBACK;) {
		e = &ix->syms[j];
		if (e->size && addr - e->addr < e->size && (name = entry_name(ix, e)))
			return name;
	}
	return NULL;
}

int ember__symindex_floor(ember__symindex *ix, uint64_t addr, ember__sym_floor *out)
{
	if (!ix->syms_built) {
		const uint64_t *v = ember__u64map_get(&ix->scanned_floor, addr);
		if (!v || !*v)
			return 0;
		*out = *(const ember__sym_floor *)(uintptr_t)*v;
		return 1;
	}
	size_t lo = count_at_or_below(ix, addr);
	if (lo == 0)
		return 0;
	ember__sym_entry *e = &ix->syms[lo - 1];
	const char *name = entry_name(ix, e);
	if (!name)
		return e->name[0] ? ember__error_oom("symbol name") : 0;
	*out = (ember__sym_floor){e->addr, e->size, name};
	return 1;
}

/* ---------------------------------------------------------------------- */
/* Naming a few addresses without the index                                */

/*
 * A short-lived process names the few hundred addresses its samples hold,
 * once: sorting a big module's every symbol for them is most of what
 * profiling rustc costs (BENCHMARKS.md section 13). One pass over the
 * symbols finds the same names, without the index's memory:
 *  - the floor: the preferred symbol at the highest address <= the
 *    address. A symbol at `a` competes for the addresses from `a` to the
 *    next one looked up, so each symbol goes into the gap before the first
 *    address >= a (a binary search), and the floor of an address is the
 *    highest symbol of its gap and the gaps before it;
 *  - the enclosing symbol: the sized symbol with a name and the highest
 *    address whose range holds the address, for a floor that does not
 *    reach it (what the index's lookback finds, without its bound).
 * Names are read only to break ties at one address, as the index does.
 */

/* Is x a better floor than y (y unset: addr 0 and no name)? */
static int better_floor(const ember__sym_entry *x, const ember__sym_entry *y)
{
	if (!y->name || x->addr != y->addr)
		return !y->name || x->addr > y->addr;
	return cmp_sym(x, y) < 0;
}

static void scan_one(const ember__sym_entry *e, const uint64_t *addrs, size_t n,
		     ember__sym_entry *gap, ember__sym_entry *enc)
{
	size_t lo = 0, hi = n; /* the first address >= e->addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addrs[mid] < e->addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n)
		return; /* above every address looked up */
	if (better_floor(e, &gap[lo]))
		gap[lo] = *e;
	for (size_t k = lo; k < n && e->size && addrs[k] - e->addr < e->size; k++)
		if (better_floor(e, &enc[k]) && e->name[0])
			enc[k] = *e;
}

/* ember__symindex_scan, with floors[i] (if floors) the floor of addrs[i]
 * (name NULL: none). */
static int scan(ember__symindex *ix, Dwfl_Module *dm, const ember__symtab_src *src,
		uint64_t start, uint64_t limit, const uint64_t *addrs, size_t n, const char **names,
		ember__sym_floor *floors)
{
	for (size_t i = 0; i < n; i++) {
		names[i] = NULL;
		if (floors)
			floors[i] = (ember__sym_floor){0};
	}
	if (!n || (!dm && !src))
		return 0;
	ember__sym_entry *gap = calloc(2 * n, sizeof(*gap)), *enc = gap + n;
	if (!gap)
		return ember__error_oom("symbol scan");
	int total;
	sym_iter it;
	iter_open(&it, dm, src, start, limit, 0, &total);
	for (int i = 1; i < total; i++) {
		ember__sym_entry e;
		if (sym_next(&it, i, &e))
			scan_one(&e, addrs, n, gap, enc);
	}
	sym_iter_done(&it);
	uint64_t bias;
	Elf *elf = plt_file(dm, src, &bias);
	ember__plt_stub *stubs;
	size_t ns;
	int err = ember__plt_stubs(elf, &ix->names, &stubs, &ns);
	for (size_t i = 0; !err && i < ns; i++) {
		ember__sym_entry e = {stubs[i].addr + bias, stubs[i].name, clamp_size(stubs[i].size),
				      RANK_NAME_DONE};
		if (e.addr >= start && e.addr < limit)
			scan_one(&e, addrs, n, gap, enc);
	}
	if (!err)
		free(stubs);
	ember__sym_entry floor = {0};
	for (size_t i = 0; !err && i < n; i++) {
		if (gap[i].name && better_floor(&gap[i], &floor))
			floor = gap[i];
		if (floors && floor.name && floor.name[0]) {
			ember__sym_entry f = floor;
			const char *fname = entry_name(ix, &f);
			if (!fname)
				err = ember__error_oom("symbol name");
			else
				floors[i] = (ember__sym_floor){f.addr, f.size, fname};
		}
		ember__sym_entry *e = &floor;
		if (!e->name || (e->size && addrs[i] - e->addr >= e->size) || !e->name[0])
			e = enc[i].name ? &enc[i] : NULL;
		if (e && !(names[i] = entry_name(ix, e)) && e->name[0])
			err = ember__error_oom("symbol name");
	}
	free(gap);
	return err;
}

int ember__symindex_scan(ember__symindex *ix, Dwfl_Module *dm, uint64_t start, uint64_t limit,
			 const uint64_t *addrs, size_t n, const char **names)
{
	return scan(ix, dm, NULL, start, limit, addrs, n, names, NULL);
}

int ember__symindex_scan_into(ember__symindex *ix, Dwfl_Module *dm, uint64_t start,
			      uint64_t limit, const uint64_t *addrs, size_t n)
{
	return ember__symindex_scan_into_src(ix, dm, NULL, start, limit, addrs, n);
}

int ember__symindex_scan_into_src(ember__symindex *ix, Dwfl_Module *dm,
				  const ember__symtab_src *src, uint64_t start, uint64_t limit,
				  const uint64_t *addrs, size_t n)
{
	ember__u64map_free(&ix->scanned);
	ember__u64map_free(&ix->scanned_floor);
	ix->scanned = (ember__u64map)EMBER_U64MAP_INIT;
	ix->scanned_floor = (ember__u64map)EMBER_U64MAP_INIT;
	ix->scans++;
	const char **names = malloc((n ? n : 1) * sizeof(*names));
	ember__sym_floor *floors = malloc((n ? n : 1) * sizeof(*floors));
	if (!names || !floors) {
		free(names);
		free(floors);
		return ember__error_oom("symbol scan");
	}
	int err = scan(ix, dm, src, start, limit, addrs, n, names, floors);
	for (size_t i = 0; !err && i < n; i++) {
		int inserted;
		uint64_t *v = ember__u64map_put(&ix->scanned, addrs[i], &inserted);
		if (!v) {
			err = ember__error_oom("symbol scan");
			break;
		}
		*v = (uint64_t)(uintptr_t)names[i];
		if (!floors[i].name)
			continue;
		/* the floors live with the names, in the index's arena */
		ember__sym_floor *f = ember__arena_alloc(&ix->names, sizeof(*f));
		v = f ? ember__u64map_put(&ix->scanned_floor, addrs[i], &inserted) : NULL;
		if (!v) {
			err = ember__error_oom("symbol scan");
			break;
		}
		*f = floors[i];
		*v = (uint64_t)(uintptr_t)f;
	}
	free(names);
	free(floors);
	if (err) {
		ember__u64map_free(&ix->scanned);
		ember__u64map_free(&ix->scanned_floor);
	}
	return err;
}

int ember__symindex_scanned(const ember__symindex *ix, uint64_t addr, const char **name)
{
	const uint64_t *v = ember__u64map_get(&ix->scanned, addr);
	if (!v)
		return 0;
	*name = (const char *)(uintptr_t)*v;
	return 1;
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

/* The function index being built, and the module's range and DWARF bias. */
typedef struct func_vec {
	ember__func_range *v;
	size_t n, cap;
	uint64_t start, limit;
	Dwarf_Addr bias;
} func_vec;

static int add_func_ranges(Dwarf_Die *die, func_vec *fv)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		uint64_t lo = start + fv->bias, hi = end + fv->bias;
		if (end <= start || hi <= fv->start || lo >= fv->limit)
			continue;
		if (fv->n == fv->cap) {
			size_t ncap = fv->cap ? fv->cap * 2 : 256;
			ember__func_range *nv = realloc(fv->v, ncap * sizeof(*nv));
			if (!nv)
				return ember__error_oom("function index");
			fv->v = nv;
			fv->cap = ncap;
		}
		fv->v[fv->n++] = (ember__func_range){lo, hi, dwarf_dieoffset(die)};
	}
	return 0;
}

/* Functions are children of the unit, or of namespaces (and Fortran
 * modules) within it; member functions are defined at the top with
 * DW_AT_specification, so class bodies need no visit. */
static int index_scope(Dwarf_Die *parent, func_vec *fv, int depth)
{
	Dwarf_Die child;
	if (dwarf_child(parent, &child) != 0)
		return 0;
	do {
		ember__elfguard_poll(); /* nothing built on a failed allocation */
		int err = 0;
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			err = add_func_ranges(&child, fv);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
			if (depth < 32)
				err = index_scope(&child, fv, depth + 1);
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
	const ember__func_range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi > y->hi ? -1 : x->hi < y->hi; /* wider first */
}

int ember__symindex_build_funcs(ember__symindex *ix, Dwfl_Module *dm, uint64_t start,
				uint64_t limit)
{
	ix->funcs_built = 1;
	ix->dw = dm ? dwfl_module_getdwarf(dm, &ix->dwbias) : NULL;
	if (!ix->dw)
		return 0;
	/* libdw's own handler exits the process (symbols/elfguard.h). */
	dwarf_new_oom_handler(ix->dw, ember__elfguard_oom);
	func_vec fv = {.start = start, .limit = limit, .bias = ix->dwbias};
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	while (dwarf_get_units(ix->dw, cu, &next, &version, &unit_type, &cudie, &subdie) == 0) {
		cu = next;
		ember__elfguard_poll();
		/* Type units hold no code; split units live in other files. */
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		int err = index_scope(&cudie, &fv, 0);
		if (err) {
			free(fv.v);
			ix->funcs_built = 0;
			return err;
		}
	}
	if (fv.n > 1) /* qsort(NULL, 0) is undefined: a module may have no functions */
		ember__sort(fv.v, fv.n, sizeof(*fv.v), cmp_func);
	ix->funcs = fv.v;
	ix->nfuncs = fv.n;
	return 0;
}

/* How far back to look for a range enclosing a later one (nested
 * functions, GNU C). */
#define FUNC_LOOKBACK 4

static const ember__func_range *func_at(const ember__symindex *ix, uint64_t addr)
{
	size_t lo = 0, hi = ix->nfuncs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->funcs[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t j = lo; j-- > 0 && lo - j <= FUNC_LOOKBACK;) {
		if (addr < ix->funcs[j].hi)
			return &ix->funcs[j];
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
		ember__elfguard_poll();
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

int ember__symindex_inline_frames(const ember__symindex *ix, uint64_t addr,
				  ember__raw_frame *out, int max)
{
	const ember__func_range *fr = func_at(ix, addr);
	Dwarf_Die path[MAX_SCOPES]; /* path[0] the subprogram, then inlined */
	if (!fr || !dwarf_offdie(ix->dw, fr->die, &path[0]))
		return 0;
	Dwarf_Addr pc = addr - ix->dwbias;
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

	ember__raw_frame all[MAX_SCOPES];
	const char *file = NULL;
	int line = 0, n = 0;
	for (int k = depth - 1; k >= 0; k--, n++) {
		const char *linkage = die_linkage_name(&path[k]);
		all[n] = (ember__raw_frame){linkage ? linkage : die_string(&path[k], DW_AT_name),
					    file, line};
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
