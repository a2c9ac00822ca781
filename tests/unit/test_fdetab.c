/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fdetab.c - the FDE table of stripped code (src/symbols/fdetab.c)
 * on real files: this test, Debian's stripped gzip and liblzma.
 *  - its ranges are those `readelf --debug-dump=frames` prints (binutils'
 *    reader, not ours);
 *  - with the section headers gone (e_shoff, e_shnum zeroed), the table
 *    read through PT_GNU_EH_FRAME's .eh_frame_hdr is the same;
 *  - lookups: an FDE's first and last byte give its start; the byte after
 *    it, when no FDE starts there, gives its end (a gap);
 *  - damaged .eh_frame bytes never crash it and give only sane ranges.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "symbols/fdetab.h"
#include "util/dep_elfutils.h"
#include "util/lazydep.h"

typedef struct image {
	unsigned char *bytes;
	size_t size;
} image;

static int load(const char *path, image *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	out->bytes = malloc((size_t)n);
	out->size = (size_t)n;
	int ok = out->bytes && fread(out->bytes, 1, out->size, f) == out->size;
	fclose(f);
	return ok ? 0 : -1;
}

static int build(const image *im, ember__fdetab *t)
{
	Elf *elf = elf_memory((char *)im->bytes, im->size);
	if (!elf)
		return -1;
	int rc = ember__fdetab_build(t, elf);
	elf_end(elf);
	return rc;
}

/* readelf's FDE ranges (hi > lo) of path, appended; count returned. */
static size_t readelf_fdes(const char *path, uint64_t (**v)[2])
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	size_t n = 0, cap = 0;
	*v = NULL;
	if (!p)
		return 0;
	char line[512];
	while (fgets(line, sizeof(line), p)) {
		const char *pc = strstr(line, " FDE ");
		pc = pc ? strstr(pc, "pc=") : NULL;
		unsigned long long lo, hi;
		if (!pc || sscanf(pc, "pc=%llx..%llx", &lo, &hi) != 2 || hi <= lo)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			*v = realloc(*v, cap * sizeof(**v));
		}
		(*v)[n][0] = lo;
		(*v)[n][1] = hi;
		n++;
	}
	pclose(p);
	return n;
}

static int has(const ember__fdetab *t, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->base + t->start[i] == lo && t->base + t->end[i] == hi)
			return 1;
	return 0;
}

static int starts_at(const ember__fdetab *t, uint64_t a)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->base + t->start[i] == a)
			return 1;
	return 0;
}

static void check_file(const char *path)
{
	image im;
	if (load(path, &im) != 0) {
		printf("  (%s not readable: skipped)\n", path);
		return;
	}
	ember__fdetab t = EMBER_FDETAB_INIT;
	CHECK(build(&im, &t) == 0);
	CHECK(t.built && t.why == NULL);
	/* what readelf says */
	uint64_t(*ref)[2];
	size_t nref = readelf_fdes(path, &ref);
	CHECK(nref > 10);
	size_t missing = 0;
	for (size_t i = 0; i < nref; i++)
		missing += !has(&t, ref[i][0], ref[i][1]);
	CHECK(missing == 0);
	CHECK(t.n <= nref);
	printf("  %s: %zu FDEs, readelf %zu, missing %zu\n", path, t.n, nref, missing);
	free(ref);

	/* lookups */
	size_t bad = 0;
	for (size_t i = 0; i < t.n; i++) {
		uint64_t lo = t.base + t.start[i], hi = t.base + t.end[i], s = 0;
		if (ember__fdetab_find(&t, lo, &s) != 1 || s != lo)
			bad++;
		int inner = i + 1 < t.n && t.start[i + 1] < t.end[i]; /* nested or overlapping */
		if (!inner && (ember__fdetab_find(&t, hi - 1, &s) != 1 || s != lo))
			bad++;
		if (!inner && !starts_at(&t, hi) && (i + 1 == t.n || t.start[i + 1] > t.end[i]) &&
		    (ember__fdetab_find(&t, hi, &s) != 2 || s != hi))
			bad++;
	}
	CHECK(bad == 0);
	uint64_t s;
	CHECK(ember__fdetab_find(&t, t.base - 1, &s) == 0);

	/* no section headers: through PT_GNU_EH_FRAME */
	image nosh = {malloc(im.size), im.size};
	memcpy(nosh.bytes, im.bytes, im.size);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)nosh.bytes;
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	ember__fdetab u = EMBER_FDETAB_INIT;
	CHECK(build(&nosh, &u) == 0);
	CHECK(u.n == t.n && u.base == t.base);
	CHECK(u.n == t.n && !memcmp(u.start, t.start, t.n * sizeof(*t.start)) &&
	      !memcmp(u.end, t.end, t.n * sizeof(*t.end)));
	ember__fdetab_reset(&u);

	/* damage: random bytes of the file changed, many times; the table
	 * is built or empty, its ranges well formed */
	srand(7);
	size_t insane = 0;
	for (int round = 0; round < 200; round++) {
		memcpy(nosh.bytes, im.bytes, im.size);
		for (int k = 0; k < 16; k++) {
			/* the first 64 KB hold .eh_frame_hdr/.eh_frame in small files */
			size_t at = (size_t)rand() % (im.size < 65536 ? im.size : 65536);
			if (at >= sizeof(Elf64_Ehdr))
				nosh.bytes[at] = (unsigned char)rand();
		}
		ember__fdetab d = EMBER_FDETAB_INIT;
		if (build(&nosh, &d) == 0) {
			for (size_t i = 0; i < d.n; i++)
				insane += d.end[i] <= d.start[i] || (i && d.start[i] < d.start[i - 1]);
		}
		ember__fdetab_reset(&d);
	}
	CHECK(insane == 0);
	free(nosh.bytes);
	ember__fdetab_reset(&t);
	free(im.bytes);
}

