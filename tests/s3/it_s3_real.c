/*
 * it_s3_real.c - the S3 reporter against a real S3 implementation: npm
 * s3rver behind sigv4_front.js, which re-computes each request's
 * Signature V4 with AWS's own signer and rejects mismatches.
 *
 * A real JFR recording (made by the JDK: java -XX:StartFlightRecording)
 * is handed to report() as the agent hands its windows; then the test,
 * as an S3 client of its own (libcurl SigV4), lists the bucket, downloads
 * the zip, checks entry names, order and compression with libzip, parses
 * metadata.json, and runs `jfr summary` on the JFR inside. Then a wrong
 * secret, a tampered header and a tampered body must be rejected by the
 * front and counted by the reporter, and a window sent during an outage
 * (the front answering 503) must arrive once it ends.
 */
#include <fcntl.h>
#include <zip.h>

#include "s3_test.h"

static char tmpdir[64], front[64], ctl_base[64];
static const char bucket[] = "ember-test";

typedef struct blob {
	uint8_t *p;
	size_t n;
} blob;

static size_t blob_add(char *data, size_t size, size_t n, void *ud)
{
	blob *b = ud;
	size_t len = size * n;
	uint8_t *q = realloc(b->p, b->n + len + 1);
	ST_CHECK(q, "oom");
	memcpy(q + b->n, data, len);
	b->n += len;
	q[b->n] = 0;
	b->p = q;
	return len;
}

/* A signed GET through the front, as any S3 client would make it. */
static blob s3_get(const char *path_query, long *status)
{
	char url[1024];
	snprintf(url, sizeof(url), "%s%s", front, path_query);
	CURL *c = curl_easy_init();
	blob b = {0};
	struct curl_slist *h = curl_slist_append(NULL, "x-amz-content-sha256: "
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
	curl_easy_setopt(c, CURLOPT_USERPWD, "S3RVER:S3RVER");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, blob_add);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	CURLcode e = curl_easy_perform(c);
	ST_CHECK(e == CURLE_OK, "GET %s: %s", url, curl_easy_strerror(e));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (!b.p)
		b.p = calloc(1, 1);
	return b;
}

/* The keys of the bucket (ListObjectsV2), newline-separated. */
static int list_keys(char keys[][512], int cap)
{
	char q[128];
	snprintf(q, sizeof(q), "/%s?list-type=2", bucket);
	long st;
	blob b = s3_get(q, &st);
	ST_CHECK(st == 200, "ListObjectsV2: HTTP %ld %.300s", st, (char *)b.p);
	int n = 0;
	for (char *p = (char *)b.p; (p = strstr(p, "<Key>")) && n < cap; n++) {
		p += 5;
		char *e = strstr(p, "</Key>");
		ST_CHECK(e && e - p < 512, "bad listing");
		memcpy(keys[n], p, (size_t)(e - p));
		keys[n][e - p] = '\0';
		p = e;
	}
	free(b.p);
	return n;
}

static json_t *front_stats(void)
{
	char url[128];
	snprintf(url, sizeof(url), "%s/__ctl/stats", ctl_base);
	return st_get_json(url);
}

static void front_ctl(const char *q)
{
	char url[256];
	snprintf(url, sizeof(url), "%s/__ctl/%s", ctl_base, q);
	long st;
	free(st_get(url, &st));
	ST_CHECK(st == 200, "front control %s: HTTP %ld", q, st);
}

