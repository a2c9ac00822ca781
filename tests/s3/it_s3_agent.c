/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_s3_agent.c - a real profiled program: an agent with the S3 reporter
 * profiles a CPU workload and its JFR windows must arrive in s3rver behind
 * the SigV4-verifying front, each a zip that `jfr summary` reads.
 */
#include <stdatomic.h>

#include "s3_front.h"

static _Atomic int jfr_windows;

static int count_jfr(void *ud, const ember_report *r)
{
	if (r->format == EMBER_FORMAT_JFR && r->jfr && r->jfr_len)
		atomic_fetch_add(&jfr_windows, 1);
	return 0;
}

static volatile double sink;

static __attribute__((noinline)) double spin(long n)
{
	double x = 0;
	for (long i = 1; i <= n; i++)
		x += 1.0 / (double)i;
	return x;
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ember-s3agent-XXXXXX");
	ST_CHECK(mkdtemp(tmpdir), "mkdtemp");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	front_start();
	st_clear_aws_env();
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("HOME", tmpdir, 1);

	ember_builder *b;
	ST_CHECK(ember_builder_new(&b, "s3agent") == 0, "builder");
	ST_CHECK(ember_builder_set_interval_ms(b, 1000) == 0 && ember_builder_set_sample_rate(b, 200) == 0,
		 "settings");
	ember_builder_set_log(b, st_log, NULL, EMBER_LOG_INFO);
	ember_reporter counter = {.name = "count-jfr", .report = count_jfr,
				  .formats = EMBER_FORMAT_JFR};
	ST_CHECK(ember_builder_add_reporter(b, &counter) == 0, "add counter: %s", ember_last_error());
	ember_s3_options o = front_options();
	ember_reporter r;
	ST_CHECK(ember_reporter_s3(&r, &o) == 0, "ember_reporter_s3: %s", ember_last_error());
	ST_CHECK(ember_builder_add_reporter(b, &r) == 0, "add s3: %s", ember_last_error());
	ember_agent *agent;
	ember_running *run;
	ST_CHECK(ember_builder_build(&agent, b) == 0, "build: %s", ember_last_error());
	ST_CHECK(ember_agent_start(&run, agent) == 0, "start: %s", ember_last_error());
	double end = st_now() + 2.5;
	while (st_now() < end)
		sink += spin(1000000);
	int rc = ember_running_stop(&agent, run);
	ember_stats s;
	ember_agent_stats(agent, &s);
	int windows = atomic_load(&jfr_windows);
	ST_CHECK(windows > 0, "the agent handed the S3 reporter no JFR window");
	ST_CHECK(rc == 0, "the final report failed: %s", ember_last_error());
	ST_CHECK(s.uploads_ok == (uint64_t)windows && s.uploads_failed == 0,
		 "%d JFR windows, %llu uploaded, %llu failed", windows,
		 (unsigned long long)s.uploads_ok, (unsigned long long)s.uploads_failed);
	ember_agent_shutdown(agent);
	char keys[32][512];
	int n = list_keys(keys, 32);
	ST_CHECK(n == windows, "%d objects for %d windows", n, windows);
	char want[128];
	snprintf(want, sizeof(want), "profile_pg_onprem___%ld_", (long)getpid());
	for (int i = 0; i < n; i++) {
		ST_CHECK(!strncmp(keys[i], want, strlen(want)), "key %s", keys[i]);
		check_object(keys[i], NULL, 0, -1);
	}
	st_remove_dir(tmpdir);
	printf("it_s3_agent: %d windows stored and read back\n", n);
	return 0;
}
