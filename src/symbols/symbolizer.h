/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer.h - turning code addresses of the current process into
 * modules (executable mappings), function names, source files and lines,
 * with inlined calls expanded when debug info describes them.
 *
 * It is built on elfutils' libdwfl: modules are reported from
 * /proc/self/maps, symbols come from .symtab (the binary's own or that of
 * its separate debug file, found by build id under /usr/lib/debug/.build-id
 * or through .gnu_debuglink) or else .dynsym, lines and inline scopes from
 * DWARF. The vDSO is a module too ("[vdso]").
 *
 * Threads and signals: a symbolizer is used by one thread at a time (the
 * agent thread); nothing here is async-signal-safe and none of it may run in
 * the SIGPROF handler.
 *
 * Lifetimes. Everything a symbolizer hands out is owned by it:
 *   - the module table and every `const ember__module_info *` (including
 *     ember__symbol_info.module) stay valid until the next
 *     ember__symbolizer_refresh() or ember__symbolizer_free();
 *   - the strings (module path and build id; each frame's function,
 *     system_name and file) belong to their module and stay valid as long
 *     as that module does: until a refresh finds the module gone (its
 *     mapping was unmapped or changed), or until ember__symbolizer_free().
 *     A module that survives a refresh keeps its id and its strings, so a
 *     caller that keys its own tables by module id may keep the strings of
 *     modules it still sees in ember__symbolizer_modules().
 *
 * Debug files are looked for on the local disk only, never through
 * debuginfod: no network traffic and no extra libraries are brought into
 * the profiled process (see ember__debugfile_find() in debugfile.c). The
 * emberprof CLI adds other sources (debuginfod, --debug-dir) through the
 * hooks of debugfile.h, in its own process.
 */
#ifndef EMBER_SYMBOLIZER_H
#define EMBER_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbols/procmaps.h"

typedef struct ember__symbolizer ember__symbolizer;

typedef struct ember__module_info {
	uint32_t id;            /* stable small integer, unique for the symbolizer's lifetime */
	const char *path;       /* file path as in /proc/self/maps ("[vdso]" for the vDSO) */
	uint64_t start, limit;  /* the executable mapping's address range [start, limit) */
	uint64_t file_offset;   /* file offset of that mapping */
	const char *build_id;   /* lowercase hex, "" if none */
	int has_symbols;        /* a symbol table (.symtab or .dynsym) was found */
	int has_lines;          /* DWARF was found; known only once an address in
	                           the module has been looked up, 0 before */
} ember__module_info;

#define EMBER_MAX_INLINE 8

typedef struct ember__symbol_frame {
	const char *function;    /* demangled; NULL if no symbol covers the address */
	const char *system_name; /* raw (mangled) symbol name; NULL if none */
	const char *file;        /* source file, NULL if unknown */
	int line;                /* 0 if unknown */
} ember__symbol_frame;

typedef struct ember__symbol_info {
	const ember__module_info *module; /* NULL if no module covers the address */
	uint32_t nframes;                 /* 0 if unresolved, else 1..EMBER_MAX_INLINE, innermost (inlined) first */
	ember__symbol_frame frames[EMBER_MAX_INLINE];
} ember__symbol_info;

/*
 * Creates a symbolizer for the current process and reads /proc/self/maps.
 * On success *out is the caller's, freed with ember__symbolizer_free().
 * Symbol data of each module is loaded when the module is first seen.
 * Returns 0, EMBER_ERR_NOMEM, EMBER_ERR_IO, EMBER_ERR_FORMAT or
 * EMBER_ERR_SYS (libdwfl failed).
 */
int ember__symbolizer_new(ember__symbolizer **out);

/*
 * A symbolizer for another process, `pid` (the tree engine, tools/tree/,
 * which samples processes from outside): its layout is `maps` (borrowed
 * for the call: executable mappings, each image from its first mapping
 * at file offset 0, as /proc/PID/maps shows them) instead of our own
 * /proc/self/maps, and ember__symbolizer_poll does nothing. The vDSO is
 * read from the process's memory while it lives; JIT names from
 * /tmp/perf-PID.map. Returns as ember__symbolizer_new.
 */
