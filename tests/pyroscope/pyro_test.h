/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pyro_test.h - shared pieces of the Pyroscope reporter's integration
 * tests: starting and steering the fake server (fake_pyroscope.py, a
 * separate Python program), reading what it received, a CPU workload
 * that keeps every 1 s window non-empty, and a log collector.
 *
 * The fake server is controlled over its control port with plain GETs
 * (libcurl, which the library links anyway). Everything it accepted is
 * also on disk, one uncompressed pprof per upload, which the tests hand
 * to `go tool pprof -raw`.
 */
#ifndef EMBER_PYRO_TEST_H
#define EMBER_PYRO_TEST_H

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "it_common.h"

extern char **environ;

typedef struct fake_server {
	pid_t pid;
	char dir[64];      /* temporary directory: port file, profiles */
	char out[96];      /* where the profiles go */
	int port, ctl_port;
	char url[128];     /* http://127.0.0.1:<port> */
} fake_server;

static __attribute__((unused)) double pt_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static __attribute__((unused)) void pt_sleep(double s)
{
	struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* Starts the server with extra arguments (NULL-terminated list). */
static __attribute__((unused)) void fake_start(fake_server *f, const char *const *extra)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/ember-pyro-XXXXXX");
	IT_CHECK(mkdtemp(f->dir), "mkdtemp");
	snprintf(f->out, sizeof(f->out), "%s/received", f->dir);
	char portfile[128];
	snprintf(portfile, sizeof(portfile), "%s/ports", f->dir);
	const char *argv[32] = {EMBER_PYTHON3, EMBER_FAKE_SERVER, "--dir", f->out,
				"--port-file", portfile, "--lifetime", "280"};
	size_t n = 8;
	for (size_t i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	int rc = posix_spawn(&f->pid, EMBER_PYTHON3, NULL, NULL, (char *const *)argv, environ);
	IT_CHECK(rc == 0, "cannot start %s: %s", EMBER_PYTHON3, strerror(rc));
	double deadline = pt_now() + 20;
	FILE *pf = NULL;
	while (!(pf = fopen(portfile, "r")) && pt_now() < deadline) {
		int st;
		IT_CHECK(waitpid(f->pid, &st, WNOHANG) == 0, "the fake server exited at start");
		pt_sleep(0.05);
	}
	IT_CHECK(pf, "the fake server did not write its port file");
	IT_CHECK(fscanf(pf, "%d %d", &f->port, &f->ctl_port) == 2, "bad port file");
	fclose(pf);
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", f->port);
}

static size_t pt_collect(char *data, size_t size, size_t n, void *ud)
{
	char **buf = ud;
	size_t old = *buf ? strlen(*buf) : 0, len = size * n;
	char *s = realloc(*buf, old + len + 1);
	IT_CHECK(s, "oom");
	memcpy(s + old, data, len);
	s[old + len] = '\0';
	*buf = s;
	return len;
}

/* GETs a control path; returns the malloc'd body (never NULL). */
static __attribute__((unused)) char *fake_ctl(const fake_server *f, const char *path)
{
	char url[256];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", f->ctl_port, path);
	CURL *c = curl_easy_init();
	IT_CHECK(c, "curl_easy_init");
	char *body = NULL;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, pt_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	CURLcode e = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	IT_CHECK(e == CURLE_OK, "control request %s failed: %s", path, curl_easy_strerror(e));
	if (!body)
		body = strdup("");
	return body;
}

static __attribute__((unused)) void fake_cmd(const fake_server *f, const char *path)
{
	free(fake_ctl(f, path));
}

/* Accepted, rejected, requests. */
static __attribute__((unused)) void fake_counts(const fake_server *f, int *acc, int *rej, int *req)
{
	char *s = fake_ctl(f, "/count");
	int a = 0, r = 0, q = 0;
	IT_CHECK(sscanf(s, "%d %d %d", &a, &r, &q) == 3, "bad /count answer: %s", s);
	free(s);
	if (acc)
		*acc = a;
	if (rej)
		*rej = r;
	if (req)
		*req = q;
}

/* Waits until the server accepted at least n profiles; returns how many. */
static __attribute__((unused)) int fake_wait_accepted(const fake_server *f, int n, double timeout)
{
	double deadline = pt_now() + timeout;
	int acc = 0;
	for (;;) {
		fake_counts(f, &acc, NULL, NULL);
		if (acc >= n || pt_now() > deadline)
			return acc;
		pt_sleep(0.1);
	}
}

typedef struct fake_profile {
	int n;
	char endpoint[16];
	long long time_nanos;
	int samples;
	char id[64];
	double received_at;
} fake_profile;

/* Reads /list into rows (at most cap); returns the count. */
static __attribute__((unused)) int fake_list(const fake_server *f, fake_profile *rows, int cap)
{
	char *s = fake_ctl(f, "/list"), *save = NULL;
	int n = 0;
	for (char *line = strtok_r(s, "\n", &save); line && n < cap; line = strtok_r(NULL, "\n", &save)) {
		fake_profile *p = &rows[n];
		IT_CHECK(sscanf(line, "%d %15s %lld %d %63s %lf", &p->n, p->endpoint, &p->time_nanos,
				&p->samples, p->id, &p->received_at) == 6, "bad /list line: %s", line);
		n++;
	}
	free(s);
	return n;
}

/* The value of `key` in /show?n=K, malloc'd, or NULL if absent. */
static __attribute__((unused)) char *fake_show(const fake_server *f, int k, const char *key)
{
	char path[64];
	snprintf(path, sizeof(path), "/show?n=%d", k);
	char *s = fake_ctl(f, path), *save = NULL, *found = NULL;
	size_t kl = strlen(key);
	for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, key, kl) && line[kl] == '\t') {
			found = strdup(line + kl + 1);
			break;
		}
	free(s);
	return found;
}

