/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3_example.c - profile a small workload and upload every window to S3,
 * as the async-profiler agent's example does:
 *
 *     s3_example --profiling-group PG --bucket-owner ACCOUNT --bucket BUCKET
 *                [--local DIR] [--seconds N] [--interval MS]
 *
 * Each window becomes s3://BUCKET/profile_PG_{machine}_{pid}_{time}.zip
 * (a JFR recording and metadata.json). AWS credentials and the region
 * come from the standard chain (AWS_ACCESS_KEY_ID..., ~/.aws, ECS, the
 * instance role); AWS_ENDPOINT_URL_S3 points it at an S3-compatible
 * store. With --local DIR the windows are also written to DIR.
 * The EMBERPROF_* variables apply too (docs/CONFIG.md).
 *
 * Uses the public API only (include/emberprof.h, libemberprof.so).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emberprof.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: s3_example --profiling-group PG --bucket-owner ACCOUNT --bucket BUCKET\n"
		     "                  [--local DIR] [--seconds N] [--interval MS]\n");
}

static volatile double sink;

static __attribute__((noinline)) double busy(long n)
{
	double x = 0;
	for (long i = 1; i <= n; i++)
		x += 1.0 / (double)i;
	return x;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int fail(const char *what)
{
	fprintf(stderr, "s3_example: %s: %s\n", what, ember_last_error());
	return 1;
}

int main(int argc, char **argv)
{
	const char *group = NULL, *owner = NULL, *bucket = NULL, *local = NULL;
	unsigned long seconds = 60, interval = 30000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!v) {
			fprintf(stderr, "s3_example: %s needs a value\n", a);
			usage(stderr);
			return 2;
		}
		i++;
		if (!strcmp(a, "--profiling-group"))
			group = v;
		else if (!strcmp(a, "--bucket-owner"))
			owner = v;
		else if (!strcmp(a, "--bucket"))
			bucket = v;
		else if (!strcmp(a, "--local"))
			local = v;
		else if (!strcmp(a, "--seconds"))
			seconds = strtoul(v, NULL, 10);
		else if (!strcmp(a, "--interval"))
			interval = strtoul(v, NULL, 10);
		else {
			fprintf(stderr, "s3_example: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!group || !owner || !bucket) {
		usage(stderr);
		return 2;
	}
	ember_builder *b;
	if (ember_builder_new(&b, group))
		return fail("builder");
	if (ember_builder_set_interval_ms(b, (unsigned)interval)) {
		ember_builder_free(b);
		return fail("--interval");
	}
	ember_s3_options o = EMBER_S3_OPTIONS_INIT;
	o.bucket = bucket;
	o.profiling_group = group;
	o.bucket_owner = owner;
	ember_reporter r;
	if (ember_reporter_s3(&r, &o) || ember_builder_add_reporter(b, &r)) {
		ember_builder_free(b);
		return fail("S3 reporter");
	}
	if (local) {
		if (ember_reporter_local_ex(&r, local, EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR) ||
		    ember_builder_add_reporter(b, &r)) {
			ember_builder_free(b);
			return fail("--local");
		}
	}
	if (ember_builder_apply_env(b)) {
		ember_builder_free(b);
		return fail("environment");
	}
	ember_agent *agent;
	ember_running *run;
	if (ember_builder_build(&agent, b))
		return fail("build");
	if (ember_agent_start(&run, agent)) {
		ember_agent_shutdown(agent);
		return fail("start");
	}
	fprintf(stderr, "s3_example: profiling for %lu s, a window every %lu ms to s3://%s/\n",
		seconds, interval, bucket);
	double end = now_s() + (double)seconds;
	while (now_s() < end)
		sink += busy(2000000);
	int rc = ember_running_stop(&agent, run);
	ember_stats st;
	ember_agent_stats(agent, &st);
	fprintf(stderr, "s3_example: %llu windows, uploads: %llu ok, %llu failed, %llu dropped\n",
		(unsigned long long)st.windows_reported, (unsigned long long)st.uploads_ok,
		(unsigned long long)st.uploads_failed, (unsigned long long)st.uploads_dropped);
	ember_agent_shutdown(agent);
	return rc ? 1 : 0;
}
