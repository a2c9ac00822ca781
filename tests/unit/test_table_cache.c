/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_table_cache.c - the persistent unwind-table cache (src/agent/
 * table_cache.h) under the registry that uses it: a second registry loads
 * every table the first stored, byte for byte the same rows and index;
 * corrupt files (truncated, empty, wrong magic, a flipped header byte,
 * another module's build id, garbage, an index past the rows) are
 * rejected, counted and rebuilt into the same table, and the file is
 * written again; a directory that cannot be created or written leaves the
 * tables as without a cache and counts the failure.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cfi/table_cache.h"
#include "cfi/unwind_tables.h"
#include "check.h"
#include "unwind/arch.h"
#include "util/dep_elfutils.h"
#include "util/dep_zlib.h"

typedef struct reg {
	_Atomic(const ember__unwind_snapshot *) slot;
	ember__unwind_tables *t;
	ember__unwind_tables_stats st;
	const ember__unwind_snapshot *snap;
} reg;

static char g_dir[256];

/* A registry (eager builds) over the cache at dir (NULL: none), refreshed. */
static void reg_open(reg *r, const char *dir)
{
	memset(r, 0, sizeof(*r));
	CHECK_EQ_INT(ember__unwind_tables_new(&r->t, &r->slot, NULL), 0);
	CHECK_EQ_INT(ember__unwind_tables_use_cache(r->t, dir), 0);
	CHECK_EQ_INT(ember__unwind_tables_refresh(r->t), 0);
	ember__unwind_tables_get_stats(r->t, &r->st);
	r->snap = atomic_load(&r->slot);
	CHECK(r->snap != NULL);
}

/* The same modules with the same rows and index, byte for byte. */
static int same_tables(const ember__unwind_snapshot *a, const ember__unwind_snapshot *b)
{
	if (!a || !b || a->n != b->n)
		return 0;
	for (uint32_t i = 0; i < a->n; i++) {
		const ember__unwind_module *x = &a->mods[i], *y = &b->mods[i];
		if (x->start != y->start || x->end != y->end || x->base != y->base ||
		    x->nrows != y->nrows || x->nindex != y->nindex ||
		    x->index_shift != y->index_shift || x->pending != y->pending)
			return 0;
		if (x->nrows && memcmp(x->rows, y->rows, (size_t)x->nrows * sizeof(x->rows[0])))
			return 0;
		if (x->nindex && memcmp(x->index, y->index, (size_t)x->nindex * sizeof(x->index[0])))
			return 0;
		const ember__cfi_packed *p = &x->packed, *q = &y->packed;
		if (p->nrows != q->nrows || p->nrules != q->nrules || p->nsignal != q->nsignal ||
		    p->npages != q->npages || p->page0 != q->page0)
			return 0;
		if (p->nrows && memcmp(p->rows, q->rows,
				       ember__cfi_packed_layout(p->nrows, p->nrules, p->npages, NULL,
								NULL)))
			return 0;
	}
	return 1;
}

/* libc's cache file (the module holding getpid). */
static void libc_file(char *buf, size_t size, ember__build_id *id)
{
	uint64_t bias;
	CHECK(ember__module_build_id((uint64_t)(uintptr_t)&getpid, id, &bias));
	char hex[2 * EMBER_BUILD_ID_MAX + 1];
	for (uint32_t i = 0; i < id->len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id->id[i]);
	snprintf(buf, size, "%s/%s.%s.utab", g_dir, hex, EMBER_ARCH_NAME);
}

static void *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = malloc(n > 0 ? (size_t)n : 1);
	*size = fread(p, 1, (size_t)n, f);
	fclose(f);
	return p;
}

static void spit(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ_INT(fwrite(p, 1, n, f), n);
		fclose(f);
	}
}

static reg g_first;

