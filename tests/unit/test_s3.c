/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_s3.c - the S3 reporter's pure parts against golden values: object
 * keys (EC2, Fargate ARN with '/', on-prem, unknown, the time format),
 * the zip layout read back with libzip itself (entry names, order,
 * compression method, metadata.json), URLs, the classification of S3
 * error answers, the metadata parsers, SHA-256 test vectors, and option
 * checks. No network.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <zip.h>

#include "agent/agent.h"
#include "aws/credentials.h"
#include "aws/hostmeta.h"
#include "check.h"
#include "report/s3.h"
#include "upload/pipeline.h"
#include "util/sha256.h"

static void test_sha256_vectors(void)
{
	char h[65];
	ember__sha256_hex("", 0, h);
	CHECK_EQ_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ember__sha256_hex("abc", 3, h);
	CHECK_EQ_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes */
	ember__sha256_hex(two, strlen(two), h);
	CHECK_EQ_STR(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	char *m = malloc(1000000);
	memset(m, 'a', 1000000);
	ember__sha256_hex(m, 1000000, h);
	CHECK_EQ_STR(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(m);
}

static time_t utc(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
			.tm_min = mi, .tm_sec = s};
	return timegm(&tm);
}

static void test_time_format(void)
{
	char t[32];
	ember__s3_time(utc(2026, 11, 30, 15, 4, 5), t);
	CHECK_EQ_STR(t, "2026-11-30T15-04-05Z");
	ember__s3_time(0, t);
	CHECK_EQ_STR(t, "1970-01-01T00-00-00Z");
}

static void key_of(const ember__hostmeta *h, const char *group, char *out, size_t cap)
{
	char machine[300];
	ember__hostmeta_machine(h, machine, sizeof(machine));
	CHECK(ember__s3_key(out, cap, group, machine, 4242, "2026-11-30T15-04-05Z") > 0);
}

static void test_keys(void)
{
	char key[1024];
	ember__hostmeta h;
	memset(&h, 0, sizeof(h));
	h.kind = EMBER_HOST_EC2;
	snprintf(h.instance_id, sizeof(h.instance_id), "i-0");
	key_of(&h, "pg", key, sizeof(key));
	CHECK_EQ_STR(key, "profile_pg_ec2_i-0__4242_2026-11-30T15-04-05Z.zip");
	snprintf(h.instance_id, sizeof(h.instance_id), "i-0a_b/c");
	key_of(&h, "pg", key, sizeof(key));
	CHECK_EQ_STR(key, "profile_pg_ec2_i-0a-b-c__4242_2026-11-30T15-04-05Z.zip");

	memset(&h, 0, sizeof(h));
	h.kind = EMBER_HOST_FARGATE;
	snprintf(h.task_arn, sizeof(h.task_arn), "arn:aws:ecs:us-east-1:123456789012:task/"
		 "profiler-metadata-cluster/5261e761e0e2a3d92da3f02c8e5bab1f");
	key_of(&h, "pg", key, sizeof(key));
	/* the seed's own test example */
	CHECK_EQ_STR(key, "profile_pg_ecs_arn:aws:ecs:us-east-1:123456789012:task-profiler-metadata-"
		     "cluster-5261e761e0e2a3d92da3f02c8e5bab1f__4242_2026-11-30T15-04-05Z.zip");

	memset(&h, 0, sizeof(h));
	h.kind = EMBER_HOST_ONPREM;
	key_of(&h, "my_group", key, sizeof(key)); /* the group is not sanitized */
	CHECK_EQ_STR(key, "profile_my_group_onprem___4242_2026-11-30T15-04-05Z.zip");
	h.kind = EMBER_HOST_NONE;
	key_of(&h, "pg", key, sizeof(key));
	CHECK_EQ_STR(key, "profile_pg_unknown___4242_2026-11-30T15-04-05Z.zip");
	h.kind = EMBER_HOST_DETECT; /* not known yet */
	key_of(&h, "pg", key, sizeof(key));
	CHECK_EQ_STR(key, "profile_pg_unknown___4242_2026-11-30T15-04-05Z.zip");
	CHECK(ember__s3_key(key, 20, "pg", "onprem__", 1, "x") < 0);
}

static void test_metadata_json(void)
{
	char j[128];
	size_t n = ember__s3_metadata_json(j, sizeof(j), 1742488884000, 1742488914000, 30000);
	CHECK_EQ_STR(j, "{\"start\":1742488884000,\"end\":1742488914000,\"reporting_interval\":30000}");
	CHECK_EQ_INT(n, strlen(j));
}

static void test_zip_layout(void)
{
	uint8_t jfr[5000];
	for (size_t i = 0; i < sizeof(jfr); i++)
		jfr[i] = (uint8_t)(i % 7 == 0 ? 'F' : 'R'); /* compressible */
	memcpy(jfr, "FLR\0", 4);
	const char *meta = "{\"start\":1,\"end\":2,\"reporting_interval\":3}";
	uint8_t *zipb;
	size_t len;
	CHECK_EQ_INT(ember__s3_zip(jfr, sizeof(jfr), meta, &zipb, &len), 0);
	CHECK(len > 0 && len < sizeof(jfr));
	zip_error_t ze;
	zip_error_init(&ze);
	zip_source_t *src = zip_source_buffer_create(zipb, len, 0, &ze);
	zip_t *za = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze) : NULL;
	CHECK(za != NULL);
	if (!za)
		return;
	CHECK_EQ_INT(zip_get_num_entries(za, 0), 2);
	const char *names[2] = {EMBER_S3_JFR_ENTRY, EMBER_S3_META_ENTRY};
	const void *want[2] = {jfr, meta};
	size_t wlen[2] = {sizeof(jfr), strlen(meta)};
	for (int i = 0; i < 2; i++) {
		zip_stat_t st;
		CHECK_EQ_INT(zip_stat_index(za, (zip_uint64_t)i, 0, &st), 0);
		CHECK_EQ_STR(st.name, names[i]);
		CHECK_EQ_INT(st.comp_method, ZIP_CM_DEFLATE);
		CHECK_EQ_INT(st.size, wlen[i]);
		char *buf = malloc(st.size + 1);
		zip_file_t *f = zip_fopen_index(za, (zip_uint64_t)i, 0);
		CHECK(f != NULL);
		CHECK_EQ_INT(zip_fread(f, buf, st.size), st.size);
		CHECK(memcmp(buf, want[i], wlen[i]) == 0);
		zip_fclose(f);
		free(buf);
	}
	CHECK_EQ_STR(EMBER_S3_JFR_ENTRY, "async_profiler_dump_0.jfr");
	CHECK_EQ_STR(EMBER_S3_META_ENTRY, "metadata.json");
	zip_close(za);
	free(zipb);
}

