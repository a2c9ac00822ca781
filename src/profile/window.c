/* SPDX-License-Identifier: Apache-2.0 */
/*
 * window.c - from deduplicated stacks to a pprof-shaped profile.
 *
 * Each distinct PC becomes one Location (the leaf's own address; for
 * callers, the return address minus one, which lies inside the call
 * instruction and so symbolizes to the calling line). Locations point to
 * the Mapping of their module and to one Line per (inlined) function.
 * Functions are shared by name, system name and file.
 *
 * Mapping 1 is the main executable whenever the program's entry point
 * (AT_ENTRY) lies in a module (else the module of /proc/self/exe's file),
 * whatever the first sample's leaf is, also in a profile without samples:
 * pprof readers and Grafana Pyroscope take mapping[0] as the main binary
 * (Pyroscope's distributor writes the service version into it,
 * injectMappingVersions in pkg/distributor/distributor.go).
 *
 * A caller frame whose address lies outside every executable mapping of
 * the process never becomes a location: the unwinder read a data word as
 * a return address (e.g. the frame-pointer rule above main, where glibc's
 * frames keep no frame pointer). The stack is cut there, keeping the
 * frames below it (leaf side), which were unwound before the bad step.
 * The leaf, the interrupted PC, was code when the sample was taken and is
 * always kept (its library may have been unloaded since).
 *
 * Kernel frames (kernel addresses on the leaf side of a stack, from the
 * perf engine's callchains) are named from /proc/kallsyms (the window
 * configuration's reader) in one mapping, [kernel.kallsyms], as perf and
 * the tree engine name them; without names, a stack's kernel frames are
 * one [kernel] frame.
 */
#include "profile/window.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "emberprof.h"
#include "sample/labels.h"
#include "symbols/kallsyms.h"
#include "symbols/procmaps.h"
#include "util/error.h"
#include "util/hashmap.h"

typedef struct builder {
	ember__profile *p;
	ember__symbolizer *sym;
	ember__u64map locs;  /* lookup address -> location index */
	ember__u64map maps;  /* module id + 1 -> mapping index */
	ember__u64map funcs; /* string hash (+probe) -> function index */
	ember__procmaps maps_now; /* /proc/self/maps, read once if a frame has no module */
	int maps_state;           /* 0: not read, 1: read, -1: unreadable */
	ember__kallsyms *ks;      /* kernel frames' names, NULL: none */
	uint32_t kmap, kbare;     /* the kernel's mapping; the bare [kernel] location */
} builder;

static void builder_free(builder *b)
{
	ember__u64map_free(&b->locs);
	ember__u64map_free(&b->maps);
	ember__u64map_free(&b->funcs);
	if (b->maps_state == 1)
		ember__procmaps_free(&b->maps_now);
}

static uint32_t mapping_for(builder *b, const ember__module_info *m)
{
	int inserted;
	uint64_t *v = ember__u64map_put(&b->maps, (uint64_t)m->id + 1, &inserted);
	if (!v)
		return 0;
	if (!inserted)
		return (uint32_t)*v;
	ember__mapping mp = {
		.start = m->start,
		.limit = m->limit,
		.offset = m->file_offset,
		.file = ember__profile_strdup(b->p, m->path),
		.build_id = ember__profile_strdup(b->p, m->build_id),
		.has_functions = m->has_symbols,
		.has_filenames = m->has_lines,
		.has_line_numbers = m->has_lines,
	};
	*v = ember__profile_add_mapping(b->p, &mp);
	return (uint32_t)*v;
}

