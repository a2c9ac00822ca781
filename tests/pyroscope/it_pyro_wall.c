/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_pyro_wall.c - wall-clock profiles pushed to Pyroscope carry the same
 * per-thread totals as the local ones, and those are the threads'
 * lifetimes.
 *
 * Threads block once, without retry on EINTR, for DUR_S seconds in
 * nanosleep, epoll_wait and read on a pipe; one burns CPU. Wall clock
 * every 50 ms, windows of 1 s, pushed to the fake server
 * (fake_pyroscope.py) and captured locally. Checks, per thread: the wall
 * total the server received equals the local one (within 0.1 %), and its
 * lifetime within 2 %; no call returned EINTR.
 */
#include "pyro_test.h"

#include <dirent.h>
#include <stdatomic.h>
#include <sys/epoll.h>

#define DUR_S 2
#define NT 4

static const char *const names[NT] = {"pw_sleep", "pw_epoll", "pw_read", "pw_burn"};
static double born[NT], died[NT];
static atomic_int eintr;
static int epfd, rd_pipe[2], ep_pipe[2];

static void *body(void *arg)
{
	int k = (int)(intptr_t)arg;
	pthread_setname_np(pthread_self(), names[k]);
	born[k] = pt_now();
	long rc = 0;
	if (k == 0) {
		struct timespec d = {DUR_S, 0};
		rc = nanosleep(&d, NULL);
	} else if (k == 1) {
		struct epoll_event ev;
		rc = epoll_wait(epfd, &ev, 1, DUR_S * 1000);
	} else if (k == 2) {
		char c;
		rc = read(rd_pipe[0], &c, 1);
	} else {
		double end = pt_now() + DUR_S;
		volatile double acc = 0;
		while (pt_now() < end)
			acc += 1;
		(void)acc; /* a read: clang counts a volatile only written as unused */
	}
	if (rc < 0 && errno == EINTR)
		atomic_fetch_add(&eintr, 1);
	died[k] = pt_now();
	return NULL;
}

/* Adds the wall totals per thread of one pprof (gzip'd or not). */
static void add_totals(const uint8_t *data, size_t len, double tot[NT])
{
	ember__profile *p = NULL;
	IT_CHECK(ember__pprof_read(data, len, &p) == 0, "pprof: %s", ember_last_error());
	if (p->nvalues >= 2 && !strcmp(p->sample_type[1].type, "wall"))
		for (uint32_t s = 0; s < p->nsamples; s++) {
			const char *name = it_label(&p->samples[s], "thread_name");
			for (int k = 0; k < NT; k++)
				if (name && !strcmp(name, names[k]))
					tot[k] += (double)p->samples[s].values[1] / 1e9;
		}
	ember__profile_free(p);
}

int main(void)
{
	static it_capture cap;
	fake_server f;
	fake_start(&f, NULL);
	IT_CHECK(pipe(rd_pipe) == 0 && pipe(ep_pipe) == 0, "pipe");
	epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};
	IT_CHECK(epfd >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, ep_pipe[0], &ev) == 0, "epoll");

	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "pyrowall") == 0, "builder");
	IT_CHECK(ember_builder_set_interval_ms(b, 1000) == 0, "interval");
	IT_CHECK(ember_builder_set_wall(b, 50) == 0, "wall");
	IT_CHECK(ember_builder_set_thread_labels(b, 1) == 0, "thread labels");
	ember_reporter c = it_capture_reporter(&cap);
	IT_CHECK(ember_builder_add_reporter(b, &c) == 0, "capture reporter");
	ember_pyroscope_options o = {.sz = sizeof(o), .url = f.url};
	ember_reporter r;
	IT_CHECK(ember_reporter_pyroscope(&r, &o) == 0, "pyroscope: %s", ember_last_error());
	IT_CHECK(ember_builder_add_reporter(b, &r) == 0, "add reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	pthread_t th[NT];
	for (int k = 0; k < NT; k++)
		IT_CHECK(pthread_create(&th[k], NULL, body, (void *)(intptr_t)k) == 0, "thread");
	pt_sleep(DUR_S);
	IT_CHECK(write(rd_pipe[1], "x", 1) == 1, "write");
	for (int k = 0; k < NT; k++)
		pthread_join(th[k], NULL);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	ember_agent_shutdown(a);

	double local[NT] = {0}, pushed[NT] = {0};
	size_t nwall = 0;
	for (size_t i = 0; i < cap.n; i++)
		add_totals(cap.w[i].pprof, cap.w[i].len, local);
	/* every window (CPU and wall profiles) reached the server */
	IT_CHECK(fake_wait_accepted(&f, (int)cap.n, 30), "the server did not get all %zu profiles",
		 cap.n);
	DIR *d = opendir(f.out);
	IT_CHECK(d, "opendir %s", f.out);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 4 || strcmp(e->d_name + n - 3, ".pb") != 0)
			continue;
		char path[256];
		snprintf(path, sizeof(path), "%s/%s", f.out, e->d_name);
		FILE *fp = fopen(path, "rb");
		IT_CHECK(fp, "open %s", path);
		static uint8_t buf[1 << 22];
		size_t len = fread(buf, 1, sizeof(buf), fp);
		fclose(fp);
		add_totals(buf, len, pushed);
		nwall++;
	}
	closedir(d);
	fake_stop(&f);
	for (int k = 0; k < NT; k++) {
		double life = died[k] - born[k];
		printf("%-9s lived %.3f s: local wall %.3f s, pushed %.3f s\n", names[k], life,
		       local[k], pushed[k]);
		IT_CHECK(pushed[k] >= 0.999 * local[k] && pushed[k] <= 1.001 * local[k],
			 "%s: the server got %.3f s, the local profile has %.3f s", names[k], pushed[k],
			 local[k]);
		IT_CHECK(local[k] >= 0.98 * life && local[k] <= 1.02 * life,
			 "%s: wall %.3f s is not its lifetime %.3f s within 2%%", names[k], local[k],
			 life);
	}
	IT_CHECK(atomic_load(&eintr) == 0, "%d blocked calls returned EINTR", atomic_load(&eintr));
	it_capture_free(&cap);
	printf("ok (%zu profiles received)\n", nwall);
	return 0;
}
