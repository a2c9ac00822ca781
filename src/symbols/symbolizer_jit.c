/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer_jit.c - the symbolizer's JIT code (symbolizer_internal.h):
 * the anonymous executable mappings of the process, kept a while once
 * gone, named from the runtime's perf map (/tmp/perf-PID.map).
 *
 * Agent thread only; not async-signal-safe.
 */
#include "symbols/symbolizer_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* Is pm memory a runtime may generate code into: executable, anonymous? */
static int is_jit_mapping(const ember__procmap *pm)
{
	return (pm->perms & EMBER_MAP_EXEC) && (pm->path[0] == '\0' || !strncmp(pm->path, "[anon", 5));
}

/* JIT ranges no longer mapped that are still named (see the rebuild below). */
#define EMBER_JIT_KEEP_GONE 64

/* The first range of v[0..n) (sorted, disjoint) ending after addr, or n. */
static size_t jit_ending_after(const jit_range *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].info.limit <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the JIT mapping containing addr, or -1. */
ptrdiff_t ember__symbolizer_find_jit(const ember__symbolizer *s, uint64_t addr)
{
	size_t i = jit_ending_after(s->jits, s->njits, addr);
	return i < s->njits && s->jits[i].info.start <= addr ? (ptrdiff_t)i : -1;
}

/* Does [start, limit) overlap a range of v[0..n) (sorted, disjoint)? */
static int overlaps(const jit_range *v, size_t n, uint64_t start, uint64_t limit)
{
	size_t i = jit_ending_after(v, n, start);
	return i < n && v[i].info.start < limit;
}

static int jit_by_start(const void *a, const void *b)
{
	const jit_range *x = a, *y = b;
	return x->info.start < y->info.start ? -1 : x->info.start > y->info.start;
}

static int jit_by_recent(const void *a, const void *b)
{
	const jit_range *x = a, *y = b;
	return x->gone > y->gone ? -1 : x->gone < y->gone;
}

/*
 * The JIT mappings of `maps`, keeping the ids of those seen before.
 *
 * Ranges that were JIT code at an earlier refresh and are gone now stay,
 * named as before, unless something mapped since overlaps them: samples
 * taken there may still wait in the window being built. A runtime unmaps
 * its code space on the way out (node does, before exit_group), and
 * flips code pages between writable and executable while it compiles, so
 * the refresh before the last window often no longer sees the code most
 * samples of the run landed in. The EMBER_JIT_KEEP_GONE most recently
 * gone are kept; older ones are forgotten.
 */
int ember__symbolizer_jit_rebuild(ember__symbolizer *s, const ember__procmaps *maps)
{
	size_t count = 0;
	for (size_t i = 0; i < maps->n; i++)
		count += is_jit_mapping(&maps->maps[i]);
	jit_range *v = calloc(count + s->njits + 1, sizeof(*v));
	if (!v)
		return ember__error_oom("JIT mappings");
	size_t n = 0;
	for (size_t i = 0; i < maps->n; i++) {
		const ember__procmap *pm = &maps->maps[i];
		if (!is_jit_mapping(pm))
			continue;
		ptrdiff_t old = ember__symbolizer_find_jit(s, pm->start);
		uint32_t id = old >= 0 && s->jits[old].info.start == pm->start &&
				      s->jits[old].info.limit == pm->end
			      ? s->jits[old].info.id
			      : s->next_id++;
		v[n++].info = (ember__module_info){.id = id,
						   .path = s->pmf.path,
						   .start = pm->start,
						   .limit = pm->end,
						   .build_id = "",
						   .has_symbols = 1};
	}
	size_t live = n;
	for (size_t i = 0; i < s->njits; i++) {
		if (overlaps(v, live, s->jits[i].info.start, s->jits[i].info.limit))
			continue;
		v[n] = s->jits[i];
		if (!v[n].gone)
			v[n].gone = s->refreshes;
		n++;
	}
	if (n - live > EMBER_JIT_KEEP_GONE) {
		qsort(v + live, n - live, sizeof(*v), jit_by_recent);
		n = live + EMBER_JIT_KEEP_GONE;
	}
	if (n > live)
		qsort(v, n, sizeof(*v), jit_by_start);
	free(s->jits);
	s->jits = v;
	s->njits = n;
	return 0;
}

/*
 * addr lies in no module: if it is in JIT code and the runtime writes a
 * perf map, its mapping is named after the map and its function comes
 * from the map (read again if it grew). Otherwise no module, as before.
 */
int ember__symbolizer_jit_lookup(ember__symbolizer *s, uint64_t addr, ember__symbol_info *out)
{
	ptrdiff_t j = ember__symbolizer_find_jit(s, addr);
	if (j < 0 || (s->flags & EMBER__SYM_OFFLINE)) /* no process, no perf map */
		return 0;
	int err = ember__perfmap_file_update(&s->pmf, EMBER_PERFMAP_RECHECK_NS);
	const char *name = s->pmf.found ? ember__perfmap_find(&s->pmf.map, addr) : NULL;
	if (!name && s->pmf.found) {
		/* perhaps written since the last look: look again, unless that
		 * was just now (a window may hold many unnamed addresses) */
		err = ember__perfmap_file_update(&s->pmf, EMBER_PERFMAP_MISS_RECHECK_NS) ?: err;
		name = ember__perfmap_find(&s->pmf.map, addr);
	}
	if (!s->pmf.found)
		return err;
	out->module = &s->jits[j].info;
	if (name) {
		out->nframes = 1;
		out->frames[0] = (ember__symbol_frame){.function = name, .system_name = name};
	}
	return err;
}

void ember__symbolizer_jit_stats(const ember__symbolizer *s, ember__jit_stats *out)
{
	*out = (ember__jit_stats){0};
	if (!s)
		return;
	out->path = s->pmf.found ? s->pmf.path : NULL;
	out->symbols = s->pmf.map.n;
	out->bad_lines = s->pmf.map.bad_lines;
	out->dropped = s->pmf.map.dropped;
	out->bytes = s->pmf.off;
	out->capped = s->pmf.capped;
	out->refused = s->pmf.refused;
}
