/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jemalloc.c - the jemalloc backend of the memory profile.
 *
 *  - the heap_v2 parser on hand-written dumps (fields, per-thread lines,
 *    MAPPED_LIBRARIES, every malformation it must name);
 *  - jeprof's unsampling formula on known values;
 *  - dropping jemalloc's frames, merging stacks that became equal, and
 *    alloc_* as differences between two dumps (prof.reset included);
 *  - a real dump: tests/fixtures/jemalloc_twosites.c run under
 *    LD_PRELOAD=libjemalloc.so.2 with a 512-byte sample period allocates
 *    24000 objects of 768 bytes at one call site and 24000 of 256 bytes at
 *    another (live bytes exactly 3:1). jemalloc samples a 256-byte object
 *    with probability 1-exp(-0.5) = 0.39 and a 768-byte one with 0.78, so
 *    the raw sampled bytes are ~5.9:1 and only correct unsampling brings
 *    them back to 3:1. Statistical bound: each object is a Bernoulli
 *    trial, so the unsampled estimate of a site has relative standard
 *    deviation sqrt((1-p)/(N p)): 0.80% (small site), 0.35% (big site),
 *    0.87% for their ratio; the ±5% band is 5.7 standard deviations wide
 *    (a false failure about once in 10^8 runs). The profile it becomes
 *    goes through `go tool pprof -sample_index=inuse_space -top`, which
 *    must name both call sites (pprof symbolizes them from the fixture's
 *    file: the profile has the dump's mappings).
 *  - the backend in a live process: this test re-runs itself under
 *    LD_PRELOAD=libjemalloc.so.2 (not in the sanitizer build: there ASan's
 *    allocator, not jemalloc, serves malloc, so nothing would be sampled;
 *    the parser still runs under ASan in the tests above), opens the
 *    backend, collects twice and checks inuse_*, alloc_* deltas and the
 *    symbolized profile; and it checks the clear errors without jemalloc
 *    and with jemalloc's profiling off.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "emberprof.h"
#include "encode/pprof.h"
#include "heap/jeheap.h"
#include "heap/jemalloc.h"
#include "jemalloc_sites.h"
#include "symbols/symbolizer.h"

static char tmpdir[256];
static const ember__window_cfg nocfg; /* no static tags */
static const char *self_path;

#define JEMALLOC_SO "libjemalloc.so.2"

static int parse_str(const char *s, ember__jeheap *h)
{
	return ember__jeheap_parse(s, strlen(s), h);
}

/* ---- parser ---- */

static const char basic_dump[] =
	"heap_v2/524288\n"
	"  t*: 3: 3000 [10: 20000]\n"
	"  t0: 2: 2000 [6: 12000]\n"
	"  t1: 1: 1000 [4: 8000]\n"
	"@ 0x7f0000001000 0x7f0000001100 0x400100 0x400200\n"
	"  t*: 2: 1536 [5: 3840]\n"
	"  t0: 2: 1536 [5: 3840]\n"
	"@ 0x7f0000001000 0x7f0000001180 0x400110 0x400200\n"
	"  t*: 1: 1464 [5: 16160]\n"
	"  t1: 1: 1464 [5: 16160]\n"
	"\n"
	"MAPPED_LIBRARIES:\n"
	"00400000-00401000 r-xp 00000000 fe:00 123                  /usr/bin/app\n"
	"00401000-00402000 rw-p 00001000 fe:00 123                  /usr/bin/app\n"
	"7f0000000000-7f0000010000 r-xp 00002000 fe:00 456        /usr/lib/libjemalloc.so.2\n"
	"7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                  [vdso]\n";

static void test_parse_basic(void)
{
	ember__jeheap h;
	CHECK_EQ_INT(parse_str(basic_dump, &h), 0);
	CHECK_EQ_INT(h.period, 524288);
	CHECK_EQ_INT(h.curobjs, 3);
	CHECK_EQ_INT(h.curbytes, 3000);
	CHECK_EQ_INT(h.accumobjs, 10);
	CHECK_EQ_INT(h.accumbytes, 20000);
	CHECK_EQ_INT(h.nstacks, 2);
	if (h.nstacks == 2) {
		CHECK_EQ_INT(h.stacks[0].depth, 4);
		CHECK(h.stacks[0].pcs[0] == 0x7f0000001000ull);
		CHECK(h.stacks[0].pcs[3] == 0x400200ull);
		CHECK_EQ_INT(h.stacks[0].curobjs, 2);
		CHECK_EQ_INT(h.stacks[0].curbytes, 1536);
		CHECK_EQ_INT(h.stacks[0].accumobjs, 5);
		CHECK_EQ_INT(h.stacks[0].accumbytes, 3840);
		CHECK_EQ_INT(h.stacks[1].curbytes, 1464); /* from t*, not t1 */
	}
	/* Executable mappings only. */
	CHECK_EQ_INT(h.nmaps, 3);
	if (h.nmaps == 3) {
		CHECK(h.maps[0].start == 0x400000 && h.maps[0].limit == 0x401000);
		CHECK_EQ_STR(h.maps[0].path, "/usr/bin/app");
		CHECK(h.maps[1].offset == 0x2000);
		CHECK_EQ_STR(h.maps[1].path, "/usr/lib/libjemalloc.so.2");
		CHECK_EQ_STR(h.maps[2].path, "[vdso]");
	}
	ember__jeheap_release(&h);

	/* No stacks, no maps, CRLF line ends: still a valid (empty) profile. */
	CHECK_EQ_INT(parse_str("heap_v2/1\r\n  t*: 0: 0 [0: 0]\r\n", &h), 0);
	CHECK_EQ_INT(h.period, 1);
	CHECK_EQ_INT(h.nstacks, 0);
	ember__jeheap_release(&h);
}

static void expect_format_error(const char *input, const char *what)
{
	ember__jeheap h;
	int rc = parse_str(input, &h);
	CHECK_EQ_INT(rc, EMBER_ERR_FORMAT);
	if (rc == EMBER_ERR_FORMAT && !strstr(ember_last_error(), what)) {
		fprintf(stderr, "error \"%s\" lacks \"%s\"\n", ember_last_error(), what);
		CHECK(!"error message names the problem");
	}
	CHECK_EQ_INT(h.nstacks, 0); /* released on error */
}

static void test_parse_errors(void)
{
	expect_format_error("", "empty input");
	expect_format_error("heap/1\n", "not a jemalloc heap_v2 profile");
	expect_format_error("heap_v2/\n", "bad sample period");
	expect_format_error("heap_v2/12x\n", "bad sample period");
	expect_format_error("heap_v2/99999999999999999999999\n", "bad sample period");
	expect_format_error("heap_v2/8\n@ 0x1 0x2\n@ 0x3\n  t*: 1: 1 [1: 1]\n", "line 3: stack without");
	expect_format_error("heap_v2/8\n@ 0x1 0x2\n", "stack without");
	expect_format_error("heap_v2/8\n@ 0x1\nMAPPED_LIBRARIES:\n", "stack without");
	expect_format_error("heap_v2/8\n@ 0x1 zz\n  t*: 1: 1 [1: 1]\n", "malformed stack line");
	expect_format_error("heap_v2/8\n@ 0x1g\n  t*: 1: 1 [1: 1]\n", "malformed stack line");
	expect_format_error("heap_v2/8\n@\n  t*: 1: 1 [1: 1]\n", "empty stack");
	expect_format_error("heap_v2/8\n@ 0x1\n  t*: 1: 1 [1 1]\n", "line 3: malformed counts line");
	expect_format_error("heap_v2/8\n@ 0x1\n  t*: 1: 1 [1: 1] extra\n", "malformed counts");
	expect_format_error("heap_v2/8\n@ 0x1\n  t*: 1: 99999999999999999999 [1: 1]\n",
			    "malformed counts");
	expect_format_error("heap_v2/8\n@ 0x1\n  t*: 1: 1 [1: 1]\n  t*: 1: 1 [1: 1]\n", "second");
	expect_format_error("heap_v2/8\nhello\n", "line 2: unexpected line");

	/* Deeper than EMBER_JEHEAP_MAX_DEPTH. */
	size_t cap = 32 + (EMBER_JEHEAP_MAX_DEPTH + 1) * 4 + 32;
	char *deep = malloc(cap);
	size_t n = (size_t)snprintf(deep, cap, "heap_v2/8\n@");
	for (int i = 0; i <= EMBER_JEHEAP_MAX_DEPTH; i++)
		n += (size_t)snprintf(deep + n, cap - n, " 0x1");
	snprintf(deep + n, cap - n, "\n  t*: 1: 1 [1: 1]\n");
	expect_format_error(deep, "malformed stack line");
	free(deep);
}

/* ---- unsampling ---- */

static int near(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

static void test_unsample(void)
{
	double o, b;
	/* Average size = period: scale 1/(1 - e^-1). */
	ember__jeheap_unsample(10, 10 * 4096, 4096, &o, &b);
	CHECK(near(o, 10 / (1 - exp(-1.0)), 1e-12));
	CHECK(near(b, 10 * 4096 / (1 - exp(-1.0)), 1e-12));
	/* Small objects: about period/size per sample. */
	ember__jeheap_unsample(1, 16, 524288, &o, &b);
	CHECK(near(o, 524288.0 / 16, 1e-4));
	CHECK(near(b, 524288.0, 1e-4));
	/* Huge objects: always sampled, scale ~1. */
	ember__jeheap_unsample(2, 2ull << 30, 524288, &o, &b);
	CHECK(near(o, 2, 1e-12) && near(b, 2.0 * (1 << 30), 1e-12));
	/* Period 0 (every allocation recorded) and degenerate counts. */
	ember__jeheap_unsample(3, 300, 0, &o, &b);
	CHECK(o == 3 && b == 300);
	ember__jeheap_unsample(0, 300, 512, &o, &b);
	CHECK(o == 0 && b == 0);
	ember__jeheap_unsample(3, 0, 512, &o, &b);
	CHECK(o == 3 && b == 0);
}

/* ---- frames, merging, deltas ---- */

static void test_strip_merge_delta(void)
{
	ember__jeheap h;
	CHECK_EQ_INT(parse_str(basic_dump, &h), 0);
	/* An address in libjemalloc's mapping: its two leading frames go. */
	CHECK_EQ_INT(ember__jeheap_strip_module(&h, 0x7f0000000500), 1);
	CHECK_EQ_INT(h.stacks[0].depth, 2);
	CHECK(h.stacks[0].pcs[0] == 0x400100);
	CHECK(h.stacks[1].pcs[0] == 0x400110);
	/* An address outside every mapping: nothing happens. */
	CHECK_EQ_INT(ember__jeheap_strip_module(&h, 0x10), 0);

	ember__heap_stack *st = NULL;
	size_t n = 0;
	CHECK_EQ_INT(ember__heap_window_from_dump(&h, NULL, 1, &st, &n), 0);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		/* Leaf: return address - 1; callers untouched. */
		CHECK(st[0].pcs[0] == 0x4000ff && st[0].pcs[1] == 0x400200);
		double o, b;
		ember__jeheap_unsample(2, 1536, 524288, &o, &b);
		CHECK(st[0].values[EMBER_MEM_INUSE_OBJECTS] == o);
		CHECK(st[0].values[EMBER_MEM_INUSE_BYTES] == b);
		ember__jeheap_unsample(5, 3840, 524288, &o, &b);
		CHECK(st[0].values[EMBER_MEM_ALLOC_BYTES] == b);
	}
	free(st);
	/* Without prof_accum, alloc_* are not reported. */
	CHECK_EQ_INT(ember__heap_window_from_dump(&h, NULL, 0, &st, &n), 0);
	for (size_t i = 0; i < n; i++)
		CHECK(st[i].values[EMBER_MEM_ALLOC_OBJECTS] == 0 &&
		      st[i].values[EMBER_MEM_ALLOC_BYTES] == 0);
	free(st);

	/* Two stacks equal but for jemalloc's frames merge; the next dump's
	 * alloc_* are differences, except where jemalloc was reset. */
	static const char d1[] = "heap_v2/0\n"
				 "@ 0x7f0000001000 0x400100 0x400200\n  t*: 1: 100 [4: 400]\n"
				 "@ 0x7f0000001200 0x400100 0x400200\n  t*: 1: 100 [2: 200]\n"
				 "@ 0x7f0000001000 0x400300\n  t*: 0: 0 [50: 5000]\n"
				 "MAPPED_LIBRARIES:\n"
				 "7f0000000000-7f0000010000 r-xp 00000000 fe:00 1 /lib/libjemalloc.so.2\n";
	static const char d2[] = "heap_v2/0\n"
				 "@ 0x7f0000001000 0x400100 0x400200\n  t*: 3: 300 [10: 1000]\n"
				 "@ 0x7f0000001200 0x400100 0x400200\n  t*: 1: 100 [2: 200]\n"
				 "@ 0x7f0000001000 0x400300\n  t*: 0: 0 [7: 700]\n"
				 "@ 0x7f0000001000 0x400400\n  t*: 0: 0 [0: 0]\n"
				 "MAPPED_LIBRARIES:\n"
				 "7f0000000000-7f0000010000 r-xp 00000000 fe:00 1 /lib/libjemalloc.so.2\n";
	ember__jeheap a, b;
	CHECK_EQ_INT(parse_str(d1, &a), 0);
	CHECK_EQ_INT(parse_str(d2, &b), 0);
	ember__jeheap_strip_module(&a, 0x7f0000000000);
	ember__jeheap_strip_module(&b, 0x7f0000000000);
	CHECK_EQ_INT(ember__heap_window_from_dump(&a, NULL, 1, &st, &n), 0);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK_EQ_INT(st[0].values[EMBER_MEM_INUSE_OBJECTS], 2);
		CHECK_EQ_INT(st[0].values[EMBER_MEM_INUSE_BYTES], 200);
		CHECK_EQ_INT(st[0].values[EMBER_MEM_ALLOC_OBJECTS], 6);
		CHECK_EQ_INT(st[0].values[EMBER_MEM_ALLOC_BYTES], 600);
		CHECK_EQ_INT(st[1].values[EMBER_MEM_ALLOC_BYTES], 5000);
	}
	free(st);
	CHECK_EQ_INT(ember__heap_window_from_dump(&b, &a, 1, &st, &n), 0);
	CHECK_EQ_INT(n, 2); /* the all-zero stack is left out */
	if (n == 2) {
		CHECK_EQ_INT(st[0].values[EMBER_MEM_INUSE_BYTES], 400);
		CHECK_EQ_INT(st[0].values[EMBER_MEM_ALLOC_OBJECTS], 12 - 6);
		CHECK_EQ_INT(st[0].values[EMBER_MEM_ALLOC_BYTES], 1200 - 600);
		/* 7 < 50: a prof.reset in between; counted from the reset. */
		CHECK_EQ_INT(st[1].values[EMBER_MEM_ALLOC_OBJECTS], 7);
		CHECK_EQ_INT(st[1].values[EMBER_MEM_ALLOC_BYTES], 700);
	}
	free(st);
	ember__jeheap_release(&a);
	ember__jeheap_release(&b);
	ember__jeheap_release(&h);
}