static void test_store_then_load(void)
{
	reg *a = &g_first, b;
	reg_open(a, g_dir);
	printf("  first: %llu built, %llu stored, %llu loaded, %llu without build id\n",
	       (unsigned long long)a->st.built, (unsigned long long)a->st.cache_stored,
	       (unsigned long long)a->st.cache_loaded, (unsigned long long)a->st.cache_no_id);
	CHECK(a->st.built >= 2);
	CHECK(a->st.cache_stored >= 2); /* this program, libc, ... */
	CHECK_EQ_INT(a->st.cache_loaded, 0);
	CHECK_EQ_INT(a->st.cache_failed, 0);
	CHECK_EQ_INT(check_count_dir(g_dir, ".utab"), a->st.cache_stored);
	CHECK_EQ_INT(check_count_dir(g_dir, NULL), a->st.cache_stored); /* no temporary left */
	struct stat st;
	CHECK(stat(g_dir, &st) == 0 && (st.st_mode & 0777) == 0700);

	reg_open(&b, g_dir);
	printf("  second: %llu built, %llu stored, %llu loaded\n", (unsigned long long)b.st.built,
	       (unsigned long long)b.st.cache_stored, (unsigned long long)b.st.cache_loaded);
	CHECK_EQ_INT(b.st.cache_loaded, a->st.cache_stored);
	CHECK_EQ_INT(b.st.cache_stored, 0);
	CHECK_EQ_INT(b.st.built, a->st.built - a->st.cache_stored); /* the vDSO only */
	CHECK_EQ_INT(b.st.cache_rejected, 0);
	CHECK(same_tables(a->snap, b.snap));
	CHECK_EQ_INT(b.st.rows, a->st.rows);
	ember__unwind_tables_free(b.t);
}

enum { TRUNC_HALF, TRUNC_HEADER, EMPTY, MAGIC, HEADER_BYTE, OTHER_ID, GARBAGE, BAD_INDEX, NCASES };
static const char *const case_names[] = {"truncated to half", "truncated in the header", "empty",
					 "wrong magic", "a header byte flipped",
					 "another module's build id", "garbage", "index past the rows"};

static void test_corrupt_files_rebuilt(void)
{
	char path[512];
	ember__build_id id;
	libc_file(path, sizeof(path), &id);
	size_t size = 0;
	uint8_t *good = slurp(path, &size);
	CHECK(good != NULL && size > sizeof(ember__table_cache_header));
	if (!good)
		return;
	CHECK_EQ_INT(ember__table_cache_validate(good, size, &id, NULL), 0);
	/* another module's file: the program's own (the module holding main) */
	ember__build_id self;
	uint64_t bias;
	CHECK(ember__module_build_id((uint64_t)(uintptr_t)&test_corrupt_files_rebuilt, &self, &bias));
	char self_path[512];
	char hex[2 * EMBER_BUILD_ID_MAX + 1];
	for (uint32_t i = 0; i < self.len; i++)
		snprintf(hex + 2 * i, 3, "%02x", self.id[i]);
	snprintf(self_path, sizeof(self_path), "%s/%s.%s.utab", g_dir, hex, EMBER_ARCH_NAME);
	size_t self_size = 0;
	uint8_t *other = slurp(self_path, &self_size);
	CHECK(other != NULL);

	for (int c = 0; c < NCASES && other; c++) {
		uint8_t *bad = malloc(size);
		memcpy(bad, good, size);
		size_t n = size;
		ember__table_cache_header h;
		memcpy(&h, good, sizeof(h));
		switch (c) {
		case TRUNC_HALF: n = size / 2; break;
		case TRUNC_HEADER: n = 40; break;
		case EMPTY: n = 0; break;
		case MAGIC: bad[0] ^= 0x20; break;
		case HEADER_BYTE: bad[offsetof(ember__table_cache_header, nrows)] ^= 1; break;
		case OTHER_ID: free(bad); bad = malloc(self_size); memcpy(bad, other, self_size);
			n = self_size; break;
		case GARBAGE:
			srand(7);
			for (size_t i = 0; i < n; i++)
				bad[i] = (uint8_t)rand();
			break;
		case BAD_INDEX: {
			/* the header (and its checksum) intact, one page's first row
			 * beyond the rows (libc's table is packed) */
			uint32_t v = h.nrows + 5;
			CHECK(h.packed && h.npages > 4);
			memcpy(bad + h.rows_off + ((uint64_t)h.nrows + h.nrules + 3) * sizeof(uint32_t),
			       &v, sizeof(v));
			break;
		}
		}
		spit(path, bad, n);
		CHECK(ember__table_cache_validate(bad, n, &id, NULL) != 0);
		reg r;
		reg_open(&r, g_dir);
		printf("  %s: %llu rejected, %llu built, %llu loaded, %llu stored\n", case_names[c],
		       (unsigned long long)r.st.cache_rejected, (unsigned long long)r.st.built,
		       (unsigned long long)r.st.cache_loaded, (unsigned long long)r.st.cache_stored);
		CHECK_EQ_INT(r.st.cache_rejected, 1);
		CHECK_EQ_INT(r.st.cache_stored, 1);   /* libc's, rebuilt */
		CHECK_EQ_INT(r.st.cache_loaded, g_first.st.cache_stored - 1);
		CHECK(same_tables(g_first.snap, r.snap));
		size_t again_size = 0;
		uint8_t *again = slurp(path, &again_size);
		CHECK(again && again_size == size && !memcmp(again, good, size));
		free(again);
		ember__unwind_tables_free(r.t);
		free(bad);
	}
	free(other);
	free(good);
}

