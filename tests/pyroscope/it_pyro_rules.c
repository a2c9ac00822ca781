/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_pyro_rules.c - what a real Pyroscope server refuses or stores wrong
 * (section 2), end to end against the fake server, which
 * enforces each rule as the real one does (fake_pyroscope.py names the
 * Pyroscope source of each):
 *
 *  1. everything an agent with wall-clock, allocation and thread labels,
 *     22 tags (one dotted) and --depth 1024 sends is accepted: memory
 *     pushes carry __delta__="false", no series has more than 30 label
 *     names, mapping[0] is this executable, no location lies outside a
 *     mapping, no stack is deeper than 1000 frames (a 1100-deep recursion
 *     runs), no thread_name is "?" (threads that live 30 ms), no empty
 *     profile; the dotted tag is warned about and stored with '_';
 *  2. one tag more and the build fails, naming --wall and --thread-labels;
 *  3. windows older than the server's age limit: dropped unsent by the
 *     agent (max_age_s), or refused by the server as too old (no client
 *     limit): either way counted as expired, and the windows behind them
 *     are delivered.
 */
#include <limits.h>
#include <sys/prctl.h>

#include "heap/hook.h"
#include "pyro_test.h"

static it_capture cap;
static pt_log logbuf;

/* ---- workloads ---- */

static _Atomic int stop_all;

__attribute__((noinline)) static double deep(int n)
{
	if (n > 0)
		return deep(n - 1) + 1.0; /* not a tail call: the frame stays */
	double until = it_thread_cpu() + 0.05, x = 0;
	while (it_thread_cpu() < until)
		x += stage_one(it_iterations / 8);
	return x;
}

static void *deep_main(void *arg)
{
	(void)arg;
	double sink = 0;
	while (!stop_all)
		sink += deep(1100);
	return (void *)(long)(sink > 0);
}

/* Threads that burn 30 ms and exit, named "shorty": their samples are
 * often drained after /proc/self/task/TID is gone. */
static void *shorty_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "shorty", 0, 0, 0);
	double until = it_thread_cpu() + 0.03, x = 0;
	while (it_thread_cpu() < until)
		x += stage_one(it_iterations / 8);
	return (void *)(long)(x > 0);
}

static void *spawner_main(void *arg)
{
	(void)arg;
	while (!stop_all) {
		pthread_t t;
		if (pthread_create(&t, NULL, shorty_main, NULL) == 0)
			pthread_join(t, NULL);
		void *volatile p = malloc(3000 + (size_t)(rand() % 5000)); /* for the memory profile */
		free(p);
		pt_sleep(0.01);
	}
	return NULL;
}

/* ---- 1. everything is accepted ---- */

