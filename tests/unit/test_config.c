/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c - the builder's validation and the EMBERPROF_* variables:
 * good values land, bad ones are refused with a message naming them.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/agent.h"
#include "check.h"

static void test_defaults_and_setters(void)
{
	ember_builder *b;
	CHECK_EQ_INT(ember_builder_new(&b, "svc"), 0);
	CHECK_EQ_INT(b->cfg.hz, 100);
	CHECK_EQ_INT(b->cfg.interval_ms, 10000);
	CHECK_EQ_INT(b->cfg.max_depth, 128);
	CHECK_EQ_INT(ember_builder_set_sample_rate(b, 0), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "sample rate"));
	CHECK_EQ_INT(ember_builder_set_sample_rate(b, 10001), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember_builder_set_sample_rate(b, 997), 0);
	CHECK_EQ_INT(ember_builder_set_interval_ms(b, 99), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember_builder_set_max_depth(b, 0), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember_builder_set_signal(b, SIGKILL), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember_builder_add_tag(b, "env", "prod"), 0);
	CHECK_EQ_INT(ember_builder_add_tag(b, "env", "dev"), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "twice"));
	CHECK_EQ_INT(ember_builder_add_tag(b, "9lives", "x"), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember_builder_add_tag(b, "has space", "x"), EMBER_ERR_INVALID);
	ember_reporter none = {0};
	CHECK_EQ_INT(ember_builder_add_reporter(b, &none), EMBER_ERR_INVALID);
	ember_builder *b2 = (ember_builder *)1;
	CHECK_EQ_INT(ember_builder_new(&b2, ""), EMBER_ERR_INVALID);
	CHECK(b2 == NULL);
	ember_builder_free(b);
}

static void test_parsers(void)
{
	unsigned ms;
	CHECK_EQ_INT(ember__parse_duration_ms("10s", &ms), 0);
	CHECK_EQ_INT(ms, 10000);
	CHECK_EQ_INT(ember__parse_duration_ms("250ms", &ms), 0);
	CHECK_EQ_INT(ms, 250);
	CHECK_EQ_INT(ember__parse_duration_ms("15", &ms), 0); /* bare number: seconds */
	CHECK_EQ_INT(ms, 15000);
	CHECK_EQ_INT(ember__parse_duration_ms("1.5m", &ms), 0);
	CHECK_EQ_INT(ms, 90000);
	CHECK_EQ_INT(ember__parse_duration_ms("10 s", &ms), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__parse_duration_ms("-1s", &ms), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__parse_duration_ms("fast", &ms), EMBER_ERR_INVALID);
	int sig;
	CHECK_EQ_INT(ember__parse_signal("SIGPROF", &sig), 0);
	CHECK_EQ_INT(sig, SIGPROF);
	CHECK_EQ_INT(ember__parse_signal("SIGRTMIN+4", &sig), 0);
	CHECK_EQ_INT(sig, SIGRTMIN + 4);
	CHECK_EQ_INT(ember__parse_signal("40", &sig), 0);
	CHECK_EQ_INT(sig, 40);
	CHECK_EQ_INT(ember__parse_signal("SIGNOPE", &sig), EMBER_ERR_INVALID);
	unsigned long n;
	CHECK_EQ_INT(ember__parse_uint("12x", 0, 100, &n), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__parse_uint("-3", 0, 100, &n), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__parse_uint("101", 0, 100, &n), EMBER_ERR_INVALID);
	int on;
	CHECK_EQ_INT(ember__parse_bool("TRUE", &on), 0);
	CHECK_EQ_INT(on, 1);
	CHECK_EQ_INT(ember__parse_bool("maybe", &on), EMBER_ERR_INVALID);
	/* the words in any case, whole (the comparison is ASCII's, not the locale's) */
	CHECK_EQ_INT(ember__parse_bool("Off", &on), 0);
	CHECK_EQ_INT(on, 0);
	CHECK_EQ_INT(ember__parse_bool("yEs", &on), 0);
	CHECK_EQ_INT(on, 1);
	CHECK_EQ_INT(ember__parse_bool("", &on), 0);
	CHECK_EQ_INT(on, 0);
	CHECK_EQ_INT(ember__parse_bool("o", &on), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__parse_bool("ono", &on), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__parse_bool("truex", &on), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__parse_bool("1 ", &on), EMBER_ERR_INVALID);
}

