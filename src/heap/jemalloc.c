/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jemalloc.c - the jemalloc backend of the memory profile (see jemalloc.h).
 *
 * Each collect: mallctl("prof.dump") with the path /proc/self/fd/<memfd>
 * (jemalloc creat()s it, which truncates our memfd), read the memfd back,
 * parse, drop jemalloc's own frames from the innermost end of each stack,
 * merge stacks that became equal, subtract the previous collect's
 * accumulators, unsample.
 */
#include "heap/jemalloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emberprof.h"
#include "heap/heapprof.h"
#include "util/error.h"
#include "util/hashmap.h"

typedef int (*mallctl_fn)(const char *name, void *oldp, size_t *oldlenp, void *newp,
			  size_t newlen);

struct ember__jemalloc {
	mallctl_fn mallctl;
	int fd;
	char path[64];       /* /proc/self/fd/<fd> */
	uint64_t strip_addr; /* an address in jemalloc's module, 0: keep its frames */
	uint64_t strip_self; /* one in emberprof's (its malloc hook may call jemalloc), or 0 */
	int accum;
	uint64_t period; /* 2^prof.lg_sample at open */
	ember__jeheap prev; /* the last dump: baseline of alloc_* */
	int have_prev;
	ember__heap_stack *stacks; /* the current window's, one malloc'd block */
	char *buf;
	size_t cap;
};

static int read_bool(mallctl_fn m, const char *name, int *out)
{
	bool v = false;
	size_t len = sizeof(v);
	int rc = m(name, &v, &len, NULL, 0);
	*out = v;
	return rc;
}

/* The load address of the main program (dl_iterate_phdr lists it first). */
static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

int ember__jemalloc_open(ember__jemalloc **out)
{
	*out = NULL;
	mallctl_fn m;
	void *sym = dlsym(RTLD_DEFAULT, "mallctl");
	memcpy(&m, &sym, sizeof(m));
	if (!m)
		return ember__error(EMBER_ERR_UNSUPPORTED,
				    "alloc backend jemalloc: jemalloc is not in the process (no "
				    "\"mallctl\" symbol); link it or run with "
				    "LD_PRELOAD=libjemalloc.so.2");
	int prof = 0, accum = 0;
	int rc = read_bool(m, "opt.prof", &prof);
	if (rc == ENOENT)
		return ember__error(EMBER_ERR_UNSUPPORTED,
				    "alloc backend jemalloc: this jemalloc was built without "
				    "profiling (--enable-prof)");
	if (rc)
		return ember__error_errno(EMBER_ERR_UNSUPPORTED, rc,
					  "alloc backend jemalloc: mallctl(\"opt.prof\")");
	if (!prof)
		return ember__error(EMBER_ERR_UNSUPPORTED,
				    "alloc backend jemalloc: jemalloc's profiling is off; start the "
				    "program with MALLOC_CONF=prof:true (e.g. "
				    "prof:true,lg_prof_sample:19,prof_accum:true)");
	if (read_bool(m, "opt.prof_accum", &accum) != 0)
		accum = 0;

	ember__jemalloc *j = calloc(1, sizeof(*j));
	if (!j)
		return ember__error_oom("jemalloc backend");
	j->mallctl = m;
	j->accum = accum;
	size_t lg = 0, lglen = sizeof(lg);
	if (m("prof.lg_sample", &lg, &lglen, NULL, 0) == 0 && lg < 64)
		j->period = (uint64_t)1 << lg;
	j->fd = memfd_create("emberprof-jemalloc", MFD_CLOEXEC);
	if (j->fd < 0) {
		int e = errno;
		free(j);
		return ember__error_errno(EMBER_ERR_SYS, e, "alloc backend jemalloc: memfd_create");
	}
	snprintf(j->path, sizeof(j->path), "/proc/self/fd/%d", j->fd);
	/* jemalloc's frames above the caller are dropped - unless jemalloc is
	 * linked into the program itself, where they cannot be told apart from
	 * the program's by module. */
	Dl_info di = {0};
	uintptr_t main_base = 0;
	dl_iterate_phdr(first_object, &main_base);
	if (dladdr(sym, &di) && di.dli_fbase && (uintptr_t)di.dli_fbase != main_base)
		j->strip_addr = (uint64_t)(uintptr_t)sym;
	/* Under emberprof's own malloc interposition (libemberprof.so first in
	 * the search order) jemalloc's stacks start in jemalloc, then pass
	 * through emberprof's malloc: those frames go too. */
	void *self = (void *)(uintptr_t)&ember__jemalloc_open;
	void *jbase = di.dli_fbase;
	if (dladdr(self, &di) && di.dli_fbase && (uintptr_t)di.dli_fbase != main_base &&
	    di.dli_fbase != jbase)
		j->strip_self = (uint64_t)(uintptr_t)self;
	*out = j;
	return 0;
}