/* No cache, a directory that cannot be made, one where files cannot be
 * created: the same tables every time, the failure counted, nothing
 * stored. */
static void test_unusable_dirs(void)
{
	reg none, nodir, ro;
	reg_open(&none, NULL);
	CHECK(same_tables(g_first.snap, none.snap));
	CHECK_EQ_INT(none.st.cache_loaded + none.st.cache_stored + none.st.cache_failed, 0);

	/* a path below a regular file: ENOTDIR */
	reg_open(&nodir, "/dev/null/emberprof-cache");
	CHECK(same_tables(g_first.snap, nodir.snap));
	CHECK_EQ_INT(nodir.st.cache_loaded + nodir.st.cache_stored, 0);

	/* a directory nobody can create files in, root included: mkdir finds
	 * it, access(W_OK) may say yes (root), then creating the temporary
	 * file fails; or a plain user's read-only directory */
	char rodir[300];
	const char *dir = "/proc/self/fdinfo";
	if (geteuid() != 0) {
		snprintf(rodir, sizeof(rodir), "%s-ro", g_dir);
		CHECK(mkdir(rodir, 0500) == 0);
		dir = rodir;
	}
	reg_open(&ro, dir);
	printf("  read-only %s: %llu stores failed, %llu stored\n", dir,
	       (unsigned long long)ro.st.cache_failed, (unsigned long long)ro.st.cache_stored);
	CHECK(same_tables(g_first.snap, ro.snap));
	CHECK_EQ_INT(ro.st.cache_stored, 0);
	CHECK(ro.st.cache_failed <= 1); /* one failure, then no more tries */
	ember__table_cache *c = NULL;
	CHECK_EQ_INT(ember__table_cache_open(&c, dir, NULL), 0);
	if (c) {
		/* it must report itself unwritable once a store was tried */
		ember__build_id id = {.len = 4, .id = {1, 2, 3, 4}};
		ember__cfi_table t;
		memset(&t, 0, sizeof(t));
		if (ember__table_cache_writable(c))
			CHECK(ember__table_cache_store(c, &id, &t) != 0);
		CHECK(!ember__table_cache_writable(c));
		ember__table_cache_free(c);
	}
	if (geteuid() != 0)
		rmdir(rodir);
	ember__unwind_tables_free(none.t);
	ember__unwind_tables_free(nodir.t);
	ember__unwind_tables_free(ro.t);
}

/* Two processes with a cold cache: only one builds a large table (the
 * claim), the other waits for it; a dead process's old claim is taken over. */