static void expect_env_error(const char *name, const char *value)
{
	ember_builder *b;
	ember_builder_new(&b, "svc");
	setenv(name, value, 1);
	int rc = ember_builder_apply_env(b);
	unsetenv(name);
	CHECK_EQ_INT(rc, EMBER_ERR_INVALID);
	if (!strstr(ember_last_error(), name))
		fprintf(stderr, "  message does not name %s: %s\n", name, ember_last_error());
	CHECK(strstr(ember_last_error(), name) != NULL);
	ember_builder_free(b);
}

static void test_env(void)
{
	ember_builder *b;
	ember_builder_new(&b, "svc");
	setenv("EMBERPROF_APP_NAME", "billing", 1);
	setenv("EMBERPROF_SAMPLE_RATE", "250", 1);
	setenv("EMBERPROF_INTERVAL", "15s", 1);
	setenv("EMBERPROF_MAX_DEPTH", "64", 1);
	setenv("EMBERPROF_TAGS", "env=prod, region=eu-west-1", 1);
	setenv("EMBERPROF_THREAD_LABELS", "1", 1);
	setenv("EMBERPROF_ENGINE", "itimer", 1);
	setenv("EMBERPROF_SIGNAL", "SIGRTMIN+2", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), 0);
	CHECK_EQ_STR(b->cfg.app_name, "billing");
	CHECK_EQ_INT(b->cfg.hz, 250);
	CHECK_EQ_INT(b->cfg.interval_ms, 15000);
	CHECK_EQ_INT(b->cfg.max_depth, 64);
	CHECK_EQ_INT(b->cfg.ntags, 2);
	if (b->cfg.ntags == 2) {
		CHECK_EQ_STR(b->cfg.tags[1].key, "region");
		CHECK_EQ_STR(b->cfg.tags[1].value, "eu-west-1");
	}
	CHECK_EQ_INT(b->cfg.thread_labels, 1);
	CHECK_EQ_INT(b->cfg.engine, EMBER_ENGINE_PROCESS_TIMER);
	CHECK_EQ_INT(b->cfg.signo, SIGRTMIN + 2);
	const char *names[] = {"EMBERPROF_APP_NAME", "EMBERPROF_SAMPLE_RATE", "EMBERPROF_INTERVAL",
			       "EMBERPROF_MAX_DEPTH", "EMBERPROF_TAGS", "EMBERPROF_THREAD_LABELS",
			       "EMBERPROF_ENGINE", "EMBERPROF_SIGNAL"};
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		unsetenv(names[i]);
	ember_builder_free(b);

	expect_env_error("EMBERPROF_SAMPLE_RATE", "fast");
	expect_env_error("EMBERPROF_SAMPLE_RATE", "0");
	expect_env_error("EMBERPROF_INTERVAL", "10x");
	expect_env_error("EMBERPROF_INTERVAL", "50ms");
	expect_env_error("EMBERPROF_MAX_DEPTH", "5000");
	expect_env_error("EMBERPROF_TAGS", "novalue");
	expect_env_error("EMBERPROF_TAGS", "bad key=1");
	expect_env_error("EMBERPROF_THREAD_LABELS", "perhaps");
	expect_env_error("EMBERPROF_ENGINE", "quantum");
	expect_env_error("EMBERPROF_SIGNAL", "SIGKILL");
	expect_env_error("EMBERPROF_LOG_LEVEL", "loud");
	expect_env_error("EMBERPROF_UNWIND", "magic");
	expect_env_error("EMBERPROF_OUTPUT_DIR", "/proc/version/sub");
	expect_env_error("EMBERPROF_OUTPUT_FORMAT", "xml");
}

