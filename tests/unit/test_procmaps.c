/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_procmaps.c - the /proc/<pid>/maps parser: odd but valid lines,
 * malformed lines (rejected with the line named), lookups at range
 * boundaries, and the real /proc/self/maps of this test.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "emberprof.h"
#include "symbols/procmaps.h"

/* Odd but valid: spaces in paths, deleted files, pseudo paths, anonymous
 * mappings with and without padding, a shared mapping, CRLF, a blank line. */
static const char crafted[] =
	"55e53e152000-55e53e154000 r--p 00000000 fe:00 247134                     /usr/bin/cat\n"
	"55e53e154000-55e53e159000 r-xp 00002000 fe:00 247134                     /usr/bin/cat\n"
	"55e552ef4000-55e552f15000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f88040bf000-7f88040e1000 rw-p 00000000 00:00 0 \n"
	"7f88040e1000-7f88040e2000 ---p 00000000 00:00 0\n"
	"7f8804100000-7f8804110000 r-xp 00001000 08:11 12345678901                /tmp/my dir/lib foo.so\n"
	"7f8804110000-7f8804120000 r-xp 00000000 fe:01 99                         /tmp/gone.so (deleted)\n"
	"7f8804327000-7f880432e000 r--s 00000000 fe:00 332280                     /usr/lib/gconv/gconv-modules.cache\r\n"
	"\n"
	"7f8804337000-7f8804339000 r-xp 00000000 00:00 0                          [vdso]\n"
	"7fff532bd000-7fff532de000 rw-p 00000000 00:00 0                          [stack]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

static void test_crafted(void)
{
	ember__procmaps m = EMBER_PROCMAPS_INIT;
	CHECK_EQ_INT(ember__procmaps_parse(crafted, strlen(crafted), &m), 0);
	CHECK_EQ_INT(m.n, 11);
	if (m.n != 11) {
		ember__procmaps_free(&m);
		return;
	}
	CHECK_EQ_INT(m.maps[0].start, 0x55e53e152000ull);
	CHECK_EQ_INT(m.maps[0].end, 0x55e53e154000ull);
	CHECK_EQ_INT(m.maps[0].perms, EMBER_MAP_READ | EMBER_MAP_PRIVATE);
	CHECK_EQ_STR(m.maps[0].path, "/usr/bin/cat");
	CHECK_EQ_INT(m.maps[0].inode, 247134);
	CHECK_EQ_INT(m.maps[0].dev_major, 0xfe);

	CHECK_EQ_INT(m.maps[1].perms, EMBER_MAP_READ | EMBER_MAP_EXEC | EMBER_MAP_PRIVATE);
	CHECK_EQ_INT(m.maps[1].offset, 0x2000);

	CHECK_EQ_STR(m.maps[2].path, "[heap]");
	CHECK_EQ_STR(m.maps[3].path, "");
	CHECK_EQ_INT(m.maps[3].inode, 0);
	CHECK_EQ_STR(m.maps[4].path, "");
	CHECK_EQ_INT(m.maps[4].perms, EMBER_MAP_PRIVATE);

	CHECK_EQ_STR(m.maps[5].path, "/tmp/my dir/lib foo.so");
	CHECK_EQ_INT(m.maps[5].inode, 12345678901ull);
	CHECK_EQ_INT(m.maps[5].dev_major, 8);
	CHECK_EQ_INT(m.maps[5].dev_minor, 0x11);
	CHECK_EQ_INT(m.maps[5].offset, 0x1000);
	CHECK_EQ_INT(m.maps[5].deleted, 0);

	CHECK_EQ_STR(m.maps[6].path, "/tmp/gone.so (deleted)");
	CHECK_EQ_INT(m.maps[6].deleted, 1);

	CHECK_EQ_STR(m.maps[7].path, "/usr/lib/gconv/gconv-modules.cache");
	CHECK_EQ_INT(m.maps[7].perms, EMBER_MAP_READ);

	CHECK_EQ_STR(m.maps[8].path, "[vdso]");
	CHECK_EQ_STR(m.maps[9].path, "[stack]");
	CHECK_EQ_STR(m.maps[10].path, "[vsyscall]");
	CHECK_EQ_INT(m.maps[10].start, 0xffffffffff600000ull);
	CHECK_EQ_INT(m.maps[10].perms, EMBER_MAP_EXEC | EMBER_MAP_PRIVATE);
	ember__procmaps_free(&m);
	CHECK_EQ_INT(m.n, 0);
	ember__procmaps_free(&m); /* twice is harmless */
	ember__procmaps_free(NULL);
}

