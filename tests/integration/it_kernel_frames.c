/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_kernel_frames.c - ember_builder_set_kernel_frames with the perf
 * engine, through the public API: a thread that spends its CPU in read()
 * of /dev/zero has samples whose stacks start with frames of the
 * [kernel.kallsyms] mapping and go on into read (leaf first); with the
 * setting off, no location is in that mapping. Skipped (77) where the
 * perf engine cannot run or samples user mode only, saying why.
 */
#include "it_engines_common.h"

#include <fcntl.h>

/* CPU-seconds in read() of /dev/zero. */
static void *reader_main(void *arg)
{
	double secs = *(const double *)arg, end = it_thread_cpu() + secs;
	static char buf[1 << 16];
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && it_thread_cpu() < end)
		if (read(fd, buf, sizeof(buf)) < 0)
			break;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int is_kernel_loc(const ember__profile *p, uint32_t loc)
{
	uint32_t m = p->locations[loc - 1].mapping;
	return m && !strcmp(p->mappings[m - 1].file, "[kernel.kallsyms]");
}

/* One run; returns 77 to skip. *with: samples whose stacks start in the
 * kernel and reach read; *kernel_locs: locations in the kernel mapping;
 * *misplaced: samples with a kernel frame above a user frame. */
static int run(int on, uint64_t *with, uint64_t *kernel_locs, uint64_t *misplaced)
{
	static it_capture cap;
	static it_engine_run res;
	memset(&cap, 0, sizeof(cap));
	memset(&res, 0, sizeof(res));
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "it") == 0, "builder: %s", ember_last_error());
	IT_CHECK(ember_builder_set_sample_rate(b, 200) == 0, "rate");
	IT_CHECK(ember_builder_set_engine(b, EMBER_ENGINE_PERF) == 0, "engine");
	IT_CHECK(ember_builder_set_kernel_frames(b, on) == 0, "kernel frames");
	IT_CHECK(ember_builder_set_log(b, it_engine_log, &res, EMBER_LOG_INFO) == 0, "log");
	ember_reporter rep = it_capture_reporter(&cap);
	IT_CHECK(ember_builder_add_reporter(b, &rep) == 0, "reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	ember_running *r;
	if (ember_agent_start(&r, a) != 0) {
		printf("SKIP: the perf_events engine cannot run here: %s\n", ember_last_error());
		ember_agent_shutdown(a);
		return IT_SKIP;
	}
	if (on && !strstr(res.log, "kernel frames from the perf events' callchains")) {
		printf("SKIP: no kernel samples here:\n%s", res.log);
		ember_running_stop(&a, r);
		ember_agent_shutdown(a);
		return IT_SKIP;
	}
	pthread_t th;
	double secs = 0.5;
	pthread_create(&th, NULL, reader_main, &secs);
	pthread_join(th, NULL);
	IT_CHECK(ember_running_stop(&a, r) == 0, "stop: %s", ember_last_error());
	*with = *kernel_locs = *misplaced = 0;
	for (size_t i = 0; i < cap.n; i++) {
		ember__profile *p = it_decode(&cap.w[i]);
		for (uint32_t l = 1; l <= p->nlocations; l++)
			*kernel_locs += is_kernel_loc(p, l);
		for (uint32_t s = 0; s < p->nsamples; s++) {
			const ember__sample *smp = &p->samples[s];
			uint32_t k = 0;
			while (k < smp->nlocs && is_kernel_loc(p, smp->locs[k]))
				k++;
			for (uint32_t j = k; j < smp->nlocs; j++)
				*misplaced += is_kernel_loc(p, smp->locs[j]) ? 1 : 0;
			int in_read = 0;
			for (uint32_t j = k; j < smp->nlocs; j++)
				in_read |= strstr(it_loc_func(p, smp->locs[j]), "read") != NULL;
			if (k && in_read)
				*with += (uint64_t)smp->values[0];
		}
		ember__profile_free(p);
	}
	printf("kernel frames %s: %llu samples start in the kernel and reach read, %llu kernel "
	       "locations, %llu misplaced\n",
	       on ? "on" : "off", (unsigned long long)*with, (unsigned long long)*kernel_locs,
	       (unsigned long long)*misplaced);
	it_capture_free(&cap);
	ember_agent_shutdown(a);
	return 0;
}

int main(void)
{
	unsetenv("EMBERPROF_ENGINE_PERF_DISABLE");
	unsetenv("EMBERPROF_KERNEL");
	uint64_t with, locs, misplaced;
	if (run(1, &with, &locs, &misplaced) == IT_SKIP)
		return IT_SKIP;
	/* 0.5 s at 200 Hz: ~100 samples, nearly all in the kernel's read */
	IT_CHECK(with >= 20, "only %llu samples with kernel frames under read",
		 (unsigned long long)with);
	IT_CHECK(misplaced == 0, "%llu kernel frames above user frames", (unsigned long long)misplaced);
	IT_CHECK(run(0, &with, &locs, &misplaced) == 0, "the run without kernel frames");
	IT_CHECK(with == 0 && locs == 0, "kernel frames while turned off: %llu samples, %llu locations",
		 (unsigned long long)with, (unsigned long long)locs);
	printf("PASS\n");
	return 0;
}
