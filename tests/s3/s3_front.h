/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3_front.h - the S3 tests' side of sigv4_front.js over s3rver: starting
 * it, a signed S3 client of the tests' own (libcurl SigV4: list, get),
 * the front's control requests, and the checks of a stored object (zip
 * layout with libzip, metadata.json, `jfr summary` on the recording).
 * Include after s3_test.h.
 */
#ifndef EMBER_S3_FRONT_H
#define EMBER_S3_FRONT_H

#include <fcntl.h>
#include <zip.h>

#include "s3_test.h"

static char tmpdir[64], front[64], ctl_base[64];
static const char bucket[] = "ember-test";

typedef struct blob {
	uint8_t *p;
	size_t n;
} blob;

static __attribute__((unused)) size_t blob_add(char *data, size_t size, size_t n, void *ud)
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
static __attribute__((unused)) blob s3_get(const char *path_query, long *status)
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
static __attribute__((unused)) int list_keys(char keys[][512], int cap)
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

static __attribute__((unused)) json_t *front_stats(void)
{
	char url[128];
	snprintf(url, sizeof(url), "%s/__ctl/stats", ctl_base);
	return st_get_json(url);
}

static __attribute__((unused)) void front_ctl(const char *q)
{
	char url[256];
	snprintf(url, sizeof(url), "%s/__ctl/%s", ctl_base, q);
	long st;
	free(st_get(url, &st));
	ST_CHECK(st == 200, "front control %s: HTTP %ld", q, st);
}

/* The options of a reporter uploading through the front. */
static __attribute__((unused)) ember_s3_options front_options(void)
{
	ember_s3_options o = EMBER_S3_OPTIONS_INIT;
	o.bucket = bucket;
	o.profiling_group = "pg";
	o.bucket_owner = "123456789012";
	o.endpoint = front;
	o.region = "us-east-1";
	return o;
}

/* Such a reporter, bound as an agent would bind it (st_bind). */
static __attribute__((unused)) ember_reporter make(void)
{
	ember_s3_options o = front_options();
	ember_reporter r;
	ST_CHECK(ember_reporter_s3(&r, &o) == 0, "ember_reporter_s3: %s", ember_last_error());
	st_bind(&r);
	return r;
}

static __attribute__((unused)) uint8_t *read_file(const char *path, size_t *len)
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

static __attribute__((unused)) int run(const char **argv, const char *out_path)
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
static __attribute__((unused)) uint8_t *make_jfr(size_t *len)
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

static __attribute__((unused)) void check_object(const char *key, const uint8_t *jfr, size_t jfr_len, int64_t start_ms)
{
	char q[700];
	int qn = snprintf(q, sizeof(q), "/%s/%s", bucket, key);
	ST_CHECK(qn > 0 && (size_t)qn < sizeof(q), "object key too long: %s", key);
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
		if (i == 0 && jfr)
			ST_CHECK(s.size == jfr_len && !memcmp(data[0], jfr, jfr_len),
				 "the JFR entry differs from what was reported");
		if (i == 0)
			jfr_len = s.size;
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
	/* (a final window the program ends within a millisecond of its start
	 * rounds to end == start: seen in CI) */
	ST_CHECK(start_ms < 0 ? e0 >= s0 && s0 > 1700000000000LL && iv == 1000
			      : s0 == start_ms && e0 == start_ms + 1000 && iv == 1000,
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


/* Starts the front (and s3rver) in tmpdir; fills front and ctl_base. */
static __attribute__((unused)) void front_start(void)
{
	char mods[512];
	snprintf(mods, sizeof(mods), "%.*s/node_modules/s3rver",
		 (int)(strrchr(EMBER_S3_FRONT, '/') - EMBER_S3_FRONT), EMBER_S3_FRONT);
	ST_CHECK(access(mods, R_OK) == 0, "%s is missing: run scripts/setup-deps.sh (npm ci in "
		 "tests/s3)", mods);
	char data[128];
	snprintf(data, sizeof(data), "%s/s3data", tmpdir);
	const char *argv[] = {EMBER_NODE, EMBER_S3_FRONT, "--dir", data, "--bucket", bucket,
			      "--key", "S3RVER:S3RVER", "--owner", "123456789012", "--lifetime", "280",
			      "--port-file", "x",
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
}

#endif