static void test_real_files(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		check_file(self);
	}
	check_file("/usr/bin/gzip");
	check_file("/lib/x86_64-linux-gnu/liblzma.so.5");
}

/* A file's table, built again for the next symbolizer of the same file
 * (ember__fdetab_build_file): a copy of the one built first, the same
 * as a table built afresh; a path that is no file builds one. */
static void test_file_cache(void)
{
	/* libc: thousands of FDEs (the table is kept); else ourselves */
	char self[4096] = "/lib/x86_64-linux-gnu/libc.so.6";
	image im;
	if (access(self, R_OK) != 0) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		CHECK(n > 0);
		if (n <= 0)
			return;
		self[n] = '\0';
	}
	CHECK(load(self, &im) == 0);
	Elf *elf = elf_memory((char *)im.bytes, im.size);
	ember__fdetab fresh = EMBER_FDETAB_INIT, a = EMBER_FDETAB_INIT, b = EMBER_FDETAB_INIT,
		      c = EMBER_FDETAB_INIT;
	CHECK(ember__fdetab_build(&fresh, elf) == 0);
	CHECK(ember__fdetab_build_file(&a, elf, self) == 0);
	/* the second: no ELF at all, so only the kept copy can give it */
	CHECK(ember__fdetab_build_file(&b, NULL, self) == 0);
	CHECK(ember__fdetab_build_file(&c, NULL, "[vdso: 1]") == 0);
	printf("%zu FDEs in %s\n", fresh.n, self);
	if (fresh.n >= 1024) {
		CHECK(b.n == fresh.n && b.base == fresh.base && b.start != a.start);
		CHECK(b.n == fresh.n && !memcmp(b.start, fresh.start, b.n * sizeof(*b.start)) &&
		      !memcmp(b.end, fresh.end, b.n * sizeof(*b.end)));
	} else {
		CHECK(b.n == 0); /* small tables are not kept */
	}
	CHECK(a.n == fresh.n);
	CHECK(c.built && c.n == 0); /* not a file: built (from no ELF) */
	ember__fdetab_reset(&fresh);
	ember__fdetab_reset(&a);
	ember__fdetab_reset(&b);
	ember__fdetab_reset(&c);
	elf_end(elf);
	free(im.bytes);
}

static void test_no_elf(void)
{
	ember__fdetab t = EMBER_FDETAB_INIT;
	CHECK(ember__fdetab_build(&t, NULL) == 0);
	CHECK(t.built && t.n == 0 && t.why != NULL);
	uint64_t s;
	CHECK(ember__fdetab_find(&t, 0x1000, &s) == 0);
	ember__fdetab_reset(&t);
}

int main(void)
{
	if (ember__lazydep_load(&ember__elfutils) < 0) {
		printf("elfutils cannot be loaded: skipped\n");
		return 0;
	}
	elf_version(EV_CURRENT);
	RUN(test_real_files);
	RUN(test_file_cache);
	RUN(test_no_elf);
	return CHECK_DONE();
}
