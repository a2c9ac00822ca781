/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symindex.h - the per-module lookup indexes of the symbolizer: a sorted
 * index of a module's function symbols, and an index of the code ranges
 * of the functions its DWARF describes, which is used to expand the
 * inlined calls at an address.
 *
 * libdwfl answers both questions itself, but slowly: dwfl_module_addrinfo()
 * scans the whole symbol table on every call and dwarf_getscopes() walks a
 * compilation unit's DIE tree from its root. An index is built once per
 * module, on the first lookup in it, and then answers each address with a
 * binary search.
 *
 * An index points into data owned by libdwfl (symbol names, the Dwarf
 * handle and its DIEs), or by the libelf handles it was built from
 * (ember__symtab_src), so it is valid only as long as the Dwfl_Module or
 * those handles; when they are replaced or closed, reset the index.
 *
 * Used by the agent thread only; nothing here is async-signal-safe.
 */
#ifndef EMBER_SYMINDEX_H
#define EMBER_SYMINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/dep_elfutils.h"
#include "util/hashmap.h"

/* One function symbol of a module's index; name is libelf-owned. 24
 * bytes: a big module's index is hundreds of thousands of them, each page
 * of which is a page fault when it is built. */
typedef struct ember__sym_entry {
	uint64_t addr;
	const char *name; /* libelf's, or in the index's arena (see below) */
	uint32_t size;    /* the symbol's size, at most UINT32_MAX (no function is larger) */
	uint32_t rank;    /* preference among symbols at one address, lower wins;
			   * its top bit: the name is final (symindex.c) */
} ember__sym_entry;

/* One function's code range in the DWARF index. */
typedef struct ember__func_range {
	uint64_t lo, hi; /* absolute addresses, [lo, hi) */
	Dwarf_Off die;   /* offset of its DW_TAG_subprogram in .debug_info */
} ember__func_range;

/* Both indexes of one module. All-zero (EMBER_SYMINDEX_INIT) is empty and
 * not yet built. */
typedef struct ember__symindex {
	ember__sym_entry *syms;   /* sorted by addr, one per address */
	size_t nsyms;
	int syms_built;           /* syms reflects the module's symbol table */
	int syms_raw;             /* ...read in place, not through libdwfl (symindex.c) */
	ember__arena names;       /* names made here: "foo@plt", version-less copies */
	ember__func_range *funcs; /* sorted by lo */
	size_t nfuncs;
	int funcs_built;          /* funcs reflects the module's DWARF */
	Dwarf *dw;                /* the module's DWARF (owned by libdwfl), NULL if none */
	Dwarf_Addr dwbias;        /* DWARF addresses + dwbias = ours */
	/* Before the symbol index is built: the last scan's answers (address
	 * -> name, 0 for none) and how many scans there were
	 * (ember__symindex_scan_into) */
	ember__u64map scanned;
	ember__u64map scanned_floor; /* address -> its ember__sym_floor (in names) */
	unsigned scans;
} ember__symindex;

/* How many scans a module gets before the next lookup it misses builds
 * its symbol index: a scan reads every symbol, as the build does, but
 * keeps nothing, so after a few the index is the cheaper way. */
#define EMBER_SYMINDEX_MAX_SCANS 2

#define EMBER_SYMINDEX_INIT {0}

/* A frame before its strings are interned: they are libdw/libelf-owned and
 * live as long as the module's Dwfl_Module. */
typedef struct ember__raw_frame {
	const char *system_name, *file;
	int line;
} ember__raw_frame;

/*
 * Frees what the index owns (its arrays; the libdwfl data it points into
 * is not its own) and makes it empty and unbuilt again, so that the next
 * lookup rebuilds it. The struct itself stays the caller's.
 */
void ember__symindex_reset(ember__symindex *ix);

/*
 * (Re)builds the symbol index from the function symbols of dm that lie in
 * [start, limit): .symtab (the file's or its debug file's), else .dynsym,
 * as dwfl_module_getsym_info() enumerates them, already relocated, plus
 * the module's PLT stubs as "foo@plt" (pltsyms.h). A symbol version in a
 * name ("memcpy@@GLIBC_2.14", as .symtab spells versioned definitions) is
 * dropped: the name is "memcpy". At one address only the preferred symbol
 * is kept. A NULL dm or a module without
 * symbols gives an empty, built index. Sets syms_built; on failure
 * (EMBER_ERR_NOMEM) the index is empty and left unbuilt. The names point
 * into libelf data owned by dm; none is read here but to order the
 * symbols at one address (symindex.c says why).
 */
int ember__symindex_build_syms(ember__symindex *ix, Dwfl_Module *dm, uint64_t start,
			       uint64_t limit);

/* The same; with via_dwfl, every symbol is read through libdwfl (the
 * reference the in-place reading is checked against, symindex.c). */
int ember__symindex_build_syms_ex(ember__symindex *ix, Dwfl_Module *dm, uint64_t start,
				  uint64_t limit, int via_dwfl);

/*
 * A module's symbol table as the symbolizer's libelf path chose it
 * (symbolizer_elf.c), reproducing libdwfl's choice: the file's .symtab,
 * else its debug file's, else the file's .dynsym. All borrowed; they must
 * outlive the index, whose names point into them.
 */
