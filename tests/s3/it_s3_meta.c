/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_s3_meta.c - the S3 reporter against fake AWS metadata services and a
 * recording fake S3 (fake_aws.py): the key's {machine} for EC2, Fargate,
 * neither, IMDS disabled, a slow IMDS (timeout) and broken JSON, each
 * followed by a recovery; report() returning while a metadata request is
 * held (an event ordering, no clock); the key kept across retries; and
 * credentials from the environment, the shared files with profiles, ECS
 * container endpoints (full and relative URI) and the EC2 instance role,
 * with caching, refresh on ExpiredToken and before Expiration.
 */
#include "s3_test.h"

static char base[64], s3url[80], tmpdir[64], state_url[96];
static const char dead[] = "http://127.0.0.1:1"; /* nothing listens: connection refused */
static const uint8_t jfr[] = "FLR\0 not a real recording: the key tests do not read it";

static void ctl(const char *q)
{
	char url[512];
	snprintf(url, sizeof(url), "%s/__ctl/%s", base, q);
	long st;
	free(st_get(url, &st));
	ST_CHECK(st == 200, "control %s: HTTP %ld", q, st);
}

static json_t *state(void)
{
	return st_get_json(state_url);
}

static long long counter(const char *name)
{
	json_t *s = state();
	long long v = st_json_int(s, name);
	json_decref(s);
	return v;
}

/* The i-th recorded PUT from the end (0: the last). */
static void last_put(int back, char *key, char *akid, char *region, char *token)
{
	json_t *s = state();
	json_t *puts = json_object_get(s, "puts");
	size_t n = json_array_size(puts);
	ST_CHECK(n > (size_t)back, "only %zu PUTs recorded", n);
	json_t *p = json_array_get(puts, n - 1 - (size_t)back);
	const char *f[] = {"key", "akid", "region", "token"};
	char *out[] = {key, akid, region, token};
	for (int i = 0; i < 4; i++)
		if (out[i])
			snprintf(out[i], 512, "%s", json_string_value(json_object_get(p, f[i])));
	ST_CHECK(!strcmp(json_string_value(json_object_get(p, "content_type")), "application/zip"),
		 "Content-Type");
	ST_CHECK(!strcmp(json_string_value(json_object_get(p, "owner")), "123456789012"),
		 "x-amz-expected-bucket-owner");
	ST_CHECK(strlen(json_string_value(json_object_get(p, "sha256"))) == 64, "x-amz-content-sha256");
	json_decref(s);
}

static size_t nputs(void)
{
	json_t *s = state();
	size_t n = json_array_size(json_object_get(s, "puts"));
	json_decref(s);
	return n;
}

static ember_reporter make(const char *region, const char *profile)
{
	ember_s3_options o = EMBER_S3_OPTIONS_INIT;
	o.bucket = "ember-test";
	o.profiling_group = "pg";
	o.bucket_owner = "123456789012";
	o.endpoint = s3url;
	o.region = region;
	o.aws_profile = profile;
	ember_reporter r;
	ST_CHECK(ember_reporter_s3(&r, &o) == 0, "ember_reporter_s3: %s", ember_last_error());
	ember__s3_set_detect_retry_ms(r.userdata, 0, 0); /* detect again at every upload */
	st_bind(&r);
	return r;
}

/* One window through a fresh reporter; returns the key it was stored under. */
static void one_window(ember_reporter *r, uint32_t seq, char *key)
{
	ember_stats before = st_stats(r);
	st_report(r, jfr, sizeof(jfr), seq, 0);
	ember_stats s = st_wait_done(r, before.uploads_ok + before.uploads_failed + 1, 60);
	ST_CHECK(s.uploads_ok == before.uploads_ok + 1, "window %u not delivered (ok %llu failed "
		 "%llu retried %llu)", seq, (unsigned long long)s.uploads_ok,
		 (unsigned long long)s.uploads_failed, (unsigned long long)s.uploads_retried);
	last_put(0, key, NULL, NULL, NULL);
}

