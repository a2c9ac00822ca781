/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pyroscope.c - the Pyroscope reporter without a server: option
 * checks (URLs, credentials, tenant, headers, limits) and their messages,
 * the label rules at build time, the push request encoding (read back
 * with the protobuf reader), UUIDs, the HTTP helpers (Retry-After, error
 * bodies, base64), and the environment variables, including which
 * spelling wins and that secrets are not echoed.
 */
#include <stdlib.h>
#include <time.h>

#include "agent/agent.h"
#include "check.h"
#include "encode/protobuf.h"
#include "report/pyroscope.h"
#include "upload/http.h"

static ember_pyroscope_options opts(const char *url)
{
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = url;
	return o;
}

/* Creation must fail with a message containing `needle`. */
static int refused(const ember_pyroscope_options *o, const char *needle)
{
	ember_reporter r;
	int rc = ember_reporter_pyroscope(&r, o);
	if (rc == 0) {
		r.destroy(r.userdata);
		fprintf(stderr, "  accepted, expected a refusal mentioning \"%s\"\n", needle);
		return 0;
	}
	if (!strstr(ember_last_error(), needle)) {
		fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", ember_last_error(), needle);
		return 0;
	}
	return 1;
}

static int accepted(const ember_pyroscope_options *o)
{
	ember_reporter r;
	int rc = ember_reporter_pyroscope(&r, o);
	if (rc) {
		fprintf(stderr, "  refused: %s\n", ember_last_error());
		return 0;
	}
	r.destroy(r.userdata);
	return 1;
}

static void test_urls(void)
{
	ember_pyroscope_options o = opts(NULL);
	CHECK(refused(&o, "empty"));
	o.url = "ftp://example.com";
	CHECK(refused(&o, "only http and https"));
	o.url = "localhost:4040";
	CHECK(refused(&o, "localhost:4040"));
	o.url = "http://";
	CHECK(refused(&o, "not a valid URL"));
	o.url = "http://user:secret@host:4040";
	CHECK(refused(&o, "credentials"));
	CHECK(!strstr(ember_last_error(), "secret"));
	o.url = "http://host:4040/?tenant=x";
	CHECK(refused(&o, "query or fragment"));
	o.url = "http://host:4040/a b";
	CHECK(refused(&o, "space"));
	o.url = "http://127.0.0.1:4040";
	CHECK(accepted(&o));
	o.url = "https://profiles.example.com/base/path/";
	CHECK(accepted(&o));
	ember_pyroscope_options small = o;
	small.sz = 4;
	CHECK(refused(&small, "EMBER_PYROSCOPE_OPTIONS_INIT"));
	CHECK_EQ_INT(ember_reporter_pyroscope((ember_reporter[1]){0}, NULL), EMBER_ERR_INVALID);
}

static void test_credentials(void)
{
	ember_pyroscope_options o = opts("http://127.0.0.1:4040");
	o.basic_auth_user = "alice";
	CHECK(refused(&o, "both a user and a password (only the user"));
	o.basic_auth_user = NULL;
	o.basic_auth_password = "pw";
	CHECK(refused(&o, "only the password"));
	o.basic_auth_user = "al:ice";
	CHECK(refused(&o, "may not contain ':'"));
	o.basic_auth_user = "alice";
	o.bearer_token = "tok";
	CHECK(refused(&o, "not both"));
	o.basic_auth_user = o.basic_auth_password = NULL;
	o.bearer_token = "two words";
	CHECK(refused(&o, "bearer token contains a space"));
	o.bearer_token = "tok";
	CHECK(accepted(&o));
	o.tenant_id = "bad/tenant";
	CHECK(refused(&o, "tenant id \"bad/tenant\" is invalid"));
	o.tenant_id = "..";
	CHECK(refused(&o, "tenant id"));
	char longt[200];
	memset(longt, 'a', sizeof(longt) - 1);
	longt[sizeof(longt) - 1] = '\0';
	o.tenant_id = longt;
	CHECK(refused(&o, "tenant id"));
	o.tenant_id = "team-a_1.(x)*'!";
	CHECK(accepted(&o));
}