void ember__jemalloc_close(ember__jemalloc *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	ember__jeheap_release(&j->prev);
	free(j->stacks);
	free(j->buf);
	free(j);
}

int ember__jemalloc_accum(const ember__jemalloc *j)
{
	return j->accum;
}

void ember__jemalloc_exclude_current_thread(void)
{
	mallctl_fn m;
	void *sym = dlsym(RTLD_DEFAULT, "mallctl");
	memcpy(&m, &sym, sizeof(m));
	bool off = false;
	if (m)
		m("thread.prof.active", NULL, NULL, &off, sizeof(off)); /* ENOENT: no profiling */
}

uint64_t ember__jemalloc_period(const ember__jemalloc *j)
{
	return j->period;
}

int ember__jemalloc_active(const ember__jemalloc *j)
{
	int active = 0;
	if (read_bool(j->mallctl, "prof.active", &active) != 0)
		return 0;
	return active;
}

/* Reads the whole memfd into j->buf; its length in *len. */
static int read_dump(ember__jemalloc *j, size_t *len)
{
	struct stat st;
	if (fstat(j->fd, &st) != 0)
		return ember__error_errno(EMBER_ERR_SYS, errno, "jemalloc dump: fstat");
	size_t want = (size_t)st.st_size;
	if (want + 1 > j->cap) {
		char *b = realloc(j->buf, want + 1);
		if (!b)
			return ember__error_oom("jemalloc dump");
		j->buf = b;
		j->cap = want + 1;
	}
	size_t got = 0;
	while (got < want) {
		ssize_t r = pread(j->fd, j->buf + got, want - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ember__error_errno(EMBER_ERR_IO, errno, "jemalloc dump: read");
		if (r == 0)
			break;
		got += (size_t)r;
	}
	*len = got;
	return 0;
}

int ember__jemalloc_collect(ember__jemalloc *j, ember__heap_window *w)
{
	memset(w, 0, sizeof(*w));
	if (ftruncate(j->fd, 0) != 0)
		return ember__error_errno(EMBER_ERR_SYS, errno, "jemalloc dump: ftruncate");
	const char *path = j->path;
	int rc = j->mallctl("prof.dump", NULL, NULL, &path, sizeof(path));
	if (rc)
		return ember__error_errno(EMBER_ERR_SYS, rc, "jemalloc: mallctl(\"prof.dump\", %s)",
					  j->path);
	size_t len = 0;
	if ((rc = read_dump(j, &len)) != 0)
		return rc;
	ember__jeheap next;
	if ((rc = ember__jeheap_parse(j->buf, len, &next)) != 0)
		return rc;
	if (j->strip_addr)
		ember__jeheap_strip_module(&next, j->strip_addr);
	if (j->strip_self)
		ember__jeheap_strip_module(&next, j->strip_self);
	ember__heap_stack *stacks = NULL;
	size_t n = 0;
	rc = ember__heap_window_from_dump(&next, j->have_prev ? &j->prev : NULL, j->accum, &stacks,
					  &n);
	if (rc) {
		ember__jeheap_release(&next);
		return rc;
	}
	/* This dump is both the window's and the next window's baseline. */
	free(j->stacks);
	ember__jeheap_release(&j->prev);
	j->prev = next;
	j->have_prev = 1;
	j->stacks = stacks;
	w->stacks = stacks;
	w->nstacks = n;
	w->period = j->prev.period;
	w->accum = j->accum;
	w->dump = &j->prev;
	return 0;
}

/* Stacks of one dump with equal pcs merged (jemalloc's internal frames,
 * once dropped, can make two of its stacks equal). */
typedef struct group {
	ember__u64map index; /* hash (+probe) -> position + 1 */
	ember__jeheap_stack *s;
	size_t n;
} group;

static int same_pcs(const ember__jeheap_stack *a, const ember__jeheap_stack *b)
{
	return a->depth == b->depth && !memcmp(a->pcs, b->pcs, a->depth * sizeof(*a->pcs));
}

/* Position of the stack equal to s, or where to insert it (*inserted). */
static uint64_t *group_slot(group *g, const ember__jeheap_stack *s, int create, int *inserted)
{
	uint64_t h = ember__hash_bytes(s->pcs, s->depth * sizeof(*s->pcs), 0x6a656d);
	for (;; h++) {
		uint64_t *v;
		*inserted = 0;
		if (create) {
			v = ember__u64map_put(&g->index, h, inserted);
		} else {
			v = ember__u64map_get(&g->index, h);
		}
		if (!v || *inserted || same_pcs(&g->s[*v - 1], s))
			return v;
	}
}

static int group_build(group *g, const ember__jeheap *h)
{
	memset(g, 0, sizeof(*g));
	g->s = malloc((h->nstacks ? h->nstacks : 1) * sizeof(*g->s));
	if (!g->s)
		return EMBER_ERR_NOMEM;
	for (size_t i = 0; i < h->nstacks; i++) {
		const ember__jeheap_stack *s = &h->stacks[i];
		int inserted;
		uint64_t *v = group_slot(g, s, 1, &inserted);
		if (!v)
			return EMBER_ERR_NOMEM;
		if (inserted) {
			g->s[g->n] = *s;
			*v = ++g->n;
			continue;
		}
		ember__jeheap_stack *d = &g->s[*v - 1];
		d->curobjs += s->curobjs;
		d->curbytes += s->curbytes;
		d->accumobjs += s->accumobjs;
		d->accumbytes += s->accumbytes;
	}
	return 0;
}

static void group_free(group *g)
{
	ember__u64map_free(&g->index);
	free(g->s);
}

int ember__heap_window_from_dump(const ember__jeheap *cur, const ember__jeheap *prev, int accum,
				 ember__heap_stack **stacks_out, size_t *n_out)
{
	*stacks_out = NULL;
	*n_out = 0;
	group gc, gp;
	memset(&gp, 0, sizeof(gp));
	int rc = group_build(&gc, cur);
	if (rc == 0 && prev)
		rc = group_build(&gp, prev);
	size_t total = 0;
	for (size_t i = 0; rc == 0 && i < gc.n; i++)
		total += gc.s[i].depth;
	ember__heap_stack *out = NULL;
	if (rc == 0) {
		out = malloc((gc.n ? gc.n : 1) * sizeof(*out) + total * sizeof(uint64_t));
		if (!out)
			rc = EMBER_ERR_NOMEM;
	}
	size_t n = 0;
	uint64_t *pcs = out ? (uint64_t *)(out + (gc.n ? gc.n : 1)) : NULL;
	for (size_t i = 0; rc == 0 && i < gc.n; i++) {
		const ember__jeheap_stack *s = &gc.s[i];
		uint64_t aobjs = accum ? s->accumobjs : 0, abytes = accum ? s->accumbytes : 0;
		int inserted;
		uint64_t *v = prev && accum ? group_slot(&gp, s, 0, &inserted) : NULL;
		if (v) {
			const ember__jeheap_stack *p = &gp.s[*v - 1];
			/* Less than before: jemalloc's prof.reset ran; count from there. */
			if (aobjs >= p->accumobjs && abytes >= p->accumbytes) {
				aobjs -= p->accumobjs;
				abytes -= p->accumbytes;
			}
		}
		if (!s->curobjs && !s->curbytes && !aobjs && !abytes)
			continue;
		ember__heap_stack *o = &out[n++];
		double objs, bytes;
		ember__jeheap_unsample(aobjs, abytes, cur->period, &objs, &bytes);
		o->values[EMBER_MEM_ALLOC_OBJECTS] = objs;
		o->values[EMBER_MEM_ALLOC_BYTES] = bytes;
		ember__jeheap_unsample(s->curobjs, s->curbytes, cur->period, &objs, &bytes);
		o->values[EMBER_MEM_INUSE_OBJECTS] = objs;
		o->values[EMBER_MEM_INUSE_BYTES] = bytes;
		memcpy(pcs, s->pcs, s->depth * sizeof(*pcs));
		if (pcs[0])
			pcs[0]--; /* a return address: into the call instruction */
		o->pcs = pcs;
		o->depth = s->depth;
		pcs += s->depth;
	}
	group_free(&gc);
	group_free(&gp);
	if (rc) {
		free(out);
		return ember__error_oom("jemalloc heap window");
	}
	*stacks_out = out;
	*n_out = n;
	return 0;
}

int ember__heap_window_add(const ember__heap_window *w, ember__memagg *m)
{
	for (size_t i = 0; i < w->nstacks; i++) {
		const ember__heap_stack *s = &w->stacks[i];
		if (ember__memagg_add(m, s->pcs, s->depth, s->values) != 0)
			return ember__error_oom("jemalloc heap window");
	}
	return 0;
}

/* Mappings of the dump, for profiles not symbolized in this process. */
static int dump_mappings(ember__profile *p, const ember__jeheap *d)
{
	for (size_t i = 0; d && i < d->nmaps; i++) {
		ember__mapping m = {
			.start = d->maps[i].start,
			.limit = d->maps[i].limit,
			.offset = d->maps[i].offset,
			.file = ember__profile_strdup(p, d->maps[i].path),
			.build_id = "",
		};
		if (!m.file || !ember__profile_add_mapping(p, &m))
			return ember__error_oom("memory profile");
	}
	for (uint32_t l = 0; l < p->nlocations; l++) {
		ember__location *loc = &p->locations[l];
		for (uint32_t i = 0; i < p->nmappings && !loc->mapping; i++)
			if (loc->address >= p->mappings[i].start && loc->address < p->mappings[i].limit)
				loc->mapping = i + 1;
	}
	return 0;
}

int ember__heap_window_profile(const ember__heap_window *w, ember__symbolizer *sym,
			       const ember__window_cfg *cfg, int64_t start_ns, int64_t end_ns,
			       ember__profile **out)
{
	*out = NULL;
	ember__memagg m;
	ember__memagg_init(&m);
	int rc = ember__heap_window_add(w, &m);
	if (rc == 0)
		rc = ember__memagg_profile(&m, sym, cfg, w->period, start_ns, end_ns, out);
	ember__memagg_release(&m);
	if (rc == 0 && !sym)
		rc = dump_mappings(*out, w->dump);
	if (rc == 0) {
		(*out)->comment = ember__profile_strdup(
			*out, w->accum ? "jemalloc heap profile; alloc_* since the previous profile"
				       : "jemalloc heap profile; alloc_* not measured (jemalloc runs "
					 "without prof_accum:true)");
		if (!(*out)->comment)
			rc = ember__error_oom("memory profile");
	}
	if (rc) {
		ember__profile_free(*out);
		*out = NULL;
	}
	return rc;
}

/* ---- the heap source (heapprof.h) ---- */

static int source_start(void *ud, uint64_t mean)
{
	/* The agent thread's own allocations (symbolization, encoding, the
	 * dumps) are not the program's; agent.c has already done this at the
	 * thread's start, this covers any other caller. */
	ember__jemalloc_exclude_current_thread();
	/* A first dump sets the baseline: the first window's alloc_* are then
	 * what was allocated in it, not since the process started. */
	ember__heap_window w;
	return ember__jemalloc_collect(ud, &w);
}

static int source_collect(void *ud, int64_t start_ns, int64_t end_ns, ember__memagg *out)
{
	ember__heap_window w;
	int rc = ember__jemalloc_collect(ud, &w);
	return rc ? rc : ember__heap_window_add(&w, out);
}

static void source_destroy(void *ud)
{
	ember__jemalloc_close(ud);
}

static const char *const backend_names[] = {"auto", "emberprof", "jemalloc"};

int ember__alloc_backend_setup(ember__heapprof **hp, const ember__heap_cfg *cfg, int *added)
{
	if (cfg->alloc_backend == EMBER_ALLOC_BACKEND_EMBERPROF || *added)
		return 0;
	ember__jemalloc *j = NULL;
	int rc = ember__jemalloc_open(&j);
	if (rc) {
		if (cfg->alloc_backend == EMBER_ALLOC_BACKEND_JEMALLOC)
			return rc;
		ember__logf(cfg->log, EMBER_LOG_DEBUG, "allocation profiling backend auto: emberprof's (%s)",
			   ember_last_error());
		return 0;
	}
	ember__heap_source src = {
		.name = "jemalloc",
		.ud = j,
		.flags = EMBER_HEAP_SOURCE_EXCLUSIVE, /* the malloc hook stays detached */
		.start = source_start,
		.collect = source_collect,
		.destroy = source_destroy,
	};
	if ((rc = ember__heapprof_add_source(hp, &src)) != 0) {
		ember__jemalloc_close(j);
		return rc;
	}
	*added = 1;
	ember__logf(cfg->log, EMBER_LOG_INFO,
		   "allocation profiling backend %s: jemalloc's profiler, one sample per %llu bytes "
		   "on average (lg_prof_sample; EMBERPROF_ALLOC's mean is not used), alloc_* %s",
		   backend_names[cfg->alloc_backend], (unsigned long long)j->period,
		   j->accum ? "measured" : "not measured (start with MALLOC_CONF=...,prof_accum:true)");
	if (!ember__jemalloc_active(j))
		ember__logf(cfg->log, EMBER_LOG_WARN, "jemalloc's prof.active is off: it samples nothing "
			   "until the program turns it on");
	return 0;
}