static int same(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static uint32_t function_for(builder *b, const ember__symbol_frame *f)
{
	const char *name = f->function ? f->function : "";
	const char *sys = f->system_name ? f->system_name : name;
	const char *file = f->file ? f->file : "";
	uint64_t h = ember__hash_bytes(name, strlen(name), 1);
	h = ember__hash_bytes(sys, strlen(sys), h);
	h = ember__hash_bytes(file, strlen(file), h);
	for (;; h++) {
		int inserted;
		uint64_t *v = ember__u64map_put(&b->funcs, h, &inserted);
		if (!v)
			return 0;
		if (!inserted) {
			const ember__function *fn = &b->p->functions[*v - 1];
			if (same(fn->name, name) && same(fn->system_name, sys) && same(fn->filename, file))
				return (uint32_t)*v;
			continue; /* a different function with the same hash: probe on */
		}
		ember__function fn = {
			.name = ember__profile_strdup(b->p, name),
			.system_name = ember__profile_strdup(b->p, sys),
			.filename = ember__profile_strdup(b->p, file),
		};
		*v = ember__profile_add_function(b->p, &fn);
		return (uint32_t)*v;
	}
}

/* location_for()'s answer for an address that is not code. */
#define NO_LOCATION UINT32_MAX

/* Is addr in an executable mapping that is not a module (JIT code, anonymous
 * executable memory)? The maps are read once per profile, and only when a
 * frame lies outside every module. Unreadable maps: yes (keep the frame). */
static int in_exec_mapping(builder *b, uint64_t addr)
{
	if (b->maps_state == 0)
		b->maps_state = ember__procmaps_read_self(&b->maps_now) == 0 ? 1 : -1;
	if (b->maps_state < 0)
		return 1;
	const ember__procmap *m = ember__procmaps_find(&b->maps_now, addr);
	return m && (m->perms & EMBER_MAP_EXEC);
}

/* Makes the main executable's module mapping 1 (see the top): the module
 * holding AT_ENTRY, else (no module there) the first module of the file
 * /proc/self/exe names; for another process's symbolizer, the first module
 * of the file it exec'd. */
static void main_mapping_first(builder *b)
{
	ember__symbol_info si;
	if (!b->sym || b->p->nmappings != 0)
		return;
	/* another process's (the tree engine's): the file it exec'd */
	const char *main = ember__symbolizer_main(b->sym);
	unsigned long entry = main ? 0 : getauxval(AT_ENTRY);
	if (entry && ember__symbolizer_lookup(b->sym, entry, &si) == 0 && si.module) {
		mapping_for(b, si.module);
		return;
	}
	char exe[PATH_MAX];
	ssize_t n = main ? (ssize_t)snprintf(exe, sizeof(exe), "%s", main)
			 : readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(exe))
		return;
	exe[n] = '\0';
	const ember__module_info *mods;
	size_t nmods = ember__symbolizer_modules(b->sym, &mods);
	for (size_t i = 0; i < nmods; i++) {
		if (!strcmp(mods[i].path, exe)) {
			mapping_for(b, &mods[i]);
			return;
		}
	}
}

/* The location of addr; `leaf`: addr is an interrupted PC, which was code
 * when the sample was taken even if its library is gone now. */
static uint32_t location_for(builder *b, uint64_t addr, int leaf)
{
	int inserted;
	uint64_t *v = ember__u64map_put(&b->locs, addr, &inserted);
	if (!v)
		return 0;
	if (!inserted && !(leaf && *v == NO_LOCATION))
		return (uint32_t)*v;
	ember__location loc = {.address = addr};
	ember__symbol_info si;
	if (!inserted) /* a leaf where a caller was refused: a bare location */
		return ember__profile_add_location(b->p, &loc);
	if (b->sym && ember__symbolizer_lookup(b->sym, addr, &si) == 0) {
		/* (the zero page first: /proc/self/maps may be unreadable,
		 * and in_exec_mapping then says yes) */
		if (!si.module && !leaf && (addr < 4096 || !in_exec_mapping(b, addr))) {
			/* not code: remembered as "no location" (see the top) */
			v = ember__u64map_get(&b->locs, addr);
			*v = NO_LOCATION;
			return NO_LOCATION;
		}
		if (si.module)
			loc.mapping = mapping_for(b, si.module);
		if (si.nframes) {
			loc.lines = ember__arena_alloc(&b->p->arena, si.nframes * sizeof(*loc.lines));
			if (!loc.lines)
				return 0;
			for (uint32_t i = 0; i < si.nframes; i++) {
				loc.lines[i].function = function_for(b, &si.frames[i]);
				loc.lines[i].line = si.frames[i].line;
				if (!loc.lines[i].function)
					return 0;
			}
			loc.nlines = si.nframes;
		}
	} else if (!leaf && addr < 4096) {
		/* No answer from the symbolizer (none, or the lookup failed):
		 * a caller in the zero page is surely not code. */
		v = ember__u64map_get(&b->locs, addr);
		*v = NO_LOCATION;
		return NO_LOCATION;
	}
	/* The builder's map may have moved; look the slot up again. */
	uint32_t idx = ember__profile_add_location(b->p, &loc);
	v = ember__u64map_get(&b->locs, addr);
	*v = idx;
	return idx;
}

/* The location of kernel address addr (`leaf`: the interrupted IP, else a
 * return address); 0 when out of memory. */
