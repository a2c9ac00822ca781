/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_pyro_errors.c - how the reporter treats the server's answers:
 *   400 (Connect invalid_argument)  permanent: each window tried once,
 *                                   logged with the server's message, counted;
 *   401 (wrong credentials)         permanent, the same;
 *   429 with Retry-After: 1         retried no sooner than the server asked,
 *                                   then every window delivered in order;
 *   500                             retried with backoff, then delivered.
 */
#include "pyro_test.h"

static it_capture cap;
static pt_log logbuf;

static ember_agent *run_app(const fake_server *f, const char *token, ember_stats *st)
{
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = f->url;
	o.bearer_token = token;
	it_capture_free(&cap);
	memset(&cap, 0, sizeof(cap));
	ember_agent *a = pt_build("errors.app", &o, &cap, &logbuf, NULL);
	IT_CHECK(pt_run(&a, 2.5, NULL) == 0, "stop: %s", ember_last_error());
	ember_agent_stats(a, st);
	return a;
}

static void test_permanent(const char *mode, const char *token, const char *must_log)
{
	fake_server f;
	const char *args[] = {"--expect-bearer", "good", NULL};
	fake_start(&f, args);
	if (mode)
		fake_cmd(&f, mode);
	ember_stats st;
	ember_agent *a = run_app(&f, token, &st);
	int acc, rej, req;
	fake_counts(&f, &acc, &rej, &req);
	printf("%s: %zu windows, %d requests, %llu failed, %llu retried\n", must_log, cap.n, req,
	       (unsigned long long)st.uploads_failed, (unsigned long long)st.uploads_retried);
	IT_CHECK(acc == 0 && req == (int)cap.n, "each window must be sent exactly once (%d requests "
		 "for %zu windows)", req, cap.n);
	IT_CHECK(st.uploads_failed == cap.n && st.uploads_retried == 0 && st.uploads_ok == 0,
		 "permanent errors must be counted as failed and not retried");
	IT_CHECK(pt_log_has(&logbuf, must_log), "the server's message \"%s\" is not in the log:\n%s",
		 must_log, logbuf.text);
	ember_agent_shutdown(a);
	fake_stop(&f);
}

typedef struct req_row {
	int n, status;
	double t;
} req_row;

static int read_requests(const fake_server *f, req_row *rows, int cap_rows)
{
	char *s = fake_ctl(f, "/requests"), *save = NULL;
	int n = 0;
	char path[256];
	for (char *line = strtok_r(s, "\n", &save); line && n < cap_rows;
	     line = strtok_r(NULL, "\n", &save)) {
		IT_CHECK(sscanf(line, "%d %255s %d %lf", &rows[n].n, path, &rows[n].status, &rows[n].t) == 4,
			 "bad /requests line %s", line);
		n++;
	}
	free(s);
	return n;
}

static void test_retryable(const char *mode, int status, int times, double min_gap,
			   const char *must_log)
{
	fake_server f;
	fake_start(&f, NULL);
	fake_cmd(&f, mode);
	ember_stats st;
	ember_agent *a = run_app(&f, NULL, &st);
	static fake_profile rows[128];
	int n = fake_list(&f, rows, 128);
	pt_check_same_windows(&f, &cap, 0, rows, n);
	printf("HTTP %d x%d: %d windows delivered in order, %llu retried\n", status, times, n,
	       (unsigned long long)st.uploads_retried);
	IT_CHECK(st.uploads_retried >= (uint64_t)times && st.uploads_ok == (uint64_t)n &&
		 st.uploads_failed == 0, "retries not counted");
	req_row reqs[256];
	int nr = read_requests(&f, reqs, 256);
	int seen = 0;
	for (int i = 0; i + 1 < nr; i++) {
		if (reqs[i].status != status)
			continue;
		seen++;
		double gap = reqs[i + 1].t - reqs[i].t;
		IT_CHECK(gap >= min_gap, "retry %.3f s after HTTP %d, sooner than %.1f s", gap, status,
			 min_gap);
	}
	IT_CHECK(seen == times, "the server answered %d %d times, expected %d", status, seen, times);
	IT_CHECK(pt_log_has(&logbuf, must_log), "\"%s\" is not in the log", must_log);
	fake_go_pprof_all(&f, n);
	ember_agent_shutdown(a);
	fake_stop(&f);
}

int main(void)
{
	test_permanent("/mode?m=status&code=400", "good", "invalid_argument: request refused (injected)");
	test_permanent(NULL, "wrong", "unauthenticated: bad or missing bearer token");
	/* Retry-After: 1 -> not before 1 s (0.9: the server's clock stamps). */
	test_retryable("/mode?m=status&code=429&retry_after=1&count=2", 429, 2, 0.9,
		       "resource_exhausted: rate limited (injected)");
	test_retryable("/mode?m=status&code=500&count=3", 500, 3, 0.0, "internal error (injected)");
	it_capture_free(&cap);
	printf("ok\n");
	return 0;
}
