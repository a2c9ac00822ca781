/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_space.c - a process's executable mappings, and its samples' copied
 * stacks walked with the modules' tables (tree_space.h).
 */
#include "tree/tree_space.h"

#include <stdlib.h>
#include <string.h>

#include "cfi/cfi_pack.h"
#include "emberprof.h"
#include "util/error.h"

/* Walks redone after building tables: each builds at least one. */
#define MAX_REWALKS 8

void ember__tspace_release(ember__tspace *sp)
{
	free(sp->maps);
	free(sp->snap);
	free(sp->scratch);
	*sp = (ember__tspace)EMBER_TSPACE_INIT;
}

static void invalidate(ember__tspace *sp)
{
	free(sp->snap);
	sp->snap = NULL;
}

static int reserve(ember__tspace *sp, size_t n)
{
	if (n <= sp->cap)
		return 0;
	size_t cap = sp->cap ? sp->cap : 16;
	while (cap < n)
		cap *= 2;
	ember__tmap *m = realloc(sp->maps, cap * sizeof(*m));
	if (!m)
		return ember__error_oom("tree mappings");
	sp->maps = m;
	sp->cap = cap;
	return 0;
}

int ember__tspace_map(ember__tspace *sp, uint64_t start, uint64_t len, uint64_t pgoff,
		      ember__tmod *m, uint64_t time)
{
	if (!len || start + len < start)
		return 0;
	uint64_t end = start + len;
	/* at most one mapping is split in two */
	if (reserve(sp, sp->n + 2))
		return EMBER_ERR_NOMEM;
	invalidate(sp);
	size_t w = 0, n = sp->n;
	ember__tmap tail;
	int has_tail = 0;
	for (size_t i = 0; i < n; i++) {
		ember__tmap x = sp->maps[i];
		if (x.end <= start || x.start >= end) {
			sp->maps[w++] = x;
			continue;
		}
		/* the parts of x outside [start, end) stay, same module */
		if (x.end > end) {
			tail = x;
			tail.pgoff += end - x.start;
			tail.start = end;
			tail.bias_state = 0;
			has_tail = 1;
		}
		if (x.start < start) {
			x.end = start;
			sp->maps[w++] = x;
		}
	}
	sp->n = w;
	ember__tmap add = {start, end, pgoff, m, 0, 0, 0, 0, time};
	/* insert add (and tail) in order */
	size_t at = 0;
	while (at < sp->n && sp->maps[at].start < start)
		at++;
	size_t k = has_tail ? 2 : 1;
	memmove(sp->maps + at + k, sp->maps + at, (sp->n - at) * sizeof(*sp->maps));
	sp->maps[at] = add;
	if (has_tail)
		sp->maps[at + 1] = tail;
	sp->n += k;
	return 0;
}

void ember__tspace_clear_before(ember__tspace *sp, uint64_t time)
{
	size_t w = 0;
	for (size_t i = 0; i < sp->n; i++)
		if (sp->maps[i].time >= time)
			sp->maps[w++] = sp->maps[i];
	sp->n = w;
	invalidate(sp);
}

int ember__tspace_copy(ember__tspace *dst, const ember__tspace *src)
{
	if (dst == src)
		return 0;
	dst->n = 0;
	invalidate(dst);
	if (reserve(dst, src->n))
		return EMBER_ERR_NOMEM;
	if (src->n)
		memcpy(dst->maps, src->maps, src->n * sizeof(*src->maps));
	dst->n = src->n;
	return 0;
}

ember__tmap *ember__tspace_find(ember__tspace *sp, uint64_t addr)
{
	size_t lo = 0, hi = sp->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sp->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sp->n && sp->maps[lo].start <= addr ? &sp->maps[lo] : NULL;
}

int ember__tspace_bias(ember__tmods *mods, ember__tmap *m)
{
	if (!m->bias_state)
		m->bias_state = ember__tmod_bias(mods, m->mod, m->start, m->pgoff, &m->bias, &m->lo,
						 &m->hi)
					? 1
					: -1;
	return m->bias_state > 0;
}

int ember__tspace_procmaps(ember__tspace *sp, ember__tmods *mods, ember__procmaps *out)
{
	ember__procmaps pm = EMBER_PROCMAPS_INIT;
	pm.maps = ember__arena_alloc(&pm.arena, (2 * sp->n + 1) * sizeof(*pm.maps));
	if (!pm.maps)
		goto oom;
	uint64_t prev_end = 0;
	for (size_t i = 0; i < sp->n; i++) {
		ember__tmap *m = &sp->maps[i];
		/* anonymous code (JIT; the kernel says "//anon") as /proc shows it:
		 * no path, where a perf map names it */
		int anon = !m->mod->vdso &&
			   (m->mod->path[0] != '/' || strcmp(m->mod->path, "//anon") == 0);
		const char *path = ember__arena_strdup(&pm.arena, anon ? "" : m->mod->path);
		if (!path)
			goto oom;
		ember__procmap x = {.start = m->start, .end = m->end,
				    .perms = EMBER_MAP_READ | EMBER_MAP_EXEC | EMBER_MAP_PRIVATE,
				    .offset = m->pgoff, .dev_major = m->mod->maj,
				    .dev_minor = m->mod->min, .inode = anon ? 0 : m->mod->ino,
				    .path = path};
		/* the image's first segment, where nothing else lies */
		if (!m->mod->vdso && !anon && m->pgoff && ember__tspace_bias(mods, m) && m->lo < m->start &&
		    m->lo >= prev_end) {
			ember__procmap first = x;
			first.start = m->lo;
			first.end = m->start;
			first.perms = EMBER_MAP_READ | EMBER_MAP_PRIVATE;
			first.offset = 0;
			pm.maps[pm.n++] = first;
		}
		pm.maps[pm.n++] = x;
		prev_end = m->end;
	}
	*out = pm;
	return 0;
oom:
	ember__arena_release(&pm.arena);
	return ember__error_oom("tree process layout");
}