static uint32_t kernel_location_for(builder *b, uint64_t addr, int leaf)
{
	int named = b->ks && ember__kallsyms_named(b->ks);
	if (!b->kmap) {
		uint64_t lo = 0, hi = 0;
		const char *bid = b->ks ? ember__kallsyms_range(b->ks, &lo, &hi) : "";
		ember__mapping m = {lo, hi, 0, ember__profile_strdup(b->p, EMBER_KALLSYMS_MAPPING),
				    ember__profile_strdup(b->p, bid), named, 0, 0};
		if (!m.file || !m.build_id || !(b->kmap = ember__profile_add_mapping(b->p, &m)))
			return 0;
	}
	const char *name = named ? ember__kallsyms_lookup(b->ks, leaf ? addr : addr - 1) : NULL;
	if (!name && b->kbare)
		return b->kbare;
	int inserted = 0;
	uint64_t *v = name ? ember__u64map_put(&b->locs, addr, &inserted) : NULL;
	if (name && !v)
		return 0;
	if (name && !inserted)
		return (uint32_t)*v;
	ember__symbol_frame f = {.function = name ? name : "[kernel]"};
	ember__location loc = {.address = name ? addr : 0, .mapping = b->kmap, .nlines = 1};
	loc.lines = ember__arena_alloc(&b->p->arena, sizeof(*loc.lines));
	if (!loc.lines || !(loc.lines[0].function = function_for(b, &f)))
		return 0;
	loc.lines[0].line = 0;
	uint32_t idx = ember__profile_add_location(b->p, &loc);
	if (!name)
		return b->kbare = idx;
	*ember__u64map_get(&b->locs, addr) = idx;
	return idx;
}

/* Unpacks dynamic labels (sample/labels.h format); the innermost value of
 * a key wins. Returns how many distinct keys were written to out. */
static uint32_t dynamic_labels(builder *b, const ember__agg_stack *s, ember__label *out)
{
	const uint8_t *p = ember__agg_labels(s), *end = p + s->label_len;
	uint32_t n = 0;
	while (p + 2 <= end) {
		size_t kl = p[0];
		if (p + 1 + kl + 1 > end)
			break;
		size_t vl = p[1 + kl];
		if (p + 2 + kl + vl > end)
			break;
		const char *key = ember__arena_strndup(&b->p->arena, (const char *)p + 1, kl);
		const char *val = ember__arena_strndup(&b->p->arena, (const char *)p + 2 + kl, vl);
		if (!key || !val)
			break;
		uint32_t j = 0;
		while (j < n && strcmp(out[j].key, key) != 0)
			j++;
		out[j].key = key; /* a later (inner) push overrides */
		out[j].str = val;
		if (j == n)
			n++;
		p += 2 + kl + vl;
	}
	return n;
}

static int has_key(const ember__label *l, uint32_t n, const char *key)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(l[i].key, key))
			return 1;
	return 0;
}

/* Appends to out, which holds *n labels (the sample's own), the static
 * tags (but a key among those, the sample's own, wins) and, with thread
 * labels, thread tid's id and name (NULL: "thread-TID"); *n becomes the
 * count. 0 or EMBER_ERR_NOMEM. */
static int config_labels(ember__profile *p, const ember__window_cfg *cfg, ember__label *out,
			 uint32_t *n, int32_t tid, const char *name)
{
	uint32_t ndyn = *n, k = ndyn;
	for (size_t i = 0; i < cfg->ntags; i++) {
		if (has_key(out, ndyn, cfg->tags[i].key))
			continue; /* a thread's own label beats a static tag */
		out[k].key = ember__profile_strdup(p, cfg->tags[i].key);
		out[k].str = ember__profile_strdup(p, cfg->tags[i].value);
		k++;
	}
	if (cfg->thread_labels) {
		char id[16];
		snprintf(id, sizeof(id), "%d", (int)tid);
		out[k].key = ember__profile_strdup(p, "thread_id");
		out[k].str = ember__profile_strdup(p, id);
		k++;
		out[k].key = ember__profile_strdup(p, "thread_name");
		char fallback[24]; /* the agent names every thread it saw; never "?" */
		snprintf(fallback, sizeof(fallback), "thread-%d", (int)tid);
		out[k].str = ember__profile_strdup(p, name ? name : fallback);
		k++;
	}
	*n = k;
	for (uint32_t i = ndyn; i < k; i++)
		if (!out[i].key || !out[i].str)
			return EMBER_ERR_NOMEM;
	return 0;
}