static void test_urls(void)
{
	char u[512];
	CHECK_EQ_INT(ember__s3_object_url(u, sizeof(u), "http://127.0.0.1:4568/", 1, "b", "us-east-1",
					  "profile_p_ecs_arn:aws:x__1_t.zip"), 0);
	CHECK_EQ_STR(u, "http://127.0.0.1:4568/b/profile_p_ecs_arn%3Aaws%3Ax__1_t.zip");
	CHECK_EQ_INT(ember__s3_object_url(u, sizeof(u), NULL, 0, "bkt", "eu-west-1", "k y.zip"), 0);
	CHECK_EQ_STR(u, "https://bkt.s3.eu-west-1.amazonaws.com/k%20y.zip");
	CHECK(ember__s3_object_url(u, 30, NULL, 0, "bkt", "eu-west-1", "k.zip") < 0);
}

static void test_classify(void)
{
	char code[64], msg[256];
	int refresh;
	const char *skew = "<?xml version=\"1.0\"?><Error><Code>RequestTimeTooSkewed</Code>"
			   "<Message>The difference is too large.</Message></Error>";
	CHECK_EQ_INT(ember__s3_classify(403, skew, code, sizeof(code), msg, sizeof(msg), &refresh),
		     EMBER__SEND_RETRY);
	CHECK_EQ_INT(refresh, 1);
	CHECK_EQ_STR(code, "RequestTimeTooSkewed");
	CHECK_EQ_STR(msg, "The difference is too large.");
	CHECK_EQ_INT(ember__s3_classify(400, "<Error><Code>ExpiredToken</Code></Error>", code,
					sizeof(code), msg, sizeof(msg), &refresh), EMBER__SEND_RETRY);
	CHECK_EQ_INT(refresh, 1);
	CHECK_EQ_INT(ember__s3_classify(403, "<Error><Code>SignatureDoesNotMatch</Code></Error>",
					code, sizeof(code), msg, sizeof(msg), &refresh),
		     EMBER__SEND_PERMANENT);
	CHECK_EQ_INT(refresh, 0);
	CHECK_EQ_INT(ember__s3_classify(403, "<Error><Code>AccessDenied</Code></Error>", code,
					sizeof(code), msg, sizeof(msg), &refresh), EMBER__SEND_PERMANENT);
	CHECK_EQ_INT(ember__s3_classify(404, "<Error><Code>NoSuchBucket</Code></Error>", code,
					sizeof(code), msg, sizeof(msg), &refresh), EMBER__SEND_PERMANENT);
	CHECK_EQ_STR(code, "NoSuchBucket");
	CHECK_EQ_INT(ember__s3_classify(503, "<Error><Code>SlowDown</Code></Error>", code,
					sizeof(code), msg, sizeof(msg), &refresh), EMBER__SEND_RETRY);
	CHECK_EQ_INT(refresh, 0);
	CHECK_EQ_INT(ember__s3_classify(500, "", code, sizeof(code), msg, sizeof(msg), &refresh),
		     EMBER__SEND_RETRY);
	CHECK_EQ_STR(code, "");
	CHECK_EQ_INT(ember__s3_classify(429, NULL, code, sizeof(code), msg, sizeof(msg), &refresh),
		     EMBER__SEND_RETRY);
	CHECK_EQ_INT(ember__s3_classify(408, "x", code, sizeof(code), msg, sizeof(msg), &refresh),
		     EMBER__SEND_RETRY);
	CHECK_EQ_INT(ember__s3_classify(200, "", code, sizeof(code), msg, sizeof(msg), &refresh),
		     EMBER__SEND_OK);
	/* unterminated tags give nothing, not garbage */
	CHECK_EQ_INT(ember__s3_classify(400, "<Error><Code>Bad", code, sizeof(code), msg, sizeof(msg),
					&refresh), EMBER__SEND_PERMANENT);
	CHECK_EQ_STR(code, "");
}

