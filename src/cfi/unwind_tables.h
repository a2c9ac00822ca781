/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_tables.h - the registry of DWARF unwind tables the signal handler
 * reads: one table per loaded module, published as an immutable snapshot
 * through one atomic pointer (ember__sigstate.unwind_snap).
 *
 * The agent thread owns the registry. A refresh reads /proc/self/maps,
 * builds a table (cfi_elf.h) for every executable mapping not seen before
 * (files, and the vDSO from its image in memory), forgets modules that
 * were unmapped, and when anything changed publishes a new snapshot
 * {modules sorted by start: start, end, load bias, rows}. The previous
 * snapshot and the tables of vanished modules are retired: they are freed
 * only once no handler is running (the in-flight counter of handler.c
 * reads zero after the new snapshot was published), so a handler never
 * reads freed memory. Tables are our own heap memory, never the module's:
 * a dlclose cannot pull them away, and the handler never reads code.
 *
 * Modules are keyed by (device, inode, address of file offset 0), the
 * vDSO by its address; a library dlclose'd and dlopen'ed again at the
 * same place between two refreshes keeps its table.
 *
 * Not async-signal-safe; agent thread only (or a test's own thread).
 */
#ifndef EMBER_UNWIND_TABLES_H
#define EMBER_UNWIND_TABLES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "emberprof.h"
#include "unwind/unwind.h"

typedef struct ember__logger ember__logger;
typedef struct ember__unwind_tables ember__unwind_tables;

typedef struct ember__unwind_tables_stats {
	uint64_t modules;    /* modules with a table in the current snapshot */
	uint64_t bytes;      /* memory of those tables and the snapshot */
	uint64_t rows;       /* rows in those tables */
	/* of those tables, kept as 8-byte rows (src/cfi/cfi_pack.h): more
	 * than 65,535 distinct rules; too small for packing to pay */
	uint64_t unpacked_rules, unpacked_small;
	uint64_t built;      /* tables built, all time */
	uint64_t failed;     /* modules whose table could not be built, all time */
	uint64_t retired;    /* tables dropped because their module was unmapped */
	uint64_t freed;      /* retired tables freed (no handler could read them) */
	uint64_t snapshots;  /* snapshots published */
	uint64_t refreshes;  /* reads of /proc/self/maps */
	uint64_t bad_fdes;   /* malformed or unsupported FDEs skipped, all tables */
	int64_t build_ns;    /* CPU time spent building tables, all time */
	uint64_t pending;    /* lazy: mapped modules whose table is not built yet */
	uint64_t lazy_built; /* lazy: tables built because a sample landed in their module */
	uint64_t deferred;   /* lazy: wanted modules left for later by the budget, now */
	uint64_t lazy;       /* 1: lazy mode (ember__unwind_tables_set_lazy) */
	/* samples the handler walked by frame pointers in a module whose table
	 * was not built yet, runs stopped so far (ember__agent_unwind_stats only) */
	uint64_t samples_pending;
	/* the unwind-table cache (table_cache.h; all zero without one) */
	uint64_t cache_loaded;   /* tables loaded from the cache instead of built */
	uint64_t cache_stored;   /* tables built and written to the cache */
	uint64_t cache_failed;   /* writes to the cache that failed */
	uint64_t cache_rejected; /* cache files found invalid, rebuilt */
	uint64_t cache_no_id;    /* modules not cached: no build id */
} ember__unwind_tables_stats;

/*
 * The lazy builds' budget: a wanted module whose table should take more
 * than EMBER_UNWIND_SMALL_BUILD_NS to build is built only once all builds
 * so far plus this one stay within EMBER_UNWIND_BUILD_BUDGET_PCT % of the
 * CPU time the program has used. A program that runs for long gets every
 * table it needs; one that compiles a small file (rustc: ~1 s of tables
 * for librustc_driver and libLLVM) does not pay more for its tables than
 * the budget, and its samples there are walked by frame pointers. The
 * threshold lets an interpreter's executable (python3.11: 10 k FDEs,
 * 14-30 ms) be built at its first sample: a short script otherwise lost
 * every interpreter frame to the budget.
 */
#define EMBER_UNWIND_SMALL_BUILD_NS 32000000LL
#define EMBER_UNWIND_BUILD_BUDGET_PCT 10

/*
 * Creates an empty registry that publishes into *slot (left NULL until
 * the first refresh). `log` (may be NULL) is used for logging only and
 * must outlive the registry. 0 or EMBER_ERR_NOMEM.
 */
int ember__unwind_tables_new(ember__unwind_tables **out,
			     _Atomic(const ember__unwind_snapshot *) *slot, const ember__logger *log);

/*
 * Re-reads the module list, builds and retires tables, publishes a new
 * snapshot if it changed, and frees retired memory no handler can still
 * read. A module whose table cannot be built is logged, counted and left
 * out (its frames fall back to frame pointers). Returns 0, or an error
 * when /proc/self/maps cannot be read or memory runs out (the published
 * snapshot then stays as it was).
 */
int ember__unwind_tables_refresh(ember__unwind_tables *t);

/*
 * The cheap periodic check: refreshes only if the dynamic loader's load
 * and unload counters (dl_iterate_phdr's dlpi_adds/dlpi_subs) changed
 * since the last refresh, then frees retired memory if no handler runs.
 * Returns what the refresh returned, else 0.
 */
int ember__unwind_tables_poll(ember__unwind_tables *t);

/*
 * Lazy mode (the agent's; off by default, as tests of the registry expect):
 * a refresh builds no table, it lists new modules as pending, and the
 * snapshot marks them (ember__unwind_module.pending) so that the handler
 * walks their frames by frame pointers and counts it. The agent thread
 * hands the PCs of the samples it drains to ember__unwind_tables_note and
 * then calls ember__unwind_tables_build_wanted, which builds the tables of
 * the pending modules those PCs landed in and publishes them. A process
 * that never takes a sample builds nothing.
 */
void ember__unwind_tables_set_lazy(ember__unwind_tables *t, int lazy);

/*
 * Uses the persistent unwind-table cache at `dir` (table_cache.h; NULL: no
 * cache, as by default): a module with a build id gets its table from
 * there when the file is valid, else builds it and stores it. With a
 * cache that can be written, a lazy build is not held back by the budget
 * (EMBER_UNWIND_BUILD_BUDGET_PCT): it is paid once, by the first process
 * of a binary, and every later one loads it. 0 or EMBER_ERR_NOMEM.
 */
int ember__unwind_tables_use_cache(ember__unwind_tables *t, const char *dir);

/*
 * Marks the pending modules that hold any of pcs[0..n) (leaf first, the
 * others return addresses) as wanted. Cheap when nothing is pending (one
 * test). Returns 1 if a module became wanted, else 0. t may be NULL.
 */
int ember__unwind_tables_note(ember__unwind_tables *t, const uint64_t *pcs, uint32_t n);

/* Whether a pending module is wanted (a build may be due). t may be NULL. */
int ember__unwind_tables_wanted(const ember__unwind_tables *t);

/*
 * Builds the tables of the wanted modules the budget allows (see
 * EMBER_UNWIND_BUILD_BUDGET_PCT; app_cpu_ns: the CPU time the program's
 * own threads have used) and publishes a snapshot after each; the others
 * stay wanted for a later call. Frees retired memory no handler can still
 * read. Returns 0 or EMBER_ERR_NOMEM (the published snapshot stays as it
 * was). t may be NULL.
 */
int ember__unwind_tables_build_wanted(ember__unwind_tables *t, int64_t app_cpu_ns);

/* Current counters. */
void ember__unwind_tables_get_stats(const ember__unwind_tables *t, ember__unwind_tables_stats *out);

/*
 * Between runs of an agent: detach unpublishes the snapshot (stores NULL
 * in the slot) and frees snapshots and retired tables, keeping the tables
 * of the modules still loaded; attach points the registry at the next
 * run's slot, where the next refresh publishes (building tables only for
 * modules loaded meanwhile). The caller of detach guarantees that no
 * handler can still be reading the snapshot.
 */
void ember__unwind_tables_detach(ember__unwind_tables *t);
void ember__unwind_tables_attach(ember__unwind_tables *t,
				 _Atomic(const ember__unwind_snapshot *) *slot);

/*
 * Unpublishes the snapshot (stores NULL in the slot) and frees everything.
 * The caller guarantees that no handler can still be reading it (the
 * handler is detached and quiescent). NULL is ok.
 */
void ember__unwind_tables_free(ember__unwind_tables *t);

/*
 * The unwind-table counters of a ready (not running) agent, all its runs
 * together; zeros if it never built tables. Defined in agent.c; for tests
 * and diagnostics.
 */
void ember__agent_unwind_stats(const ember_agent *a, ember__unwind_tables_stats *out);

#endif
