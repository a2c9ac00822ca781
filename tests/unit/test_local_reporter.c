/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_local_reporter.c - the local-directory reporter: file names,
 * atomic never-overwriting writes, JFR recordings next to the pprof files
 * (ember_reporter_local_ex), directory creation and refusal of
 * symlinks and non-directories, and cleanup by destroy() (ASan checks the
 * leaks). Reports are filled in by hand; no agent runs.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "emberprof.h"
#include "report/local.h"

static char base[256];

static void make_base(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(base, sizeof(base), "%s/ember-local-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		exit(1);
	}
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static void remove_base(void)
{
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the entries of dir (sorted, without . and ..); returns count. */
static size_t list_dir(const char *dir, char **names, size_t cap)
{
	size_t n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n < cap)
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	return n;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
}

/* Reads a whole file; returns its size or -1. */
static long read_file(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return (long)n;
}

static ember_report make_report(const char *app, int64_t start_ns, uint32_t seq, const char *data)
{
	ember_report r;
	memset(&r, 0, sizeof(r));
	r.app_name = app;
	r.profile_type = "cpu";
	r.start_ns = start_ns;
	r.end_ns = start_ns + 10 * 1000000000LL;
	r.pprof = (const uint8_t *)data;
	r.pprof_len = strlen(data);
	r.seq = seq;
	return r;
}

/* 2024-01-02T03:04:05Z */
#define T0 1704164645LL

static void test_filename_format(void)
{
	char buf[256];
	CHECK_EQ_INT(ember__local_filename(buf, sizeof(buf), "my app", T0 * 1000000000LL + 678000000,
					   123, 7, "cpu"), 0);
	CHECK_EQ_STR(buf, "my_app-20240102T030405.678Z-123-7.pb.gz");
	/* Other profile types say so, so a window's wall profile sits beside
	 * its CPU profile instead of taking a collision suffix. */
	CHECK_EQ_INT(ember__local_filename(buf, sizeof(buf), "my app", T0 * 1000000000LL + 678000000,
					   123, 7, "wall"), 0);
	CHECK_EQ_STR(buf, "my_app-20240102T030405.678Z-123-7.wall.pb.gz");

	CHECK_EQ_INT(ember__local_filename(buf, sizeof(buf), "a/../b\xff.x-y_z", 0, 1, 0, NULL), 0);
	CHECK_EQ_STR(buf, "a_.._b_.x-y_z-19700101T000000.000Z-1-0.pb.gz");

	CHECK_EQ_INT(ember__local_filename(buf, sizeof(buf), "", 0, 1, 0, NULL), 0);
	CHECK_EQ_STR(buf, "app-19700101T000000.000Z-1-0.pb.gz");
	CHECK_EQ_INT(ember__local_filename(buf, sizeof(buf), NULL, -5, 1, 0, NULL), 0);
	CHECK_EQ_STR(buf, "app-19700101T000000.000Z-1-0.pb.gz");

	char longname[400];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK_EQ_INT(ember__local_filename(buf, sizeof(buf), longname, 0, 1, 0, NULL), 0);
	CHECK(strlen(buf) < 255);
	CHECK_EQ_INT(strspn(buf, "x"), EMBER_LOCAL_APP_MAX);

	char small[10];
	CHECK_EQ_INT(ember__local_filename(small, sizeof(small), "app", 0, 1, 0, NULL), EMBER_ERR_INVALID);
}

static void test_two_reports_same_second(void)
{
	char dir[300], buf[64];
	snprintf(dir, sizeof(dir), "%s/same", base);
	ember_reporter rep;
	CHECK_EQ_INT(ember_reporter_local(&rep, dir), 0);
	CHECK_EQ_STR(rep.name, "local");

	/* Written out of time order on purpose: names must still sort by time. */
	ember_report late = make_report("demo", T0 * 1000000000LL + 900000000, 1, "second");
	ember_report early = make_report("demo", T0 * 1000000000LL + 100000000, 0, "first");
	CHECK_EQ_INT(rep.report(rep.userdata, &late), 0);
	CHECK_EQ_INT(rep.report(rep.userdata, &early), 0);

	char *names[8];
	size_t n = list_dir(dir, names, 8);
	CHECK_EQ_INT(n, 2); /* no temporary file left behind */
	if (n == 2) {
		CHECK(strstr(names[0], "demo-20240102T030405.100Z-") == names[0]);
		CHECK(strstr(names[1], "demo-20240102T030405.900Z-") == names[1]);
		long len = read_file(dir, names[0], buf, sizeof(buf));
		CHECK_EQ_INT(len, 5);
		CHECK(len == 5 && memcmp(buf, "first", 5) == 0);
		len = read_file(dir, names[1], buf, sizeof(buf));
		CHECK_EQ_INT(len, 6);
		CHECK(len == 6 && memcmp(buf, "second", 6) == 0);

		struct stat st;
		char path[700];
		snprintf(path, sizeof(path), "%s/%s", dir, names[0]);
		CHECK_EQ_INT(stat(path, &st), 0);
		CHECK_EQ_INT(st.st_mode & 0777, 0600);
	}
	free_names(names, n);
	rep.destroy(rep.userdata);
}

static void test_never_overwrites(void)
{
	char dir[300], buf[64];
	snprintf(dir, sizeof(dir), "%s/clash", base);
	ember_reporter rep;
	CHECK_EQ_INT(ember_reporter_local(&rep, dir), 0);
	ember_report a = make_report("demo", T0 * 1000000000LL, 0, "AAAA");
	ember_report b = make_report("demo", T0 * 1000000000LL, 0, "BBBBBB");
	CHECK_EQ_INT(rep.report(rep.userdata, &a), 0);
	CHECK_EQ_INT(rep.report(rep.userdata, &b), 0);

	char *names[8];
	size_t n = list_dir(dir, names, 8);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		char expect[128];
		snprintf(expect, sizeof(expect), "demo-20240102T030405.000Z-%ld-0.pb.gz",
			 (long)getpid());
		CHECK_EQ_STR(names[0], expect);
		snprintf(expect, sizeof(expect), "demo-20240102T030405.000Z-%ld-0_1.pb.gz",
			 (long)getpid());
		CHECK_EQ_STR(names[1], expect);
		CHECK_EQ_INT(read_file(dir, names[0], buf, sizeof(buf)), 4); /* the first survives */
		CHECK_EQ_INT(read_file(dir, names[1], buf, sizeof(buf)), 6);
	}
	free_names(names, n);
	rep.destroy(rep.userdata);
}