static void test_find(void)
{
	ember__procmaps m = EMBER_PROCMAPS_INIT;
	CHECK_EQ_INT(ember__procmaps_parse(crafted, strlen(crafted), &m), 0);
	const ember__procmap *p = ember__procmaps_find(&m, 0x55e53e154000ull);
	CHECK(p && p->start == 0x55e53e154000ull); /* start is inside */
	p = ember__procmaps_find(&m, 0x55e53e153fffull);
	CHECK(p && p->start == 0x55e53e152000ull);
	p = ember__procmaps_find(&m, 0x55e53e159000ull); /* end is outside; a gap */
	CHECK(p == NULL);
	CHECK(ember__procmaps_find(&m, 0) == NULL);
	CHECK(ember__procmaps_find(&m, UINT64_MAX) == NULL);
	p = ember__procmaps_find(&m, 0xffffffffff600800ull);
	CHECK(p && strcmp(p->path, "[vsyscall]") == 0);
	p = ember__procmaps_find(&m, 0x7f8804105555ull);
	CHECK(p && strcmp(p->path, "/tmp/my dir/lib foo.so") == 0);
	ember__procmaps_free(&m);
	CHECK(ember__procmaps_find(&m, 0x7f8804105555ull) == NULL); /* empty table */
}

static void test_unsorted_is_sorted(void)
{
	static const char text[] = "3000-4000 r-xp 00000000 00:00 0 /b\n"
				   "1000-2000 r-xp 00000000 00:00 0 /a\n";
	ember__procmaps m = EMBER_PROCMAPS_INIT;
	CHECK_EQ_INT(ember__procmaps_parse(text, strlen(text), &m), 0);
	CHECK_EQ_INT(m.n, 2);
	if (m.n == 2) {
		CHECK_EQ_STR(m.maps[0].path, "/a");
		CHECK_EQ_STR(m.maps[1].path, "/b");
	}
	ember__procmaps_free(&m);
}

/* Each malformed text must fail with EMBER_ERR_FORMAT and a message that
 * contains `where` (usually "line N"). */
static void expect_bad(const char *text, const char *where)
{
	ember__procmaps m = EMBER_PROCMAPS_INIT;
	int err = ember__procmaps_parse(text, strlen(text), &m);
	CHECK_EQ_INT(err, EMBER_ERR_FORMAT);
	CHECK_EQ_INT(m.n, 0);
	CHECK(m.maps == NULL);
	const char *msg = ember_last_error();
	if (!strstr(msg, where)) {
		fprintf(stderr, "message \"%s\" lacks \"%s\"\n", msg, where);
		CHECK(strstr(msg, where) != NULL);
	}
	ember__procmaps_free(&m);
}

