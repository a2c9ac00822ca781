/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pyroscope_hang.c - the application's throughput while its Pyroscope
 * server hangs (accepts connections, never answers) against while it is
 * healthy. A benchmark, not a test: it prints numbers, the ratio should
 * be about 1 because uploads run on the reporter's own thread.
 *
 *     ember_bench_pyroscope_hang [--seconds S] [--threads N] [--rounds R]
 *
 * Each round runs the same fixed-duration workload (N threads counting
 * units of pure CPU work) once per mode, alternating which mode goes
 * first, with a fresh agent sampling at 100 Hz, 1 s windows, reporting to
 * the fake server (tests/pyroscope/fake_pyroscope.py) in the given mode.
 * Reported: units per second per mode (median over rounds), their ratio,
 * and how long stop() and shutdown took (bounded by the 1 s flush wait
 * and the cancellation of the request in flight).
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"
#include "median.h"

extern char **environ;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "pyroscope_hang: %s\n", what);
	exit(1);
}

/* ---- the fake server ---- */

typedef struct server {
	pid_t pid;
	char dir[64];
	int port, ctl;
} server;

static void server_start(server *s)
{
	snprintf(s->dir, sizeof(s->dir), "/tmp/ember-bench-pyro-XXXXXX");
	if (!mkdtemp(s->dir))
		die("mkdtemp");
	char out[128], ports[128];
	snprintf(out, sizeof(out), "%s/received", s->dir);
	snprintf(ports, sizeof(ports), "%s/ports", s->dir);
	const char *argv[] = {EMBER_PYTHON3, EMBER_FAKE_SERVER, "--dir", out, "--port-file", ports,
			      "--lifetime", "3600", NULL};
	if (posix_spawn(&s->pid, EMBER_PYTHON3, NULL, NULL, (char *const *)argv, environ))
		die("cannot start the fake server");
	FILE *f = NULL;
	for (int i = 0; i < 200 && !(f = fopen(ports, "r")); i++)
		usleep(50000);
	if (!f || fscanf(f, "%d %d", &s->port, &s->ctl) != 2)
		die("the fake server did not start");
	fclose(f);
}

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
	return sz * n;
}

static void server_ctl(const server *s, const char *path)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", s->ctl, path);
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	if (curl_easy_perform(c) != CURLE_OK)
		die("control request failed");
	curl_easy_cleanup(c);
}

static void server_stop(server *s)
{
	kill(s->pid, SIGTERM);
	waitpid(s->pid, NULL, 0);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", s->dir);
}

/* ---- the workload ---- */

typedef struct worker {
	pthread_t th;
	double until;
	unsigned long units;
	volatile double sink;
} worker;

__attribute__((noinline)) static double unit_of_work(int n)
{
	volatile double acc[2] = {0, 0};
	for (int i = 0; i < n; i++)
		acc[i & 1] += (double)i * 0.5;
	return acc[0] + acc[1];
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	while (now_s() < w->until) {
		w->sink += unit_of_work(20000);
		w->units++;
	}
	return NULL;
}

typedef struct result {
	double units_per_s, stop_s, shutdown_s;
	unsigned long long ok, dropped;
} result;

static result run_once(const server *s, int hang, double seconds, int nthreads)
{
	server_ctl(s, hang ? "/mode?m=hang" : "/mode?m=ok");
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = url;
	o.flush_timeout_ms = 1000;
	ember_reporter r;
	ember_builder *b;
	ember_agent *a;
	ember_running *run;
	if (ember_builder_new(&b, "bench.hang") || ember_builder_set_interval_ms(b, 1000) ||
	    ember_builder_set_log(b, NULL, NULL, EMBER_LOG_ERROR) || ember_reporter_pyroscope(&r, &o) ||
	    ember_builder_add_reporter(b, &r) || ember_builder_build(&a, b) || ember_agent_start(&run, a))
		die(ember_last_error());
	worker w[64];
	double t0 = now_s();
	for (int i = 0; i < nthreads; i++) {
		w[i] = (worker){.until = t0 + seconds};
		pthread_create(&w[i].th, NULL, worker_main, &w[i]);
	}
	unsigned long total = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].units;
	}
	double elapsed = now_s() - t0;
	result res = {.units_per_s = (double)total / elapsed};
	double t1 = now_s();
	ember_running_stop(&a, run);
	res.stop_s = now_s() - t1;
	ember_stats st;
	ember_agent_stats(a, &st);
	t1 = now_s();
	ember_agent_shutdown(a);
	res.shutdown_s = now_s() - t1;
	res.ok = st.uploads_ok;
	res.dropped = st.uploads_dropped;
	return res;
}

int main(int argc, char **argv)
{
	double seconds = 8;
	int nthreads = 2, rounds = 3;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			nthreads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else
			die("usage: ember_bench_pyroscope_hang [--seconds S] [--threads N] [--rounds R]");
	}
	if (nthreads < 1 || nthreads > 64 || rounds < 1 || rounds > 50 || seconds <= 0)
		die("bad arguments");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	server s;
	server_start(&s);
	double healthy[50], hanging[50];
	printf("%d round(s), %d thread(s), %.1f s per run, 100 Hz, 1 s windows\n", rounds, nthreads,
	       seconds);
	for (int k = 0; k < rounds; k++) {
		for (int j = 0; j < 2; j++) {
			int hang = (j + k) % 2; /* alternate which mode goes first */
			result r = run_once(&s, hang, seconds, nthreads);
			(hang ? hanging : healthy)[k] = r.units_per_s;
			printf("round %d %-8s %10.1f units/s  stop %.2f s  shutdown %.2f s  uploads ok %llu, "
			       "dropped %llu\n", k + 1, hang ? "hanging" : "healthy", r.units_per_s,
			       r.stop_s, r.shutdown_s, r.ok, r.dropped);
		}
	}
	double h = bench_median(healthy, rounds), g = bench_median(hanging, rounds);
	printf("median: healthy %.1f units/s, hanging %.1f units/s, ratio hanging/healthy %.3f\n", h, g,
	       g / h);
	server_stop(&s);
	return 0;
}