/* ember_reporter_local_ex: JFR recordings next to the pprof files. */
static void test_jfr_files(void)
{
	char dir[300], buf[64];
	snprintf(dir, sizeof(dir), "%s/jfr", base);
	ember_reporter rep;
	CHECK_EQ_INT(ember_reporter_local_ex(&rep, dir, 4), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "unknown formats"));
	CHECK_EQ_INT(ember_reporter_local(&rep, dir), 0);
	CHECK_EQ_INT(rep.formats, EMBER_FORMAT_PPROF);
	rep.destroy(rep.userdata);
	CHECK_EQ_INT(ember_reporter_local_ex(&rep, dir, EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR), 0);
	CHECK_EQ_INT(rep.formats, EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR);

	ember_report cpu = make_report("demo", T0 * 1000000000LL, 3, "pprof-cpu");
	cpu.format = EMBER_FORMAT_PPROF;
	ember_report wall = cpu;
	wall.profile_type = "wall";
	ember_report jfr = cpu;
	jfr.format = EMBER_FORMAT_JFR;
	jfr.profile_type = "jfr";
	jfr.pprof = NULL;
	jfr.pprof_len = 0;
	jfr.jfr = (const uint8_t *)"FLR-recording";
	jfr.jfr_len = 13;
	CHECK_EQ_INT(rep.report(rep.userdata, &cpu), 0);
	CHECK_EQ_INT(rep.report(rep.userdata, &wall), 0);
	CHECK_EQ_INT(rep.report(rep.userdata, &jfr), 0);
	CHECK_EQ_INT(rep.report(rep.userdata, &jfr), 0); /* same name: a suffix, never overwritten */
	ember_report bad = jfr;
	bad.format = 8;
	CHECK_EQ_INT(rep.report(rep.userdata, &bad), EMBER_ERR_INVALID);

	char *names[8];
	size_t n = list_dir(dir, names, 8);
	CHECK_EQ_INT(n, 4);
	if (n == 4) {
		char expect[128];
		long pid = (long)getpid();
		snprintf(expect, sizeof(expect), "demo-20240102T030405.000Z-%ld-3.jfr", pid);
		CHECK_EQ_STR(names[0], expect);
		snprintf(expect, sizeof(expect), "demo-20240102T030405.000Z-%ld-3.pb.gz", pid);
		CHECK_EQ_STR(names[1], expect);
		snprintf(expect, sizeof(expect), "demo-20240102T030405.000Z-%ld-3.wall.pb.gz", pid);
		CHECK_EQ_STR(names[2], expect);
		snprintf(expect, sizeof(expect), "demo-20240102T030405.000Z-%ld-3_1.jfr", pid);
		CHECK_EQ_STR(names[3], expect);
		CHECK_EQ_INT(read_file(dir, names[0], buf, sizeof(buf)), 13);
		CHECK(!memcmp(buf, "FLR-recording", 13));
		CHECK_EQ_INT(read_file(dir, names[1], buf, sizeof(buf)), 9);
	}
	free_names(names, n);
	rep.destroy(rep.userdata);
}