/* EMBERPROF_OUTPUT_FORMAT picks the local reporter's formats. */
static void test_env_output_format(void)
{
	char dir[] = "/tmp/test_config.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	const char *values[] = {NULL, "pprof", "jfr", "both"};
	unsigned want[] = {EMBER_FORMAT_PPROF, EMBER_FORMAT_PPROF, EMBER_FORMAT_JFR,
			   EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR};
	for (int i = 0; i < 4; i++) {
		ember_builder *b;
		ember_builder_new(&b, "svc");
		setenv("EMBERPROF_OUTPUT_DIR", dir, 1);
		if (values[i])
			setenv("EMBERPROF_OUTPUT_FORMAT", values[i], 1);
		CHECK_EQ_INT(ember_builder_apply_env(b), 0);
		CHECK_EQ_INT(b->cfg.nreporters, 1);
		if (b->cfg.nreporters == 1)
			CHECK_EQ_INT(b->cfg.reporters[0].formats, want[i]);
		unsetenv("EMBERPROF_OUTPUT_DIR");
		unsetenv("EMBERPROF_OUTPUT_FORMAT");
		ember_builder_free(b);
	}
	unsigned f = 0;
	CHECK_EQ_INT(ember__parse_formats("both", &f), 0);
	CHECK_EQ_INT(f, EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR);
	CHECK_EQ_INT(ember__parse_formats("JFR", &f), EMBER_ERR_INVALID);
	rmdir(dir);
}

static int follow_fn(void *ud, ember_builder *b)
{
	(void)ud;
	(void)b;
	return 0;
}

/* ember_builder_follow_forks: refused by this static library (the shared
 * one's is tests/tree/test_api_fork.sh); a fork child's builder carries the
 * parent's settings, its own copies, and no reporter. */
static void test_follow_forks_settings(void)
{
	ember_builder *b, *c;
	CHECK_EQ_INT(ember_builder_new(&b, "svc"), 0);
	CHECK_EQ_INT(ember_builder_follow_forks(b, follow_fn, b), EMBER_ERR_UNSUPPORTED);
	CHECK(strstr(ember_last_error(), "libemberprof.so"));
	CHECK(b->cfg.fork_fn == NULL);
	CHECK_EQ_INT(ember_builder_follow_forks(b, NULL, NULL), 0); /* off is always fine */
	CHECK_EQ_INT(ember_builder_set_sample_rate(b, 250), 0);
	CHECK_EQ_INT(ember_builder_set_wall(b, 20), 0);
	CHECK_EQ_INT(ember_builder_add_tag(b, "env", "prod"), 0);
	CHECK_EQ_INT(ember_builder_add_tag(b, "region", "eu"), 0);
	ember_reporter r;
	CHECK_EQ_INT(ember_reporter_local(&r, "."), 0);
	CHECK_EQ_INT(ember_builder_add_reporter(b, &r), 0);
	b->cfg.fork_fn = follow_fn; /* as the shared library's call sets it */
	b->cfg.fork_ud = b;
	CHECK_EQ_INT(ember__builder_from_settings(&c, &b->cfg), 0);
	CHECK_EQ_STR(c->cfg.app_name, "svc");
	CHECK(c->cfg.app_name != b->cfg.app_name);
	CHECK_EQ_INT(c->cfg.hz, 250);
	CHECK_EQ_INT(c->cfg.wall_ms, 20);
	CHECK_EQ_INT(c->cfg.ntags, 2);
	CHECK(c->cfg.ntags == 2 && !strcmp(c->cfg.tags[1].key, "region") &&
	      !strcmp(c->cfg.tags[1].value, "eu") && c->cfg.tags[1].key != b->cfg.tags[1].key);
	CHECK_EQ_INT(c->cfg.nreporters, 0);
	CHECK(c->cfg.reporters == NULL);
	CHECK(c->cfg.fork_fn == follow_fn && c->cfg.fork_ud == b);
	/* the child's own tags and reporters come on top */
	CHECK_EQ_INT(ember_builder_add_tag(c, "role", "worker"), 0);
	CHECK_EQ_INT(c->cfg.ntags, 3);
	ember_builder_free(b);
	ember_builder_free(c); /* frees only its own copies (ASan checks) */
}

int main(void)
{
	RUN(test_defaults_and_setters);
	RUN(test_parsers);
	RUN(test_env);
	RUN(test_env_output_format);
	RUN(test_follow_forks_settings);
	return CHECK_DONE();
}
