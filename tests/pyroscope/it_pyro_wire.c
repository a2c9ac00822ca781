/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_pyro_wire.c - every option of the Pyroscope reporter reaches the wire,
 * as an independent fake server (fake_pyroscope.py) sees it:
 *   1. push: base path kept, Basic auth, tenant, extra headers, user agent,
 *      content type, the series labels (__name__, service_name, spy
 *      labels), static tags and a dynamic label as sample labels, a UUIDv4
 *      per upload;
 *   2. legacy /ingest with a bearer token: query parameters, content type;
 *   3. the environment variables Pyroscope's agents use, with EMBERPROF_*
 *      winning where both are set;
 *   4. upload jitter: every window still arrives, in order.
 * Each run's windows must all arrive, in order, exactly once, and every
 * received profile must be readable by `go tool pprof -raw`.
 */
#include "pyro_test.h"

static it_capture cap;
static pt_log logbuf;

static void reset_capture(void)
{
	it_capture_free(&cap);
	memset(&cap, 0, sizeof(cap));
}

static void check_series_labels(const fake_server *f, int k, const char *app)
{
	fake_expect(f, k, "label.__name__", "process_cpu");
	fake_expect(f, k, "label.service_name", app);
	fake_expect(f, k, "label.pyroscope_spy", "emberprof");
	fake_expect(f, k, "label.otel.scope.name", "emberprof");
	fake_expect(f, k, "label.otel.scope.version", EMBER_VERSION_STRING);
}

/* Every window arrived once, in order; the counters agree; pprof reads them. */
static int check_delivery(const fake_server *f, ember_agent *a)
{
	static fake_profile rows[256];
	int n = fake_list(f, rows, 256);
	if ((size_t)n != cap.n) { /* say why before failing */
		ember_stats st;
		ember_agent_stats(a, &st);
		char *count = fake_ctl(f, "/count");
		fprintf(stderr, "server has %d, agent reported %zu windows; uploads ok %llu failed %llu "
				"dropped %llu; server count: %s; the agent's log:\n%s\n",
			n, cap.n, (unsigned long long)st.uploads_ok,
			(unsigned long long)st.uploads_failed, (unsigned long long)st.uploads_dropped,
			count, logbuf.text);
		free(count);
		for (size_t i = 0; i < cap.n; i++)
			fprintf(stderr, "  window %zu: %lld..%lld, %llu samples\n", i,
				(long long)cap.w[i].start_ns, (long long)cap.w[i].end_ns,
				(unsigned long long)cap.w[i].samples);
	}
	pt_check_same_windows(f, &cap, 0, rows, n);
	IT_CHECK(n >= 2, "only %d windows", n);
	ember_stats st;
	ember_agent_stats(a, &st);
	IT_CHECK(st.uploads_ok == (uint64_t)n && st.uploads_failed == 0 && st.uploads_dropped == 0,
		 "stats: ok %llu failed %llu dropped %llu, server has %d",
		 (unsigned long long)st.uploads_ok, (unsigned long long)st.uploads_failed,
		 (unsigned long long)st.uploads_dropped, n);
	IT_CHECK(st.bytes_sent > 0, "no bytes counted");
	fake_go_pprof_all(f, n);
	return n;
}

