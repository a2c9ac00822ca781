/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jemalloc.h - the jemalloc backend of the memory profile: for a program
 * whose allocator is jemalloc built with profiling (Debian's libjemalloc2
 * is) and run with profiling on (MALLOC_CONF=prof:true, optionally
 * lg_prof_sample:<n> and prof_accum:true), jemalloc samples the
 * allocations itself; each window the agent asks it for its heap profile
 * (mallctl "prof.dump" into a memfd the backend owns), parses it
 * (heap/jeheap.c) and turns it into emberprof's memory profile: the four
 * sample types alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes, unsampled as jeprof does.
 *
 * What the values mean:
 *   inuse_*  objects and bytes live at the dump (jemalloc's curobjs and
 *            curbytes), unsampled;
 *   alloc_*  objects and bytes allocated since the previous collect of
 *            this backend (the first collect: since the process started or
 *            jemalloc's last prof.reset), from accumobjs/accumbytes, which
 *            jemalloc counts only with prof_accum:true. Without it they
 *            are 0 and ember__jemalloc_accum() says so.
 *
 * mallctl is found at run time (dlsym(RTLD_DEFAULT)): emberprof does not
 * link jemalloc. Agent thread only; nothing here is async-signal-safe.
 */
#ifndef EMBER_JEMALLOC_H
#define EMBER_JEMALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "heap/jeheap.h"
#include "heap/memagg.h"
#include "profile/profile.h"
#include "symbols/symbolizer.h"

struct ember__heap_cfg; /* heap/heapprof.h */

/*
 * One stack of a collected window. pcs follow the agent's sample
 * convention (as the signal handler records them, so window.c's rule
 * applies): pcs[0] is an address inside the allocating call instruction
 * (the innermost return address outside jemalloc, minus 1), the others
 * are return addresses; symbolize pcs[i] - 1 for i > 0.
 */
typedef struct ember__heap_stack {
	const uint64_t *pcs;
	uint32_t depth;
	double values[EMBER_MEM_NVALUES]; /* EMBER_MEM_* order: unsampled estimates */
} ember__heap_stack;

/* A collected window. Borrowed from the backend; valid until its next
 * collect or close. */
typedef struct ember__heap_window {
	const ember__heap_stack *stacks;
	size_t nstacks;
	uint64_t period; /* jemalloc's mean bytes between samples */
	int accum;       /* alloc_* are measured (prof_accum on) */
	const ember__jeheap *dump; /* the parsed dump: mappings of the process */
} ember__heap_window;

typedef struct ember__jemalloc ember__jemalloc;

/*
 * If the process runs on jemalloc with profiling, stops jemalloc sampling
 * the calling thread (mallctl thread.prof.active = false): called first
 * thing on the agent thread, whose allocations are not the program's.
 * Does nothing otherwise. Needs no ember__jemalloc.
 */
void ember__jemalloc_exclude_current_thread(void);

/*
 * Finds jemalloc's mallctl in the process, checks that it was built with
 * profiling and runs with opt.prof on, and creates the memfd dumps go to.
 * Returns 0 (*out is the caller's, freed with ember__jemalloc_close),
 * EMBER_ERR_UNSUPPORTED with a message saying what is missing (no
 * jemalloc; jemalloc without --enable-prof; prof:false), EMBER_ERR_SYS or
 * EMBER_ERR_NOMEM.
 */
int ember__jemalloc_open(ember__jemalloc **out);
void ember__jemalloc_close(ember__jemalloc *j);

/* Whether alloc_* are measured (opt.prof_accum). */
int ember__jemalloc_accum(const ember__jemalloc *j);
/* jemalloc's mean bytes between samples (2^prof.lg_sample), 0 if unknown. */
uint64_t ember__jemalloc_period(const ember__jemalloc *j);
/* jemalloc's prof.active now (sampling may be switched off and on). */
int ember__jemalloc_active(const ember__jemalloc *j);

/*
 * Dumps jemalloc's heap profile, parses it and fills *w (borrowed, see
 * ember__heap_window). Stacks with nothing live and nothing allocated
 * since the previous collect are left out. Returns 0, EMBER_ERR_SYS
 * (prof.dump failed, message has jemalloc's error), EMBER_ERR_FORMAT (the
 * dump did not parse) or EMBER_ERR_NOMEM; on error the previous window's
 * accumulators are kept, so the next collect's alloc_* cover both.
 */
int ember__jemalloc_collect(ember__jemalloc *j, ember__heap_window *w);

/*
 * The dump-to-window step alone, for tests and the fuzzer: unsamples
 * `cur`'s stacks and subtracts the accumulators of `prev` (NULL: none)
 * from stacks with the same pcs. *stacks_out is one malloc'd block
 * holding the stacks and their pcs (caller frees). 0 or EMBER_ERR_NOMEM.
 */
int ember__heap_window_from_dump(const ember__jeheap *cur, const ember__jeheap *prev, int accum,
				 ember__heap_stack **stacks_out, size_t *n_out);

/* Adds a window's stacks to a memory aggregate (the heap branch's
 * ember__memagg, what every memory profile is built from). 0 or
 * EMBER_ERR_NOMEM. */
int ember__heap_window_add(const ember__heap_window *w, ember__memagg *m);

/*
 * The memory profile of a window alone (ember__memagg_profile: sample
 * types alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes, period jemalloc's), with a comment saying whether
 * alloc_* were measured. With a symbolizer, locations are symbolized in
 * this process; without one (sym NULL) they carry addresses and the
 * Mappings of the dump's MAPPED_LIBRARIES, from which pprof symbolizes.
 * `cfg` gives the static tags (a zeroed config: none). On success *out is
 * the caller's. 0 or ember_err.
 */
int ember__heap_window_profile(const ember__heap_window *w, ember__symbolizer *sym,
			       const ember__window_cfg *cfg, int64_t start_ns, int64_t end_ns,
			       ember__profile **out);

struct ember__heapprof;

/*
 * Chooses the memory profile's source when an agent starts allocation
 * profiling (agent thread, before ember__heapprof_start), following
 * cfg->alloc_backend: for jemalloc, and for auto when jemalloc with
 * profiling on is in the process, opens the backend and adds it to *hp as
 * the exclusive heap source "jemalloc" (EMBER_HEAP_SOURCE_EXCLUSIVE: the
 * malloc hook then stays detached, so nothing is counted twice), once:
 * *added remembers it across runs of the same agent. Returns 0, or for
 * backend jemalloc the reason it cannot be used (EMBER_ERR_UNSUPPORTED
 * and a message), or EMBER_ERR_NOMEM.
 */
int ember__alloc_backend_setup(struct ember__heapprof **hp, const struct ember__heap_cfg *cfg,
			       int *added);

#endif
