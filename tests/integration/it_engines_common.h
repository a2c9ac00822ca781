/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_engines_common.h - shared by the engine tests (it_perf.c,
 * it_engines.c): one profiled run of a CPU workload with a given engine and
 * rate, measuring delivered samples and sampled CPU against getrusage.
 */
#ifndef EMBER_IT_ENGINES_COMMON_H
#define EMBER_IT_ENGINES_COMMON_H

#include "it_common.h"

/* CTest's skip code (SKIP_RETURN_CODE in tests/integration/CMakeLists.txt). */
#define IT_SKIP 77

typedef struct it_engine_run {
	int rc;                /* ember_agent_start's result */
	char err[512];         /* its message */
	double cpu_s;          /* process CPU (getrusage) over the run */
	double app_cpu_s;      /* CPU of the workers (their thread clocks): what a
				  CPU profile must account for; the rest of
				  cpu_s is the agent's own threads */
	double sampled_s;      /* sum of cpu/nanoseconds in the profiles */
	uint64_t samples;      /* sum of samples/count */
	ember_stats st;
	char log[2048];        /* INFO log lines */
} it_engine_run;

static void it_engine_log(void *ud, ember_log_level level, const char *msg)
{
	(void)level;
	it_engine_run *r = ud;
	size_t n = strlen(r->log);
	snprintf(r->log + n, sizeof(r->log) - n, "%s\n", msg);
}

/* Runs `nthreads` workers of `cpu_each` CPU-seconds under `engine` at `hz`. */
static __attribute__((unused)) it_engine_run it_engine_run_one(ember_engine engine, unsigned hz,
							       int nthreads, double cpu_each)
{
	static it_capture cap;
	it_engine_run res;
	memset(&res, 0, sizeof(res));
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "it") == 0, "builder: %s", ember_last_error());
	IT_CHECK(ember_builder_apply_env(b) == 0, "env: %s", ember_last_error());
	IT_CHECK(ember_builder_set_sample_rate(b, hz) == 0, "rate");
	IT_CHECK(ember_builder_set_engine(b, engine) == 0, "engine");
	IT_CHECK(ember_builder_set_log(b, it_engine_log, &res, EMBER_LOG_INFO) == 0, "log");
	ember_reporter rep = it_capture_reporter(&cap);
	IT_CHECK(ember_builder_add_reporter(b, &rep) == 0, "reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	ember_running *run;
	double cpu0 = it_process_cpu();
	res.rc = ember_agent_start(&run, a);
	if (res.rc != 0) {
		snprintf(res.err, sizeof(res.err), "%s", ember_last_error());
		ember_agent_shutdown(a);
		return res;
	}
	pthread_t th[16];
	it_work w[16];
	for (int i = 0; i < nthreads; i++) {
		w[i] = (it_work){.cpu_seconds = cpu_each};
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		res.app_cpu_s += w[i].used;
	}
	int rc = ember_running_stop(&a, run);
	res.cpu_s = it_process_cpu() - cpu0;
	IT_CHECK(rc == 0, "stop: %s", ember_last_error());
	ember_agent_stats(a, &res.st);
	for (size_t i = 0; i < cap.n; i++) {
		ember__profile *p = it_decode(&cap.w[i]);
		IT_CHECK(p->nvalues == 2 && !strcmp(p->sample_type[1].type, "cpu"), "a cpu profile");
		for (uint32_t s = 0; s < p->nsamples; s++) {
			res.samples += (uint64_t)p->samples[s].values[0];
			res.sampled_s += (double)p->samples[s].values[1] / 1e9;
		}
		ember__profile_free(p);
	}
	it_capture_free(&cap);
	ember_agent_shutdown(a);
	return res;
}

#endif