static void test_malformed(void)
{
	static const char good[] = "1000-2000 r-xp 00000000 00:00 0 /a\n";
	char buf[256];
	expect_bad("zzzz-2000 r-xp 00000000 00:00 0 /a\n", "line 1: bad start address");
	snprintf(buf, sizeof(buf), "%s1000 r-xp 00000000 00:00 0 /a\n", good);
	expect_bad(buf, "line 2: bad start address");
	snprintf(buf, sizeof(buf), "%s%s3000-2000 r-xp 00000000 00:00 0 /x\n", good, "\n");
	expect_bad(buf, "line 3: empty or inverted");
	expect_bad("1000-2000 rwzp 00000000 00:00 0 /a\n", "line 1: bad permissions");
	expect_bad("1000-2000 r-x 00000000 00:00 0 /a\n", "line 1: bad permissions");
	expect_bad("1000-2000 r-xq 00000000 00:00 0 /a\n", "line 1: bad permissions");
	expect_bad("1000-2000 r-xp 0000g000 00:00 0 /a\n", "line 1: bad offset");
	expect_bad("1000-2000 r-xp 00000000 0000 0 /a\n", "line 1: bad device");
	expect_bad("1000-2000 r-xp 00000000 00:00 /a\n", "line 1: bad inode");
	expect_bad("1000-2000 r-xp 00000000 00:00 12x /a\n", "line 1: junk after inode");
	expect_bad("1000-2000 r-xp 00000000 00:00 99999999999999999999999 /a\n",
		   "line 1: bad inode");
	expect_bad("10000000000000000-10000000000000001 r-xp 00000000 00:00 0\n",
		   "line 1: bad start address");
	expect_bad("1000-2000\n", "line 1: bad end address");
	expect_bad("garbage\n", "\"garbage\"");
	snprintf(buf, sizeof(buf), "%s1800-2800 r-xp 00000000 00:00 0 /b\n", good);
	expect_bad(buf, "overlaps");
}

/* /proc/self/maps read while the process maps: CI (ASan, dlopen churn)
 * once read these two lines, the second of a later read() than the first,
 * after the shadow mappings changed in between. The strict parse refuses
 * them; the live one keeps the newer line and what of the older it does
 * not cover, or drops an older line it covers. */
static void test_torn_live(void)
{
	const char *torn = "1000-2000 r-xp 00000000 00:00 0 /a\n"
			   "2008fff7000-ff8332d4000 rw-p 00000000 00:00 0\n"
			   "ff8330d3000-10007fff8000 rw-p 00000000 00:00 0\n"
			   "10007fff8000-10007fff9000 rw-p 00000000 00:00 0 /z\n";
	ember__procmaps m = EMBER_PROCMAPS_INIT;
	CHECK(ember__procmaps_parse(torn, strlen(torn), &m) < 0);
	CHECK(strstr(ember_last_error(), "overlaps") != NULL);
	CHECK_EQ_INT(ember__procmaps_parse_live(torn, strlen(torn), &m), 0);
	CHECK_EQ_INT(m.n, 4);
	if (m.n == 4) {
		CHECK(m.maps[1].start == 0x2008fff7000ull && m.maps[1].end == 0xff8330d3000ull);
		CHECK(m.maps[2].start == 0xff8330d3000ull && m.maps[2].end == 0x10007fff8000ull);
		CHECK_EQ_STR(m.maps[3].path, "/z");
	}
	const ember__procmap *f = ember__procmaps_find(&m, 0xff8330d3000ull);
	CHECK(f && f->start == 0xff8330d3000ull);
	ember__procmaps_free(&m);

	/* a newer line covering two older ones wholly, and one partly */
	const char *cover = "1000-2000 r--p 00000000 00:00 0 /a\n"
			    "2000-3000 r--p 00000000 00:00 0 /b\n"
			    "4000-5000 r--p 00000000 00:00 0 /c\n"
			    "1000-4800 rw-p 00000000 00:00 0 /new\n"
			    "6000-7000 r--p 00000000 00:00 0 /d\n";
	CHECK_EQ_INT(ember__procmaps_parse_live(cover, strlen(cover), &m), 0);
	CHECK_EQ_INT(m.n, 2);
	if (m.n == 2) {
		CHECK_EQ_STR(m.maps[0].path, "/new");
		CHECK(m.maps[0].start == 0x1000 && m.maps[0].end == 0x4800);
		CHECK_EQ_STR(m.maps[1].path, "/d");
	}
	ember__procmaps_free(&m);
	/* the older line starting before the newer one keeps its head */
	const char *head = "1000-3000 r--p 00000000 00:00 0 /a\n"
			   "2000-4000 rw-p 00000000 00:00 0 /new\n";
	CHECK_EQ_INT(ember__procmaps_parse_live(head, strlen(head), &m), 0);
	CHECK_EQ_INT(m.n, 2);
	if (m.n == 2)
		CHECK(m.maps[0].start == 0x1000 && m.maps[0].end == 0x2000 &&
		      m.maps[1].start == 0x2000 && m.maps[1].end == 0x4000);
	ember__procmaps_free(&m);
	/* a well-formed text is the same as the strict parse's */
	CHECK_EQ_INT(ember__procmaps_parse_live(crafted, strlen(crafted), &m), 0);
	CHECK_EQ_INT(m.n, 11);
	ember__procmaps_free(&m);
}

