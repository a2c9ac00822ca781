/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_space.h - one process's address space in a tree sampled from
 * outside (perf_tree.h): its executable mappings as MMAP2 records told
 * them, and the walk of its samples' copied stacks with the modules'
 * tables (tree_mods.h).
 *
 * The mappings follow the records: a fork copies the parent's, an exec
 * forgets those mapped before it, a new mapping replaces whatever it
 * overlaps. Each mapping keeps its record's time, so an exec read after
 * the new image's first mappings (one read of every CPU's ring that
 * missed the exec's record on one CPU and found the mappings that
 * followed it on another) keeps them. Unmaps are not reported by the kernel: an address keeps the
 * module last mapped there, which is what a sample taken there ran
 * unless the program mapped code over code.
 *
 * A walk builds the tables of the modules its frames pass through, on
 * demand: the first walk runs with those not yet built marked pending
 * (the frame-pointer rule, flagged EMBER_UNWIND_PENDING); the tables of
 * the modules its frames landed in are built, and the walk is redone,
 * until no new table helps (at most once per module).
 *
 * Not async-signal-safe; the tree engine's thread only.
 */
#ifndef EMBER_TREE_SPACE_H
#define EMBER_TREE_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "symbols/procmaps.h"
#include "tree/tree_mods.h"
#include "unwind/unwind.h"

typedef struct ember__tmap {
	uint64_t start, end, pgoff; /* the executable mapping */
	ember__tmod *mod;
	int bias_state;        /* 0: not computed, 1: bias/lo/hi known, -1: unknown */
	uint64_t bias, lo, hi; /* load bias; the image's span in this process */
	uint64_t time;         /* its record's time (CLOCK_MONOTONIC ns) */
} ember__tmap;

typedef struct ember__tspace {
	ember__tmap *maps; /* sorted by start, non-overlapping */
	size_t n, cap;
	ember__unwind_snapshot *snap; /* NULL: to be built */
	uint64_t snap_gen;            /* ember__tmods_generation when it was */
	uint64_t *scratch;            /* the relocated stack copy */
	size_t scratch_words;
} ember__tspace;

#define EMBER_TSPACE_INIT {NULL, 0, 0, NULL, 0, NULL, 0}

void ember__tspace_release(ember__tspace *sp);

/* Adds an executable mapping of m, made at `time` (CLOCK_MONOTONIC ns),
 * replacing what it overlaps. 0 or EMBER_ERR_NOMEM. */
int ember__tspace_map(ember__tspace *sp, uint64_t start, uint64_t len, uint64_t pgoff,
		      ember__tmod *m, uint64_t time);

/* An exec at `time`: forgets every mapping made before it. */
void ember__tspace_clear_before(ember__tspace *sp, uint64_t time);

/* A fork: dst (empty or not) becomes a copy of src's mappings. 0 or
 * EMBER_ERR_NOMEM. */
int ember__tspace_copy(ember__tspace *dst, const ember__tspace *src);

/* The mapping holding addr, or NULL. Borrowed until the next change. */
ember__tmap *ember__tspace_find(ember__tspace *sp, uint64_t addr);

/* The mapping's bias and image span computed (once): 1 when known. */
int ember__tspace_bias(ember__tmods *mods, ember__tmap *m);

/*
 * The mappings as a symbolizer for the process takes them
 * (ember__symbolizer_new_remote): each image's first segment (file offset
 * 0, from its program headers, which the kernel did not report: only
 * executable mappings are) before its executable mapping, as
 * /proc/PID/maps would show. *out must be EMBER_PROCMAPS_INIT or freed;
 * the caller's on success. 0 or EMBER_ERR_NOMEM.
 */
int ember__tspace_procmaps(ember__tspace *sp, ember__tmods *mods, ember__procmaps *out);

/*
 * Walks one sample: regs as the kernel gave them, stack the copy of
 * [regs->sp, regs->sp + stack_len). Fills pcs[0..max) leaf first (as
 * ember__unwind does: callers are return addresses) and returns the
 * count (>= 1), EMBER_UNWIND_* flags ORed into *flags. Builds tables as
 * needed (see above). stack_len 0: the leaf alone.
 */
int ember__tspace_unwind(ember__tspace *sp, ember__tmods *mods, const ember__regs *regs,
			 const uint8_t *stack, size_t stack_len, uint64_t *pcs, int max,
			 unsigned *flags);

#endif
