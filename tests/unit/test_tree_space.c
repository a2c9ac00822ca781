/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tree_space.c - samples of another process walked from their stack
 * copies (tools/tree/tree_space.h), on a real kernel: this test execs itself
 * as a program whose CPU goes to tree_leaf() under a known chain of
 * calls, samples it with the tree sampler (perf_tree.h) and walks every
 * sample with the tables the walk builds (the binary's, libc's and the
 * vDSO's: clock_gettime runs there). Each frame is named by this process's
 * own symbolizer, at the same offset in the same binary. Skips (77) where
 * the kernel does not permit perf events.
 */
#include "tree/perf_tree.h"
#include "tree/tree_space.h"

#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tree_test.h"
#include "emberprof.h"
#include "symbols/symbolizer.h"

#define DEPTH 64

__attribute__((noinline)) static unsigned long tree_leaf(double seconds)
{
	volatile unsigned long x = 1;
	double end = tree_test_cpu() + seconds;
	while (tree_test_cpu() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 2654435761u + (unsigned long)i;
	return x;
}

__attribute__((noinline)) static unsigned long tree_mid(double s)
{
	unsigned long v = tree_leaf(s);
	__asm__ volatile("" ::: "memory");
	return v + 1;
}

__attribute__((noinline)) static unsigned long tree_top(double s)
{
	unsigned long v = tree_mid(s);
	__asm__ volatile("" ::: "memory");
	return v + 2;
}

typedef struct walk {
	pid_t top;
	char self[4096];
	ember__tmods *mods;
	ember__tspace space;
	ember__symbolizer *sym;
	uint64_t own_bias;
	int samples, complete, chain, pending_left, in_leaf_or_below;
	/* the stacks, for naming by a remote symbolizer afterwards */
	uint64_t stacks[512][DEPTH];
	int depth[512];
	int nstacks;
	char first_bad[512];
} walk;

static uint64_t main_bias(void)
{
	struct link_map *lm = NULL;
	/* the executable is the first link map */
	extern struct r_debug _r_debug;
	lm = _r_debug.r_map;
	return lm ? (uint64_t)lm->l_addr : 0;
}

/* The name of pc (a pc of the child's binary) by our own symbolizer. */
static const char *name_of(walk *w, uint64_t pc, int caller)
{
	ember__tmap *m = ember__tspace_find(&w->space, caller ? pc - 1 : pc);
	if (!m || strcmp(m->mod->path, w->self) != 0 || !ember__tspace_bias(w->mods, m))
		return NULL;
	uint64_t own = pc - m->bias + w->own_bias - (caller ? 1 : 0);
	ember__symbol_info si;
	if (ember__symbolizer_lookup(w->sym, own, &si) != 0 || !si.nframes)
		return NULL;
	return si.frames[si.nframes - 1].function;
}

static void on_rec(void *arg, const ember__ptree_rec *r)
{
	walk *w = arg;
	if (w->top < 0)
		w->top = r->pid; /* the first records are the exec's */
	if (r->pid != w->top)
		return;
	if (r->type == EMBER_PTREE_COMM && r->u.comm.exec)
		ember__tspace_clear_before(&w->space, r->time);
	if (r->type == EMBER_PTREE_MMAP) {
		ember__tmod *m = ember__tmods_get(w->mods, r->u.mmap.path, r->u.mmap.maj,
						  r->u.mmap.min, r->u.mmap.ino);
		CHECK(m != NULL);
		if (m)
			CHECK_EQ_INT(ember__tspace_map(&w->space, r->u.mmap.start, r->u.mmap.len,
						       r->u.mmap.pgoff, m, r->time),
				     0);
	}
	if (r->type != EMBER_PTREE_SAMPLE || !r->u.sample.regs_ok)
		return;
	uint64_t pcs[DEPTH];
	unsigned flags = 0;
	int n = ember__tspace_unwind(&w->space, w->mods, &r->u.sample.regs, r->u.sample.stack,
				     (size_t)r->u.sample.stack_len, pcs, DEPTH, &flags);
	w->samples++;
	if (w->nstacks < 512) {
		memcpy(w->stacks[w->nstacks], pcs, (size_t)n * sizeof(uint64_t));
		w->depth[w->nstacks++] = n;
	}
	w->complete += !(flags & (EMBER_UNWIND_TRUNCATED | EMBER_UNWIND_NO_BOUNDS));
	w->pending_left += (flags & EMBER_UNWIND_PENDING) != 0;
	/* the chain: ... tree_leaf, tree_mid, tree_top, ..., main (the leaf
	 * itself may be tree_leaf, libc or the vDSO) */
	const char *want[] = {"tree_leaf", "tree_mid", "tree_top", "main"};
	size_t k = 0;
	int seen_leaf = 0;
	for (int i = 0; i < n && k < 4; i++) {
		const char *nm = name_of(w, pcs[i], i > 0);
		size_t wl = strlen(want[k]);
		/* a clone the compiler specialised keeps its name before a dot */
		if (nm && strncmp(nm, want[k], wl) == 0 && (nm[wl] == 0 || nm[wl] == '.')) {
			k++;
			seen_leaf = 1;
		}
	}
	w->in_leaf_or_below += seen_leaf;
	if (k == 4)
		w->chain++;
	else if ((seen_leaf || getenv("EMBER_TEST_VERBOSE")) && !w->first_bad[0]) {
		size_t o = 0;
		for (int i = 0; i < n && o < sizeof(w->first_bad) - 64; i++) {
			const char *nm = name_of(w, pcs[i], i > 0);
			ember__tmap *m = ember__tspace_find(&w->space, i ? pcs[i] - 1 : pcs[i]);
			o += (size_t)snprintf(w->first_bad + o, sizeof(w->first_bad) - o, " %s(%s)",
					      nm ? nm : "?",
					      m ? strrchr(m->mod->path, '/') ? strrchr(m->mod->path, '/') + 1 : m->mod->path : "-");
		}
	}
}

/*
 * The same stacks named by a symbolizer for the (now gone) child, from
 * the layout the records gave: the binary's frames as our own symbolizer
 * names them at the same offsets, and libc's frames named too.
 */
static void remote_names(walk *w)
{
	ember__procmaps pm = EMBER_PROCMAPS_INIT;
	CHECK_EQ_INT(ember__tspace_procmaps(&w->space, w->mods, &pm), 0);
	ember__symbolizer *rs = NULL;
	CHECK_EQ_INT(ember__symbolizer_new_remote(&rs, w->top, &pm), 0);
	ember__procmaps_free(&pm);
	if (!rs)
		return;
	int same = 0, differ = 0, libc_named = 0, vdso = 0, vdso_named = 0;
	for (int i = 0; i < w->nstacks; i++) {
		int libc = 0;
		for (int j = 0; j < w->depth[i]; j++) {
			uint64_t look = j ? w->stacks[i][j] - 1 : w->stacks[i][j];
			ember__symbol_info si;
			CHECK_EQ_INT(ember__symbolizer_lookup(rs, look, &si), 0);
			const char *rn = si.nframes ? si.frames[si.nframes - 1].function : NULL;
			const char *own = name_of(w, w->stacks[i][j], j > 0);
			if (own) {
				if (rn && strcmp(rn, own) == 0)
					same++;
				else if (differ++ == 0)
					printf("remote name %s, own %s\n", rn ? rn : "(none)", own);
			}
			if (rn && si.module && strstr(si.module->path, "libc.so"))
				libc = 1;
			if (si.module && strcmp(si.module->path, "[vdso]") == 0) {
				vdso++;
				vdso_named += rn != NULL;
			}
		}
		libc_named += libc;
	}
	printf("remote symbolizer: %d frames of the binary named alike, %d not; %d of %d stacks "
	       "with a named libc frame; %d of %d vDSO frames named\n",
	       same, differ, libc_named, w->nstacks, vdso_named, vdso);
	/* the child is gone: its vDSO is named from our own image */
	CHECK_EQ_INT(vdso_named, vdso);
	CHECK(same > 0);
	CHECK_EQ_INT(differ, 0);
	CHECK(libc_named >= w->nstacks * 9 / 10);
	ember__symbolizer_free(rs);
}

static int skipped;

static void test_walk(void)
{
	walk w;
	memset(&w, 0, sizeof(w));
	w.space = (ember__tspace)EMBER_TSPACE_INIT;
	ssize_t len = readlink("/proc/self/exe", w.self, sizeof(w.self) - 1);
	CHECK(len > 0);
	CHECK_EQ_INT(ember__tmods_new(&w.mods), 0);
	CHECK_EQ_INT(ember__symbolizer_new(&w.sym), 0);
	w.own_bias = main_bias();
	ember__ptree_opts o = {250, 16384, 0, 0, 0};
	ember__ptree_stats ps;
	int st = 0;
	size_t records = 0;
	w.top = -1;
	int rc = tree_test_run(w.self, "--burn", &o, on_rec, &w, &st, &ps, &records);
	if (rc == 77) {
		skipped = 1;
		goto out;
	}
	CHECK_EQ_INT(rc, 0);
	ember__tmods_stats ms;
	ember__tmods_get_stats(w.mods, &ms);
	printf("samples %d: complete %d, through tree_leaf %d, whole chain %d, pending left %d; "
	       "modules %llu, tables %llu (%llu rows, %.1f ms), failures %llu\n",
	       w.samples, w.complete, w.in_leaf_or_below, w.chain, w.pending_left,
	       (unsigned long long)ms.modules, (unsigned long long)ms.tables,
	       (unsigned long long)ms.rows, (double)ms.build_ns / 1e6,
	       (unsigned long long)ms.table_failures);
	if (w.first_bad[0])
		printf("first stack without the chain:%s\n", w.first_bad);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* 0.6 s at 250 Hz: ~150 samples */
	CHECK(w.samples >= 60);
	CHECK(w.in_leaf_or_below >= w.samples * 9 / 10);
	CHECK(w.chain >= w.in_leaf_or_below * 95 / 100);
	CHECK(w.complete >= w.samples * 95 / 100);
	CHECK_EQ_INT(w.pending_left, 0);
	CHECK(ms.tables >= 2);
	CHECK_EQ_INT(ms.table_failures, 0);
	remote_names(&w);
out:
	ember__tspace_release(&w.space);
	ember__tmods_free(w.mods);
	ember__symbolizer_free(w.sym);
}

/* An exec whose record is read after the new image's first mappings
 * (one ring read missed it on one CPU) forgets only what was mapped
 * before it; a mapping keeps its time when another splits it. */
static void test_clear_before(void)
{
	ember__tspace sp = EMBER_TSPACE_INIT;
	int old_mod, new_mod; /* the space never reads a module */
	ember__tmod *o = (ember__tmod *)(void *)&old_mod, *n = (ember__tmod *)(void *)&new_mod;
	CHECK_EQ_INT(ember__tspace_map(&sp, 0x1000, 0x3000, 0, o, 100), 0);
	CHECK_EQ_INT(ember__tspace_map(&sp, 0x9000, 0x1000, 0, o, 150), 0);
	/* the new image, mapped at 300, over the middle of the old one */
	CHECK_EQ_INT(ember__tspace_map(&sp, 0x2000, 0x1000, 0, n, 300), 0);
	CHECK_EQ_INT((int)sp.n, 4);
	ember__tspace_clear_before(&sp, 200); /* the exec, at 200 */
	CHECK_EQ_INT((int)sp.n, 1);
	CHECK(sp.n == 1 && sp.maps[0].mod == n && sp.maps[0].start == 0x2000);
	ember__tspace_clear_before(&sp, 400);
	CHECK_EQ_INT((int)sp.n, 0);
	ember__tspace_release(&sp);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--burn") == 0)
		return tree_top(0.6) ? 0 : 1;
	RUN(test_clear_before);
	RUN(test_walk);
	if (skipped && !check_failures)
		return 77;
	return CHECK_DONE();
}
