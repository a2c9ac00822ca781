/* SPDX-License-Identifier: Apache-2.0 */
/*
 * window.h - turns one window's aggregated stacks into a symbolized
 * profile (the pprof model of profile.h). Agent thread only.
 */
#ifndef EMBER_WINDOW_H
#define EMBER_WINDOW_H

#include <stddef.h>

#include "profile/aggregate.h"
#include "profile/profile.h"
#include "symbols/symbolizer.h"

/* A static tag (ember_builder_add_tag): a label on every sample. */
typedef struct ember__tag {
	char *key, *value;
} ember__tag;

/*
 * What a window's profile takes from the agent's settings (the agent
 * fills it from its ember__config: ember__config_window, agent/agent.h;
 * the tree engine too). Borrowed for the call.
 */
typedef struct ember__window_cfg {
	const ember__tag *tags; /* static tags, labels of every sample */
	size_t ntags;
	int thread_labels;      /* thread_id and thread_name labels */
	unsigned hz;            /* CPU sampling rate: a CPU sample's period */
	unsigned wall_ms;       /* wall-clock interval: a wall sample's period */
	/* names of kernel frames (the perf engine's, leaf side of a stack:
	 * kernel addresses, symbols/kallsyms.h); NULL: each stack's kernel
	 * frames are one [kernel] frame */
	struct ember__kallsyms *kallsyms;
} ember__window_cfg;

/* Which profile a window's aggregate becomes. */
enum { EMBER__PROFILE_CPU = 0, EMBER__PROFILE_WALL = 1 };

/*
 * Builds the CPU (kind EMBER__PROFILE_CPU: samples/count, cpu/nanoseconds)
 * or wall-clock (EMBER__PROFILE_WALL: samples/count, wall/nanoseconds)
 * profile of [start_ns, end_ns) from `a`, whose weights are nanoseconds.
 * `sym` may be NULL (then locations carry addresses only). Sample i is
 * a->stacks[i], always (the JFR event log relies on it). On success
 * *out is the caller's, freed with ember__profile_free(). 0 or ember_err.
 */
int ember__window_profile(const ember__agg *a, ember__symbolizer *sym, const ember__window_cfg *cfg,
			  int kind, int64_t start_ns, int64_t end_ns, ember__profile **out);

/*
 * One stack of a profile built from rows (ember__window_rows): pcs leaf
 * first, the leaf an exact address and the callers return addresses (as
 * the unwinders record them), and nvalues values in the profile's order.
 */
typedef struct ember__window_row {
	const uint64_t *pcs;
	uint32_t depth;
	const int64_t *values;
} ember__window_row;

/*
 * Adds `rows` as samples to `p`, whose sample types (p->nvalues and
 * sample_type) the caller has set: locations symbolized with `sym` (may
 * be NULL), the configuration's static tags as labels. Used for profiles
 * that are not CPU or wall time (the memory profile, src/heap/). 0 or
 * ember_err; on failure p holds a part of the rows.
 */
int ember__window_rows(ember__profile *p, ember__symbolizer *sym, const ember__window_cfg *cfg,
		       const ember__window_row *rows, size_t n);

/*
 * Appends to p (a window profile from ember__window_profile) one sample of
 * `ns` for time that no sampled stack stands for (count 0): its stack is
 * `leaf` called from the executable's name (ember__profile_add_pseudo,
 * `exe` the program's path or NULL), its labels what cfg gives every
 * sample: the static tags and, with thread labels, thread `tid` named
 * `thread_name` (NULL: "thread-TID"). 0 or EMBER_ERR_NOMEM.
 */
int ember__window_add_pseudo(ember__profile *p, const ember__window_cfg *cfg, const char *exe,
			     const char *leaf, int32_t tid, const char *thread_name, uint64_t ns);

#endif