static void test_parse_ec2(void)
{
	const char *doc = "{\n  \"accountId\" : \"123456789012\",\n  \"architecture\" : \"x86_64\",\n"
			  "  \"instanceId\" : \"i-0abc123\",\n  \"instanceType\" : \"m5.large\",\n"
			  "  \"region\" : \"eu-west-1\"\n}";
	ember__hostmeta h;
	CHECK_EQ_INT(ember__hostmeta_parse_ec2(doc, strlen(doc), &h), 0);
	CHECK_EQ_INT(h.kind, EMBER_HOST_EC2);
	CHECK_EQ_STR(h.account, "123456789012");
	CHECK_EQ_STR(h.instance_id, "i-0abc123");
	CHECK_EQ_STR(h.instance_type, "m5.large");
	CHECK_EQ_STR(h.region, "eu-west-1");
	CHECK_EQ_INT(ember__hostmeta_parse_ec2("{\"accountId\":", 13, &h), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "not valid JSON") != NULL);
	const char *noid = "{\"accountId\":\"1\",\"region\":\"r\",\"instanceType\":\"t\"}";
	CHECK_EQ_INT(ember__hostmeta_parse_ec2(noid, strlen(noid), &h), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "instanceId") != NULL);
	const char *num = "{\"accountId\":1,\"region\":\"r\",\"instanceId\":\"i\",\"instanceType\":\"t\"}";
	CHECK_EQ_INT(ember__hostmeta_parse_ec2(num, strlen(num), &h), EMBER_ERR_FORMAT);
	CHECK_EQ_INT(ember__hostmeta_parse_ec2("[1]", 3, &h), EMBER_ERR_FORMAT);
}