static void test_push(void)
{
	fake_server f;
	const char *args[] = {"--expect-basic", "alice:pa:ss w0rd", "--expect-tenant", "team-a", NULL};
	fake_start(&f, args);
	char url[200];
	snprintf(url, sizeof(url), "%s/base/path/", f.url);
	const char *hdrs[] = {"X-Extra: one", "X-Other:two"};
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = url;
	o.basic_auth_user = "alice";
	o.basic_auth_password = "pa:ss w0rd";
	o.tenant_id = "team-a";
	o.headers = hdrs;
	o.nheaders = 2;
	o.user_agent_suffix = "wire-test/1";
	ember_tag tags[] = {{"region", "eu-west"}, {"team", "core"}, {NULL, NULL}};
	reset_capture();
	ember_agent *a = pt_build("wire.app", &o, &cap, &logbuf, tags);
	IT_CHECK(pt_run(&a, 2.5, "busy") == 0, "stop: %s", ember_last_error());
	int n = check_delivery(&f, a), busy = 0;
	for (int k = 0; k < n; k++) {
		fake_expect(&f, k, "endpoint", "push");
		fake_expect(&f, k, "path", "/base/path/push.v1.PusherService/Push");
		fake_expect(&f, k, "header.content-type", "application/proto");
		fake_expect(&f, k, "header.connect-protocol-version", "1");
		fake_expect(&f, k, "header.user-agent", "emberprof/" EMBER_VERSION_STRING " wire-test/1");
		fake_expect(&f, k, "header.authorization", "Basic YWxpY2U6cGE6c3MgdzByZA==");
		fake_expect(&f, k, "header.x-scope-orgid", "team-a");
		fake_expect(&f, k, "header.x-extra", "one");
		fake_expect(&f, k, "header.x-other", "two");
		fake_expect(&f, k, "id_is_uuid4", "1");
		check_series_labels(&f, k, "wire.app");
		/* Static tags travel as sample labels, not series labels. */
		fake_expect(&f, k, "label.region", NULL);
		char *samples = fake_show(&f, k, "samples");
		if (samples && atoi(samples) > 0) {
			fake_expect(&f, k, "sample_label.region", "eu-west");
			fake_expect(&f, k, "sample_label.team", "core");
			/* The thread's label, where set: a first window can
			 * hold only samples from before the burner set it
			 * (the aarch64 stage under qemu once had one). */
			char *phase = fake_show(&f, k, "sample_label.phase");
			IT_CHECK(!phase || !strcmp(phase, "busy"),
				 "profile %d: sample_label.phase is \"%s\", expected \"busy\" or absent", k,
				 phase);
			busy += phase != NULL;
			free(phase);
		}
		free(samples);
	}
	IT_CHECK(busy > 0, "no profile has a sample labelled phase=busy");
	printf("push: %d windows delivered with every option on the wire\n", n);
	ember_agent_shutdown(a);
	fake_stop(&f);
}

static void test_ingest(void)
{
	fake_server f;
	const char *args[] = {"--expect-bearer", "tok-123", NULL};
	fake_start(&f, args);
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = f.url;
	o.protocol = EMBER_PYROSCOPE_INGEST;
	o.bearer_token = "tok-123";
	reset_capture();
	ember_agent *a = pt_build("wire.ingest", &o, &cap, &logbuf, NULL);
	IT_CHECK(pt_run(&a, 2.5, NULL) == 0, "stop: %s", ember_last_error());
	int n = check_delivery(&f, a);
	for (int k = 0; k < n; k++) {
		fake_expect(&f, k, "endpoint", "ingest");
		fake_expect(&f, k, "path", "/ingest");
		fake_expect(&f, k, "header.content-type", "binary/octet-stream");
		fake_expect(&f, k, "header.authorization", "Bearer tok-123");
		fake_expect(&f, k, "query.name", "wire.ingest");
		fake_expect(&f, k, "query.format", "pprof");
		fake_expect(&f, k, "query.spyName", "emberprof");
		fake_expect(&f, k, "query.sampleRate", "100");
		char *from = fake_show(&f, k, "query.from"), *until = fake_show(&f, k, "query.until");
		IT_CHECK(from && until && atoll(from) <= atoll(until), "from/until: %s %s", from, until);
		IT_CHECK(atoll(from) == cap.w[k].start_ns / 1000000000, "from %s is not window %d's start",
			 from, k);
		free(from);
		free(until);
	}
	printf("ingest: %d windows delivered\n", n);
	ember_agent_shutdown(a);
	fake_stop(&f);
}