int ember__symbolizer_new_remote(ember__symbolizer **out, pid_t pid,
				 const ember__procmaps *maps);

/*
 * Options of a symbolizer, fixed when it is made:
 * EMBER__SYM_ADDRESSES_ONLY: modules (path, range, build id) and no names:
 *   lookups give the module and no frame, no symbol table, debug file or
 *   DWARF is ever read. The agent's EMBERPROF_SYMBOLIZE=0: the smallest
 *   footprint in the host; `emberprof symbolize` names the frames later.
 * EMBER__SYM_OFFLINE (ember__symbolizer_new_offline only): no process
 *   behind the layout (no vDSO, no perf map).
 * EMBER__SYM_DLCLOSED (our own process only): the journal's reader
 *   (dlclosed.h): each refresh also takes the libraries dlclose'd since
 *   and keeps those it never saw mapped as gone modules, reported to
 *   libdwfl by path, range and build id, so that code loaded and unloaded
 *   between two refreshes is named. One reader per process: the agent's.
 */
#define EMBER__SYM_ADDRESSES_ONLY 0x1u
#define EMBER__SYM_OFFLINE 0x2u
#define EMBER__SYM_DLCLOSED 0x4u

/* ember__symbolizer_new / _new_remote with options (EMBER__SYM_*). */
int ember__symbolizer_new_opts(ember__symbolizer **out, unsigned flags);
int ember__symbolizer_new_remote_opts(ember__symbolizer **out, pid_t pid,
				      const ember__procmaps *maps, unsigned flags);

/*
 * A symbolizer for the addresses of a profile, with no process: `layout`
 * (borrowed for the call) lists one mapping per image, each starting where
 * the image's file offset 0 was loaded (its first PT_LOAD's page), with a
 * nonzero inode, as ember__symbolizer_new_remote takes them. Files are
 * opened by path unless the tools' find_elf hook (debugfile.h) names
 * another. Used by `emberprof symbolize` (tools/symbolize/). Returns as
 * ember__symbolizer_new.
 */
int ember__symbolizer_new_offline(ember__symbolizer **out, const ember__procmaps *layout);

/* A remote symbolizer's new layout (borrowed for the call): refreshes
 * as ember__symbolizer_refresh does. 0 or ember_err. */
int ember__symbolizer_set_maps(ember__symbolizer *s, const ember__procmaps *maps);

/*
 * A remote symbolizer's main executable (the file the process exec'd),
 * copied: profiles make its module mapping 1 (window.c), as our own
 * AT_ENTRY does for ours. ember__symbolizer_main: that path, or NULL (our
 * own process, or not told). 0 or EMBER_ERR_NOMEM.
 */
int ember__symbolizer_set_main(ember__symbolizer *s, const char *path);
const char *ember__symbolizer_main(const ember__symbolizer *s);

/* Frees the symbolizer and everything it handed out. NULL is ok. */
void ember__symbolizer_free(ember__symbolizer *s);

/*
 * Re-reads /proc/self/maps: libraries mapped since appear (with new ids),
 * modules whose mapping went away stay named as they were until an image
 * mapped since overlaps them (the 16 most recently gone; JIT ranges the
 * same, 64), those overlapped go together with their cached results and
 * strings, and the others are kept with their loaded symbol data, ids
 * and strings. Invalidates every module_info pointer (see the lifetime
 * rules above). On error the previous module table is kept when possible
 * and the error is returned; lookups keep working either way. Agent
 * thread only; not async-signal-safe.
 */
int ember__symbolizer_refresh(ember__symbolizer *s);