static void test_parse_ecs(void)
{
	const char *doc = "{\"Cluster\":\"arn:aws:ecs:us-west-2:111122223333:cluster/default\","
			  "\"TaskARN\":\"arn:aws:ecs:us-west-2:111122223333:task/default/158d1c8083dd49d6b527399fd6414f5c\","
			  "\"Family\":\"x\",\"Limits\":{\"CPU\":0.25,\"Memory\":512},\"Containers\":[]}";
	ember__hostmeta h;
	CHECK_EQ_INT(ember__hostmeta_parse_ecs(doc, strlen(doc), &h), 0);
	CHECK_EQ_INT(h.kind, EMBER_HOST_FARGATE);
	CHECK_EQ_STR(h.account, "111122223333");
	CHECK_EQ_STR(h.region, "us-west-2");
	CHECK_EQ_STR(h.cluster_arn, "arn:aws:ecs:us-west-2:111122223333:cluster/default");
	CHECK(h.cpu_limit == 0.25);
	CHECK_EQ_INT(h.memory_limit_mb, 512);
	char m[300];
	ember__hostmeta_machine(&h, m, sizeof(m));
	CHECK_EQ_STR(m, "ecs_arn:aws:ecs:us-west-2:111122223333:task-default-158d1c8083dd49d6b527399fd6414f5c_");
	const char *bad = "{\"Cluster\":\"c\",\"TaskARN\":\"task/xyz\"}";
	CHECK_EQ_INT(ember__hostmeta_parse_ecs(bad, strlen(bad), &h), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "not an ARN") != NULL);
	CHECK_EQ_INT(ember__hostmeta_parse_ecs("{\"TaskARN\":", 11, &h), EMBER_ERR_FORMAT);
}

static void test_host_from_public(void)
{
	ember__hostmeta h;
	ember_host_metadata m = EMBER_HOST_METADATA_INIT;
	m.kind = EMBER_HOST_EC2;
	CHECK_EQ_INT(ember__hostmeta_from_public(&h, &m), EMBER_ERR_INVALID); /* no instance id */
	m.ec2_instance_id = "i-9_9";
	CHECK_EQ_INT(ember__hostmeta_from_public(&h, &m), 0);
	char mm[300];
	ember__hostmeta_machine(&h, mm, sizeof(mm));
	CHECK_EQ_STR(mm, "ec2_i-9-9_");
	m.kind = EMBER_HOST_FARGATE;
	CHECK_EQ_INT(ember__hostmeta_from_public(&h, &m), EMBER_ERR_INVALID);
	m.kind = (ember_host_kind)42;
	CHECK_EQ_INT(ember__hostmeta_from_public(&h, &m), EMBER_ERR_INVALID);
	m.kind = EMBER_HOST_ONPREM;
	CHECK_EQ_INT(ember__hostmeta_from_public(&h, &m), 0);
	CHECK_EQ_INT(h.kind, EMBER_HOST_ONPREM);
	m.sz = 0;
	CHECK_EQ_INT(ember__hostmeta_from_public(&h, &m), EMBER_ERR_INVALID);
}