static void test_creates_parents_0700(void)
{
	char dir[300], parent[300];
	snprintf(parent, sizeof(parent), "%s/p1", base);
	snprintf(dir, sizeof(dir), "%s/p1/p2/p3//", base);
	ember_reporter rep;
	CHECK_EQ_INT(ember_reporter_local(&rep, dir), 0);
	struct stat st;
	CHECK_EQ_INT(stat(dir, &st), 0);
	CHECK(S_ISDIR(st.st_mode));
	CHECK_EQ_INT(st.st_mode & 0777, 0700);
	CHECK_EQ_INT(stat(parent, &st), 0);
	CHECK_EQ_INT(st.st_mode & 0777, 0700);
	rep.destroy(rep.userdata);
}

static void test_refuses_symlink(void)
{
	char target[300], link[300];
	snprintf(target, sizeof(target), "%s/real", base);
	snprintf(link, sizeof(link), "%s/link", base);
	CHECK_EQ_INT(mkdir(target, 0700), 0);
	CHECK_EQ_INT(symlink(target, link), 0);
	ember_reporter rep;
	memset(&rep, 0, sizeof(rep));
	CHECK_EQ_INT(ember_reporter_local(&rep, link), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), link) != NULL);
	CHECK(strstr(ember_last_error(), "symbolic link") != NULL);
	CHECK(rep.userdata == NULL);

	/* A trailing slash must not make the check follow the link. */
	char slashed[310];
	snprintf(slashed, sizeof(slashed), "%s/", link);
	CHECK_EQ_INT(ember_reporter_local(&rep, slashed), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "symbolic link") != NULL);
}

static void test_refuses_non_directory(void)
{
	char file[300], under[320];
	snprintf(file, sizeof(file), "%s/plainfile", base);
	FILE *f = fopen(file, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	ember_reporter rep;

	CHECK_EQ_INT(ember_reporter_local(&rep, file), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), file) != NULL);
	CHECK(strstr(ember_last_error(), "not a directory") != NULL);

	/* Under a regular file: ENOTDIR even for root. */
	snprintf(under, sizeof(under), "%s/sub/dir", file);
	int rc = ember_reporter_local(&rep, under);
	CHECK(rc < 0);
	CHECK_EQ_INT(rc, EMBER_ERR_IO);
	CHECK(strstr(ember_last_error(), "plainfile/sub") != NULL);
	CHECK(strstr(ember_last_error(), strerror(ENOTDIR)) != NULL);
}