static void test_headers_and_limits(void)
{
	ember_pyroscope_options o = opts("http://127.0.0.1:4040");
	const char *h[1];
	o.headers = h;
	o.nheaders = 1;
	h[0] = "NoColon";
	CHECK(refused(&o, "expected \"Name: value\""));
	h[0] = "Bad Name: x";
	CHECK(refused(&o, "Name: value"));
	h[0] = "X-Evil: a\r\nInjected: b";
	CHECK(refused(&o, "control character"));
	h[0] = "X-Empty:";
	CHECK(refused(&o, "no value"));
	h[0] = "content-type: text/plain";
	CHECK(refused(&o, "set by emberprof"));
	h[0] = "User-Agent: me";
	CHECK(refused(&o, "user_agent_suffix"));
	h[0] = "Authorization: Bearer x";
	CHECK(accepted(&o));
	o.bearer_token = "y";
	CHECK(refused(&o, "both given"));
	o.bearer_token = NULL;
	h[0] = "X-Scope-OrgID: t";
	o.tenant_id = "t";
	CHECK(refused(&o, "both given"));
	o.tenant_id = NULL;
	o.nheaders = 0;
	o.ca_file = "/nonexistent/ca.pem";
	CHECK(refused(&o, "/nonexistent/ca.pem"));
	o.ca_file = NULL;
	o.connect_timeout_ms = 9000;
	o.timeout_ms = 1000;
	CHECK(refused(&o, "longer than the total timeout"));
	o.connect_timeout_ms = o.timeout_ms = 0;
	o.queue_len = 5000;
	CHECK(refused(&o, "queue length"));
	o.queue_len = 0;
	o.spool_dir = "/tmp/ember-unit-spool-never";
	o.spool_max_bytes = 100;
	CHECK(refused(&o, "64 KiB"));
	o.spool_dir = NULL;
	o.protocol = (ember_pyroscope_protocol)7;
	CHECK(refused(&o, "unknown protocol"));
}

static int info_refused(const char *app, const ember_tag *tags, size_t n, int thread_labels,
			int protocol, const char *needle)
{
	ember_agent_info info = {.app_name = app, .tags = tags, .ntags = n,
				 .thread_labels = thread_labels};
	int rc = ember__pyroscope_check_info(&info, protocol);
	if (rc == 0)
		return 0;
	if (!strstr(ember_last_error(), needle)) {
		fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", ember_last_error(), needle);
		return 0;
	}
	return 1;
}

/*
 * Every label the server will see counts, per profile type:
 * with 22 tags and thread labels, CPU series have 5 + 22 + 2 = 29 names,
 * wall series thread_state more (30), memory series __delta__ more (30);
 * one more tag puts wall and memory at 31, which a 1.x server refuses.
 */
static void test_label_budget(void)
{
	char why[512], keys[32][8];
	ember_tag t[32];
	for (int i = 0; i < 32; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		t[i] = (ember_tag){keys[i], "v"};
	}
	ember_agent_info in = {.app_name = "app", .tags = t, .ntags = 22, .thread_labels = 1,
			       .wall_ms = 50, .alloc = 1};
	CHECK_EQ_INT(ember__pyroscope_label_count(&in, EMBER_PYROSCOPE_PUSH, "cpu", why, sizeof(why)), 29);
	CHECK_EQ_INT(ember__pyroscope_label_count(&in, EMBER_PYROSCOPE_PUSH, "wall", why, sizeof(why)), 30);
	CHECK(strstr(why, "thread_state (--wall") != NULL);
	CHECK(strstr(why, "--thread-labels") != NULL);
	CHECK_EQ_INT(ember__pyroscope_label_count(&in, EMBER_PYROSCOPE_PUSH, "memory", why, sizeof(why)), 30);
	CHECK(strstr(why, "__delta__") != NULL);
	CHECK_EQ_INT(ember__pyroscope_check_info(&in, EMBER_PYROSCOPE_PUSH), 0);
	in.ntags = 23;
	CHECK_EQ_INT(ember__pyroscope_check_info(&in, EMBER_PYROSCOPE_PUSH), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "wall profiles would carry 31 label names") != NULL);
	CHECK(strstr(ember_last_error(), "thread_state (--wall") != NULL);
	in.wall_ms = 0; /* memory is still over: __delta__ */
	CHECK_EQ_INT(ember__pyroscope_check_info(&in, EMBER_PYROSCOPE_PUSH), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "memory profiles would carry 31") != NULL);
	in.alloc = 0;
	CHECK_EQ_INT(ember__pyroscope_check_info(&in, EMBER_PYROSCOPE_PUSH), 0);
	/* /ingest?format=pprof: the server's 4, the tags and sample labels */
	in.wall_ms = 50;
	CHECK_EQ_INT(ember__pyroscope_label_count(&in, EMBER_PYROSCOPE_INGEST, "wall", NULL, 0), 30);
	/* format=jfr: the server's 5 and the tags in the name, no thread labels */
	CHECK_EQ_INT(ember__pyroscope_label_count(&in, EMBER__PYRO_JFR, "wall", NULL, 0), 28);
	in.ntags = 25;
	CHECK_EQ_INT(ember__pyroscope_check_info(&in, EMBER__PYRO_JFR), 0);
	in.ntags = 26;
	CHECK_EQ_INT(ember__pyroscope_check_info(&in, EMBER__PYRO_JFR), EMBER_ERR_INVALID);
}