static int add_labels(builder *b, const ember__window_cfg *cfg, const ember__agg *a,
		      const ember__agg_stack *s, ember__sample *out)
{
	/* + 1: wall-clock samples carry thread_state among their labels */
	uint32_t n = (uint32_t)cfg->ntags + (cfg->thread_labels ? 2u : 0u) + EMBER__LABELS_MAX + 1;
	out->labels = ember__arena_alloc(&b->p->arena, n * sizeof(*out->labels));
	if (!out->labels)
		return EMBER_ERR_NOMEM;
	out->nlabels = dynamic_labels(b, s, out->labels);
	return config_labels(b->p, cfg, out->labels, &out->nlabels, s->tid,
			     ember__agg_name(a, s->tid));
}

int ember__window_add_pseudo(ember__profile *p, const ember__window_cfg *cfg, const char *exe,
			     const char *leaf, int32_t tid, const char *thread_name, uint64_t ns)
{
	uint32_t i = ember__profile_add_pseudo(p, exe, NULL, leaf, (int64_t)ns);
	uint32_t n = (uint32_t)cfg->ntags + (cfg->thread_labels ? 2u : 0u);
	ember__label *l = i && n ? ember__arena_alloc(&p->arena, n * sizeof(*l)) : NULL;
	if (!i || (n && !l))
		return ember__error_oom("profile");
	ember__sample *s = &p->samples[i - 1];
	s->labels = l;
	s->nlabels = 0;
	if (n && config_labels(p, cfg, l, &s->nlabels, tid, thread_name) != 0)
		return ember__error_oom("profile");
	return 0;
}

/* The address a frame is looked up at: a caller's return address minus
 * one (inside its call), a leaf's own. */
static uint64_t frame_addr(const uint64_t *pcs, uint32_t d)
{
	return d == 0 || pcs[d] == 0 ? pcs[d] : pcs[d] - 1;
}

/*
 * Every frame address of a window, handed to the symbolizer at once before
 * the lookups (symbolizer.h, prefetch): a module first met here is named
 * by one pass over its symbols instead of an index of them all. The
 * caller counts the frames (frames_need), adds each stack (frames_add),
 * then calls frames_prefetch. Failing to allocate only costs that saving
 * (the lookups build the index).
 */
typedef struct frame_addrs {
	uint64_t *v;
	size_t n, cap;
} frame_addrs;

static void frames_add(frame_addrs *f, const uint64_t *pcs, uint32_t depth)
{
	for (uint32_t d = 0; d < depth && f->n < f->cap; d++)
		if (!ember__kallsyms_is_kernel(pcs[d]))
			f->v[f->n++] = frame_addr(pcs, d);
}

static void frames_prefetch(ember__symbolizer *sym, frame_addrs *f)
{
	if (sym && f->n)
		(void)ember__symbolizer_prefetch(sym, f->v, f->n);
	free(f->v);
}

/* Room for n frames, and the program's entry point (main_mapping_first
 * looks it up) already in. */
static frame_addrs frames_need(const ember__symbolizer *sym, size_t n)
{
	frame_addrs f = {NULL, 0, 0};
	unsigned long entry = getauxval(AT_ENTRY);
	if (sym && (f.v = malloc((n + 1) * sizeof(*f.v)))) {
		f.cap = n + 1;
		if (entry)
			f.v[f.n++] = entry;
	}
	return f;
}

