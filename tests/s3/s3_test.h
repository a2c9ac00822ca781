/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3_test.h - shared pieces of the S3 reporter's integration tests:
 * starting a test peer (fake_aws.py, or sigv4_front.js over s3rver) and
 * reading its port file, control requests (libcurl), JSON answers
 * (jansson), a log collector, and driving a reporter with JFR windows
 * directly (until the agent's JFR encoder lands, see the final report).
 *
 * Peers are separate programs, each with a bounded lifetime; the tests
 * kill them at exit. No assertion here is on time: waits are bounded
 * polls on the peers' counters.
 */
#ifndef EMBER_S3_TEST_H
#define EMBER_S3_TEST_H

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"
#include "report/s3.h"

extern char **environ;

#define ST_FAIL(...)                                                        \
	do {                                                                \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
		fprintf(stderr, __VA_ARGS__);                               \
		fprintf(stderr, "\n");                                      \
		st_cleanup();                                               \
		exit(1);                                                    \
	} while (0)
#define ST_CHECK(cond, ...)                                                 \
	do {                                                                \
		if (!(cond))                                                \
			ST_FAIL(__VA_ARGS__);                               \
	} while (0)

static pid_t st_peers[4];
static int st_npeers;

static __attribute__((unused)) void st_cleanup(void)
{
	for (int i = 0; i < st_npeers; i++) {
		if (st_peers[i] > 0) {
			kill(st_peers[i], SIGTERM);
			waitpid(st_peers[i], NULL, 0);
			st_peers[i] = 0;
		}
	}
}

/* Removes a test's scratch directory (its peers stopped first). */
static __attribute__((unused)) void st_remove_dir(const char *dir)
{
	st_cleanup();
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static __attribute__((unused)) double st_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static __attribute__((unused)) void st_sleep(double s)
{
	struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* Starts argv (argv[n-2] is "--port-file", argv[n-1] filled in here) and
 * waits for the port file; returns its contents (malloc'd). */
static __attribute__((unused)) char *st_spawn(const char **argv, const char *dir)
{
	char portfile[256];
	snprintf(portfile, sizeof(portfile), "%s/ports", dir);
	size_t n = 0;
	while (argv[n])
		n++;
	argv[n - 1] = portfile;
	pid_t pid;
	int rc = posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ);
	ST_CHECK(rc == 0, "cannot start %s: %s", argv[0], strerror(rc));
	st_peers[st_npeers++] = pid;
	double deadline = st_now() + 60;
	FILE *f = NULL;
	while (!(f = fopen(portfile, "r")) && st_now() < deadline) {
		int st;
		ST_CHECK(waitpid(pid, &st, WNOHANG) == 0, "%s %s exited at start", argv[0], argv[1]);
		st_sleep(0.05);
	}
	ST_CHECK(f, "%s did not write its port file", argv[1]);
	char *buf = calloc(1, 256);
	ST_CHECK(fread(buf, 1, 255, f) > 0, "empty port file");
	fclose(f);
	return buf;
}

static size_t st_collect(char *data, size_t size, size_t n, void *ud)
{
	char **buf = ud;
	size_t old = *buf ? strlen(*buf) : 0, len = size * n;
	char *s = realloc(*buf, old + len + 1);
	ST_CHECK(s, "oom");
	memcpy(s + old, data, len);
	s[old + len] = '\0';
	*buf = s;
	return len;
}

/* A plain GET; returns the body (malloc'd, never NULL) and the status. */
static __attribute__((unused)) char *st_get(const char *url, long *status)
{
	CURL *c = curl_easy_init();
	ST_CHECK(c, "curl_easy_init");
	char *body = NULL;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, st_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	CURLcode e = curl_easy_perform(c);
	ST_CHECK(e == CURLE_OK, "GET %s failed: %s", url, curl_easy_strerror(e));
	long s = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &s);
	curl_easy_cleanup(c);
	if (status)
		*status = s;
	return body ? body : strdup("");
}

static __attribute__((unused)) json_t *st_get_json(const char *url)
{
	long status;
	char *b = st_get(url, &status);
	json_error_t err;
	json_t *j = json_loads(b, 0, &err);
	ST_CHECK(status == 200 && j, "GET %s: HTTP %ld, not JSON: %.200s", url, status, b);
	free(b);
	return j;
}

static __attribute__((unused)) long long st_json_int(json_t *j, const char *key)
{
	json_t *v = json_object_get(j, key);
	ST_CHECK(v && json_is_integer(v), "no integer \"%s\" in the peer's state", key);
	return json_integer_value(v);
}

/* ---- logs ---- */

static pthread_mutex_t st_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char st_log_buf[65536];

static __attribute__((unused)) void st_log(void *ud, ember_log_level level, const char *msg)
{
	pthread_mutex_lock(&st_log_mu);
	size_t n = strlen(st_log_buf);
	snprintf(st_log_buf + n, sizeof(st_log_buf) - n, "%d %s\n", (int)level, msg);
	pthread_mutex_unlock(&st_log_mu);
	fprintf(stderr, "  [log %d] %s\n", (int)level, msg);
}

static __attribute__((unused)) int st_log_has(const char *needle)
{
	pthread_mutex_lock(&st_log_mu);
	int found = strstr(st_log_buf, needle) != NULL;
	pthread_mutex_unlock(&st_log_mu);
	return found;
}

static __attribute__((unused)) void st_log_clear(void)
{
	pthread_mutex_lock(&st_log_mu);
	st_log_buf[0] = '\0';
	pthread_mutex_unlock(&st_log_mu);
}

/* ---- reporters ---- */

/* Binds a reporter as an agent would, with the log collector. */
static __attribute__((unused)) void st_bind(ember_reporter *r)
{
	ember_agent_info info;
	memset(&info, 0, sizeof(info));
	info.app_name = "s3test";
	info.sample_rate_hz = 100;
	info.interval_ms = 1000;
	info.log_fn = st_log;
	info.log_level = EMBER_LOG_DEBUG;
	ST_CHECK(r->bind(r->userdata, &info) == 0, "bind: %s", ember_last_error());
}

/* Hands one JFR window to the reporter as the agent does; returns the
 * window's start, ns since the epoch. */
static __attribute__((unused)) int64_t st_report(ember_reporter *r, const uint8_t *jfr, size_t len,
						 uint32_t seq, int final)
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
	rep.final = final;
	ST_CHECK(r->report(r->userdata, &rep) == 0, "report: %s", ember_last_error());
	return rep.start_ns;
}

static __attribute__((unused)) ember_stats st_stats(ember_reporter *r)
{
	ember_stats s;
	memset(&s, 0, sizeof(s));
	r->stats(r->userdata, &s);
	return s;
}

/* Waits (bounded) until ok + failed reaches n; returns the stats. */
static __attribute__((unused)) ember_stats st_wait_done(ember_reporter *r, uint64_t n,
							double timeout)
{
	double deadline = st_now() + timeout;
	ember_stats s;
	for (;;) {
		s = st_stats(r);
		if (s.uploads_ok + s.uploads_failed >= n || st_now() > deadline)
			return s;
		st_sleep(0.05);
	}
}

/* Clears every AWS variable of the environment the tests run in. */
static __attribute__((unused)) void st_clear_aws_env(void)
{
	static const char *const vars[] = {
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_PROFILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_DISABLED", "AWS_REGION",
		"AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL",
		"ECS_CONTAINER_METADATA_URI_V4", "http_proxy", "https_proxy", "HTTP_PROXY",
		"HTTPS_PROXY", "ALL_PROXY", "all_proxy"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

#endif