static void test_legacy_names(void)
{
	char out[64];
	CHECK_EQ_INT(ember__pyroscope_legacy_name("env", out, sizeof(out)), EMBER_PYRO_NAME_OK);
	CHECK_EQ_INT(ember__pyroscope_legacy_name("_a9", out, sizeof(out)), EMBER_PYRO_NAME_OK);
	CHECK_EQ_INT(ember__pyroscope_legacy_name("host.name", out, sizeof(out)),
		     EMBER_PYRO_NAME_REWRITTEN);
	CHECK_EQ_STR(out, "host_name");
	CHECK_EQ_INT(ember__pyroscope_legacy_name(".x", out, sizeof(out)), EMBER_PYRO_NAME_REWRITTEN);
	CHECK_EQ_STR(out, "_x");
	CHECK_EQ_INT(ember__pyroscope_legacy_name("9lives", out, sizeof(out)), EMBER_PYRO_NAME_REFUSED);
	CHECK_EQ_INT(ember__pyroscope_legacy_name("my-tag", out, sizeof(out)), EMBER_PYRO_NAME_REFUSED);
	CHECK_EQ_INT(ember__pyroscope_legacy_name("caf\xc3\xa9", out, sizeof(out)),
		     EMBER_PYRO_NAME_REFUSED);
	CHECK_EQ_INT(ember__pyroscope_legacy_name("", out, sizeof(out)), EMBER_PYRO_NAME_REFUSED);
}

static void test_label_rules(void)
{
	ember_tag t[32];
	CHECK(info_refused("", NULL, 0, 0, EMBER_PYROSCOPE_PUSH, "empty value"));
	t[0] = (ember_tag){"__private", "x"};
	CHECK(info_refused("app", t, 1, 0, EMBER_PYROSCOPE_PUSH, "reserved"));
	t[0] = (ember_tag){"env", ""};
	CHECK(info_refused("app", t, 1, 0, EMBER_PYROSCOPE_PUSH, "empty value"));
	t[0] = (ember_tag){"env", "bad\xff"};
	CHECK(info_refused("app", t, 1, 0, EMBER_PYROSCOPE_PUSH, "UTF-8"));
	t[0] = (ember_tag){"thread_id", "1"};
	CHECK(info_refused("app", t, 1, 1, EMBER_PYROSCOPE_PUSH, "thread labels"));
	char keys[32][8];
	for (int i = 0; i < 32; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		t[i] = (ember_tag){keys[i], "v"};
	}
	/* 5 of emberprof's own + 25 tags = 30: fits; one more does not. */
	ember_agent_info ok = {.app_name = "app", .tags = t, .ntags = 25};
	CHECK_EQ_INT(ember__pyroscope_check_info(&ok, EMBER_PYROSCOPE_PUSH), 0);
	CHECK(info_refused("app", t, 26, 0, EMBER_PYROSCOPE_PUSH, "over the server's 30"));
	/* Tags replacing our own labels do not count twice. */
	t[0] = (ember_tag){"service_name", "svc"};
	t[1] = (ember_tag){"pyroscope_spy", "custom"};
	ok.ntags = 27;
	CHECK_EQ_INT(ember__pyroscope_check_info(&ok, EMBER_PYROSCOPE_PUSH), 0);
	CHECK(info_refused("my app", NULL, 0, 0, EMBER_PYROSCOPE_INGEST, "may only contain"));
	ember_agent_info ing = {.app_name = "my.app/x-1"};
	CHECK_EQ_INT(ember__pyroscope_check_info(&ing, EMBER_PYROSCOPE_INGEST), 0);
	ing.app_name = "my app"; /* fine for push */
	CHECK_EQ_INT(ember__pyroscope_check_info(&ing, EMBER_PYROSCOPE_PUSH), 0);
}

