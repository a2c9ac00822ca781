/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_asprof_real.c - the async-profiler backend against a real
 * libasyncProfiler.so, named by ASYNC_PROFILER_LIB (absolute path, e.g.
 * lib/libasyncProfiler.so of an async-profiler 4.x release). Without it the
 * test prints SKIP and exits 77 (CTest's SKIP_RETURN_CODE): no release can
 * be downloaded on the build machines.
 *
 * A thread burns CPU in burn_cpu() for about 3.5 s with 1 s windows and
 * async-profiler sampling every 10 ms of CPU time and every 100 ms of wall
 * time, each burn_cpu() call inside a pollcatch poll (ember_poll_begin/end).
 * Checked: at least three windows, each a JFR recording, in order, the last
 * marked final, no async-profiler error; the JDK's `jfr` tool reads every
 * recording; every window but the first and the last (both partial) holds
 * jdk.ExecutionSample and profiler.WallClockSample events; burn_cpu appears
 * in their stacks; the burning thread's samples account for at least 90 %
 * of its CPU time (its own CLOCK_THREAD_CPUTIME_ID: a ratio, whatever the
 * load; rotation by stop/start lost 13-40 %); and pollcatch's
 * tokio.PollcatchV1 user events are in the recordings.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"

#define FAIL(...)                                                            \
	do {                                                                 \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);         \
		fprintf(stderr, __VA_ARGS__);                                \
		fprintf(stderr, "\n");                                       \
		exit(1);                                                     \
	} while (0)
#define CHECK(c, ...)                                                        \
	do {                                                                 \
		if (!(c))                                                    \
			FAIL(__VA_ARGS__);                                   \
	} while (0)

typedef struct win {
	uint32_t seq;
	int final;
	uint8_t *jfr;
	size_t len;
} win;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static win wins[64];
static size_t nwins;