int ember__window_profile(const ember__agg *a, ember__symbolizer *sym, const ember__window_cfg *cfg,
			  int kind, int64_t start_ns, int64_t end_ns, ember__profile **out)
{
	*out = NULL;
	builder b = {.sym = sym, .ks = cfg->kallsyms};
	b.p = ember__profile_new();
	if (!b.p)
		return ember__error_oom("profile");
	ember__profile *p = b.p;
	int wall = kind == EMBER__PROFILE_WALL;
	int64_t period = wall ? (int64_t)cfg->wall_ms * 1000000 : 1000000000 / (int64_t)cfg->hz;
	p->nvalues = 2;
	p->sample_type[0] = (ember__value_type){ember__profile_strdup(p, "samples"),
						ember__profile_strdup(p, "count")};
	p->sample_type[1] = (ember__value_type){ember__profile_strdup(p, wall ? "wall" : "cpu"),
						ember__profile_strdup(p, "nanoseconds")};
	p->period_type = p->sample_type[1];
	p->period = period;
	p->time_nanos = start_ns;
	p->duration_nanos = end_ns - start_ns;
	p->default_sample_type = p->sample_type[1].type;

	size_t nframes = 0;
	for (size_t i = 0; i < a->n; i++)
		nframes += a->stacks[i]->depth;
	frame_addrs fa = frames_need(sym, nframes);
	for (size_t i = 0; i < a->n; i++)
		frames_add(&fa, a->stacks[i]->pcs, a->stacks[i]->depth);
	frames_prefetch(sym, &fa);
	main_mapping_first(&b); /* even in an empty profile: every file names the program */

	int rc = 0;
	for (size_t i = 0; i < a->n && rc == 0; i++) {
		const ember__agg_stack *s = a->stacks[i];
		ember__sample smp;
		memset(&smp, 0, sizeof(smp));
		smp.locs = ember__arena_alloc(&p->arena, s->depth * sizeof(*smp.locs));
		if (!smp.locs) {
			rc = EMBER_ERR_NOMEM;
			break;
		}
		smp.nlocs = s->depth;
		uint32_t o = 0; /* locations made */
		for (uint32_t d = 0; d < s->depth; d++) {
			if (ember__kallsyms_is_kernel(s->pcs[d])) {
				uint32_t k = kernel_location_for(&b, frame_addr(s->pcs, d), d == 0);
				if (o && k == b.kbare && smp.locs[o - 1] == k)
					continue; /* unnamed: one [kernel] frame */
				smp.locs[o++] = k;
			} else
				smp.locs[o++] = location_for(&b, frame_addr(s->pcs, d), d == 0);
			if (smp.locs[o - 1] == NO_LOCATION) {
				o--; /* cut at the first frame that is not code */
				break;
			}
			if (!smp.locs[o - 1]) {
				rc = EMBER_ERR_NOMEM;
				break;
			}
		}
		smp.nlocs = o;
		smp.values[0] = (int64_t)s->count;
		smp.values[1] = (int64_t)s->weight; /* nanoseconds */
		if (rc == 0)
			rc = add_labels(&b, cfg, a, s, &smp);
		if (rc == 0 && !ember__profile_add_sample(p, &smp))
			rc = EMBER_ERR_NOMEM;
	}
	builder_free(&b);
	if (rc) {
		ember__profile_free(p);
		return ember__error_oom("window profile");
	}
	*out = p;
	return 0;
}

int ember__window_rows(ember__profile *p, ember__symbolizer *sym, const ember__window_cfg *cfg,
		       const ember__window_row *rows, size_t n)
{
	builder b = {.sym = sym, .p = p};
	size_t nframes = 0;
	for (size_t i = 0; i < n; i++)
		nframes += rows[i].depth;
	frame_addrs fa = frames_need(sym, nframes);
	for (size_t i = 0; i < n; i++)
		frames_add(&fa, rows[i].pcs, rows[i].depth);
	frames_prefetch(sym, &fa);
	main_mapping_first(&b);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const ember__window_row *r = &rows[i];
		ember__sample smp;
		memset(&smp, 0, sizeof(smp));
		smp.locs = ember__arena_alloc(&p->arena, (r->depth ? r->depth : 1) * sizeof(*smp.locs));
		smp.labels = ember__arena_alloc(&p->arena, (cfg->ntags ? cfg->ntags : 1) *
								   sizeof(*smp.labels));
		if (!smp.locs || !smp.labels) {
			rc = EMBER_ERR_NOMEM;
			break;
		}
		smp.nlocs = r->depth;
		for (uint32_t d = 0; d < r->depth && rc == 0; d++) {
			if ((smp.locs[d] = location_for(&b, frame_addr(r->pcs, d), d == 0)) == NO_LOCATION) {
				smp.nlocs = d; /* cut at the first frame that is not code */
				break;
			}
			if (!smp.locs[d])
				rc = EMBER_ERR_NOMEM;
		}
		for (uint32_t v = 0; v < p->nvalues; v++)
			smp.values[v] = r->values[v];
		for (size_t t = 0; t < cfg->ntags; t++) {
			smp.labels[t].key = ember__profile_strdup(p, cfg->tags[t].key);
			smp.labels[t].str = ember__profile_strdup(p, cfg->tags[t].value);
		}
		smp.nlabels = (uint32_t)cfg->ntags;
		if (rc == 0 && !ember__profile_add_sample(p, &smp))
			rc = EMBER_ERR_NOMEM;
	}
	builder_free(&b);
	return rc ? ember__error_oom("memory profile") : 0;
}