/* Checks that /show has key == want (want NULL: key absent). */
static __attribute__((unused)) void fake_expect(const fake_server *f, int k, const char *key,
						const char *want)
{
	char *v = fake_show(f, k, key);
	if (!want)
		IT_CHECK(!v, "profile %d: %s should be absent, is \"%s\"", k, key, v);
	else
		IT_CHECK(v && !strcmp(v, want), "profile %d: %s is \"%s\", expected \"%s\"", k, key,
			 v ? v : "(absent)", want);
	free(v);
}

/* `go tool pprof -raw` reads every profile the server stored (exit 0). */
static __attribute__((unused)) void fake_go_pprof_all(const fake_server *f, int count)
{
	size_t cap = 512 + (size_t)count * 128;
	char *cmd = malloc(cap);
	IT_CHECK(cmd, "oom");
	size_t n = (size_t)snprintf(cmd, cap, "HOME=%s GOCACHE=%s/gocache go tool pprof -raw", f->dir,
				    f->dir);
	for (int i = 0; i < count; i++)
		n += (size_t)snprintf(cmd + n, cap - n, " %s/%06d.pb", f->out, i);
	snprintf(cmd + n, cap - n, " >%s/pprof.out 2>&1", f->dir);
	int st = system(cmd);
	if (st != 0) {
		char show[256];
		snprintf(show, sizeof(show), "tail -20 %s/pprof.out >&2", f->dir);
		if (system(show) != 0)
			fprintf(stderr, "(no output)\n");
	}
	IT_CHECK(st == 0, "go tool pprof -raw failed on the %d received profiles", count);
	free(cmd);
}

static __attribute__((unused)) void fake_stop(fake_server *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGTERM);
		int st;
		waitpid(f->pid, &st, 0);
		f->pid = 0;
	}
	if (!getenv("EMBER_TEST_KEEP")) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "warning: could not remove %s\n", f->dir);
	}
}

/* ---- a workload: burn about half a core until told to stop ---- */

typedef struct pt_burner {
	pthread_t th;
	_Atomic int stop;
	double sink;
	_Atomic unsigned long rounds; /* work units completed (read by the test meanwhile) */
	unsigned long limit;  /* stop after this many (0: until stop) */
	const char *label;    /* if set, the work runs inside the label phase=<label> */
} pt_burner;

static __attribute__((unused)) void *pt_burn_main(void *arg)
{
	pt_burner *b = arg;
	unsigned mark = ember_labels_depth();
	if (b->label)
		ember_labels_push("phase", b->label);
	while (!b->stop && (!b->limit || b->rounds < b->limit)) {
		double until = it_thread_cpu() + 0.02;
		while (it_thread_cpu() < until)
			b->sink += stage_one(it_iterations / 8);
		b->rounds++;
		if (!b->limit)
			pt_sleep(0.02);
	}
	ember_labels_pop_to(mark);
	return NULL;
}

/* Starts a burner; set b->limit and b->label before, the rest is reset. */
static __attribute__((unused)) void pt_burn_start(pt_burner *b)
{
	b->stop = 0;
	b->rounds = 0;
	b->sink = 0;
	IT_CHECK(pthread_create(&b->th, NULL, pt_burn_main, b) == 0, "pthread_create");
}

static __attribute__((unused)) void pt_burn_stop(pt_burner *b)
{
	b->stop = 1;
	pthread_join(b->th, NULL);
}

/* ---- collecting the agent's log ---- */

typedef struct pt_log {
	pthread_mutex_t mu;
	char text[1 << 16];
	size_t len;
} pt_log;

static __attribute__((unused)) void pt_log_fn(void *ud, ember_log_level level, const char *msg)
{
	pt_log *l = ud;
	pthread_mutex_lock(&l->mu);
	int w = snprintf(l->text + l->len, sizeof(l->text) - l->len, "[%d] %s\n", (int)level, msg);
	if (w > 0 && l->len + (size_t)w < sizeof(l->text))
		l->len += (size_t)w;
	pthread_mutex_unlock(&l->mu);
	if (getenv("EMBER_TEST_VERBOSE"))
		fprintf(stderr, "log[%d] %s\n", (int)level, msg);
}