static void test_options(void)
{
	ember_reporter r;
	ember_s3_options o = EMBER_S3_OPTIONS_INIT;
	CHECK_EQ_INT(ember_reporter_s3(&r, &o), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "bucket") != NULL);
	o.bucket = "Bad_Bucket";
	o.profiling_group = "pg";
	CHECK_EQ_INT(ember_reporter_s3(&r, &o), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "Bad_Bucket") != NULL);
	o.bucket = "good-bucket";
	o.profiling_group = NULL;
	CHECK_EQ_INT(ember_reporter_s3(&r, &o), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "profiling group") != NULL);
	o.profiling_group = "pg";
	o.bucket_owner = "12345";
	CHECK_EQ_INT(ember_reporter_s3(&r, &o), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "12-digit") != NULL);
	o.bucket_owner = "123456789012";
	o.endpoint = "ftp://x";
	CHECK_EQ_INT(ember_reporter_s3(&r, &o), EMBER_ERR_INVALID);
	o.endpoint = "http://127.0.0.1:9";
	o.region = "eu west";
	CHECK_EQ_INT(ember_reporter_s3(&r, &o), EMBER_ERR_INVALID);
	o.region = "eu-west-1";
	CHECK_EQ_INT(ember_reporter_s3(&r, &o), 0);
	CHECK_EQ_INT(r.formats, EMBER_FORMAT_JFR);
	/* a pprof report is refused with a message, not crashed on */
	ember_report rep;
	memset(&rep, 0, sizeof(rep));
	rep.format = EMBER_FORMAT_PPROF;
	CHECK_EQ_INT(r.report(r.userdata, &rep), EMBER_ERR_INVALID);
	r.destroy(r.userdata);
	CHECK_EQ_INT(ember_reporter_s3(&r, NULL), EMBER_ERR_INVALID);
}

static void test_ini(void)
{
	const char *t = "# comment\r\n; other\r\n[default]\r\nregion = eu-west-1\r\n"
			"[profile   dev ]\ns3 =\n  region = nested-not-this\nregion=us-east-2\n"
			"AWS_ACCESS_KEY_ID = UPPER\n[profile x]\n";
	char out[64];
	CHECK_EQ_INT(ember__aws_ini_get_text(t, strlen(t), "default", "region", out, sizeof(out)), 1);
	CHECK_EQ_STR(out, "eu-west-1");
	CHECK_EQ_INT(ember__aws_ini_get_text(t, strlen(t), "profile dev", "region", out, sizeof(out)), 1);
	CHECK_EQ_STR(out, "us-east-2");
	CHECK_EQ_INT(ember__aws_ini_get_text(t, strlen(t), "profile dev", "aws_access_key_id", out,
					     sizeof(out)), 1);
	CHECK_EQ_STR(out, "UPPER");
	CHECK_EQ_INT(ember__aws_ini_get_text(t, strlen(t), "profile x", "region", out, sizeof(out)), 0);
	CHECK_EQ_INT(ember__aws_ini_get_text(t, strlen(t), "nope", "region", out, sizeof(out)), 0);
	const char *bad = "[default\nregion = x\n";
	CHECK_EQ_INT(ember__aws_ini_get_text(bad, strlen(bad), "default", "region", out, sizeof(out)),
		     EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "line 1") != NULL);
	const char *noeq = "[default]\njust words\n";
	CHECK_EQ_INT(ember__aws_ini_get_text(noeq, strlen(noeq), "default", "region", out,
					     sizeof(out)), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "line 2") != NULL);
	char small[4];
	CHECK_EQ_INT(ember__aws_ini_get_text(t, strlen(t), "default", "region", small, sizeof(small)),
		     EMBER_ERR_FORMAT);
	CHECK_EQ_INT(ember__aws_ini_get("/nonexistent/dir/credentials", "default", "x", out,
					sizeof(out)), 0);
}