static void test_build_checks_labels(void)
{
	ember_builder *b;
	CHECK_EQ_INT(ember_builder_new(&b, "svc"), 0);
	CHECK_EQ_INT(ember_builder_add_tag(b, "__bad", "x"), 0); /* fine for the builder */
	ember_pyroscope_options o = opts("http://127.0.0.1:1");
	ember_reporter r;
	CHECK_EQ_INT(ember_reporter_pyroscope(&r, &o), 0);
	CHECK_EQ_INT(ember_builder_add_reporter(b, &r), 0);
	ember_agent *a = (ember_agent *)1;
	CHECK_EQ_INT(ember_builder_build(&a, b), EMBER_ERR_INVALID);
	CHECK(a == NULL);
	CHECK(strstr(ember_last_error(), "reporter pyroscope"));
	CHECK(strstr(ember_last_error(), "__bad"));
}

static void test_metric_names(void)
{
	CHECK_EQ_STR(ember__pyroscope_metric("cpu"), "process_cpu");
	CHECK_EQ_STR(ember__pyroscope_metric("wall"), "wall");
	CHECK_EQ_STR(ember__pyroscope_metric("memory"), "memory");
	CHECK(ember__pyroscope_metric("bogus") == NULL);
	CHECK(ember__pyroscope_metric(NULL) == NULL);
}

static void test_uuid(void)
{
	char a[37], b[37];
	ember__uuid4(a);
	ember__uuid4(b);
	CHECK_EQ_INT(strlen(a), 36);
	CHECK(strcmp(a, b) != 0);
	CHECK(a[8] == '-' && a[13] == '-' && a[18] == '-' && a[23] == '-');
	CHECK(a[14] == '4');
	CHECK(strchr("89ab", a[19]) != NULL);
	for (int i = 0; i < 36; i++)
		CHECK(a[i] == '-' || strchr("0123456789abcdef", a[i]));
}

static void test_push_body(void)
{
	ember__pyro_label l[] = {{"__name__", "process_cpu"}, {"service_name", "svc"}};
	const uint8_t prof[] = {0x1f, 0x8b, 1, 2, 3};
	uint8_t *body;
	size_t len;
	CHECK_EQ_INT(ember__pyroscope_push_body(l, 2, prof, sizeof(prof), "the-id", &body, &len), 0);
	/* PushRequest.series(1) -> labels(1){name,value} x2, samples(2){raw(1), ID(2)} */
	ember__pb_reader r, s, x;
	ember__pb_field f, g, h;
	ember__pb_reader_init(&r, body, len);
	CHECK_EQ_INT(ember__pb_next(&r, &f), 1);
	CHECK(f.num == 1 && f.wire == EMBER_PB_LEN);
	CHECK_EQ_INT(ember__pb_next(&r, &g), 0); /* one series */
	ember__pb_reader_init(&s, f.data, f.len);
	int nlabels = 0, nsamples = 0;
	while (ember__pb_next(&s, &g) == 1) {
		ember__pb_reader_init(&x, g.data, g.len);
		if (g.num == 1) {
			char name[32] = "", value[32] = "";
			while (ember__pb_next(&x, &h) == 1) {
				char *dst = h.num == 1 ? name : value;
				memcpy(dst, h.data, h.len < 31 ? h.len : 31);
			}
			CHECK_EQ_STR(name, l[nlabels].name);
			CHECK_EQ_STR(value, l[nlabels].value);
			nlabels++;
		} else if (g.num == 2) {
			nsamples++;
			while (ember__pb_next(&x, &h) == 1) {
				if (h.num == 1)
					CHECK(h.len == sizeof(prof) && !memcmp(h.data, prof, sizeof(prof)));
				else if (h.num == 2)
					CHECK(h.len == 6 && !memcmp(h.data, "the-id", 6));
			}
		}
	}
	CHECK_EQ_INT(nlabels, 2);
	CHECK_EQ_INT(nsamples, 1);
	free(body);
}

