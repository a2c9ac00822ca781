/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asprof_test.h - shared pieces of the async-profiler backend's tests:
 * each case runs in its own forked process (the stand-in library keeps
 * per-process counters, and the agent allows one run per process), a
 * reporter that keeps a copy of every report, and readers for the stand-in
 * library's command log (tests/asprof/fake_asprof.c).
 */
#ifndef EMBER_ASPROF_TEST_H
#define EMBER_ASPROF_TEST_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "emberprof.h"

/* Runs fn in a child process; its CHECK failures fail this test. */
#define RUN_ISOLATED(fn)                                                              \
	do {                                                                          \
		fflush(stdout);                                                       \
		fflush(stderr);                                                       \
		pid_t pid_ = fork();                                                  \
		if (pid_ == 0) {                                                      \
			check_current_failed = 0;                                     \
			fn();                                                         \
			exit(check_current_failed ? 1 : 0); /* LSan checks here */    \
		}                                                                     \
		int st_ = 0;                                                          \
		waitpid(pid_, &st_, 0);                                               \
		int failed_ = !WIFEXITED(st_) || WEXITSTATUS(st_) != 0;               \
		printf("%s %s\n", failed_ ? "FAIL" : "ok  ", #fn);                    \
		check_failures += failed_;                                            \
	} while (0)

typedef struct cap_report {
	uint32_t seq;
	int final;
	unsigned format;
	char type[16];
	int64_t start_ns, end_ns;
	uint8_t *jfr;
	size_t len;
} cap_report;

typedef struct capture {
	pthread_mutex_t mu;
	cap_report r[256];
	size_t n;
} capture;

static int cap_report_fn(void *ud, const ember_report *r)
{
	capture *c = ud;
	pthread_mutex_lock(&c->mu);
	if (c->n < sizeof(c->r) / sizeof(c->r[0])) {
		cap_report *k = &c->r[c->n++];
		k->seq = r->seq;
		k->final = r->final;
		k->format = r->format;
		snprintf(k->type, sizeof(k->type), "%s", r->profile_type ? r->profile_type : "");
		k->start_ns = r->start_ns;
		k->end_ns = r->end_ns;
		k->len = r->jfr_len;
		k->jfr = malloc(r->jfr_len ? r->jfr_len : 1);
		if (k->jfr && r->jfr_len)
			memcpy(k->jfr, r->jfr, r->jfr_len);
	}
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static __attribute__((unused)) ember_reporter capture_reporter(capture *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	ember_reporter r = {.name = "capture", .report = cap_report_fn, .userdata = c,
			    .formats = EMBER_FORMAT_JFR};
	return r;
}

static __attribute__((unused)) void capture_free(capture *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->r[i].jfr);
	c->n = 0;
}

static __attribute__((unused)) void free_lines(char **lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
}

static __attribute__((unused)) size_t capture_count(capture *c)
{
	pthread_mutex_lock(&c->mu);
	size_t n = c->n;
	pthread_mutex_unlock(&c->mu);
	return n;
}

/* Waits (up to a generous 120 s, for a loaded machine) for n reports. */
static __attribute__((unused)) void wait_reports(capture *c, size_t n)
{
	for (int i = 0; i < 12000 && capture_count(c) < n; i++) {
		struct timespec t = {0, 10000000};
		nanosleep(&t, NULL);
	}
}

static char fresh_dir[64];

static void remove_fresh_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fresh_dir);
	if (fresh_dir[0] && !getenv("EMBER_TEST_KEEP") && system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", fresh_dir);
}

/* A fresh directory (removed at exit) and FAKE_ASPROF_LOG inside it. Returns the log path. */
static __attribute__((unused)) const char *fresh_log(void)
{
	static char path[96];
	char *dir = fresh_dir;
	snprintf(dir, sizeof(fresh_dir), "/tmp/ember-asprof-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(2);
	}
	atexit(remove_fresh_dir);
	snprintf(path, sizeof(path), "%s/log", dir);
	setenv("FAKE_ASPROF_LOG", path, 1);
	return path;
}

/* The log's lines (at most max), each malloc'd. Returns the count. */
static __attribute__((unused)) size_t read_lines(const char *path, char **lines, size_t max)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	char buf[1200];
	while (f && n < max && fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		lines[n++] = strdup(buf);
	}
	if (f)
		fclose(f);
	return n;
}

static __attribute__((unused)) int contains(const uint8_t *hay, size_t n, const char *needle)
{
	return memmem(hay, n, needle, strlen(needle)) != NULL;
}

#endif