static void test_symlink_swapped_in_later(void)
{
	char dir[300], moved[300], other[300], buf[64];
	snprintf(dir, sizeof(dir), "%s/swap", base);
	snprintf(moved, sizeof(moved), "%s/swap-moved", base);
	snprintf(other, sizeof(other), "%s/swap-other", base);
	ember_reporter rep;
	CHECK_EQ_INT(ember_reporter_local(&rep, dir), 0);
	CHECK_EQ_INT(rename(dir, moved), 0);
	CHECK_EQ_INT(mkdir(other, 0700), 0);
	CHECK_EQ_INT(symlink(other, dir), 0);

	ember_report r = make_report("demo", T0 * 1000000000LL, 3, "data");
	CHECK_EQ_INT(rep.report(rep.userdata, &r), 0);
	char *names[4];
	size_t n = list_dir(other, names, 4);
	CHECK_EQ_INT(n, 0); /* nothing went through the symlink */
	free_names(names, n);
	n = list_dir(moved, names, 4);
	CHECK_EQ_INT(n, 1); /* it went into the directory we opened */
	if (n == 1)
		CHECK_EQ_INT(read_file(moved, names[0], buf, sizeof(buf)), 4);
	free_names(names, n);
	rep.destroy(rep.userdata);
}

static void test_directory_removed_is_recreated(void)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/gone", base);
	ember_reporter rep;
	CHECK_EQ_INT(ember_reporter_local(&rep, dir), 0);
	CHECK_EQ_INT(rmdir(dir), 0);
	ember_report r = make_report("demo", T0 * 1000000000LL, 0, "data");
	CHECK_EQ_INT(rep.report(rep.userdata, &r), 0);
	char *names[4];
	size_t n = list_dir(dir, names, 4);
	CHECK_EQ_INT(n, 1);
	free_names(names, n);
	rep.destroy(rep.userdata);
}

static void test_bad_arguments(void)
{
	ember_reporter rep;
	CHECK_EQ_INT(ember_reporter_local(NULL, base), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember_reporter_local(&rep, NULL), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember_reporter_local(&rep, ""), EMBER_ERR_INVALID);

	char dir[300];
	snprintf(dir, sizeof(dir), "%s/args", base);
	CHECK_EQ_INT(ember_reporter_local(&rep, dir), 0);
	ember_report r = make_report("demo", 0, 0, "x");
	r.pprof = NULL;
	CHECK_EQ_INT(rep.report(rep.userdata, &r), EMBER_ERR_INVALID);
	CHECK_EQ_INT(rep.report(rep.userdata, NULL), EMBER_ERR_INVALID);
	/* An empty profile (no samples) is no window: 0, and no file. */
	r.pprof_len = 0;
	CHECK_EQ_INT(rep.report(rep.userdata, &r), 0);
	char *names[8];
	size_t n = list_dir(dir, names, 8);
	CHECK_EQ_INT((int)n, 0);
	free_names(names, n);
	rep.destroy(rep.userdata);
}

static void test_open_dir_helper(void)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/helper", base);
	int fd = ember__local_open_dir(dir);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(ember__local_open_dir(""), EMBER_ERR_INVALID);
}

int main(void)
{
	make_base();
	RUN(test_filename_format);
	RUN(test_two_reports_same_second);
	RUN(test_never_overwrites);
	RUN(test_jfr_files);
	RUN(test_creates_parents_0700);
	RUN(test_refuses_symlink);
	RUN(test_refuses_non_directory);
	RUN(test_symlink_swapped_in_later);
	RUN(test_directory_removed_is_recreated);
	RUN(test_bad_arguments);
	RUN(test_open_dir_helper);
	remove_base();
	return CHECK_DONE();
}