static void expect_key(const char *key, const char *machine)
{
	char want[512];
	snprintf(want, sizeof(want), "profile_pg_%s_%ld_", machine, (long)getpid());
	ST_CHECK(!strncmp(key, want, strlen(want)), "key %s does not start with %s", key, want);
	int y, mo, d, h, mi, s;
	char z[8];
	ST_CHECK(sscanf(key + strlen(want), "%4d-%2d-%2dT%2d-%2d-%2d%7s", &y, &mo, &d, &h, &mi, &s,
			z) == 7 && !strcmp(z, "Z.zip") && y >= 2024 && mo >= 1 && mo <= 12,
		 "key %s: bad time part", key);
	printf("ok   key %s\n", key);
}

static void reset_env(void)
{
	st_clear_aws_env();
	setenv("HOME", tmpdir, 1); /* no ~/.aws of the machine's */
	setenv("AWS_ACCESS_KEY_ID", "ENVAKID", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", dead, 1);
	ctl("set?imds=ok&ecs=ok&role=ember-role&expires_in=3600&ecs_token=&s3_fail=");
	st_log_clear();
}

static void test_ec2(void)
{
	reset_env();
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", base, 1);
	ember_reporter r = make(NULL, NULL); /* region from IMDS */
	char key[512], akid[512], region[512], token[512];
	one_window(&r, 0, key);
	last_put(0, NULL, akid, region, token);
	expect_key(key, "ec2_i-0fake-1_");
	ST_CHECK(!strcmp(akid, "ENVAKID") && !token[0], "credentials from the environment: %s", akid);
	ST_CHECK(!strcmp(region, "eu-central-1"), "region from IMDS: %s", region);
	r.destroy(r.userdata);
}

static void test_fargate(void)
{
	reset_env();
	char uri[128];
	snprintf(uri, sizeof(uri), "%s/ecs", base);
	setenv("ECS_CONTAINER_METADATA_URI_V4", uri, 1);
	ember_reporter r = make("us-west-2", NULL);
	char key[512];
	one_window(&r, 0, key);
	expect_key(key, "ecs_arn:aws:ecs:us-west-2:111122223333:task-prof-cluster-"
		   "158d1c8083dd49d6b527399fd6414f5c_");
	r.destroy(r.userdata);
}

static void test_neither(void)
{
	reset_env();
	ember_reporter r = make("us-east-1", NULL);
	char key[512];
	one_window(&r, 0, key);
	expect_key(key, "onprem__");
	r.destroy(r.userdata);

	/* IMDS turned off: the fake IMDS is never asked */
	reset_env();
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", base, 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	long long puts_before = counter("token_puts");
	r = make("us-east-1", NULL);
	one_window(&r, 0, key);
	expect_key(key, "onprem__");
	ST_CHECK(counter("token_puts") == puts_before, "IMDS was asked although disabled");
	r.destroy(r.userdata);
}

static void test_broken_json(void)
{
	reset_env();
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", base, 1);
	ctl("set?imds=broken");
	ember_reporter r = make("us-east-1", NULL);
	char key[512];
	one_window(&r, 0, key);
	expect_key(key, "unknown__");
	ST_CHECK(st_log_has("EC2 instance identity document is not valid JSON"),
		 "the broken document is not named in the log");
	ctl("set?imds=ok"); /* recovers at the next window */
	one_window(&r, 1, key);
	expect_key(key, "ec2_i-0fake-1_");
	r.destroy(r.userdata);

	reset_env();
	char uri[128];
	snprintf(uri, sizeof(uri), "%s/ecs", base);
	setenv("ECS_CONTAINER_METADATA_URI_V4", uri, 1);
	ctl("set?ecs=broken");
	r = make("us-east-1", NULL);
	one_window(&r, 0, key);
	expect_key(key, "unknown__");
	ST_CHECK(st_log_has("ECS task metadata is not valid JSON"), "broken ECS JSON not logged");
	r.destroy(r.userdata);
}

static void test_slow_never_blocks(void)
{
	reset_env();
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", base, 1);
	ctl("set?imds=slow");
	long long answered = counter("token_answered");
	ember_reporter r = make("us-east-1", NULL);
	/* long lookup timeouts: the IMDS request stays held until released */
	ember__s3_set_lookup_timeouts(r.userdata, 1000, 60000);
	st_report(&r, jfr, sizeof(jfr), 0, 0);
	double deadline = st_now() + 30;
	while (counter("held") < 1 && st_now() < deadline)
		st_sleep(0.05);
	ST_CHECK(counter("held") >= 1, "the uploader never asked IMDS");
	/* the uploader is now blocked in IMDS: report() must still return */
	st_report(&r, jfr, sizeof(jfr), 1, 0);
	ST_CHECK(counter("held") >= 1 && counter("token_answered") == answered,
		 "report() returned only after IMDS answered");
	ember_stats s = st_stats(&r);
	ST_CHECK(s.uploads_ok == 0, "uploaded before the host was known");
	printf("ok   report() returned while the IMDS request was held\n");
	ctl("set?imds=ok"); /* releases it */
	s = st_wait_done(&r, 2, 60);
	ST_CHECK(s.uploads_ok == 2, "windows not delivered after IMDS answered");
	char key[512];
	last_put(1, key, NULL, NULL, NULL);
	expect_key(key, "ec2_i-0fake-1_");
	r.destroy(r.userdata);

	/* too slow: the lookup times out (default 1 s connect, 2 s in all) */
	reset_env();
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", base, 1);
	ctl("set?imds=slow");
	r = make("us-east-1", NULL);
	one_window(&r, 0, key);
	expect_key(key, "unknown__");
	ST_CHECK(st_log_has("IMDS token"), "the timeout is not logged");
	ctl("set?imds=ok");
	one_window(&r, 1, key);
	expect_key(key, "ec2_i-0fake-1_");
	r.destroy(r.userdata);
}

static void test_key_stable_across_retries(void)
{
	reset_env();
	ctl("set?s3_fail=503:SlowDown,500:InternalError");
	ember_reporter r = make("us-east-1", NULL);
	size_t before = nputs();
	char key[512], k1[512], k2[512];
	one_window(&r, 0, key);
	ST_CHECK(nputs() == before + 3, "expected 3 attempts, saw %zu", nputs() - before);
	last_put(1, k1, NULL, NULL, NULL);
	last_put(2, k2, NULL, NULL, NULL);
	ST_CHECK(!strcmp(key, k1) && !strcmp(key, k2), "the key changed across retries: %s %s %s",
		 k2, k1, key);
	ember_stats s = st_stats(&r);
	ST_CHECK(s.uploads_retried == 2, "retried %llu", (unsigned long long)s.uploads_retried);
	ST_CHECK(st_log_has("SlowDown"), "S3's error code is not logged");
	r.destroy(r.userdata);
	printf("ok   key kept across 2 retries\n");
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ST_CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
}

static void test_creds_files(void)
{
	reset_env();
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	char dir[128], path[192];
	snprintf(dir, sizeof(dir), "%s/.aws", tmpdir);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/credentials", dir);
	write_file(path, "# comment\n[default]\naws_access_key_id = DEFAKID\n"
		   "aws_secret_access_key = def-secret\n\n[prof2]\n"
		   "aws_access_key_id=PROF2AKID\naws_secret_access_key=p2\n"
		   "aws_session_token = P2TOKEN\n");
	snprintf(path, sizeof(path), "%s/config", dir);
	write_file(path, "[default]\nregion = eu-west-3\n[profile prof3]\nregion = ap-south-1\n"
		   "s3 =\n  addressing_style = path\naws_access_key_id = PROF3AKID\n"
		   "aws_secret_access_key = p3\n");
	char key[512], akid[512], region[512], token[512];
	ember_reporter r = make(NULL, NULL); /* [default] */
	one_window(&r, 0, key);
	last_put(0, NULL, akid, region, token);
	ST_CHECK(!strcmp(akid, "DEFAKID") && !strcmp(region, "eu-west-3") && !token[0],
		 "default profile: %s %s", akid, region);
	r.destroy(r.userdata);

	setenv("AWS_PROFILE", "prof2", 1);
	r = make("us-east-1", NULL);
	one_window(&r, 0, key);
	last_put(0, NULL, akid, region, token);
	ST_CHECK(!strcmp(akid, "PROF2AKID") && !strcmp(token, "P2TOKEN"), "AWS_PROFILE: %s %s",
		 akid, token);
	r.destroy(r.userdata);

	r = make(NULL, "prof3"); /* the option wins over AWS_PROFILE; [profile x] in config */
	one_window(&r, 0, key);
	last_put(0, NULL, akid, region, token);
	ST_CHECK(!strcmp(akid, "PROF3AKID") && !strcmp(region, "ap-south-1"), "prof3: %s %s", akid,
		 region);
	r.destroy(r.userdata);
	snprintf(path, sizeof(path), "%s/credentials", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/config", dir);
	unlink(path);
	printf("ok   credentials and region from the shared files\n");
}

static void test_creds_container(void)
{
	reset_env();
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	char uri[128], tok[160];
	snprintf(uri, sizeof(uri), "%s/ecs/creds", base);
	snprintf(tok, sizeof(tok), "%s/token", tmpdir);
	write_file(tok, "Bearer-XYZ\n");
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", uri, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tok, 1);
	ctl("set?ecs_token=Bearer-XYZ");
	long long before = counter("ecs_creds");
	ember_reporter r = make("us-east-1", NULL);
	char key[512], akid[512], token[512];
	one_window(&r, 0, key);
	last_put(0, NULL, akid, NULL, token);
	ST_CHECK(!strcmp(akid, "ECSAKID") && !strcmp(token, "ECSTOKEN"), "full URI: %s %s", akid,
		 token);
	one_window(&r, 1, key); /* cached: Expiration is an hour away */
	ST_CHECK(counter("ecs_creds") == before + 1 && counter("ecs_auth_bad") == 0,
		 "container credentials fetched %lld times", counter("ecs_creds") - before);
	r.destroy(r.userdata);

	unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/ecs/rel/creds", 1);
	ctl("set?ecs_token=");
	r = make("us-east-1", NULL);
	ST_CHECK(ember__s3_set_ecs_credentials_host(r.userdata, base) == 0, "hook");
	one_window(&r, 0, key);
	last_put(0, NULL, akid, NULL, token);
	ST_CHECK(!strcmp(akid, "ECSAKID"), "relative URI: %s", akid);
	r.destroy(r.userdata);

	/* a full URI to a non-loopback http address is refused */
	unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://192.0.2.1/creds", 1);
	r = make("us-east-1", NULL);
	st_report(&r, jfr, sizeof(jfr), 0, 0);
	double deadline = st_now() + 30;
	while (!st_log_has("must be https") && st_now() < deadline)
		st_sleep(0.05);
	ST_CHECK(st_log_has("must be https"), "an http full URI to another host was not refused");
	r.destroy(r.userdata);
	printf("ok   container credentials\n");
}

static void test_creds_instance_role(void)
{
	reset_env();
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", base, 1);
	long long before = counter("imds_creds");
	ember_reporter r = make("us-east-1", NULL);
	char key[512], akid[512], token[512], want[64];
	one_window(&r, 0, key);
	last_put(0, NULL, akid, NULL, token);
	snprintf(want, sizeof(want), "IMDSAKID%lld", before + 1);
	ST_CHECK(!strcmp(akid, want) && !strcmp(token, "IMDSTOKEN"), "instance role: %s %s", akid,
		 token);
	one_window(&r, 1, key); /* cached */
	ST_CHECK(counter("imds_creds") == before + 1, "instance credentials not cached");
	/* S3 says ExpiredToken: fetched again, the window retried and delivered */
	ctl("set?s3_fail=400:ExpiredToken");
	one_window(&r, 2, key);
	last_put(0, NULL, akid, NULL, NULL);
	snprintf(want, sizeof(want), "IMDSAKID%lld", before + 2);
	ST_CHECK(counter("imds_creds") == before + 2 && !strcmp(akid, want),
		 "ExpiredToken did not refresh the credentials (%s)", akid);
	uint64_t refreshes;
	ember__s3_counters(r.userdata, NULL, NULL, &refreshes);
	ST_CHECK(refreshes == 1, "refreshes %llu", (unsigned long long)refreshes);
	/* close to Expiration: fetched again before every upload (the
	 * ExpiredToken makes the reporter pick up the short-lived ones) */
	ctl("set?expires_in=120&s3_fail=400:ExpiredToken");
	one_window(&r, 3, key);
	ST_CHECK(counter("imds_creds") == before + 3, "no refresh after ExpiredToken");
	one_window(&r, 4, key);
	one_window(&r, 5, key);
	ST_CHECK(counter("imds_creds") == before + 5, "credentials near Expiration were not "
		 "refreshed (%lld fetches)", counter("imds_creds") - before);
	r.destroy(r.userdata);
	printf("ok   instance role credentials, cached, refreshed\n");
}

static void test_endpoint_and_region_from_env(void)
{
	reset_env();
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1", 1); /* AWS_ENDPOINT_URL_S3 wins */
	setenv("AWS_ENDPOINT_URL_S3", s3url, 1);
	setenv("AWS_DEFAULT_REGION", "sa-east-1", 1);
	ember_s3_options o = EMBER_S3_OPTIONS_INIT;
	o.bucket = "ember-test";
	o.profiling_group = "pg";
	o.bucket_owner = "123456789012";
	ember_reporter r;
	ST_CHECK(ember_reporter_s3(&r, &o) == 0, "ember_reporter_s3: %s", ember_last_error());
	st_bind(&r);
	char key[512], region[512];
	one_window(&r, 0, key);
	last_put(0, NULL, NULL, region, NULL);
	ST_CHECK(!strcmp(region, "sa-east-1"), "AWS_DEFAULT_REGION: %s", region);
	r.destroy(r.userdata);
	setenv("AWS_REGION", "ca-central-1", 1); /* AWS_REGION wins */
	ST_CHECK(ember_reporter_s3(&r, &o) == 0, "ember_reporter_s3: %s", ember_last_error());
	st_bind(&r);
	one_window(&r, 0, key);
	last_put(0, NULL, NULL, region, NULL);
	ST_CHECK(!strcmp(region, "ca-central-1"), "AWS_REGION: %s", region);
	r.destroy(r.userdata);
	printf("ok   endpoint from AWS_ENDPOINT_URL_S3, region from AWS_REGION / AWS_DEFAULT_REGION\n");
}

static void test_no_credentials(void)
{
	reset_env();
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	ember_reporter r = make("us-east-1", NULL);
	st_report(&r, jfr, sizeof(jfr), 0, 0);
	double deadline = st_now() + 30;
	while (!st_log_has("no AWS credentials found") && st_now() < deadline)
		st_sleep(0.05);
	ST_CHECK(st_log_has("no AWS credentials found"), "missing credentials not logged");
	ember_stats s = st_stats(&r);
	ST_CHECK(s.uploads_ok == 0 && s.uploads_retried >= 1, "retried %llu",
		 (unsigned long long)s.uploads_retried);
	r.destroy(r.userdata);
	/* destroy without a spool drops the window, counted */
	printf("ok   no credentials: logged and retried\n");
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ember-s3meta-XXXXXX");
	ST_CHECK(mkdtemp(tmpdir), "mkdtemp");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const char *argv[] = {EMBER_PYTHON3, EMBER_FAKE_AWS, "--lifetime", "280", "--port-file",
			      NULL, NULL};
	argv[5] = "x";
	char *ports = st_spawn(argv, tmpdir);
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", atoi(ports));
	free(ports);
	snprintf(s3url, sizeof(s3url), "%s/s3", base);
	snprintf(state_url, sizeof(state_url), "%s/__ctl/state", base);
	test_ec2();
	test_fargate();
	test_neither();
	test_broken_json();
	test_slow_never_blocks();
	test_key_stable_across_retries();
	test_creds_files();
	test_creds_container();
	test_creds_instance_role();
	test_endpoint_and_region_from_env();
	test_no_credentials();
	st_remove_dir(tmpdir);
	printf("it_s3_meta: all passed\n");
	return 0;
}
