/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_mods.h - the modules (ELF files, and the vDSO) mapped anywhere in a
 * tree sampled from outside (perf_tree.h), each known once however many
 * processes map it: 300 shells of a loop share one libc.
 *
 * A module is identified as the kernel reports its mapping (device, inode
 * and path; the vDSO by name). Two things are read from it, each once and
 * only when a sample needs it:
 *  - its layout: the PT_LOAD segments (program headers), from which a
 *    process's load bias follows from one executable mapping (address and
 *    file offset), and the span of the whole image (what a symbolizer
 *    reports as the module, from its first segment);
 *  - its unwind table (src/cfi/), rows at link-time addresses, so one
 *    table serves every process whatever address it was loaded at.
 * The vDSO is read from this process's own image: every process of this
 * architecture on this kernel has the same one.
 *
 * Not async-signal-safe; one thread owns a registry.
 */
#ifndef EMBER_TREE_MODS_H
#define EMBER_TREE_MODS_H

#include <stddef.h>
#include <stdint.h>

#include "cfi/cfi.h"

#define EMBER_TMOD_LOADS_MAX 16

typedef struct ember__tmod {
	uint32_t id;   /* index in the registry */
	char *path;    /* as the kernel printed it ("[vdso]" for the vDSO) */
	uint32_t maj, min;
	uint64_t ino;
	int vdso;
	int layout;    /* 0: not read yet, 1: read, -1: unreadable */
	int table_state; /* 0: not built yet, 1: built (may have no rows), -1: failed */
	uint32_t nloads;
	struct {
		uint64_t vaddr, offset, filesz, memsz;
	} loads[EMBER_TMOD_LOADS_MAX];
	ember__cfi_table *table; /* NULL until built */
	uint64_t build_ns;       /* CPU time the table took */
	uint64_t fdes;           /* its .eh_frame_hdr's FDE count (layout), 0 unknown */
} ember__tmod;

typedef struct ember__tmods ember__tmods;

typedef struct ember__tmods_stats {
	uint64_t modules, tables, table_failures, layout_failures, rows, bytes, build_ns;
	uint64_t deferred; /* builds held back by the budget (walks by frame pointers meanwhile) */
} ember__tmods_stats;

/* A new, empty registry; 0 and *out (the caller's), or EMBER_ERR_NOMEM. */
int ember__tmods_new(ember__tmods **out);
void ember__tmods_free(ember__tmods *r);

/*
 * The module of a mapping as an MMAP2 record gives it; created on first
 * sight (nothing is read from it yet). NULL only when memory runs out.
 * Borrowed: valid until ember__tmods_free.
 */
ember__tmod *ember__tmods_get(ember__tmods *r, const char *path, uint32_t maj, uint32_t min,
			      uint64_t ino);

/*
 * Reads m's program headers if not done yet. 1 when m's layout is known,
 * 0 when it cannot be (the file is gone or not an ELF file of this
 * architecture; counted, once).
 */
int ember__tmod_layout(ember__tmods *r, ember__tmod *m);

/*
 * The load bias of m mapped executable at `start` from file offset
 * `pgoff`: 1 and *bias (address = link-time address + bias), or 0 when no
 * segment holds that offset (or the layout is unknown). *lo and *hi (may be
 * NULL) receive the image's whole span in that process, its lowest
 * segment's page to its highest segment's end.
 */
int ember__tmod_bias(ember__tmods *r, ember__tmod *m, uint64_t start, uint64_t pgoff,
		     uint64_t *bias, uint64_t *lo, uint64_t *hi);

/*
 * The budget of builds, as the library's lazy tables have it
 * (src/cfi/unwind_tables.h: EMBER_UNWIND_SMALL_BUILD_NS,
 * EMBER_UNWIND_BUILD_BUDGET_PCT): once set, a table expected to take more
 * than the small build's time (from its FDE count and the speed of the
 * builds so far) is built only while all builds stay within that share of
 * the CPU time the tree has used, `cpu_ns` (updated by the caller); a
 * compiler that runs for a second does not pay half a second for
 * librustc_driver's table. Off (every table built) until called.
 */
void ember__tmods_set_budget(ember__tmods *r, uint64_t cpu_ns);

/*
 * Builds m's unwind table if not done yet (once: a failure is not
 * retried), unless the budget holds it back (then NULL, m still unbuilt,
 * counted in deferred). Returns the table (may have no rows: no CFI), or
 * NULL.
 */
const ember__cfi_table *ember__tmod_table(ember__tmods *r, ember__tmod *m);

void ember__tmods_get_stats(const ember__tmods *r, ember__tmods_stats *out);

/* Counts the tables built so far: a snapshot made at another count may
 * mark as pending a module that has its table now. */
uint64_t ember__tmods_generation(const ember__tmods *r);

#endif