static const char *const env_names[] = {
	"PYROSCOPE_SERVER_ADDRESS", "PYROSCOPE_APPLICATION_NAME", "PYROSCOPE_AUTH_TOKEN",
	"PYROSCOPE_TENANT_ID",      "EMBERPROF_SERVER_TENANT_ID", "PYROSCOPE_HTTP_HEADERS",
	"PYROSCOPE_LABELS",         "EMBERPROF_TAGS",             "PYROSCOPE_UPLOAD_INTERVAL",
	"PYROSCOPE_SAMPLE_RATE",    "EMBERPROF_APP_NAME",         "EMBERPROF_SERVER_URL",
	NULL,
};

static void test_env(void)
{
	fake_server f;
	const char *args[] = {"--expect-bearer", "envtok", "--expect-tenant", "emb-tenant", NULL};
	fake_start(&f, args);
	for (int i = 0; env_names[i]; i++)
		unsetenv(env_names[i]);
	setenv("PYROSCOPE_SERVER_ADDRESS", f.url, 1);
	setenv("PYROSCOPE_APPLICATION_NAME", "env.app{deploy=blue}", 1);
	setenv("PYROSCOPE_AUTH_TOKEN", "envtok", 1);
	setenv("PYROSCOPE_TENANT_ID", "pyro-tenant", 1);
	setenv("EMBERPROF_SERVER_TENANT_ID", "emb-tenant", 1); /* wins */
	setenv("PYROSCOPE_HTTP_HEADERS", "{\"X-From-Json\": \"yes\"}", 1);
	setenv("PYROSCOPE_LABELS", "zone=z1, rack:r7", 1);
	setenv("EMBERPROF_TAGS", "zone=z0", 1); /* wins over PYROSCOPE_LABELS */
	setenv("PYROSCOPE_UPLOAD_INTERVAL", "1s", 1);
	setenv("PYROSCOPE_SAMPLE_RATE", "100", 1);

	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "ignored") == 0, "builder");
	pthread_mutex_init(&logbuf.mu, NULL);
	IT_CHECK(ember_builder_set_log(b, pt_log_fn, &logbuf, EMBER_LOG_DEBUG) == 0, "log");
	reset_capture();
	ember_reporter c = it_capture_reporter(&cap);
	IT_CHECK(ember_builder_add_reporter(b, &c) == 0, "capture");
	IT_CHECK(ember_builder_apply_env(b) == 0, "env: %s", ember_last_error());
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	IT_CHECK(pt_run(&a, 2.5, NULL) == 0, "stop: %s", ember_last_error());
	int n = check_delivery(&f, a);
	for (int k = 0; k < n; k++) {
		check_series_labels(&f, k, "env.app");
		fake_expect(&f, k, "header.x-scope-orgid", "emb-tenant");
		fake_expect(&f, k, "header.authorization", "Bearer envtok");
		fake_expect(&f, k, "header.x-from-json", "yes");
		char *samples = fake_show(&f, k, "samples");
		if (samples && atoi(samples) > 0) {
			fake_expect(&f, k, "sample_label.deploy", "blue");
			fake_expect(&f, k, "sample_label.zone", "z0");
			fake_expect(&f, k, "sample_label.rack", "r7");
		}
		free(samples);
	}
	printf("environment: %d windows delivered with PYROSCOPE_* settings\n", n);
	ember_agent_shutdown(a);
	for (int i = 0; env_names[i]; i++)
		unsetenv(env_names[i]);
	fake_stop(&f);
}

static void test_jitter(void)
{
	fake_server f;
	fake_start(&f, NULL);
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = f.url;
	o.upload_jitter_ms = 700;
	reset_capture();
	ember_agent *a = pt_build("wire.jitter", &o, &cap, &logbuf, NULL);
	IT_CHECK(pt_run(&a, 3.5, NULL) == 0, "stop: %s", ember_last_error());
	int n = check_delivery(&f, a);
	printf("jitter: %d windows delivered in order\n", n);
	ember_agent_shutdown(a);
	fake_stop(&f);
}

int main(void)
{
	test_push();
	test_ingest();
	test_env();
	test_jitter();
	reset_capture();
	printf("ok\n");
	return 0;
}