/*
 * Refreshes (as ember__symbolizer_refresh) if a library was dlopen'ed or
 * dlclose'd since the last refresh (the loader's counters moved; without
 * them, not glibc, never). Needed because a lookup refreshes nothing and
 * ember__symbolizer_covers() still answers yes for a gone module's range:
 * a library the loader put where a dlclose'd one was would be named after
 * the old one until something else refreshed. With EMBER__SYM_DLCLOSED
 * it also refreshes when the dlclose journal holds a library the table
 * does not know. Returns 1 if it refreshed,
 * 0 if nothing changed, or a negative ember_err. Agent thread only; not
 * async-signal-safe.
 */
int ember__symbolizer_poll(ember__symbolizer *s);

/*
 * Returns 1 if addr lies inside an executable mapping known since the last
 * refresh (a module's, or anonymous executable memory: JIT code), else 0
 * (also for s == NULL). A binary search; no allocation.
 */
int ember__symbolizer_covers(const ember__symbolizer *s, uint64_t addr);

/*
 * Symbolizes exactly `addr` (callers pass return address - 1 for non-leaf
 * frames) and fills *out. An address outside every module gives
 * module == NULL and nframes == 0; an address inside a module without a
 * covering symbol or line gives nframes == 0. Both are successes (0).
 * The last frame is the function that holds the code, named from the
 * symbol table when a symbol covers addr (else from DWARF); the frames
 * before it are calls inlined into it, named from DWARF (system_name is
 * the linkage name when the compiler recorded one, else the plain name).
 * Results are cached per address, so repeated lookups are cheap.
 * JIT code: an address in anonymous executable memory, when the process
 * has a perf map (/tmp/perf-PID.map, perfmap.h), gets a module standing
 * for that memory (path: the map's, build id "", not among
 * ember__symbolizer_modules()) and one frame named from the map, if a
 * line of it covers the address (function == system_name; the string lives
 * until the next lookup or refresh: copy it). The map is re-read when it
 * grew, at most every 100 ms, or every 10 ms while addresses miss. Returns
 * <0 only for real errors: EMBER_ERR_INVALID (NULL argument) or
 * EMBER_ERR_NOMEM.
 */
int ember__symbolizer_lookup(ember__symbolizer *s, uint64_t addr, ember__symbol_info *out);

/*
 * Sets *out to the current module table, sorted by start address, and
 * returns its length. The array is borrowed; see the lifetime rules above.
 */
/*
 * Before the lookups of many addresses (a window's frames): in modules
 * whose symbol index is not built yet, the addresses not in the cache are
 * named in one pass over the module's symbols (symindex.h, scan), for the
 * lookups to use, while the module has had fewer than
 * EMBER_SYMINDEX_MAX_SCANS scans; after that a lookup builds the index. A
 * process that lives a few windows never sorts a big module's symbols.
 * `addrs` is the caller's scratch: sorted and reordered here. 0 or an
 * ember_err (the lookups then build the index as without this call).
 */
int ember__symbolizer_prefetch(ember__symbolizer *s, uint64_t *addrs, size_t n);

size_t ember__symbolizer_modules(const ember__symbolizer *s, const ember__module_info **out);

/* Modules whose ELF file could not be read, so their frames have no
 * names; *last is "path: reason" of the last one (borrowed from s). */
uint64_t ember__symbolizer_unreadable(const ember__symbolizer *s, const char **last);

/* Libraries of the dlclose journal (EMBER__SYM_DLCLOSED): records taken,
 * libraries added as gone modules (never seen mapped), records left
 * unused because an image mapped since (or a later record) took their
 * addresses. A library whose file is gone or was replaced (its build id
 * differs) counts among ember__symbolizer_unreadable too. */
typedef struct ember__dlclosed_use {
	uint64_t taken, added, overlapped;
} ember__dlclosed_use;
void ember__symbolizer_dlclosed_use(const ember__symbolizer *s, ember__dlclosed_use *out);

/* Calls elfutils gave up inside (an allocation failure libdw cannot
 * survive, symbols/elfguard.h): each leaves one module without names from
 * then on. *last is "path: what happened" of the last one (borrowed from
 * s). Not async-signal-safe. */
uint64_t ember__symbolizer_elf_failures(const ember__symbolizer *s, const char **last);

