/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.h - the unit tests' tiny harness. A test file defines test
 * functions and lists them in main() with RUN(); a failed CHECK prints the
 * place and the values and marks the test failed; main returns non-zero if
 * anything failed, so CTest sees it.
 */
#ifndef EMBER_CHECK_H
#define EMBER_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_current_failed;

#define CHECK(cond)                                                             \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,  \
				__LINE__, #cond);                               \
			check_current_failed = 1;                               \
		}                                                               \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                      \
	do {                                                                    \
		long long va_ = (long long)(a), vb_ = (long long)(b);           \
		if (va_ != vb_) {                                               \
			fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s == %lld, %s == %lld\n", \
				__FILE__, __LINE__, #a, va_, #b, vb_);          \
			check_current_failed = 1;                               \
		}                                                               \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                      \
	do {                                                                    \
		const char *sa_ = (a), *sb_ = (b);                              \
		if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                    \
			fprintf(stderr, "%s:%d: CHECK_EQ_STR failed: %s == \"%s\", %s == \"%s\"\n", \
				__FILE__, __LINE__, #a, sa_ ? sa_ : "(null)", #b, \
				sb_ ? sb_ : "(null)");                          \
			check_current_failed = 1;                               \
		}                                                               \
	} while (0)

#define RUN(fn)                                                                 \
	do {                                                                    \
		check_current_failed = 0;                                       \
		fn();                                                           \
		printf("%s %s\n", check_current_failed ? "FAIL" : "ok  ", #fn); \
		check_failures += check_current_failed;                         \
	} while (0)

#define CHECK_DONE() (check_failures ? 1 : 0)

/* Scratch directories of the tests that write files. */
#include <dirent.h>
#include <stdlib.h>

/* Entries of dir: with a suffix, the visible names containing it; without
 * one, every entry but "." and "..". */
static inline int check_count_dir(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (suffix ? de->d_name[0] != '.' && strstr(de->d_name, suffix)
			   : strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

static inline void check_rm_rf(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

#endif