static ember_reporter make(void)
{
	ember_s3_options o = EMBER_S3_OPTIONS_INIT;
	o.bucket = bucket;
	o.profiling_group = "pg";
	o.bucket_owner = "123456789012";
	o.endpoint = front;
	o.region = "us-east-1";
	ember_reporter r;
	ST_CHECK(ember_reporter_s3(&r, &o) == 0, "ember_reporter_s3: %s", ember_last_error());
	st_bind(&r);
	return r;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ST_CHECK(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	ST_CHECK(b && fread(b, 1, (size_t)n, f) == (size_t)n, "cannot read %s", path);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int run(const char **argv, const char *out_path)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (out_path)
		posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	ST_CHECK(rc == 0, "cannot run %s: %s", argv[0], strerror(rc));
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A real JFR recording from the JDK (the agent's own encoder comes with
 * the jfr helper's work; see the final report). */
static uint8_t *make_jfr(size_t *len)
{
	char path[128], opt[200];
	snprintf(path, sizeof(path), "%s/rec.jfr", tmpdir);
	snprintf(opt, sizeof(opt), "-XX:StartFlightRecording:filename=%s,dumponexit=true", path);
	ST_CHECK(EMBER_JAVA[0], "java not found: run scripts/setup-deps.sh (openjdk-17-jdk-headless)");
	const char *argv[] = {EMBER_JAVA, "-Xshare:auto", opt, "-version", NULL};
	char log[128];
	snprintf(log, sizeof(log), "%s/java.out", tmpdir);
	ST_CHECK(run(argv, log) == 0, "java could not make a recording");
	return read_file(path, len);
}

static void check_object(const char *key, const uint8_t *jfr, size_t jfr_len, int64_t start_ms)
{
	char q[700];
	snprintf(q, sizeof(q), "/%s/%s", bucket, key);
	/* the key holds ':' only for ECS; here it is plain */
	long st;
	blob b = s3_get(q, &st);
	ST_CHECK(st == 200 && b.n > 0, "GetObject %s: HTTP %ld", key, st);
	zip_error_t ze;
	zip_error_init(&ze);
	zip_source_t *src = zip_source_buffer_create(b.p, b.n, 0, &ze);
	zip_t *za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
	ST_CHECK(za, "the object is not a zip: %s", zip_error_strerror(&ze));
	ST_CHECK(zip_get_num_entries(za, 0) == 2, "%lld entries",
		 (long long)zip_get_num_entries(za, 0));
	const char *names[] = {"async_profiler_dump_0.jfr", "metadata.json"};
	char *data[2];
	for (int i = 0; i < 2; i++) {
		zip_stat_t s;
		ST_CHECK(zip_stat_index(za, (zip_uint64_t)i, 0, &s) == 0, "stat %d", i);
		ST_CHECK(!strcmp(s.name, names[i]), "entry %d is %s, expected %s", i, s.name, names[i]);
		ST_CHECK(s.comp_method == ZIP_CM_DEFLATE, "entry %s is not Deflated (%d)", s.name,
			 (int)s.comp_method);
		data[i] = malloc(s.size + 1);
		zip_file_t *f = zip_fopen_index(za, (zip_uint64_t)i, 0);
		ST_CHECK(f && zip_fread(f, data[i], s.size) == (zip_int64_t)s.size, "read %s", s.name);
		data[i][s.size] = '\0';
		zip_fclose(f);
		if (i == 0)
			ST_CHECK(s.size == jfr_len && !memcmp(data[0], jfr, jfr_len),
				 "the JFR entry differs from what was reported");
	}
	zip_close(za);
	/* metadata.json: compact, in this order, milliseconds */
	long long s0, e0, iv;
	char tail[4];
	ST_CHECK(sscanf(data[1], "{\"start\":%lld,\"end\":%lld,\"reporting_interval\":%lld%3s", &s0,
			&e0, &iv, tail) == 4 && !strcmp(tail, "}"), "metadata.json is %s", data[1]);
	json_error_t je;
	json_t *j = json_loads(data[1], 0, &je);
	ST_CHECK(j && json_object_size(j) == 3, "metadata.json is not a 3-member object");
	json_decref(j);
	ST_CHECK(s0 == start_ms && e0 == start_ms + 1000 && iv == 1000,
		 "metadata.json %s, expected start %lld", data[1], (long long)start_ms);
	/* `jfr summary` reads the recording we stored */
	char path[128], out[128];
	snprintf(path, sizeof(path), "%s/downloaded.jfr", tmpdir);
	snprintf(out, sizeof(out), "%s/summary.txt", tmpdir);
	FILE *f = fopen(path, "wb");
	ST_CHECK(f && fwrite(data[0], 1, jfr_len, f) == jfr_len && fclose(f) == 0, "write %s", path);
	ST_CHECK(EMBER_JFR[0], "jfr not found: run scripts/setup-deps.sh");
	const char *argv[] = {EMBER_JFR, "summary", path, NULL};
	ST_CHECK(run(argv, out) == 0, "jfr summary failed on the downloaded recording");
	size_t sl;
	char *summary = (char *)read_file(out, &sl);
	summary[sl] = '\0';
	ST_CHECK(strstr(summary, "Event Type") && strstr(summary, "jdk."), "jfr summary: %.300s",
		 summary);
	free(summary);
	free(data[0]);
	free(data[1]);
	free(b.p);
	printf("ok   s3://%s/%s: 2 Deflated entries in order, metadata.json %s, jfr summary reads it\n",
	       bucket, key, "checked");
}

static int64_t report_start_ms;

static void report_window(ember_reporter *r, const uint8_t *jfr, size_t len, uint32_t seq)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	ember_report rep;
	memset(&rep, 0, sizeof(rep));
	rep.app_name = "s3test";
	rep.profile_type = "jfr";
	rep.format = EMBER_FORMAT_JFR;
	rep.jfr = jfr;
	rep.jfr_len = len;
	rep.interval_ms = 1000;
	rep.start_ns = now - 1000000000;
	rep.end_ns = now;
	rep.seq = seq;
	report_start_ms = rep.start_ns / 1000000;
	ST_CHECK(r->report(r->userdata, &rep) == 0, "report: %s", ember_last_error());
}

/* One window that the front must refuse; returns after the reporter gave up. */
static void expect_rejected(ember_reporter *r, const uint8_t *jfr, size_t len, const char *code,
			    const char *what)
{
	json_t *s0 = front_stats();
	long long rej0 = st_json_int(s0, "rejected");
	json_decref(s0);
	ember_stats before = st_stats(r);
	st_log_clear();
	report_window(r, jfr, len, 7);
	ember_stats s = st_wait_done(r, before.uploads_ok + before.uploads_failed + 1, 60);
	ST_CHECK(s.uploads_failed == before.uploads_failed + 1 && s.uploads_ok == before.uploads_ok,
		 "%s: not refused (ok %llu failed %llu)", what, (unsigned long long)s.uploads_ok,
		 (unsigned long long)s.uploads_failed);
	json_t *s1 = front_stats();
	ST_CHECK(st_json_int(s1, "rejected") == rej0 + 1, "%s: the front did not reject it", what);
	json_decref(s1);
	ST_CHECK(st_log_has(code), "%s: %s not logged", what, code);
	printf("ok   %s: rejected by the front (%s), counted as failed\n", what, code);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ember-s3real-XXXXXX");
	ST_CHECK(mkdtemp(tmpdir), "mkdtemp");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	char mods[512];
	snprintf(mods, sizeof(mods), "%s/../node_modules/s3rver", EMBER_S3_FRONT);
	snprintf(mods, sizeof(mods), "%.*s/node_modules/s3rver",
		 (int)(strrchr(EMBER_S3_FRONT, '/') - EMBER_S3_FRONT), EMBER_S3_FRONT);
	ST_CHECK(access(mods, R_OK) == 0, "%s is missing: run scripts/setup-deps.sh (npm ci in "
		 "tests/s3)", mods);
	char data[128];
	snprintf(data, sizeof(data), "%s/s3data", tmpdir);
	const char *argv[] = {EMBER_NODE, EMBER_S3_FRONT, "--dir", data, "--bucket", bucket,
			      "--key", "S3RVER:S3RVER", "--lifetime", "280", "--port-file", "x",
			      NULL};
	char *ports = st_spawn(argv, tmpdir);
	json_error_t je;
	json_t *pj = json_loads(ports, 0, &je);
	ST_CHECK(pj, "bad port file %s", ports);
	int port = (int)st_json_int(pj, "port");
	json_decref(pj);
	free(ports);
	snprintf(front, sizeof(front), "http://127.0.0.1:%d", port);
	snprintf(ctl_base, sizeof(ctl_base), "%s", front);

	size_t jfr_len;
	uint8_t *jfr = make_jfr(&jfr_len);

	st_clear_aws_env();
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("HOME", tmpdir, 1);

	/* 1. delivered, listed, downloaded, read */
	ember_reporter r = make();
	report_window(&r, jfr, jfr_len, 0);
	ember_stats s = st_wait_done(&r, 1, 60);
	ST_CHECK(s.uploads_ok == 1, "the window was not stored (failed %llu)",
		 (unsigned long long)s.uploads_failed);
	ST_CHECK(s.bytes_sent > 0 && s.bytes_sent < jfr_len, "bytes_sent %llu: the zip should be "
		 "smaller than the JFR", (unsigned long long)s.bytes_sent);
	char keys[8][512];
	int n = list_keys(keys, 8);
	ST_CHECK(n == 1, "%d objects in the bucket", n);
	char want[128];
	snprintf(want, sizeof(want), "profile_pg_onprem___%ld_", (long)getpid());
	ST_CHECK(!strncmp(keys[0], want, strlen(want)), "key %s", keys[0]);
	check_object(keys[0], jfr, jfr_len, report_start_ms);

	/* 2. outage: the front answers 503 three times, then the window arrives */
	front_ctl("fail?status=503&code=ServiceUnavailable&n=3");
	report_window(&r, jfr, jfr_len, 1);
	s = st_wait_done(&r, 2, 120);
	ST_CHECK(s.uploads_ok == 2 && s.uploads_retried == 3, "after the outage: ok %llu retried %llu",
		 (unsigned long long)s.uploads_ok, (unsigned long long)s.uploads_retried);
	ST_CHECK(list_keys(keys, 8) == 2, "the window sent during the outage is not in the bucket");
	printf("ok   outage (3 x 503): retried 3 times, then stored\n");

	/* 3. a tampered header and a tampered body */
	front_ctl("tamper?what=header");
	expect_rejected(&r, jfr, jfr_len, "SignatureDoesNotMatch", "tampered header");
	front_ctl("tamper?what=body");
	expect_rejected(&r, jfr, jfr_len, "SignatureDoesNotMatch", "tampered body");
	uint64_t auth;
	ember__s3_counters(r.userdata, NULL, &auth, NULL);
	ST_CHECK(auth == 2, "auth failures %llu", (unsigned long long)auth);
	r.destroy(r.userdata);

	/* 4. a wrong secret */
	setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1);
	r = make();
	expect_rejected(&r, jfr, jfr_len, "SignatureDoesNotMatch", "wrong secret");
	ST_CHECK(st_log_has("credentials from the environment"), "the credentials' source is not "
		 "named");
	r.destroy(r.userdata);
	ST_CHECK(list_keys(keys, 8) == 2, "a refused window reached the bucket");

	free(jfr);
	st_cleanup();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	printf("it_s3_real: all passed\n");
	return 0;
}