static void conforming_run(void)
{
	char exe[PATH_MAX];
	IT_CHECK(realpath("/proc/self/exe", exe), "realpath /proc/self/exe");
	const char *extra[] = {"--main-binary", exe, NULL};
	fake_server f;
	fake_start(&f, extra);
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = f.url;

	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "rules.app") == 0, "builder: %s", ember_last_error());
	char keys[21][8];
	for (int i = 0; i < 21; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		IT_CHECK(ember_builder_add_tag(b, keys[i], "v") == 0, "tag");
	}
	IT_CHECK(ember_builder_add_tag(b, "host.name", "h1") == 0, "tag");
	/* 5 + 22 tags + thread_id/thread_name + thread_state (wall) = 30;
	 * memory: 5 + 22 + 2 + __delta__ = 30 */
	IT_CHECK(ember_builder_set_thread_labels(b, 1) == 0, "thread labels");
	IT_CHECK(ember_builder_set_wall(b, 20) == 0, "wall");
	int heap = ember__heap_malloc_entry() != NULL;
	if (heap)
		IT_CHECK(ember_builder_set_alloc(b, 4096) == 0, "alloc: %s", ember_last_error());
	else
		printf("note: no malloc hook in this build (AddressSanitizer): no memory profiles\n");
	IT_CHECK(ember_builder_set_max_depth(b, 1024) == 0, "depth");
	IT_CHECK(ember_builder_set_sample_rate(b, 100) == 0, "rate");
	IT_CHECK(ember_builder_set_interval_ms(b, 1000) == 0, "interval");
	pthread_mutex_init(&logbuf.mu, NULL);
	IT_CHECK(ember_builder_set_log(b, pt_log_fn, &logbuf, EMBER_LOG_DEBUG) == 0, "log");
	ember_reporter c = it_capture_reporter(&cap);
	IT_CHECK(ember_builder_add_reporter(b, &c) == 0, "capture");
	ember_reporter r;
	IT_CHECK(ember_reporter_pyroscope(&r, &o) == 0, "reporter: %s", ember_last_error());
	IT_CHECK(ember_builder_add_reporter(b, &r) == 0, "add reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	IT_CHECK(pt_log_has(&logbuf, "stored as \"host_name\"") ||
		 pt_log_has(&logbuf, "this label as \"host_name\""),
		 "no warning about host.name on 1.x servers:\n%s", logbuf.text);
	IT_CHECK(pt_log_has(&logbuf, "cut to 1000 frames"), "no word about the depth cap");

	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	stop_all = 0;
	pthread_t td, ts;
	IT_CHECK(pthread_create(&td, NULL, deep_main, NULL) == 0, "thread");
	IT_CHECK(pthread_create(&ts, NULL, spawner_main, NULL) == 0, "thread");
	pt_sleep(3.5);
	stop_all = 1;
	pthread_join(td, NULL);
	pthread_join(ts, NULL);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());

	int acc, rej, req;
	fake_counts(&f, &acc, &rej, &req);
	ember_stats st;
	ember_agent_stats(a, &st);
	printf("conforming run: %d accepted, %d refused, %d requests; uploads %llu ok, %llu failed\n",
	       acc, rej, req, (unsigned long long)st.uploads_ok, (unsigned long long)st.uploads_failed);
	if (rej)
		fprintf(stderr, "%s", logbuf.text);
	IT_CHECK(rej == 0 && st.uploads_failed == 0, "the server refused %d uploads", rej);
	IT_CHECK(acc >= 6, "only %d profiles accepted", acc);
	static fake_profile rows[256];
	int n = fake_list(&f, rows, 256);
	int mem = 0, deepest = 0, shorty = 0, host = 0;
	for (int i = 0; i < n; i++) {
		char *name = fake_show(&f, i, "label.__name__");
		char *delta = fake_show(&f, i, "label.__delta__");
		char *depth = fake_show(&f, i, "max_depth");
		char *tn = fake_show(&f, i, "sample_label.thread_name");
		char *h = fake_show(&f, i, "stored_label.host_name");
		IT_CHECK(name, "profile %d has no __name__", i);
		if (!strcmp(name, "memory")) {
			mem++;
			IT_CHECK(delta && !strcmp(delta, "false"), "memory profile %d: __delta__ is %s", i,
				 delta ? delta : "(absent)");
		} else {
			IT_CHECK(!delta, "%s profile %d carries __delta__", name, i);
		}
		if (depth && atoi(depth) > deepest)
			deepest = atoi(depth);
		if (tn && strstr(tn, "shorty"))
			shorty++;
		host += h && !strcmp(h, "h1");
		free(name);
		free(delta);
		free(depth);
		free(tn);
		free(h);
	}
	printf("%d memory profiles, deepest stack %d frames, %d profiles name \"shorty\", "
	       "%d store host_name\n", mem, deepest, shorty, host);
	IT_CHECK(!heap || mem >= 1, "no memory profile was sent");
	IT_CHECK(deepest == 1000, "the deepest stack has %d frames, expected the 1000 cap", deepest);
	IT_CHECK(shorty >= 1, "the short-lived threads' samples are not named");
	IT_CHECK(host == n, "host.name was not stored as host_name by the 1.x rules");
	/* go tool pprof reads each (cpu, wall and memory do not merge) */
	for (int i = 0; i < n; i++) {
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "HOME=%s GOCACHE=%s/gocache go tool pprof -raw %s/%06d.pb "
			 ">/dev/null 2>%s/pprof.err", f.dir, f.dir, f.out, i, f.dir);
		IT_CHECK(system(cmd) == 0, "go tool pprof -raw failed on profile %d", i);
	}
	ember_agent_shutdown(a);
	it_capture_free(&cap);
	fake_stop(&f);
}

/* ---- 2. one label too many fails the build, naming the settings ---- */