static void test_creds_json(void)
{
	CHECK_EQ_INT(ember__aws_parse_time("2026-11-30T15:04:05Z"), 1796051045);
	CHECK_EQ_INT(ember__aws_parse_time("2026-11-30T15:04:05.123Z"), 1796051045);
	CHECK_EQ_INT(ember__aws_parse_time("2026-11-30T15:04:05+02:00"), -1);
	CHECK_EQ_INT(ember__aws_parse_time("yesterday"), -1);
	const char *ok = "{\"Code\":\"Success\",\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"SK\","
			 "\"Token\":\"TK\",\"Expiration\":\"2026-11-30T15:04:05Z\"}";
	ember__aws_creds c;
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(ember__aws_parse_creds_json("t", ok, strlen(ok), &c), 0);
	CHECK_EQ_STR(c.access_key_id, "AK");
	CHECK_EQ_STR(c.secret, "SK");
	CHECK_EQ_STR(c.token, "TK");
	CHECK_EQ_INT(c.expires, 1796051045);
	ember__aws_creds_clear(&c);
	CHECK(c.token == NULL && c.access_key_id[0] == 0);
	const char *failed = "{\"Code\":\"AssumeRoleUnauthorizedAccess\",\"Message\":\"no\"}";
	CHECK_EQ_INT(ember__aws_parse_creds_json("t", failed, strlen(failed), &c), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "AssumeRoleUnauthorizedAccess") != NULL);
	const char *colon = "{\"AccessKeyId\":\"A:B\",\"SecretAccessKey\":\"S\",\"Token\":\"T\","
			    "\"Expiration\":\"2026-11-30T15:04:05Z\"}";
	CHECK_EQ_INT(ember__aws_parse_creds_json("t", colon, strlen(colon), &c), EMBER_ERR_FORMAT);
	const char *noexp = "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\",\"Token\":\"T\"}";
	CHECK_EQ_INT(ember__aws_parse_creds_json("t", noexp, strlen(noexp), &c), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "Expiration") != NULL);
}

static void clear_s3_env(void)
{
	const char *v[] = {"EMBERPROF_S3_BUCKET", "EMBERPROF_S3_PROFILING_GROUP",
			   "EMBERPROF_S3_BUCKET_OWNER", "EMBERPROF_S3_ENDPOINT", "EMBERPROF_S3_REGION",
			   "EMBERPROF_S3_AWS_PROFILE", "EMBERPROF_S3_SPOOL_DIR", "EMBERPROF_S3_HOST"};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		unsetenv(v[i]);
}

static void test_env(void)
{
	clear_s3_env();
	ember_builder *b;
	CHECK_EQ_INT(ember_builder_new(&b, "myapp"), 0);
	size_t n0 = b->cfg.nreporters;
	setenv("EMBERPROF_S3_REGION", "eu-west-1", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), EMBER_ERR_INVALID); /* no bucket */
	CHECK(strstr(ember_last_error(), "EMBERPROF_S3_REGION is set but EMBERPROF_S3_BUCKET") != NULL);
	setenv("EMBERPROF_S3_BUCKET", "my-bucket", 1);
	setenv("EMBERPROF_S3_BUCKET_OWNER", "1234", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "EMBERPROF_S3_BUCKET_OWNER=\"1234\"") != NULL);
	setenv("EMBERPROF_S3_BUCKET_OWNER", "123456789012", 1);
	setenv("EMBERPROF_S3_HOST", "mars", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "EMBERPROF_S3_HOST") != NULL);
	setenv("EMBERPROF_S3_HOST", "onprem", 1);
	setenv("EMBERPROF_S3_ENDPOINT", "http://127.0.0.1:9", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), 0);
	CHECK_EQ_INT(b->cfg.nreporters, n0 + 1);
	CHECK_EQ_STR(b->cfg.reporters[b->cfg.nreporters - 1].name, "s3");
	CHECK_EQ_INT(b->cfg.reporters[b->cfg.nreporters - 1].formats, EMBER_FORMAT_JFR);
	ember_builder_free(b);
	clear_s3_env();
}

int main(void)
{
	RUN(test_sha256_vectors);
	RUN(test_time_format);
	RUN(test_keys);
	RUN(test_metadata_json);
	RUN(test_zip_layout);
	RUN(test_urls);
	RUN(test_classify);
	RUN(test_parse_ec2);
	RUN(test_parse_ecs);
	RUN(test_host_from_public);
	RUN(test_options);
	RUN(test_env);
	RUN(test_ini);
	RUN(test_creds_json);
	return CHECK_DONE();
}
