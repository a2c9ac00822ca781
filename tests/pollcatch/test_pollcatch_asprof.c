/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pollcatch_asprof.c - pollcatch's async-profiler path (path b)
 * against the stand-in libasyncProfiler.so of tests/asprof (fake_asprof.c,
 * which logs "register <name>" and "emit <key> <len>" to FAKE_ASPROF_LOG
 * and simulates a sample on the calling thread with
 * fake_asprof_sample_here()):
 *   - a poll in which async-profiler took no sample emits nothing;
 *   - one in which it did emits one 16-byte tokio.PollcatchV1 event, the
 *     type registered once, lazily;
 *   - nested polls emit once, for the outermost;
 *   - a poll already open when async-profiler is attached emits nothing;
 *   - with a library lacking the optional symbols (argument "noopt"),
 *     polls emit nothing and nothing fails.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "asprof/asprof_hooks.h"
#include "check.h"
#include "emberprof.h"
#include "pollcatch/pollcatch.h"

static char log_path[256];

static int count_lines(const char *prefix)
{
	FILE *f = fopen(log_path, "r");
	if (!f)
		return 0;
	char line[512];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		n += strncmp(line, prefix, strlen(prefix)) == 0;
	fclose(f);
	return n;
}

static void (*sample_here)(void);

static void test_full(void)
{
	ember_poll_begin(); /* a poll open before async-profiler is attached */
	CHECK_EQ_INT(ember__asprof_attach(FAKE_FULL), 0);
	void *h = dlopen(FAKE_FULL, RTLD_NOW | RTLD_NOLOAD);
	CHECK(h != NULL);
	sample_here = h ? (void (*)(void))dlsym(h, "fake_asprof_sample_here") : NULL;
	CHECK(sample_here != NULL);
	if (!sample_here)
		return;
	CHECK(ember__asprof_features() & EMBER__ASPROF_HAS_USER_EVENTS);
	sample_here();
	ember_poll_end(); /* its start was not seen by async-profiler: no event */
	CHECK_EQ_INT(count_lines("emit"), 0);

	ember_poll_begin();
	ember_poll_end();
	CHECK_EQ_INT(count_lines("register"), 0); /* no sample: not even registered */
	CHECK_EQ_INT(count_lines("emit"), 0);

	ember_poll_begin();
	sample_here();
	ember_poll_end();
	CHECK_EQ_INT(count_lines("register tokio.PollcatchV1"), 1);
	CHECK_EQ_INT(count_lines("emit 1 16"), 1);

	ember_poll_begin();
	sample_here();
	ember_poll_end_idle(1000);
	CHECK_EQ_INT(count_lines("register"), 1); /* once */
	CHECK_EQ_INT(count_lines("emit 1 16"), 2);

	ember_poll_begin();
	ember_poll_begin();
	sample_here();
	ember_poll_end();
	CHECK_EQ_INT(count_lines("emit"), 2); /* the inner end emits nothing */
	ember_poll_end();
	CHECK_EQ_INT(count_lines("emit 1 16"), 3);
	CHECK_EQ_INT(ember__pollcatch_asprof_events(), 3);
	CHECK_EQ_INT(ember__pollcatch_asprof_errors(), 0);
}

static void test_noopt(void)
{
	CHECK_EQ_INT(ember__asprof_attach(FAKE_NOOPT), 0);
	CHECK_EQ_INT(ember__asprof_features() & EMBER__ASPROF_HAS_THREAD_DATA, 0);
	for (int i = 0; i < 3; i++) {
		ember_poll_begin();
		ember_poll_end();
	}
	CHECK_EQ_INT(count_lines("register"), 0);
	CHECK_EQ_INT(count_lines("emit"), 0);
	CHECK_EQ_INT(ember__pollcatch_asprof_errors(), 0);
}

int main(int argc, char **argv)
{
	snprintf(log_path, sizeof(log_path), "%s/pollcatch-asprof-%d.log",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	setenv("FAKE_ASPROF_LOG", log_path, 1);
	if (argc > 1 && !strcmp(argv[1], "noopt"))
		RUN(test_noopt);
	else
		RUN(test_full);
	unlink(log_path);
	return CHECK_DONE();
}