/* What the perf map gave, for logs and tests. */
typedef struct ember__jit_stats {
	const char *path;   /* the perf map read, NULL if none was found */
	size_t symbols;     /* its entries */
	uint64_t bad_lines; /* malformed lines skipped */
	uint64_t dropped;   /* lines past the entry limit */
	uint64_t bytes;     /* bytes consumed */
	int capped;         /* the byte limit was reached: no more reading */
	uint64_t refused;   /* looks at a file not ours (owner, type) */
} ember__jit_stats;

/* Fills *out (all zero for s == NULL); out->path is borrowed from s. */
void ember__symbolizer_jit_stats(const ember__symbolizer *s, ember__jit_stats *out);

/*
 * Functions without symbols. An address of a module that no symbol (and no
 * DWARF subprogram) names gets its outermost frame named after the function
 * that holds it, the nearest start at or below the address among: the
 * start of the .eh_frame FDE covering it (fdetab.h; when no FDE covers
 * it, the end of the closest FDE below it), and the closest symbol
 * starting at or below it (the floor), whatever its size. A floor symbol
 * at or after the FDE's start names the address (its name, e.g. an
 * exported .dynsym label inside a function, sizeless or with a size that
 * ends before the address: the code from it to the FDE's end is one
 * function); otherwise the FDE does, as "MODULE+0xSTART". A sized symbol
 * covering the address always names it; a sizeless one (taken to run to
 * the next symbol) only when no FDE starts between it and the address.
 * MODULE is the file's base name ("gzip",
 * "liblzma.so.5.4.1"), START the ELF virtual address (hex, lowercase, as
 * nm, objdump, addr2line, gdb and readelf print it; not a file offset, not
 * an address of the process) where that function starts. Stable across runs and
 * machines for one build ID; `addr2line -f -e FILE.debug 0xSTART` names it.
 * function and system_name are that string (file and line stay what DWARF
 * says, if anything: usually NULL and 0); the module's has_symbols still
 * says only whether a symbol table was found. The names are placeholders
 * that a symbolizer with the debug file may replace (recognised by the
 * "+0x" after the module's base name). Addresses without any FDE at or
 * below them stay unnamed (nframes 0).
 */
typedef struct ember__fde_stats {
	uint64_t modules;   /* FDE tables read (one per module that needed it) */
	uint64_t fdes;      /* FDE ranges kept in them */
	uint64_t bytes;     /* memory the tables use */
	uint64_t named;     /* distinct addresses named after an FDE */
	uint64_t unnamed;   /* addresses no symbol and no FDE named */
	uint64_t empty;     /* modules whose table is empty (last_why says why) */
	const char *last_why; /* static string, "" if none */
} ember__fde_stats;

/* Fills *out (all zero for s == NULL). Not async-signal-safe. */
void ember__symbolizer_fde_stats(const ember__symbolizer *s, ember__fde_stats *out);

/* Which modules get file/line and inline frames from DWARF. */
enum {
	EMBER__LINES_APP = 0, /* the program and its own libraries, not system ones (default) */
	EMBER__LINES_ALL = 1, /* every module with debug info */
	EMBER__LINES_NONE = 2 /* none: function names only */
};

/*
 * Sets the line-information policy. System libraries (under /lib, /usr/lib,
 * ...) are excluded by default because their separate debug files
 * (libc6-dbg and friends) cost ~100 ms of CPU and ~20 MB of memory to load
 * in every profiled process, for lines inside libc few users read.
 */
void ember__symbolizer_set_lines(ember__symbolizer *s, int policy);

/*
 * Whether module i of the table (ember__symbolizer_modules) is named on the
 * libelf path (symbolizer_elf.c: no libdwfl for it), and if so its load
 * bias in *bias (the runtime address of link-time address 0). For tests
 * and the log. Agent thread; not async-signal-safe.
 */
int ember__symbolizer_elf_bias(const ember__symbolizer *s, size_t i, uint64_t *bias);

#endif