static int keep(void *ud, const ember_report *r)
{
	(void)ud;
	pthread_mutex_lock(&mu);
	if (nwins < 64 && r->jfr_len) {
		wins[nwins].seq = r->seq;
		wins[nwins].final = r->final;
		wins[nwins].jfr = malloc(r->jfr_len);
		memcpy(wins[nwins].jfr, r->jfr, r->jfr_len);
		wins[nwins].len = r->jfr_len;
		nwins++;
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

static volatile int stop_burn;
static volatile double sink;

/* noipa: else GCC sees a pure function and calls it once for the whole loop */
__attribute__((noinline, noipa)) static double burn_cpu(int n)
{
	double acc = 0;
	for (int i = 0; i < n; i++)
		acc += (double)i * 1e-9;
	return acc;
}

static void *burner(void *arg)
{
	(void)arg;
	while (!stop_burn) {
		ember_poll_begin(); /* pollcatch: a poll per call */
		sink += burn_cpu(1000000);
		ember_poll_end();
	}
	return NULL;
}

/* CPU seconds the thread with this CPU clock has run. */
static double thread_cpu_s(clockid_t clk)
{
	struct timespec t;
	clock_gettime(clk, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Lines of `path` matching the extended regex `re` (grep -c). */
static int count_lines(const char *re, const char *path)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "grep -c -E '%s' %s", re, path);
	FILE *p = popen(cmd, "r");
	int n = 0;
	if (p && fscanf(p, "%d", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	return n;
}

int main(void)
{
	const char *lib = getenv("ASYNC_PROFILER_LIB");
	if (!lib || !*lib) {
		printf("SKIP: ASYNC_PROFILER_LIB is not set; point it at a real libasyncProfiler.so "
		       "(async-profiler 4.x) to run this test\n");
		return 77;
	}
	ember_builder *b;
	CHECK(ember_builder_new(&b, "asprof-real") == 0, "builder");
	ember_builder_set_interval_ms(b, 1000);
	ember_builder_set_backend(b, EMBER_BACKEND_ASYNC_PROFILER);
	ember_asprof_options o = EMBER_ASPROF_OPTIONS_INIT;
	o.library = lib;
	o.cpu_interval_ns = 10000000;
	o.wall_interval_ms = 100;
	CHECK(ember_builder_set_asprof_options(b, &o) == 0, "options: %s", ember_last_error());
	ember_reporter r = {.name = "keep", .report = keep, .formats = EMBER_FORMAT_JFR};
	CHECK(ember_builder_add_reporter(b, &r) == 0, "reporter");
	ember_builder_set_log(b, NULL, NULL, EMBER_LOG_INFO);
	ember_agent *a;
	CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	pthread_t th;
	pthread_create(&th, NULL, burner, NULL);
	ember_running *run;
	CHECK(ember_agent_start(&run, a) == 0, "start with %s: %s", lib, ember_last_error());
	clockid_t clk;
	CHECK(pthread_getcpuclockid(th, &clk) == 0, "pthread_getcpuclockid");
	double cpu0 = thread_cpu_s(clk); /* the burner's CPU while profiled */
	/* async-profiler's wall-clock signals interrupt sleeps: sleep on */
	struct timespec t = {3, 500000000};
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
	double burner_cpu_s = thread_cpu_s(clk) - cpu0;
	int rc = ember_running_stop(&a, run);
	stop_burn = 1;
	pthread_join(th, NULL);
	CHECK(rc == 0, "stop: %s", ember_last_error());
	ember_stats st;
	ember_agent_stats(a, &st);
	printf("%zu windows, %llu async-profiler errors\n", nwins, (unsigned long long)st.asprof_errors);
	CHECK(nwins >= 3, "only %zu windows", nwins);
	CHECK(st.asprof_errors == 0, "async-profiler errors: %llu", (unsigned long long)st.asprof_errors);
	char dir[] = "/tmp/ember-asprof-real-XXXXXX";
	CHECK(mkdtemp(dir), "mkdtemp");
	int samples = 0, burn_seen = 0, burn_samples = 0, user_events = 0;
	for (size_t i = 0; i < nwins; i++) {
		CHECK(wins[i].seq == wins[0].seq + i, "window %zu has seq %u", i, wins[i].seq);
		CHECK(wins[i].final == (i == nwins - 1), "final flag of window %zu", i);
		CHECK(wins[i].len > 68 && !memcmp(wins[i].jfr, "FLR", 4), "window %zu is not JFR", i);
		char path[64], cmd[1400], f[96];
		snprintf(path, sizeof(path), "%s/%zu.jfr", dir, i);
		FILE *fp = fopen(path, "wb");
		CHECK(fp && fwrite(wins[i].jfr, 1, wins[i].len, fp) == wins[i].len, "write %s", path);
		fclose(fp);
		snprintf(cmd, sizeof(cmd), "%s summary %s > %s.summary && "
			 "%s print --events jdk.ExecutionSample %s > %s.samples && "
			 "%s print --events profiler.WallClockSample %s > %s.wall && "
			 "%s print --events profiler.UserEvent %s > %s.user",
			 EMBER_JFR_TOOL, path, path, EMBER_JFR_TOOL, path, path, EMBER_JFR_TOOL, path,
			 path, EMBER_JFR_TOOL, path, path);
		CHECK(system(cmd) == 0, "the jfr tool cannot read window %zu (%s)", i, path);
		snprintf(f, sizeof(f), "%s.samples", path);
		int n = count_lines("jdk.ExecutionSample [{]", f);
		samples += n;
		/* the burner's samples: in burn_cpu, or in burner between calls */
		snprintf(cmd, sizeof(cmd), "awk '/jdk.ExecutionSample/ {s = 0} /burn_cpu|burner/ {s = 1} "
			 "/^}/ {b += s; s = 0} END {print b + 0}' %s", f);
		FILE *p = popen(cmd, "r");
		int nb = 0;
		if (p && fscanf(p, "%d", &nb) != 1)
			nb = 0;
		if (p)
			pclose(p);
		burn_samples += nb;
		burn_seen += nb > 0;
		snprintf(f, sizeof(f), "%s.wall", path);
		int w = count_lines("profiler.WallClockSample [{]", f);
		snprintf(f, sizeof(f), "%s.user", path);
		user_events += count_lines("tokio.PollcatchV1", f);
		printf("window %zu: %d CPU samples (%d in the burner), %d wall events\n", i, n, nb, w);
		if (i > 0 && i + 1 < nwins) { /* the first and the last are partial */
			CHECK(n > 0, "window %zu holds no CPU sample while a thread burns CPU", i);
			CHECK(w > 0, "window %zu holds no wall-clock sample", i);
		}
	}
	double want = burner_cpu_s / 0.010;
	printf("%d execution samples, burn_cpu in %d windows (files in %s, kept on failure or "
	       "with EMBER_TEST_KEEP)\n", samples, burn_seen, dir);
	printf("burner: %.2f CPU-s, %d samples of 10 ms (%.1f %%); %d tokio.PollcatchV1 events\n",
	       burner_cpu_s, burn_samples, want > 0 ? 100.0 * burn_samples / want : 0.0, user_events);
	CHECK(samples > 0, "no jdk.ExecutionSample in any window");
	CHECK(burn_seen > 0, "burn_cpu is in no window's stacks");
	CHECK(burn_samples >= 0.9 * want, "the windows hold %d of the burner's %.0f samples",
	      burn_samples, want);
	CHECK(user_events > 0, "no tokio.PollcatchV1 event in any window");
	for (size_t i = 0; i < nwins; i++)
		free(wins[i].jfr);
	char rm[128];
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	if (!getenv("EMBER_TEST_KEEP") && system(rm) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
	ember_agent_shutdown(a);
	printf("ok\n");
	return 0;
}