static void test_read_file(void)
{
	char path[] = "/tmp/ember_test_mapsXXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ_INT(write(fd, crafted, strlen(crafted)), (long long)strlen(crafted));
	close(fd);
	ember__procmaps m = EMBER_PROCMAPS_INIT;
	CHECK_EQ_INT(ember__procmaps_read_file(path, &m), 0);
	CHECK_EQ_INT(m.n, 11);
	ember__procmaps_free(&m);
	unlink(path);
	CHECK_EQ_INT(ember__procmaps_read_file(path, &m), EMBER_ERR_IO);
	CHECK(strstr(ember_last_error(), path) != NULL);
}

__attribute__((noinline)) static int local_function(int x)
{
	return x * 5 + 3;
}

static void test_self(void)
{
	ember__procmaps m = EMBER_PROCMAPS_INIT;
	CHECK_EQ_INT(ember__procmaps_read_self(&m), 0);
	CHECK(m.n > 5);
	for (size_t i = 1; i < m.n; i++)
		CHECK(m.maps[i - 1].end <= m.maps[i].start);

	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';
	CHECK(local_function(1) == 8);
	const ember__procmap *p = ember__procmaps_find(&m, (uint64_t)(uintptr_t)&local_function);
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_STR(p->path, exe);
		CHECK(p->perms & EMBER_MAP_EXEC);
	}

	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	CHECK(libc != NULL);
	void *pf = libc ? dlsym(libc, "printf") : NULL;
	CHECK(pf != NULL);
	p = ember__procmaps_find(&m, (uint64_t)(uintptr_t)pf);
	CHECK(p != NULL);
	if (p) {
		CHECK(strstr(p->path, "libc") != NULL);
		CHECK(p->perms & EMBER_MAP_EXEC);
	}
	if (libc)
		dlclose(libc);
	ember__procmaps_free(&m);
}

static void test_self_find(void)
{
	int on_stack = 0;
	uint64_t addr = (uint64_t)(uintptr_t)&on_stack;
	ember__procmap pm;
	char path[64];
	CHECK_EQ_INT(ember__procmaps_self_find(addr, &pm, path, sizeof(path)), 0);
	CHECK(pm.start <= addr && addr < pm.end);
	CHECK(pm.perms & EMBER_MAP_WRITE);
	CHECK(pm.path == path);
	/* Under ASan, locals may live on a fake stack: only then is it not
	 * [stack]; either way the range must match the maps file. */
	ember__procmaps m = EMBER_PROCMAPS_INIT;
	CHECK_EQ_INT(ember__procmaps_read_self(&m), 0);
	const ember__procmap *p = ember__procmaps_find(&m, addr);
	CHECK(p && p->start == pm.start && p->end == pm.end);
	if (p)
		CHECK_EQ_STR(pm.path, p->path);
	ember__procmaps_free(&m);

	/* Truncated path buffer, and no buffer at all. */
	char tiny[4];
	uint64_t code = (uint64_t)(uintptr_t)&local_function;
	CHECK_EQ_INT(ember__procmaps_self_find(code, &pm, tiny, sizeof(tiny)), 0);
	CHECK_EQ_INT(strlen(pm.path), 3);
	CHECK_EQ_INT(ember__procmaps_self_find(code, &pm, NULL, 0), 0);
	CHECK_EQ_STR(pm.path, "");
	CHECK(pm.perms & EMBER_MAP_EXEC);

	CHECK_EQ_INT(ember__procmaps_self_find(16, &pm, NULL, 0), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "0x10") != NULL);
}

int main(void)
{
	RUN(test_crafted);
	RUN(test_find);
	RUN(test_unsorted_is_sorted);
	RUN(test_malformed);
	RUN(test_torn_live);
	RUN(test_read_file);
	RUN(test_self);
	RUN(test_self_find);
	return CHECK_DONE();
}