static void test_http_helpers(void)
{
	time_t now = 1445412480; /* Wed, 21 Oct 2015 07:28:00 GMT */
	CHECK_EQ_INT(ember__http_retry_after_ms("5", now), 5000);
	CHECK_EQ_INT(ember__http_retry_after_ms("0", now), 0);
	CHECK_EQ_INT(ember__http_retry_after_ms("Wed, 21 Oct 2015 07:28:10 GMT", now), 10000);
	CHECK_EQ_INT(ember__http_retry_after_ms("Wed, 21 Oct 2015 07:00:00 GMT", now), 0);
	CHECK_EQ_INT(ember__http_retry_after_ms("soon", now), -1);
	CHECK_EQ_INT(ember__http_retry_after_ms("5 s", now), -1);
	CHECK_EQ_INT(ember__http_retry_after_ms("", now), -1);

	char out[128];
	const char *j = "{\"code\":\"invalid_argument\",\"message\":\"duplicate label \\\"x\\\"\"}";
	ember__http_error_text(j, strlen(j), out, sizeof(out));
	CHECK_EQ_STR(out, "invalid_argument: duplicate label \"x\"");
	const char *t = "rate limited\nmore";
	ember__http_error_text(t, strlen(t), out, sizeof(out));
	CHECK_EQ_STR(out, "rate limited");
	ember__http_error_text("", 0, out, sizeof(out));
	CHECK_EQ_STR(out, "");
	ember__http_error_text("a\tb\x01", 4, out, sizeof(out));
	CHECK_EQ_STR(out, "a b");

	const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	const char *b64[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	for (int i = 0; i < 7; i++) {
		char *s = ember__base64(in[i], strlen(in[i]));
		CHECK_EQ_STR(s, b64[i]);
		free(s);
	}
	CHECK(ember__utf8_valid("h\xc3\xa9llo", 6));
	CHECK(!ember__utf8_valid("\xc0\xaf", 2));     /* overlong */
	CHECK(!ember__utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
	CHECK(!ember__utf8_valid("\xe2\x82", 2));     /* truncated */
}

/* ---- environment ---- */

static const char *const vars[] = {
	"EMBERPROF_SERVER_URL", "PYROSCOPE_SERVER_ADDRESS", "EMBERPROF_SERVER_TENANT_ID",
	"PYROSCOPE_TENANT_ID", "EMBERPROF_SERVER_AUTH_TOKEN", "PYROSCOPE_AUTH_TOKEN",
	"EMBERPROF_SERVER_BASIC_AUTH_USER", "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD",
	"PYROSCOPE_BASIC_AUTH_USER", "PYROSCOPE_BASIC_AUTH_PASSWORD", "EMBERPROF_SERVER_HEADERS",
	"PYROSCOPE_HTTP_HEADERS", "PYROSCOPE_APPLICATION_NAME", "EMBERPROF_APP_NAME",
	"PYROSCOPE_SAMPLE_RATE", "EMBERPROF_SAMPLE_RATE", "PYROSCOPE_UPLOAD_INTERVAL",
	"EMBERPROF_INTERVAL", "PYROSCOPE_LABELS", "EMBERPROF_TAGS", "EMBERPROF_SERVER_SPOOL_MAX",
	"EMBERPROF_SERVER_PROTOCOL", "EMBERPROF_SERVER_UPLOAD_JITTER", "EMBERPROF_SERVER_QUEUE_LEN",
	"PYROSCOPE_PUSH_QUEUE_CAPACITY", "PYROSCOPE_PROFILE_EXPORT_TIMEOUT",
	"EMBERPROF_SERVER_CONNECT_TIMEOUT", "EMBERPROF_SERVER_TIMEOUT", "EMBERPROF_OUTPUT_DIR",
	NULL,
};

static void clear_env(void)
{
	for (int i = 0; vars[i]; i++)
		unsetenv(vars[i]);
}

/* Applies the environment to a fresh builder; returns rc, keeps the builder in *out. */
static int apply(ember_builder **out)
{
	ember_builder *b;
	ember_builder_new(&b, "unit");
	ember_builder_set_log(b, NULL, NULL, EMBER_LOG_OFF);
	int rc = ember_builder_apply_env(b);
	*out = b;
	return rc;
}

static int env_refused(const char *needle)
{
	ember_builder *b;
	int rc = apply(&b);
	ember_builder_free(b);
	if (rc == 0) {
		fprintf(stderr, "  accepted, expected a refusal mentioning \"%s\"\n", needle);
		return 0;
	}
	if (!strstr(ember_last_error(), needle)) {
		fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", ember_last_error(), needle);
		return 0;
	}
	return 1;
}

static const char *tag_value(const ember_builder *b, const char *key)
{
	for (size_t i = 0; i < b->cfg.ntags; i++)
		if (!strcmp(b->cfg.tags[i].key, key))
			return b->cfg.tags[i].value;
	return NULL;
}

static void test_env_names_and_precedence(void)
{
	clear_env();
	ember_builder *b;
	/* Without a URL, PYROSCOPE_* are another agent's business. */
	setenv("PYROSCOPE_TENANT_ID", "x/y", 1);
	setenv("PYROSCOPE_SAMPLE_RATE", "250", 1);
	CHECK_EQ_INT(apply(&b), 0);
	CHECK_EQ_INT(b->cfg.nreporters, 0);
	CHECK_EQ_INT(b->cfg.hz, 100);
	ember_builder_free(b);

	setenv("PYROSCOPE_SERVER_ADDRESS", "http://127.0.0.1:4040", 1);
	setenv("PYROSCOPE_TENANT_ID", "team", 1);
	setenv("PYROSCOPE_APPLICATION_NAME", "svc{a=1,b=2}", 1);
	setenv("PYROSCOPE_UPLOAD_INTERVAL", "5000000000", 1); /* Java: bare number is ns */
	setenv("PYROSCOPE_LABELS", "k1=v1, k2:v2,a=9", 1);
	CHECK_EQ_INT(apply(&b), 0);
	CHECK_EQ_INT(b->cfg.nreporters, 1);
	CHECK_EQ_STR(b->cfg.reporters[0].name, "pyroscope");
	CHECK_EQ_STR(b->cfg.app_name, "svc");
	CHECK_EQ_INT(b->cfg.hz, 250);
	CHECK_EQ_INT(b->cfg.interval_ms, 5000);
	CHECK_EQ_STR(tag_value(b, "a"), "1"); /* the name's labels came first */
	CHECK_EQ_STR(tag_value(b, "b"), "2");
	CHECK_EQ_STR(tag_value(b, "k1"), "v1");
	CHECK_EQ_STR(tag_value(b, "k2"), "v2");
	ember_builder_free(b);

	/* EMBERPROF_* wins. */
	setenv("EMBERPROF_APP_NAME", "mine", 1);
	setenv("EMBERPROF_SAMPLE_RATE", "99", 1);
	setenv("EMBERPROF_INTERVAL", "2s", 1);
	setenv("EMBERPROF_TAGS", "k1=ours", 1);
	setenv("EMBERPROF_SERVER_URL", "ftp://nope", 1);
	CHECK(env_refused("EMBERPROF_SERVER_URL=\"ftp://nope\""));
	setenv("EMBERPROF_SERVER_URL", "http://127.0.0.1:4041", 1);
	CHECK_EQ_INT(apply(&b), 0);
	CHECK_EQ_STR(b->cfg.app_name, "mine");
	CHECK_EQ_INT(b->cfg.hz, 99);
	CHECK_EQ_INT(b->cfg.interval_ms, 2000);
	CHECK_EQ_STR(tag_value(b, "k1"), "ours");
	ember_builder_free(b);
	clear_env();
}

static void test_env_errors(void)
{
	clear_env();
	setenv("EMBERPROF_SERVER_TENANT_ID", "t", 1);
	CHECK(env_refused("EMBERPROF_SERVER_TENANT_ID is set but EMBERPROF_SERVER_URL is not"));
	setenv("EMBERPROF_SERVER_URL", "http://127.0.0.1:4040", 1);
	setenv("EMBERPROF_SERVER_TENANT_ID", "a b", 1);
	CHECK(env_refused("EMBERPROF_SERVER_TENANT_ID=\"a b\""));
	unsetenv("EMBERPROF_SERVER_TENANT_ID");

	setenv("PYROSCOPE_BASIC_AUTH_USER", "u", 1);
	CHECK(env_refused("PYROSCOPE_BASIC_AUTH_PASSWORD"));
	setenv("EMBERPROF_SERVER_AUTH_TOKEN", "has space-secret", 1);
	CHECK(env_refused("EMBERPROF_SERVER_AUTH_TOKEN=<hidden>"));
	CHECK(!strstr(ember_last_error(), "secret"));
	unsetenv("EMBERPROF_SERVER_AUTH_TOKEN");
	setenv("PYROSCOPE_BASIC_AUTH_PASSWORD", "pw", 1);
	ember_builder *b;
	CHECK_EQ_INT(apply(&b), 0);
	ember_builder_free(b);
	unsetenv("PYROSCOPE_BASIC_AUTH_USER");
	unsetenv("PYROSCOPE_BASIC_AUTH_PASSWORD");

	setenv("PYROSCOPE_HTTP_HEADERS", "X-A: 1", 1);
	CHECK(env_refused("PYROSCOPE_HTTP_HEADERS=<hidden>"));
	setenv("PYROSCOPE_HTTP_HEADERS", "{\"X-A\": 1}", 1);
	CHECK(env_refused("JSON strings"));
	setenv("PYROSCOPE_HTTP_HEADERS", "{\"X-A\": \"1\", \"X-B\": \"two\\u00e9\"}", 1);
	CHECK_EQ_INT(apply(&b), 0);
	ember_builder_free(b);
	setenv("EMBERPROF_SERVER_HEADERS", "X-C: 3\nX-D:4\n", 1);
	CHECK_EQ_INT(apply(&b), 0);
	ember_builder_free(b);
	setenv("EMBERPROF_SERVER_HEADERS", "X-C 3", 1);
	CHECK(env_refused("EMBERPROF_SERVER_HEADERS"));
	unsetenv("EMBERPROF_SERVER_HEADERS");
	unsetenv("PYROSCOPE_HTTP_HEADERS");

	setenv("EMBERPROF_SERVER_SPOOL_MAX", "1K", 1);
	CHECK(env_refused("EMBERPROF_SERVER_SPOOL_MAX"));
	setenv("EMBERPROF_SERVER_SPOOL_MAX", "64M", 1);
	CHECK_EQ_INT(apply(&b), 0);
	ember_builder_free(b);
	setenv("EMBERPROF_SERVER_PROTOCOL", "grpc", 1);
	CHECK(env_refused("expected push or ingest"));
	setenv("EMBERPROF_SERVER_PROTOCOL", "ingest", 1);
	setenv("EMBERPROF_APP_NAME", "bad name", 1);
	CHECK(env_refused("may only contain"));
	unsetenv("EMBERPROF_APP_NAME");
	unsetenv("EMBERPROF_SERVER_PROTOCOL");
	setenv("EMBERPROF_SERVER_UPLOAD_JITTER", "0", 1);
	setenv("PYROSCOPE_PUSH_QUEUE_CAPACITY", "0", 1);
	CHECK(env_refused("PYROSCOPE_PUSH_QUEUE_CAPACITY"));
	unsetenv("PYROSCOPE_PUSH_QUEUE_CAPACITY");
	setenv("PYROSCOPE_PROFILE_EXPORT_TIMEOUT", "10x", 1);
	CHECK(env_refused("PYROSCOPE_PROFILE_EXPORT_TIMEOUT"));
	unsetenv("PYROSCOPE_PROFILE_EXPORT_TIMEOUT");
	setenv("EMBERPROF_SERVER_CONNECT_TIMEOUT", "20s", 1);
	setenv("EMBERPROF_SERVER_TIMEOUT", "10s", 1);
	CHECK(env_refused("longer than the total timeout"));
	unsetenv("EMBERPROF_SERVER_CONNECT_TIMEOUT");
	unsetenv("EMBERPROF_SERVER_TIMEOUT");
	setenv("EMBERPROF_TAGS", "__x=1", 1);
	CHECK(env_refused("reserved"));
	setenv("EMBERPROF_TAGS", "ok=1", 1);
	setenv("PYROSCOPE_LABELS", "novalue", 1);
	CHECK(env_refused("PYROSCOPE_LABELS"));
	clear_env();
}

int main(void)
{
	RUN(test_urls);
	RUN(test_credentials);
	RUN(test_headers_and_limits);
	RUN(test_label_rules);
	RUN(test_label_budget);
	RUN(test_legacy_names);
	RUN(test_build_checks_labels);
	RUN(test_metric_names);
	RUN(test_uuid);
	RUN(test_push_body);
	RUN(test_http_helpers);
	RUN(test_env_names_and_precedence);
	RUN(test_env_errors);
	return CHECK_DONE();
}