/* ---- helpers for the real runs ---- */

static char *read_file(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	size_t cap = 1 << 16, n = 0, r;
	char *buf = malloc(cap);
	while (buf && (r = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += r;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(fp);
	*len = n;
	return buf;
}

/* Runs a shell command; returns its stdout (malloc'd) and exit status. */
static char *capture(const char *cmd, int *status)
{
	FILE *fp = popen(cmd, "r");
	*status = -1;
	if (!fp)
		return NULL;
	size_t cap = 4096, n = 0, r;
	char *out = malloc(cap);
	while ((r = fread(out + n, 1, cap - n - 1, fp)) > 0) {
		n += r;
		if (cap - n < 2)
			out = realloc(out, cap *= 2);
	}
	out[n] = '\0';
	int st = pclose(fp);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

static int write_profile(const ember__profile *p, const char *path)
{
	uint8_t *gz = NULL;
	size_t len = 0;
	if (ember__pprof_encode(p, &gz, &len) != 0)
		return -1;
	FILE *fp = fopen(path, "wb");
	int ok = fp && fwrite(gz, 1, len, fp) == len;
	if (fp && fclose(fp) != 0)
		ok = 0;
	free(gz);
	return ok ? 0 : -1;
}

/* Sum of one value over the samples whose leaf location names `fn`. */
static int64_t leaf_value(const ember__profile *p, const char *fn, int vi)
{
	int64_t sum = 0;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const ember__sample *s = &p->samples[i];
		const ember__location *l = s->nlocs ? &p->locations[s->locs[0] - 1] : NULL;
		if (!l || !l->nlines)
			continue;
		const ember__function *f = &p->functions[l->lines[l->nlines - 1].function - 1];
		if (f->name && !strcmp(f->name, fn))
			sum += s->values[vi];
	}
	return sum;
}

/* `go tool pprof -top` names both sites, the big one first. */
static void check_pprof_top(const char *path, const char *extra)
{
	char cmd[1024];
	int status;
	snprintf(cmd, sizeof(cmd), "go tool pprof %s -sample_index=inuse_space -top '%s' 2>&1", extra,
		 path);
	char *out = capture(cmd, &status);
	CHECK_EQ_INT(status, 0);
	const char *big = out ? strstr(out, "ember_jm_site_big") : NULL;
	const char *small = out ? strstr(out, "ember_jm_site_small") : NULL;
	CHECK(big != NULL);
	CHECK(small != NULL);
	CHECK(big < small);
	if (!big || !small || big > small)
		fprintf(stderr, "go tool pprof -top:\n%s\n", out ? out : "(none)");
	free(out);
}

/* ---- a dump from a real jemalloc ---- */

static void test_real_dump(void)
{
	char dump[512], prof[512], cmd[2048];
	snprintf(dump, sizeof(dump), "%s/twosites.heap", tmpdir);
	snprintf(prof, sizeof(prof), "%s/twosites.pb.gz", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "LD_PRELOAD=" JEMALLOC_SO " MALLOC_CONF=prof:true,lg_prof_sample:9 '%s' '%s'",
		 EMBER_FIXTURE_JEMALLOC, dump);
	int status;
	char *out = capture(cmd, &status);
	if (status != 0)
		fprintf(stderr, "fixture failed (%d); is libjemalloc2 installed "
				"(scripts/setup-deps.sh)? output: %s\n",
			status, out ? out : "");
	CHECK_EQ_INT(status, 0);
	unsigned long long mallctl_addr = 0;
	CHECK(out && sscanf(out, "mallctl=%llx", &mallctl_addr) == 1);
	free(out);
	size_t len = 0;
	char *buf = read_file(dump, &len);
	CHECK(buf != NULL);
	if (!buf)
		return;
	ember__jeheap h;
	CHECK_EQ_INT(ember__jeheap_parse(buf, len, &h), 0);
	free(buf);
	CHECK_EQ_INT(h.period, 512);
	CHECK(ember__jeheap_strip_module(&h, mallctl_addr) > 0);

	ember__heap_stack *st = NULL;
	size_t n = 0;
	CHECK_EQ_INT(ember__heap_window_from_dump(&h, NULL, 0, &st, &n), 0);
	ember__heap_window w = {.stacks = st, .nstacks = n, .period = h.period, .dump = &h};
	ember__profile *p = NULL;
	CHECK_EQ_INT(ember__heap_window_profile(&w, NULL, &nocfg, 0, 1, &p), 0);
	CHECK_EQ_INT(write_profile(p, prof), 0);
	ember__profile_free(p);

	/* pprof symbolizes the sites from the fixture's file (the profile has
	 * the dump's mappings): independent of our symbolizer. */
	snprintf(cmd, sizeof(cmd),
		 "go tool pprof -sample_index=inuse_space -top -nodecount=100 -unit=byte '%s' 2>&1",
		 prof);
	out = capture(cmd, &status);
	CHECK_EQ_INT(status, 0);
	/* Lines look like "  18432000 75.00% 75.00%   18432000 75.00%  ember_jm_site_big". */
	double big = -1, small = -1;
	for (char *line = out ? strtok(out, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		double flat;
		char name[256];
		if (sscanf(line, " %lfB %*s %*s %*s %*s %255s", &flat, name) != 2)
			continue;
		if (!strcmp(name, "ember_jm_site_big"))
			big = flat;
		else if (!strcmp(name, "ember_jm_site_small"))
			small = flat;
	}
	if (big <= 0 || small <= 0)
		fprintf(stderr, "go tool pprof -top output:\n%s\n", out ? out : "");
	free(out);
	CHECK(big > 0 && small > 0);
	if (big > 0 && small > 0) {
		double ratio = big / small;
		printf("real dump: inuse_space site_big %.0f B (true 18432000), site_small %.0f B "
		       "(true 6144000), ratio %.4f (true 3, band +-5%%)\n",
		       big, small, ratio);
		CHECK(ratio > 3 * 0.95 && ratio < 3 * 1.05);
		CHECK(near(small, 24000.0 * 256, 0.05));
		CHECK(near(big, 24000.0 * 768, 0.05));
	}
	check_pprof_top(prof, "");
	free(st);
	ember__jeheap_release(&h);
}

/* ---- the backend inside a process running on jemalloc ---- */

void *ember_jm_site_churn(void);

__attribute__((noinline)) void *ember_jm_site_churn(void)
{
	void *p = malloc(512);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

#define NLIVE 24000

/* Runs in the child (LD_PRELOAD=libjemalloc.so.2, 512-byte period,
 * prof_accum). Writes the second window's profile to argv path. */
static int child(const char *out_path)
{
	ember__jemalloc *j = NULL;
	if (ember__jemalloc_open(&j) != 0) {
		fprintf(stderr, "child: open: %s\n", ember_last_error());
		return 10;
	}
	CHECK(ember__jemalloc_accum(j));
	CHECK(ember__jemalloc_active(j));
	void **keep = malloc(2 * NLIVE * sizeof(*keep));
	for (int i = 0; i < NLIVE; i++) {
		keep[2 * i] = ember_jm_site_big();
		keep[2 * i + 1] = ember_jm_site_small();
	}
	ember__symbolizer *sym = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&sym), 0);
	ember__heap_window w;
	ember__profile *p1 = NULL, *p2 = NULL;
	CHECK_EQ_INT(ember__jemalloc_collect(j, &w), 0);
	CHECK_EQ_INT(w.period, 512);
	CHECK_EQ_INT(ember__heap_window_profile(&w, sym, &nocfg, 0, 1, &p1), 0);
	/* Window 2: 24000 x 512 bytes allocated and freed at a third site. */
	for (int i = 0; i < NLIVE; i++)
		free(ember_jm_site_churn());
	CHECK_EQ_INT(ember__jemalloc_collect(j, &w), 0);
	CHECK_EQ_INT(ember__heap_window_profile(&w, sym, &nocfg, 1, 2, &p2), 0);
	if (!p1 || !p2)
		return 11;
	double big1 = (double)leaf_value(p1, "ember_jm_site_big", EMBER_MEM_INUSE_BYTES);
	double small1 = (double)leaf_value(p1, "ember_jm_site_small", EMBER_MEM_INUSE_BYTES);
	printf("child window 1: inuse_space big %.0f small %.0f ratio %.4f; alloc_space big %lld\n",
	       big1, small1, small1 > 0 ? big1 / small1 : 0,
	       (long long)leaf_value(p1, "ember_jm_site_big", EMBER_MEM_ALLOC_BYTES));
	CHECK(small1 > 0 && big1 / small1 > 3 * 0.95 && big1 / small1 < 3 * 1.05);
	/* Window 1: alloc_space of the big site equals its inuse (nothing freed). */
	CHECK_EQ_INT(leaf_value(p1, "ember_jm_site_big", EMBER_MEM_ALLOC_BYTES),
		     leaf_value(p1, "ember_jm_site_big", EMBER_MEM_INUSE_BYTES));
	/* Window 2: same live sites (identical samples: nothing changed), no
	 * new allocations there: alloc_* exactly 0. */
	CHECK_EQ_INT(leaf_value(p2, "ember_jm_site_big", EMBER_MEM_INUSE_BYTES), (int64_t)big1);
	CHECK_EQ_INT(leaf_value(p2, "ember_jm_site_big", EMBER_MEM_ALLOC_BYTES), 0);
	CHECK_EQ_INT(leaf_value(p2, "ember_jm_site_small", EMBER_MEM_ALLOC_OBJECTS), 0);
	/* The churn site: nothing live; 24000 x 512 allocated. 512-byte objects
	 * at period 512: p = 0.63, relative sd sqrt(0.37/(0.63*24000)) = 0.5%;
	 * the band is 10 sd. */
	int64_t churn_alloc = leaf_value(p2, "ember_jm_site_churn", EMBER_MEM_ALLOC_BYTES);
	printf("child window 2: alloc_space churn %lld (true 12288000), inuse %lld\n",
	       (long long)churn_alloc,
	       (long long)leaf_value(p2, "ember_jm_site_churn", EMBER_MEM_INUSE_BYTES));
	CHECK(near((double)churn_alloc, 24000.0 * 512, 0.05));
	CHECK_EQ_INT(leaf_value(p2, "ember_jm_site_churn", EMBER_MEM_INUSE_BYTES), 0);
	CHECK_EQ_INT(write_profile(p2, out_path), 0);
	ember__profile_free(p1);
	ember__profile_free(p2);
	ember__symbolizer_free(sym);
	for (int i = 0; i < 2 * NLIVE; i++)
		free(keep[i]);
	free(keep);
	ember__jemalloc_close(j);
	return check_current_failed ? 12 : 0;
}

static void test_in_process(void)
{
#if defined(__SANITIZE_ADDRESS__)
	printf("test_in_process: not run in the sanitizer build (ASan's allocator replaces "
	       "jemalloc's); the normal build runs it\n");
#else
	char prof[512], cmd[2048];
	snprintf(prof, sizeof(prof), "%s/inproc.pb.gz", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "LD_PRELOAD=" JEMALLOC_SO
		 " MALLOC_CONF=prof:true,lg_prof_sample:9,prof_accum:true '%s' --child '%s' 2>&1",
		 self_path, prof);
	int status;
	char *out = capture(cmd, &status);
	printf("%s", out ? out : "");
	CHECK_EQ_INT(status, 0);
	free(out);
	check_pprof_top(prof, "-symbolize=none");
#endif
}

static void test_unsupported(void)
{
	/* This process runs on glibc's malloc: no mallctl anywhere. */
	ember__jemalloc *j = (ember__jemalloc *)1;
	CHECK_EQ_INT(ember__jemalloc_open(&j), EMBER_ERR_UNSUPPORTED);
	CHECK(j == NULL);
	CHECK(strstr(ember_last_error(), "LD_PRELOAD=libjemalloc.so.2") != NULL);
}

/* The builder call and the variable refuse what they do not know. */
static void test_config(void)
{
	ember_builder *b = NULL;
	CHECK_EQ_INT(ember_builder_new(&b, "t"), 0);
	CHECK_EQ_INT(ember_builder_set_alloc_backend(b, EMBER_ALLOC_BACKEND_JEMALLOC), 0);
	CHECK_EQ_INT(ember_builder_set_alloc_backend(b, EMBER_ALLOC_BACKEND_AUTO), 0);
	CHECK_EQ_INT(ember_builder_set_alloc_backend(b, (ember_alloc_backend)3), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "allocation profiling backend") != NULL);
	setenv("EMBERPROF_ALLOC_BACKEND", "jemalloc", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), 0);
	setenv("EMBERPROF_ALLOC_BACKEND", "tcmalloc", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "EMBERPROF_ALLOC_BACKEND") != NULL);
	unsetenv("EMBERPROF_ALLOC_BACKEND");
	ember_builder_free(b);
}

