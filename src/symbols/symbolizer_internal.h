/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer_internal.h - the symbolizer's state (symbolizer.h), shared by
 * symbolizer.c (the module table kept in step with libdwfl's, the address
 * refreshing; symbolizer_cache.c the address cache, symbolizer_jit.c JIT
 * code), symbolizer_resolve.c (one address of a
 * module into frames: symbol, file and line, inlined calls, demangled
 * names interned into the module) and symbolizer_elf.c (modules read with
 * libelf alone, named without libdwfl when they need no DWARF). Private to src/symbols/. Agent thread
 * only; nothing here is async-signal-safe.
 */
#ifndef EMBER_SYMBOLS_SYMBOLIZER_INTERNAL_H
#define EMBER_SYMBOLS_SYMBOLIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbols/dlclosed.h"
#include "symbols/fdetab.h"
#include "symbols/perfmap.h"
#include "symbols/procmaps.h"
#include "symbols/symbolizer.h"
#include "symbols/symindex.h"
#include "util/arena.h"
#include "util/dep_elfutils.h"
#include "util/dlgen.h"

typedef struct sym_module {
	ember__module_info info; /* path and build_id point into arena */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	Dwfl_Module *dm;         /* NULL if libdwfl does not know the module */
	uint64_t dm_low, dm_high; /* dm's range when attached (a module libdwfl
				   * made anew may reuse a freed one's address) */
	size_t index;            /* position in the symbolizer's tables */
	int seen;                /* marked while diffing during a refresh */
	int keep;                /* no longer mapped, kept (report_dwfl decides) */
	uint64_t gone;           /* 0 while mapped, else the refresh it went at */
	int elf_failed;          /* elfutils gave up inside it: never ask again */
	ember__arena arena;      /* every string handed out for this module */
	const char **strs;       /* interned strings: open addressing */
	size_t strs_cap, strs_count;
	ember__symindex ix;      /* symbols and functions of dm, built lazily */
	ember__fdetab fdes;      /* its FDE ranges, for addresses no symbol names:
				  * built on the first one (symbolizer_resolve.c) */
	/* The libelf path (symbolizer_elf.c): the module's file and debug
	 * file (NULL when not open; read with no descriptor kept:
	 * util/elfopen.h), the symbol table libdwfl
	 * would choose (syms_src.main NULL: none loaded), the load bias, what
	 * the files hold (EMBER__MOD_*), and whether it was handed to libdwfl
	 * (a lazy symbolizer, on its first lookup that needs it): 1, or 2
	 * when libdwfl could not read it (it keeps its libelf names) */
	Elf *elf, *dbg;
	ember__symtab_src syms_src;
	uint64_t bias;
	unsigned debug;
	int use_dwfl;
} sym_module;

/* sym_module.debug: what the module's files hold */
#define EMBER__MOD_DWARF 0x1u      /* .debug_info or .debug_line (file or debug file) */
#define EMBER__MOD_MDI 0x2u        /* .gnu_debugdata (MiniDebugInfo) */
#define EMBER__MOD_OTHER 0x4u      /* anything libelf alone does not read as libdwfl does */
#define EMBER__MOD_DEBUG_FILE 0x8u /* a separate debug file was found */

/* After this many failures inside elfutils, no more elfutils (symbolizer.c) */
#define EMBER__SYM_MAX_ELF_FAILURES 4

/* A JIT mapping: gone is 0 if it was mapped at the last refresh, else the
 * refresh it went at (kept named for a while: see rebuild_jits). */
typedef struct jit_range {
	ember__module_info info;
	uint64_t gone;
} jit_range;

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
	int lines; /* EMBER__LINES_* */
	cache_entry *cache;
	size_t cache_cap, cache_count;
	/* JIT code: the anonymous executable mappings, sorted by start, named
	 * from the perf map /tmp/perf-PID.map when the runtime writes one */
	jit_range *jits;
	size_t njits;
	uint64_t refreshes; /* full refreshes so far: when a module or JIT range went */
	ember__dlgen dl; /* the loader's counters at the last full refresh (poll) */
	/* Another process's symbolizer (ember__symbolizer_new_remote): a
	 * copy of its layout as last given; otherwise our own, read from
	 * /proc/self/maps at each refresh */
	ember__procmaps layout;
	int remote;
	unsigned flags; /* EMBER__SYM_* */
	/* Addresses only, of this process: modules (path, range, build id)
	 * read with libelf alone (module_load_elf), no Dwfl, so libdw and what
	 * it brings (liblzma, libbz2) are never loaded */
	int elf_only;
	/* Names for this process (not addresses only), no tools' hooks: each
	 * module read with libelf first (symbolizer_elf.c); the Dwfl is begun
	 * (libdw loaded) on the first lookup in a module that needs it.
	 * dwfl_started: it was; dwfl_refused: libdw could not be loaded. */
	int lazy, dwfl_started, dwfl_refused;
	char *main_path; /* remote: the main executable, or NULL */
	ember__perfmap_file pmf;
	/* Modules whose ELF file could not be read (their frames stay
	 * unnamed), and the last one's path and reason, for the log. */
	uint64_t unreadable;
	char unreadable_last[512];
	/* Calls elfutils gave up inside (elfguard.h), the module being worked
	 * on (to blame), and the last failure, for the log. */
	uint64_t elf_failures;
	sym_module *busy;
	char elf_failed_last[512];
	/* Functions without symbols named after their FDE (fdetab.h) */
	ember__fde_stats fde;
	/* The dlclose journal (EMBER__SYM_DLCLOSED, symbolizer_closed.c): the
	 * records taken since the last full refresh (malloc'd once, room for
	 * EMBER_DLCLOSED_SLOTS), which of them that refresh reports (closed_use)
	 * and what became of them all */
	ember__dlclosed_rec *closed;
	unsigned char *closed_use;
	size_t nclosed;
	ember__dlclosed_use closed_stats;
};

