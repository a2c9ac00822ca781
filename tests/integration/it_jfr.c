/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_jfr.c - JFR output of a real profiled run, checked by the JDK's `jfr`
 * tool: CPU and wall-clock profiling on, 1 s windows, the local reporter
 * writing both formats. For every .jfr file, tests/tools/jfr_check.py runs
 * `jfr summary` and `jfr print --json` and checks that
 *  - jdk.ExecutionSample events == the samples of the same window's CPU
 *    pprof file, profiler.WallClockSample events == its wall pprof's
 *    samples (exactly: one event per sample);
 *  - every event's timestamp lies in the window the pprof files give;
 *  - every event's thread is one of this program's threads (by tid);
 *  - every frame is typed Native or C++;
 *  - in busy windows the CPU events' stacks hold the workload's functions
 *    (hot_a, stage_one, worker_main: demangled names, readable) and the
 *    wall events' stacks the sleeper's.
 * Prints the counts; asserts nothing about timing.
 */
#include "it_common.h"

#include <dirent.h>
#include <ftw.h>
#include <stdatomic.h>
#include <sys/stat.h>

#define NWORK 2

static int32_t tids[NWORK + 2];
static atomic_int ntids, stop_flag;

static void note_tid(void)
{
	tids[atomic_fetch_add(&ntids, 1)] = (int32_t)gettid();
}

static void *work_thread(void *arg)
{
	note_tid();
	return worker_main(arg);
}

/* Sleeps in short naps until told to stop: wall-clock samples, no CPU. */
__attribute__((noinline)) static void *it_sleeper(void *arg)
{
	(void)arg;
	note_tid();
	while (!atomic_load(&stop_flag)) {
		struct timespec d = {0, 5000000};
		nanosleep(&d, NULL);
	}
	return NULL;
}

/* The samples of a pprof file (0 if there is none: an empty window of
 * that kind is not written); *start and *end from its time fields. */
static long pprof_samples(const char *path, int64_t *start, int64_t *end)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return 0;
	ember__profile *p = NULL;
	IT_CHECK(ember__pprof_read_file(path, &p) == 0, "cannot read %s: %s", path, ember_last_error());
	long n = 0;
	for (uint32_t i = 0; i < p->nsamples; i++)
		n += (long)p->samples[i].values[0];
	*start = p->time_nanos;
	*end = p->time_nanos + p->duration_nanos;
	ember__profile_free(p);
	return n;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

int main(void)
{
	char dir[] = "/tmp/ember-it-jfr-XXXXXX";
	IT_CHECK(mkdtemp(dir), "mkdtemp");
	note_tid(); /* main */

	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "itjfr") == 0, "builder");
	IT_CHECK(ember_builder_apply_env(b) == 0, "env: %s", ember_last_error());
	IT_CHECK(ember_builder_set_sample_rate(b, 200) == 0, "rate");
	IT_CHECK(ember_builder_set_interval_ms(b, 1000) == 0, "interval");
	IT_CHECK(ember_builder_set_wall(b, 20) == 0, "wall");
	ember_reporter rep;
	IT_CHECK(ember_reporter_local_ex(&rep, dir, EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR) == 0,
		 "local_ex: %s", ember_last_error());
	IT_CHECK(ember_builder_add_reporter(b, &rep) == 0, "reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());

	it_work work[NWORK];
	pthread_t th[NWORK + 1];
	for (int i = 0; i < NWORK; i++) {
		work[i] = (it_work){.cpu_seconds = 1.0};
		pthread_create(&th[i], NULL, work_thread, &work[i]);
	}
	pthread_create(&th[NWORK], NULL, it_sleeper, NULL);
	for (int i = 0; i < NWORK; i++)
		pthread_join(th[i], NULL);
	atomic_store(&stop_flag, 1);
	pthread_join(th[NWORK], NULL);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	ember_stats st;
	ember_agent_stats(a, &st);
	IT_CHECK(st.report_failures == 0, "%llu report failures",
		 (unsigned long long)st.report_failures);
	ember_agent_shutdown(a);

	char tidlist[128] = "";
	for (int i = 0; i < atomic_load(&ntids); i++)
		snprintf(tidlist + strlen(tidlist), sizeof(tidlist) - strlen(tidlist), "%s%d",
			 i ? ", " : "", (int)tids[i]);

	DIR *d = opendir(dir);
	IT_CHECK(d, "opendir %s", dir);
	struct dirent *e;
	int files = 0;
	long total_cpu = 0, total_wall = 0;
	const char *src = getenv("EMBER_TEST_SRCDIR");
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (e->d_name[0] == '.' || n < 5 || strcmp(e->d_name + n - 4, ".jfr"))
			continue;
		char base[300], path[700], cpu_path[700], wall_path[700], exp_path[700];
		snprintf(base, sizeof(base), "%.*s", (int)(n - 4), e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(cpu_path, sizeof(cpu_path), "%s/%s.pb.gz", dir, base);
		snprintf(wall_path, sizeof(wall_path), "%s/%s.wall.pb.gz", dir, base);
		int64_t s0 = 0, e0 = 0, s1 = 0, e1 = 0;
		long cpu = pprof_samples(cpu_path, &s0, &e0);
		long wall = pprof_samples(wall_path, &s1, &e1);
		IT_CHECK(cpu || wall, "%s has no pprof partner with samples", e->d_name);
		int64_t start = cpu ? s0 : s1, end = cpu ? e0 : e1;
		char methods[256] = "";
		if (cpu >= 40)
			snprintf(methods, sizeof(methods),
				 "\"jdk.ExecutionSample\": [\"hot_a\", \"stage_one\", \"worker_main\"]");
		if (wall >= 40)
			snprintf(methods + strlen(methods), sizeof(methods) - strlen(methods),
				 "%s\"profiler.WallClockSample\": [\"it_sleeper\"]", methods[0] ? ", " : "");
		snprintf(exp_path, sizeof(exp_path), "%s/%s.expect", dir, base);
		FILE *f = fopen(exp_path, "w");
		IT_CHECK(f, "write %s", exp_path);
		fprintf(f,
			"{\"counts\": {\"jdk.ExecutionSample\": %ld, \"profiler.WallClockSample\": %ld},"
			" \"window\": [%lld, %lld], \"tids\": [%s],"
			" \"frame_types\": [\"Native\", \"C++\"], \"methods\": {%s}}\n",
			cpu, wall, (long long)start, (long long)end, tidlist, methods);
		fclose(f);
		char cmd[2200];
		snprintf(cmd, sizeof(cmd), "python3 %s/tests/tools/jfr_check.py %s %s",
			 src ? src : EMBER_SRCDIR, path, exp_path);
		printf("%s: cpu %ld, wall %ld samples in the pprof files\n", e->d_name, cpu, wall);
		fflush(stdout);
		IT_CHECK(system(cmd) == 0, "the JDK's jfr tool disagrees about %s", e->d_name);
		files++;
		total_cpu += cpu;
		total_wall += wall;
	}
	closedir(d);
	printf("%d JFR recordings, %ld CPU and %ld wall events checked\n", files, total_cpu, total_wall);
	IT_CHECK(files >= 2, "expected a JFR recording per window (runs > 1 s), found %d", files);
	IT_CHECK(total_cpu >= 100, "too few CPU samples: %ld", total_cpu);
	IT_CHECK(total_wall >= 50, "too few wall samples: %ld", total_wall);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
