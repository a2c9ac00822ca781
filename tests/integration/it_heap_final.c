/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_heap_final.c - a run whose only samples are allocations still ends
 * with a final window: its memory profile is marked final, and the CPU
 * profile, empty, comes next to it (a reporter flushes on the final
 * window; stop reports it for that reason).
 *
 * The program allocates a few thousand small blocks, which takes
 * milliseconds of CPU, while the CPU sampler runs at 1 Hz: its run has
 * no CPU sample (the chance of one is about one in a hundred; the output
 * says whether this run had one). The agent had decided "nothing this
 * run" from the CPU and wall samples alone: under two CPU hogs,
 * it_heap_ratio's memory profile went out as not final, and no CPU
 * profile with it.
 */
#include "it_heap_common.h"

#define N 4000

static void *blocks[N];

typedef struct report_seen {
	char type[16];
	int final;
	uint64_t samples;
} report_seen;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static report_seen g_seen[64];
static size_t g_n;

static int on_report(void *ud, const ember_report *r)
{
	(void)ud;
	pthread_mutex_lock(&g_mu);
	if (g_n < sizeof(g_seen) / sizeof(g_seen[0])) {
		report_seen *s = &g_seen[g_n++];
		snprintf(s->type, sizeof(s->type), "%s", r->profile_type);
		s->final = r->final;
		s->samples = r->samples;
	}
	pthread_mutex_unlock(&g_mu);
	return 0;
}

int main(void)
{
	it_heap_require_hook();
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "it_heap_final") == 0, "builder: %s", ember_last_error());
	IT_CHECK(ember_builder_set_interval_ms(b, 3600000) == 0, "interval");
	IT_CHECK(ember_builder_set_sample_rate(b, 1) == 0, "rate: %s", ember_last_error());
	IT_CHECK(ember_builder_set_alloc(b, 128) == 0, "alloc: %s", ember_last_error());
	ember_reporter rep = {.name = "seen", .report = on_report};
	IT_CHECK(ember_builder_add_reporter(b, &rep) == 0, "reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(64);
		__asm__ volatile("" : : "r"(blocks[i]) : "memory");
	}
	ember_stats st;
	ember_running_stats(run, &st);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	ember_agent_shutdown(a);

	int mem_final = 0, cpu_final = 0;
	uint64_t cpu_samples = 0;
	for (size_t i = 0; i < g_n; i++) {
		printf("report %zu: %s, %llu samples%s\n", i, g_seen[i].type,
		       (unsigned long long)g_seen[i].samples, g_seen[i].final ? ", final" : "");
		if (!strcmp(g_seen[i].type, "memory"))
			mem_final |= g_seen[i].final;
		if (!strcmp(g_seen[i].type, "cpu")) {
			cpu_final |= g_seen[i].final;
			cpu_samples += g_seen[i].samples;
		}
	}
	printf("allocations sampled %llu; CPU samples %llu (%s)\n",
	       (unsigned long long)st.alloc_samples, (unsigned long long)cpu_samples,
	       cpu_samples ? "this run did not test the case" : "the case under test");
	IT_CHECK(st.alloc_samples > 0, "no allocation sampled");
	IT_CHECK(mem_final, "no final memory profile");
	IT_CHECK(cpu_final, "no final CPU profile next to it");
	printf("ok\n");
	return 0;
}