typedef struct ember__symtab_src {
	Elf *elf;           /* the file holding the table (64-bit, not ET_REL) */
	Elf_Scn *tab;       /* its SHT_SYMTAB or SHT_DYNSYM; NULL: none */
	uint64_t bias;      /* added to the values of symbols of allocated sections */
	Elf *main;          /* the module's own file, for its PLT stubs (pltsyms.h) */
	uint64_t main_bias; /* its load bias */
} ember__symtab_src;

/*
 * ember__symindex_build_syms, from src instead of a Dwfl_Module: the same
 * symbols (read in place, as libdwfl would enumerate them for a table
 * without extended section indexes), the same PLT stubs, the same
 * preference at one address. Sets syms_built; 0 or EMBER_ERR_NOMEM (the
 * index then empty and unbuilt).
 */
int ember__symindex_build_syms_elf(ember__symindex *ix, const ember__symtab_src *src,
				   uint64_t start, uint64_t limit);

/*
 * The name of the symbol covering addr: the closest one at or below it if
 * it is sizeless (it then runs to the next symbol) or its size reaches
 * addr; else a nearby earlier symbol whose size encloses addr; else NULL.
 * (A symbol with an empty name names nothing.) The string is borrowed from
 * libelf or the index's arena; the first lookup of a symbol drops its
 * version there, so lookups on one index are not concurrent.
 */
const char *ember__symindex_symbol_at(ember__symindex *ix, uint64_t addr);

/*
 * Names n addresses of dm at once without building the symbol index: one
 * pass over the same symbols (and PLT stubs) as ember__symindex_build_syms,
 * no memory per symbol. `addrs` is sorted ascending with no repeats;
 * names[i] becomes what ember__symindex_symbol_at would say for addrs[i]
 * (except that an enclosing symbol is found however far back it starts),
 * or NULL. For a few addresses in a big module, once or twice: each call
 * reads every symbol again. Names are borrowed as symbol_at's are (the
 * versionless copies and stub names go to the index's arena). 0 or
 * EMBER_ERR_NOMEM.
 */
int ember__symindex_scan(ember__symindex *ix, Dwfl_Module *dm, uint64_t start, uint64_t limit,
			 const uint64_t *addrs, size_t n, const char **names);

/*
 * The same, keeping the answers in ix->scanned (replacing the last scan's)
 * for ember__symindex_scanned, and counting the scan. 0 or EMBER_ERR_NOMEM
 * (then nothing is kept).
 */
int ember__symindex_scan_into(ember__symindex *ix, Dwfl_Module *dm, uint64_t start,
			      uint64_t limit, const uint64_t *addrs, size_t n);

/* The same, with dm NULL from src's table (ember__symindex_build_syms_elf's
 * symbols): the libelf path's (symbolizer_elf.c). */
int ember__symindex_scan_into_src(ember__symindex *ix, Dwfl_Module *dm,
				  const ember__symtab_src *src, uint64_t start, uint64_t limit,
				  const uint64_t *addrs, size_t n);

/* Whether the last scan named addr; if so *name is its answer (NULL: no
 * symbol covers it). */
int ember__symindex_scanned(const ember__symindex *ix, uint64_t addr, const char **name);

/* The symbol nearest at or below an address, whatever its size. */
typedef struct ember__sym_floor {
	uint64_t addr;    /* where it starts */
	uint32_t size;    /* its size, 0 if it has none */
	const char *name; /* non-empty, versionless; borrowed as symbol_at's */
} ember__sym_floor;

/*
 * The floor of addr: the preferred symbol with a name at the highest
 * address at or below it (sized or not, reaching addr or not), from the
 * symbol index when it is built, else from the last scan's answers when
 * addr was among them. 1 and *out, 0 when there is none or it is not
 * known (no index, not scanned), or EMBER_ERR_NOMEM. The symbolizer
 * compares it with the FDE covering addr (symbolizer.h, "Functions without
 * symbols").
 */
int ember__symindex_floor(ember__symindex *ix, uint64_t addr, ember__sym_floor *out);

/*
 * Loads dm's DWARF (setting dw and dwbias; dw stays NULL when there is
 * none) and builds the function index from the subprograms whose code lies
 * in [start, limit). Call it once on an unbuilt index (funcs == NULL).
 * Sets funcs_built; on failure (EMBER_ERR_NOMEM) the function index is
 * empty and left unbuilt.
 */
int ember__symindex_build_funcs(ember__symindex *ix, Dwfl_Module *dm, uint64_t start,
				uint64_t limit);

/*
 * Finds the function containing addr and the chain of inlined calls at
 * addr, innermost first, into out[0..max-1]: each inlined subroutine is a
 * frame, ending with the subprogram that contains them. Frame i's position
 * is where frame i-1 was called from (DW_AT_call_file/line); frame 0's is
 * left empty for the caller to fill from the line table. Names are the
 * linkage name when recorded, else the plain name. Returns the number of
 * frames (0 without usable debug info), at most max (>= 1); when there are
 * more, the innermost max-1 and the outermost are kept. Strings are
 * borrowed from libdw. Needs a built function index.
 */
int ember__symindex_inline_frames(const ember__symindex *ix, uint64_t addr,
				  ember__raw_frame *out, int max);

#endif