/* ---- symbolizer_closed.c: libraries of the dlclose journal ---- */

/* Takes the journal's records (EMBER__SYM_DLCLOSED; else does nothing).
 * Returns how many of the records held are of a library the table does
 * not know (none: nothing a refresh would add), or an ember_err. */
int ember__symbolizer_closed_take(ember__symbolizer *s);

/* In report_dwfl, after keep_gone: chooses the records to report, newest
 * first: not those whose range an image mapped now (images[0..n)) or a
 * newer record overlaps, nor a library the table keeps already; the kept
 * modules a chosen record overlaps are no longer kept. Reports the chosen
 * ones to libdwfl (path, range, build id). */
void ember__symbolizer_closed_report(ember__symbolizer *s, const ember__procmap *images,
				     size_t nimages);

/* How many module mappings the chosen records give (their code segments),
 * and the i-th of them, in *pm (its path borrowed from s->closed), and
 * its record (NULL past the end). */
size_t ember__symbolizer_closed_count(const ember__symbolizer *s);
const ember__dlclosed_rec *ember__symbolizer_closed_map(const ember__symbolizer *s, size_t i,
							ember__procmap *pm);

/* After attach_dwfl, before module_load, for a module made from record r:
 * gives m r's build id; if the file libdwfl opened has another one, counts
 * it among the unreadable files and detaches m for good (no names). */
void ember__symbolizer_closed_check(ember__symbolizer *s, const ember__dlclosed_rec *r,
				    sym_module *m);

/* ---- symbolizer_cache.c: resolved addresses ---- */

/* Empties the cache (frees the frame arrays, never the strings). */
void ember__symbolizer_cache_clear(ember__symbolizer *s);
/* The entry of addr, or NULL. */
cache_entry *ember__symbolizer_cache_get(ember__symbolizer *s, uint64_t addr);
/* Takes ownership of e->rest. Never fails: when it cannot grow, it empties. */
void ember__symbolizer_cache_put(ember__symbolizer *s, cache_entry *e);

/* ---- symbolizer_jit.c: JIT code ---- */

/* The JIT mappings of `maps`, keeping the ids of those seen before and
 * the recently gone ones. 0 or EMBER_ERR_NOMEM. */
int ember__symbolizer_jit_rebuild(ember__symbolizer *s, const ember__procmaps *maps);
/* Index of the JIT mapping containing addr, or -1. */
ptrdiff_t ember__symbolizer_find_jit(const ember__symbolizer *s, uint64_t addr);
/* addr in no module: named from the perf map if in JIT code. 0 or an ember_err. */
int ember__symbolizer_jit_lookup(ember__symbolizer *s, uint64_t addr, ember__symbol_info *out);

/* ---- symbolizer_elf.c: the libelf path ---- */

/* Reads module m with libelf: its build id (checked against the one the
 * dlclose journal gave it, if any); with names (a lazy symbolizer), also
 * what it holds, its debug file, its symbol table and load bias, and
 * has_symbols. An unreadable file is counted (s->unreadable). 0 or
 * EMBER_ERR_NOMEM. */
int ember__symbolizer_elf_load(ember__symbolizer *s, sym_module *m, int names);

/* Closes m's files (the symbol index built from them must be reset first). */
void ember__symbolizer_elf_close(sym_module *m);

/* Does m need libdwfl: MiniDebugInfo, something libelf alone does not
 * read, or DWARF the line policy wants for it? */
int ember__symbolizer_elf_needs_dwfl(const ember__symbolizer *s, const sym_module *m);

/* Builds m's symbol index from its libelf symbol table (symindex.h). */
int ember__symbolizer_elf_syms(sym_module *m);

/* This process's vDSO image, copied once (never freed: a few KiB): another
 * process's vDSO is the same image on this kernel. NULL, *size 0: none. */
const char *ember__symbolizer_vdso_copy(size_t *size);

/* m->info.build_id from the build id's bytes (arena-owned hex). 0 or
 * EMBER_ERR_NOMEM (symbolizer.c). */
int ember__symbolizer_set_build_id(sym_module *m, const unsigned char *bits, size_t n);

/* Does the line policy want m's DWARF (symbolizer_resolve.c)? */
int ember__symbolizer_wants_dwarf(const ember__symbolizer *s, const sym_module *m);

/*
 * Resolves addr in module m into a new cache entry (not yet inserted):
 * its frames, their strings interned into m (symbolizer_resolve.c). Call
 * it inside ember__elfguard_run (elfguard.h): it gives the module's Dwarf
 * the guard's out-of-memory handler. 0 or an ember_err.
 */
int ember__symbolizer_resolve(ember__symbolizer *s, sym_module *m, uint64_t addr, cache_entry *e);

/* Fills *out from a cache entry (its strings stay the module's). */
void ember__symbolizer_fill_info(const ember__symbolizer *s, const cache_entry *e,
				 ember__symbol_info *out);

#endif