static void test_claims(void)
{
	ember__table_cache *a = NULL, *b = NULL;
	CHECK_EQ_INT(ember__table_cache_open(&a, g_dir, NULL), 0);
	CHECK_EQ_INT(ember__table_cache_open(&b, g_dir, NULL), 0);
	if (!a || !b)
		return;
	ember__build_id id = {.len = 20, .id = {0xc1, 0xa1, 0x3}};
	CHECK_EQ_INT(ember__table_cache_claim(a, &id), 1);
	CHECK_EQ_INT(ember__table_cache_claim(b, &id), 0);
	ember__table_cache_release(b, &id); /* not b's: no effect */
	CHECK_EQ_INT(ember__table_cache_claim(b, &id), 0);
	ember__table_cache_release(a, &id);
	CHECK_EQ_INT(ember__table_cache_claim(b, &id), 1);
	/* b dies without releasing: its claim file ages */
	char path[512];
	snprintf(path, sizeof(path), "%s/c1a103%034d.%s.utab.building", g_dir, 0, EMBER_ARCH_NAME);
	struct timespec old[2] = {{.tv_sec = time(NULL) - 2 * EMBER_TABLE_CACHE_CLAIM_S},
				  {.tv_sec = time(NULL) - 2 * EMBER_TABLE_CACHE_CLAIM_S}};
	CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
	CHECK_EQ_INT(ember__table_cache_claim(a, &id), 1);
	ember__table_cache_free(a); /* releases its claim */
	CHECK(access(path, F_OK) != 0);
	ember__table_cache_free(b);
}

/* The environment's choice of directory. */
static void test_dir_from_env(void)
{
	char buf[512];
	setenv("EMBERPROF_UNWIND_CACHE", "off", 1);
	CHECK_EQ_INT(ember__table_cache_dir_from_env(buf, sizeof(buf)), 0);
	setenv("EMBERPROF_UNWIND_CACHE", "relative/dir", 1);
	CHECK_EQ_INT(ember__table_cache_dir_from_env(buf, sizeof(buf)), -1);
	setenv("EMBERPROF_UNWIND_CACHE", "/x/y", 1);
	CHECK_EQ_INT(ember__table_cache_dir_from_env(buf, sizeof(buf)), 1);
	CHECK_EQ_STR(buf, "/x/y");
	unsetenv("EMBERPROF_UNWIND_CACHE");
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	CHECK_EQ_INT(ember__table_cache_dir_from_env(buf, sizeof(buf)), 1);
	CHECK_EQ_STR(buf, "/xdg/emberprof/unwind");
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/home/u", 1);
	CHECK_EQ_INT(ember__table_cache_dir_from_env(buf, sizeof(buf)), 1);
	CHECK_EQ_STR(buf, "/home/u/.cache/emberprof/unwind");
	setenv("EMBERPROF_UNWIND_CACHE", "on", 1);
	CHECK_EQ_INT(ember__table_cache_dir_from_env(buf, sizeof(buf)), 1);
	CHECK_EQ_STR(buf, "/home/u/.cache/emberprof/unwind");
	unsetenv("HOME");
	unsetenv("EMBERPROF_UNWIND_CACHE");
	CHECK_EQ_INT(ember__table_cache_dir_from_env(buf, sizeof(buf)), 0);
}

/* Under CTest every test runs with the cache off (tests/table_cache/
 * ctest_env.cmake): none depends on a cache left warm or cold, none writes
 * into the home directory. */
static void test_suite_runs_without_cache(void)
{
	const char *v = getenv("EMBERPROF_UNWIND_CACHE");
	printf("  EMBERPROF_UNWIND_CACHE=%s\n", v ? v : "(unset)");
	if (getenv("EMBER_TEST_BINDIR")) /* run by CTest */
		CHECK(v && !strcmp(v, "off"));
}

int main(void)
{
	/* libdw and zlib are loaded at first use (util/lazydep.h): load them
	 * now, so the modules mapped stay the same from table to table. */
	if (ember__lazydep_load(&ember__elfutils) < 0 || ember__lazydep_load(&ember__zlib) < 0)
		fprintf(stderr, "%s\n", ember_last_error());
	RUN(test_suite_runs_without_cache);
	char tmpl[] = "/tmp/ember-utab-XXXXXX";
	CHECK(mkdtemp(tmpl) != NULL);
	/* a directory to be created, with a parent: mkdir -p, mode 0700 */
	snprintf(g_dir, sizeof(g_dir), "%s/a/unwind", tmpl);
	RUN(test_store_then_load);
	RUN(test_corrupt_files_rebuilt);
	RUN(test_unusable_dirs);
	RUN(test_claims);
	RUN(test_dir_from_env);
	ember__unwind_tables_free(g_first.t);
	check_rm_rf(tmpl);
	return CHECK_DONE();
}