static __attribute__((unused)) int pt_log_has(pt_log *l, const char *needle)
{
	pthread_mutex_lock(&l->mu);
	int r = strstr(l->text, needle) != NULL;
	pthread_mutex_unlock(&l->mu);
	return r;
}

/* The capture reporter, for the windows a Pyroscope reporter sends: not
 * those without samples (a final window after the work stopped, say),
 * which it leaves out as the server would drop them. */
static __attribute__((unused)) int pt_capture_sent(void *ud, const ember_report *r)
{
	return r->samples == 0 && r->format != EMBER_FORMAT_JFR ? 0 : it_capture_report(ud, r);
}

/*
 * Builds an agent at 100 Hz with 1 s windows, the given Pyroscope options
 * (NULL: none), a capture reporter (to know which windows were sent),
 * the log collector and static tags ({NULL} terminated; NULL: none).
 * Returns the agent; dies on failure.
 */
static __attribute__((unused)) ember_agent *pt_build(const char *app,
						     const ember_pyroscope_options *o,
						     it_capture *cap, pt_log *log,
						     const ember_tag *tags)
{
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, app) == 0, "builder: %s", ember_last_error());
	for (size_t i = 0; tags && tags[i].key; i++)
		IT_CHECK(ember_builder_add_tag(b, tags[i].key, tags[i].value) == 0, "tag: %s",
			 ember_last_error());
	IT_CHECK(ember_builder_set_sample_rate(b, 100) == 0, "rate");
	IT_CHECK(ember_builder_set_interval_ms(b, 1000) == 0, "interval");
	if (log) {
		pthread_mutex_init(&log->mu, NULL);
		log->len = 0;
		log->text[0] = '\0';
		IT_CHECK(ember_builder_set_log(b, pt_log_fn, log, EMBER_LOG_DEBUG) == 0, "log");
	}
	if (cap) {
		ember_reporter c = it_capture_reporter(cap);
		c.report = pt_capture_sent;
		IT_CHECK(ember_builder_add_reporter(b, &c) == 0, "capture reporter");
	}
	if (o) {
		ember_reporter r;
		IT_CHECK(ember_reporter_pyroscope(&r, o) == 0, "pyroscope reporter: %s",
			 ember_last_error());
		IT_CHECK(ember_builder_add_reporter(b, &r) == 0, "add reporter");
	}
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	return a;
}

/*
 * Starts the agent, burns CPU for `seconds` (inside the label phase=<label>
 * if label is not NULL), stops. *a is the ready agent again; returns
 * stop()'s result.
 */
static __attribute__((unused)) int pt_run(ember_agent **a, double seconds, const char *label)
{
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, *a) == 0, "start: %s", ember_last_error());
	pt_burner b = {.label = label};
	pt_burn_start(&b);
	pt_sleep(seconds);
	pt_burn_stop(&b);
	return ember_running_stop(a, run);
}

/* Checks that the server's accepted profiles are exactly the captured
 * windows that hold samples, in order. pt_capture_sent leaves the others
 * out; CI once showed a final window of 0 samples in the capture all the
 * same (it_pyro_wire, ingest; not reproduced in 20 runs since, cause not
 * found), and a window without samples is not one the server should have. */
static __attribute__((unused)) void pt_check_same_windows(const fake_server *f, const it_capture *cap,
							  size_t first, fake_profile *rows, int nrows)
{
	size_t idx[4096], nwin = 0;
	for (size_t w = first; w < cap->n && nwin < 4096; w++)
		if (cap->w[w].samples)
			idx[nwin++] = w;
	if ((size_t)nrows != nwin) { /* what differs, for whoever reads the failure */
		for (int i = 0; i < nrows; i++)
			fprintf(stderr, "server profile %d: start %lld id %s\n", i, rows[i].time_nanos,
				rows[i].id);
		for (size_t i = 0; i < nwin; i++)
			fprintf(stderr, "agent window %zu: start %lld\n", idx[i],
				(long long)cap->w[idx[i]].start_ns);
	}
	IT_CHECK((size_t)nrows == nwin, "server has %d profiles, agent reported %zu windows with samples",
		 nrows, nwin);
	for (int i = 0; i < nrows; i++) {
		IT_CHECK(rows[i].time_nanos == cap->w[idx[i]].start_ns,
			 "profile %d starts at %lld, window %zu at %lld: out of order, missing or twice",
			 i, rows[i].time_nanos, idx[i], (long long)cap->w[idx[i]].start_ns);
		for (int k = 0; k < i; k++)
			IT_CHECK(strcmp(rows[i].id, "-") == 0 || strcmp(rows[i].id, rows[k].id) != 0,
				 "profile %d repeats the ID of profile %d", i, k);
	}
	(void)f;
}

#endif
