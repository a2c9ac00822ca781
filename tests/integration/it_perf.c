/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_perf.c - the perf_events engine, where the kernel permits it (else
 * the test is skipped, saying why):
 *  - at 1 kHz it delivers at least 95% of CPU-seconds x rate samples (CPU
 *    timers deliver about a quarter on a 250 Hz kernel);
 *  - at 100 Hz and 1 kHz the sampled CPU time (the samples' weights: the
 *    task-clock time each stands for) is within 5% of the application
 *    threads' CPU time (their thread clocks);
 *  - every thread got an event.
 * Prints the measured numbers; no timing is asserted.
 */
#include "it_engines_common.h"

#include <math.h>

int main(void)
{
	unsetenv("EMBERPROF_ENGINE_PERF_DISABLE");
	const unsigned rates[] = {1000, 100};
	for (size_t i = 0; i < 2; i++) {
		unsigned hz = rates[i];
		it_engine_run r = it_engine_run_one(EMBER_ENGINE_PERF, hz, 3, 0.8);
		if (r.rc == EMBER_ERR_UNSUPPORTED) {
			printf("SKIP: the perf_events engine is not permitted here: %s\n", r.err);
			return IT_SKIP;
		}
		IT_CHECK(r.rc == 0, "start with the perf engine: %s", r.err);
		/* Against the application threads' CPU (their thread clocks,
		 * what getrusage(RUSAGE_THREAD) reports): the process's also
		 * holds the agent's own threads, never sampled, whose share
		 * grows under ASan (once 0.943 of the process CPU there). */
		double expected = r.app_cpu_s * hz;
		double delivered = (double)r.samples / expected;
		double ratio = r.sampled_s / r.app_cpu_s;
		printf("perf @%u Hz: process CPU %.3f s, application threads %.3f s, samples %llu (%.3fx "
		       "of CPU x rate), sampled CPU %.3f s (%.3fx), perf events %llu\n",
		       hz, r.cpu_s, r.app_cpu_s, (unsigned long long)r.samples, delivered, r.sampled_s,
		       ratio, (unsigned long long)r.st.perf_events);
		IT_CHECK(strstr(r.log, "perf_events"), "the log names the engine:\n%s", r.log);
		IT_CHECK(r.st.perf_events >= 3, "every worker gets a perf event (%llu)",
			 (unsigned long long)r.st.perf_events);
		IT_CHECK(r.st.timer_failures == 0, "no perf event failed");
		/* Signals the kernel merges (a vCPU descheduled for a moment,
		 * the handler slower under ASan) arrive as fewer samples that
		 * each weigh the periods they stand for: the sampled CPU below
		 * stays exact. CI's ASan stage once saw 0.915 of the count with
		 * 0.995 of the CPU (normally 0.995 of both); a count below 0.85
		 * is throttling or loss, not merging. */
		if (hz == 1000)
			IT_CHECK(delivered >= 0.85, "perf at 1 kHz delivered only %.3f of the expected samples",
				 delivered);
		IT_CHECK(fabs(ratio - 1.0) <= 0.05,
			 "sampled CPU %.3f s is not within 5%% of the threads' CPU %.3f s", r.sampled_s,
			 r.app_cpu_s);
	}
	printf("ok\n");
	return 0;
}
