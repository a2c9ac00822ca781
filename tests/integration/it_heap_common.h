/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_heap_common.h - shared pieces of the allocation profiling tests: a
 * reporter that keeps the memory profiles, sums by call site, and the
 * skip for builds without the malloc hook (AddressSanitizer owns malloc
 * there: src/heap/exports.h).
 */
#ifndef EMBER_IT_HEAP_COMMON_H
#define EMBER_IT_HEAP_COMMON_H

#include <math.h>

#include "heap/hook.h"
#include "it_common.h"

/* Exit code CTest reads as "skipped" (SKIP_RETURN_CODE). */
#define IT_SKIP 77

static __attribute__((unused)) void it_heap_require_hook(void)
{
	if (!ember__heap_malloc_entry()) {
		printf("SKIP: this build does not interpose malloc (AddressSanitizer owns it); "
		       "the sampler and live table are covered by unit.test_heap_*\n");
		exit(IT_SKIP);
	}
}

typedef struct it_heap_cap {
	pthread_mutex_t mu;
	it_window w[256];
	size_t n;
	int other_types; /* reports that were not "memory" */
} it_heap_cap;

static __attribute__((unused)) int it_heap_report(void *ud, const ember_report *r)
{
	it_heap_cap *c = ud;
	pthread_mutex_lock(&c->mu);
	if (strcmp(r->profile_type, "memory") != 0) {
		c->other_types++;
	} else if (c->n < sizeof(c->w) / sizeof(c->w[0])) {
		it_window *w = &c->w[c->n++];
		w->pprof = malloc(r->pprof_len);
		memcpy(w->pprof, r->pprof, r->pprof_len);
		w->len = r->pprof_len;
		w->start_ns = r->start_ns;
		w->end_ns = r->end_ns;
		w->samples = r->samples;
		w->seq = r->seq;
		w->final = r->final;
	}
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* An agent with allocation profiling at `mean` bytes and one window per
 * hour (the tests see one window, or two across an hour boundary). */
static __attribute__((unused)) ember_agent *it_heap_build(it_heap_cap *cap, uint64_t mean)
{
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "it_heap") == 0, "builder: %s", ember_last_error());
	IT_CHECK(ember_builder_set_interval_ms(b, 3600000) == 0, "interval");
	IT_CHECK(ember_builder_set_alloc(b, mean) == 0, "alloc: %s", ember_last_error());
	pthread_mutex_init(&cap->mu, NULL);
	ember_reporter r = {.name = "heapcap", .report = it_heap_report, .userdata = cap};
	IT_CHECK(ember_builder_add_reporter(b, &r) == 0, "reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	return a;
}

/* Index of the sample type named `type`. */
static __attribute__((unused)) uint32_t it_heap_index(const ember__profile *p, const char *type)
{
	for (uint32_t i = 0; i < p->nvalues; i++)
		if (!strcmp(p->sample_type[i].type, type))
			return i;
	IT_FAIL("no sample type %s", type);
}

/* Whether any frame of the sample is in function `name`. */
static __attribute__((unused)) int it_heap_has_frame(const ember__profile *p, const ember__sample *s,
						     const char *name)
{
	for (uint32_t i = 0; i < s->nlocs; i++) {
		const ember__location *l = &p->locations[s->locs[i] - 1];
		for (uint32_t k = 0; k < l->nlines; k++)
			if (!strcmp(p->functions[l->lines[k].function - 1].name, name))
				return 1;
	}
	return 0;
}

/* Sum of value `type` over samples with a frame in `func` (NULL: all). */
static __attribute__((unused)) double it_heap_sum(const ember__profile *p, const char *type,
						  const char *func)
{
	uint32_t k = it_heap_index(p, type);
	double sum = 0;
	for (uint32_t i = 0; i < p->nsamples; i++)
		if (!func || it_heap_has_frame(p, &p->samples[i], func))
			sum += (double)p->samples[i].values[k];
	return sum;
}

/*
 * Fails if a sampled stack runs through emberprof's own code: its
 * allocations (symbolization, encoding, reporting) are never profiled.
 * emberprof's threads are not in the thread table, so a sample taken on
 * one would have no stack at all: with `allow_empty` 0, an empty stack
 * fails too (use it where every application thread's bounds are known
 * before it allocates).
 */
static __attribute__((unused)) void it_heap_no_own_frames(const ember__profile *p, int allow_empty)
{
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const ember__sample *s = &p->samples[i];
		IT_CHECK(allow_empty || s->nlocs > 0, "a sampled allocation without a stack");
		for (uint32_t j = 0; j < s->nlocs; j++) {
			const ember__location *l = &p->locations[s->locs[j] - 1];
			for (uint32_t k = 0; k < l->nlines; k++) {
				const char *f = p->functions[l->lines[k].function - 1].name;
				IT_CHECK(strncmp(f, "ember_", 6) != 0 && strcmp(f, "agent_main") != 0 &&
						 strcmp(f, "malloc") != 0,
					 "a sampled allocation stack holds %s (frame %u)", f, j);
			}
		}
	}
}

/* Writes a window to `path` (for go tool pprof). */
static __attribute__((unused)) void it_heap_write(const it_window *w, const char *path)
{
	FILE *f = fopen(path, "wb");
	IT_CHECK(f && fwrite(w->pprof, 1, w->len, f) == w->len, "write %s", path);
	fclose(f);
}

/*
 * Runs `go tool pprof -sample_index=<index> -top` on path and
 * returns the flat value of function `func` in bytes (or count), or -1 if
 * the function is not listed. Fails if pprof fails.
 */
static __attribute__((unused)) double it_heap_go_flat(const char *dir, const char *path,
						      const char *index, const char *func)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "HOME=%s GOCACHE=%s/gocache go tool pprof -sample_index=%s -top -nodecount=1000 %s "
		 "2>&1",
		 dir, dir, index, path);
	FILE *pp = popen(cmd, "r");
	IT_CHECK(pp, "popen go tool pprof");
	static char out[1 << 18];
	size_t n = fread(out, 1, sizeof(out) - 1, pp);
	out[n] = '\0';
	int st = pclose(pp);
	IT_CHECK(st == 0, "go tool pprof -sample_index=%s failed:\n%s", index, out);
	/* Rows: "  flat flat% sum% cum cum% name"; flat like 12.50MB, 300kB, 1234. */
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char flat[64], name[512];
		double pct1, pct2;
		char cum[64];
		if (sscanf(line, " %63s %lf%% %lf%% %63s %*s %511[^\n]", flat, &pct1, &pct2, cum, name) != 5)
			continue;
		if (strcmp(name, func) != 0)
			continue;
		char *end;
		double v = strtod(flat, &end);
		double scale = 1;
		/* pprof's kB/MB/GB are powers of 1024 */
		if (!strcmp(end, "kB"))
			scale = 1024.0;
		else if (!strcmp(end, "MB"))
			scale = 1024.0 * 1024;
		else if (!strcmp(end, "GB"))
			scale = 1024.0 * 1024 * 1024;
		else if (!strcmp(end, "B") || !*end)
			scale = 1;
		else if (!strcmp(end, "k"))
			scale = 1e3;
		else
			IT_FAIL("cannot read pprof value '%s'", flat);
		return v * scale;
	}
	return -1;
}

#endif