static void over_the_limit(void)
{
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "rules.app") == 0, "builder");
	char keys[23][8];
	for (int i = 0; i < 23; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		IT_CHECK(ember_builder_add_tag(b, keys[i], "v") == 0, "tag");
	}
	IT_CHECK(ember_builder_set_thread_labels(b, 1) == 0, "thread labels");
	IT_CHECK(ember_builder_set_wall(b, 20) == 0, "wall");
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = "http://127.0.0.1:1";
	ember_reporter r;
	IT_CHECK(ember_reporter_pyroscope(&r, &o) == 0, "reporter");
	IT_CHECK(ember_builder_add_reporter(b, &r) == 0, "add");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == EMBER_ERR_INVALID, "31 label names were accepted");
	const char *m = ember_last_error();
	printf("31 label names: %s\n", m);
	IT_CHECK(strstr(m, "wall profiles would carry 31") && strstr(m, "--thread-labels") &&
		 strstr(m, "thread_state (--wall"), "the message does not name the settings");
}

/* ---- 3. old windows ---- */

/*
 * The server answers 503 for `outage` seconds, then works. With
 * client_age (max_age_s) the agent drops what gets too old unsent; with
 * UINT_MAX it sends everything and the server (--reject-older-than
 * server_age) refuses the old windows as too old.
 */
static void old_windows(unsigned client_age, const char *server_age, double outage)
{
	const char *extra[] = {"--reject-older-than", server_age, NULL};
	fake_server f;
	fake_start(&f, extra);
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = f.url;
	o.max_age_s = client_age;
	/* Room for every window of a slow run: a retry wait after the outage
	 * can reach the 30 s backoff cap, and this test is about age, not
	 * about a full queue (which drops, counted, the oldest first). */
	o.queue_len = 128;
	ember_agent *a = pt_build("age.app", &o, &cap, &logbuf, NULL);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	pt_burner bu = {0};
	pt_burn_start(&bu);
	fake_cmd(&f, "/mode?m=status&code=503");
	pt_sleep(outage);
	fake_cmd(&f, "/mode?m=ok");
	/* Delivery resumes once the next retry (backoff up to a few seconds)
	 * has cleared the backlog: wait for two fresh windows to arrive. */
	int acc0;
	fake_counts(&f, &acc0, NULL, NULL);
	IT_CHECK(fake_wait_accepted(&f, acc0 + 2, 60) >= acc0 + 2,
		 "no window was delivered after the outage: the expired ones held them up");
	pt_burn_stop(&bu);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	ember_stats st;
	ember_agent_stats(a, &st);
	static fake_profile rows[256];
	int n = fake_list(&f, rows, 256);
	printf("age limit %s s (agent: %s): %zu windows, %d delivered; uploads %llu ok, %llu expired, "
	       "%llu failed\n", server_age, client_age == UINT_MAX ? "none" : "same", cap.n, n,
	       (unsigned long long)st.uploads_ok, (unsigned long long)st.uploads_expired,
	       (unsigned long long)st.uploads_failed);
	IT_CHECK(st.uploads_expired >= 1, "no window expired during a %.0f s outage", outage);
	IT_CHECK(st.uploads_failed == 0, "windows refused for other reasons");
	IT_CHECK(st.uploads_ok + st.uploads_expired + st.uploads_dropped == cap.n,
		 "%zu windows, %llu delivered + %llu expired + %llu dropped: some are unaccounted "
		 "for", cap.n, (unsigned long long)st.uploads_ok,
		 (unsigned long long)st.uploads_expired, (unsigned long long)st.uploads_dropped);
	IT_CHECK(!st.uploads_dropped || pt_log_has(&logbuf, "dropped: the upload queue is full"),
		 "%llu windows dropped without a word", (unsigned long long)st.uploads_dropped);
	/* the last window arrived, and nothing was re-dated */
	IT_CHECK(n >= 1 && rows[n - 1].time_nanos == cap.w[cap.n - 1].start_ns,
		 "the last window was not delivered");
	for (int i = 0; i < n; i++) {
		int found = 0;
		for (size_t k = 0; k < cap.n; k++)
			found |= rows[i].time_nanos == cap.w[k].start_ns;
		IT_CHECK(found, "profile %d has a time no window had (re-dated?)", i);
	}
	IT_CHECK(pt_log_has(&logbuf, client_age == UINT_MAX ? "as too old" : "dropped unsent"),
		 "the expired windows were not logged with their reason");
	ember_agent_shutdown(a);
	it_capture_free(&cap);
	fake_stop(&f);
}

int main(void)
{
	conforming_run();
	over_the_limit();
	old_windows(3, "3", 6);        /* the agent drops them */
	old_windows(UINT_MAX, "3", 6); /* the server refuses them: no block */
	printf("ok\n");
	return 0;
}