#if !defined(__SANITIZE_ADDRESS__)
/* jemalloc present, profiling off: the error says how to turn it on. */
static void test_prof_off(void)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "LD_PRELOAD=" JEMALLOC_SO " MALLOC_CONF=prof:false '%s' --open-only 2>&1", self_path);
	int status;
	char *out = capture(cmd, &status);
	CHECK_EQ_INT(status, 0);
	CHECK(out && strstr(out, "open: -8 ") && strstr(out, "MALLOC_CONF=prof:true"));
	if (out && !strstr(out, "MALLOC_CONF=prof:true"))
		fprintf(stderr, "child said: %s\n", out);
	free(out);
}
#endif

int main(int argc, char **argv)
{
	self_path = argv[0];
	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "--open-only")) {
		ember__jemalloc *j = NULL;
		int rc = ember__jemalloc_open(&j);
		printf("open: %d %s\n", rc, rc ? ember_last_error() : "");
		ember__jemalloc_close(j);
		return 0;
	}
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/emberprof-test-jemalloc-XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	if (!getenv("HOME"))
		setenv("HOME", tmpdir, 1); /* go wants a home for its caches */

	RUN(test_parse_basic);
	RUN(test_parse_errors);
	RUN(test_unsample);
	RUN(test_strip_merge_delta);
	RUN(test_unsupported);
	RUN(test_config);
	RUN(test_real_dump);
	RUN(test_in_process);
#if !defined(__SANITIZE_ADDRESS__)
	RUN(test_prof_off);
#endif
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return CHECK_DONE();
}