/* The snapshot of the mappings as the tables stand: built ones with their
 * rows, unbuilt ones pending, failed ones (and those without CFI) left
 * out (their frames take the frame-pointer rule). */
static int snapshot(ember__tspace *sp, ember__tmods *mods)
{
	uint64_t gen = ember__tmods_generation(mods);
	if (sp->snap && sp->snap_gen == gen)
		return 0;
	invalidate(sp);
	ember__unwind_snapshot *s =
		malloc(sizeof(*s) + (sp->n ? sp->n : 1) * sizeof(s->mods[0]));
	if (!s)
		return ember__error_oom("tree unwind snapshot");
	s->n = 0;
	for (size_t i = 0; i < sp->n; i++) {
		ember__tmap *m = &sp->maps[i];
		if (!ember__tspace_bias(mods, m) || m->mod->table_state < 0 ||
		    (m->mod->table_state > 0 && m->mod->table->nrows == 0))
			continue;
		ember__unwind_module *um = &s->mods[s->n++];
		memset(um, 0, sizeof(*um));
		um->start = (uintptr_t)m->start;
		um->end = (uintptr_t)m->end;
		if (!m->mod->table_state) {
			um->pending = 1;
			continue;
		}
		um->base = (uintptr_t)m->bias;
		ember__cfi_table_to_module(m->mod->table, um);
	}
	sp->snap = s;
	sp->snap_gen = gen;
	return 0;
}

/* Builds the tables of pending modules that frames of pcs[0..n) landed
 * in; 1 if any was built. */
static int build_landed(ember__tspace *sp, ember__tmods *mods, const uint64_t *pcs, int n)
{
	int built = 0;
	for (int i = 0; i < n; i++) {
		uint64_t look = i ? pcs[i] - 1 : pcs[i];
		ember__tmap *m = ember__tspace_find(sp, look);
		if (m && m->mod->table_state == 0 && ember__tspace_bias(mods, m)) {
			(void)ember__tmod_table(mods, m->mod);
			/* built, or failed: no longer pending either way; held back
			 * by the budget: still pending, walked by frame pointers */
			built |= m->mod->table_state != 0;
		}
	}
	return built;
}

int ember__tspace_unwind(ember__tspace *sp, ember__tmods *mods, const ember__regs *regs,
			 const uint8_t *stack, size_t stack_len, uint64_t *pcs, int max,
			 unsigned *flags)
{
	if (max <= 0)
		return 0;
	size_t nw = stack_len / sizeof(uint64_t);
	if (!nw || !regs->sp) {
		pcs[0] = regs->pc;
		*flags |= EMBER_UNWIND_NO_BOUNDS;
		return 1;
	}
	if (nw > sp->scratch_words) {
		uint64_t *s = realloc(sp->scratch, nw * sizeof(uint64_t));
		if (!s) {
			pcs[0] = regs->pc;
			*flags |= EMBER_UNWIND_TRUNCATED;
			return 1;
		}
		sp->scratch = s;
		sp->scratch_words = nw;
	}
	memcpy(sp->scratch, stack, nw * sizeof(uint64_t));
	const uintptr_t base = (uintptr_t)sp->scratch, len = nw * sizeof(uint64_t);
	ember__unwind_relocate_copy(sp->scratch, nw, regs->sp, base);
	ember__regs r = *regs;
	r.sp = base;
	if (regs->fp >= regs->sp && regs->fp < regs->sp + len)
		r.fp = regs->fp - regs->sp + base;
	if (regs->aux >= regs->sp && regs->aux < regs->sp + len)
		r.aux = regs->aux - regs->sp + base;
	const ember__stack_bounds bounds = {base, base + len};
	int n = 0;
	unsigned f = 0;
	for (int pass = 0; pass <= MAX_REWALKS; pass++) {
		if (snapshot(sp, mods)) {
			n = ember__unwind(EMBER_UNWIND_MODE_FP, NULL, &r, &bounds, pcs, max, &f);
			break;
		}
		f = 0;
		n = ember__unwind(EMBER_UNWIND_MODE_AUTO, sp->snap, &r, &bounds, pcs, max, &f);
		if (!(f & EMBER_UNWIND_PENDING) || pass == MAX_REWALKS ||
		    !build_landed(sp, mods, pcs, n))
			break;
	}
	*flags |= f;
	return n;
}
