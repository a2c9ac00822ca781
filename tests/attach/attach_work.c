/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attach_work.c - a program `emberprof attach` attaches to, driven by
 * lines on its standard input (a FIFO the test holds open):
 *
 *   attach_work busy OUT: two threads wait; on "go" each burns 400 ms of
 *   its own CPU time in its function (attach_spin_a, attach_spin_b), a
 *   thread started after "go" burns 300 ms in attach_late_spin and a fork
 *   child 400 ms in attach_child_spin; then OUT gets "done PARENT_NS
 *   CHILD_NS" (the CPU time each process burnt, from its own clocks) and
 *   the program waits for EOF on stdin, exiting 0.
 *
 *   attach_work idle OUT: writes "ready" to OUT, then waits for EOF.
 *
 *   attach_work blocked OUT: four threads wait, in read (a pipe),
 *   nanosleep (an hour, woken by SIGUSR2 at release), epoll_wait (no timeout)
 *   and pthread_cond_wait, named blk-read, blk-sleep, blk-epoll, blk-cond;
 *   "ready" in OUT. On "release" each wakes
 *   and OUT gets "done ok", or "done EINTR in CALL" (exit 3) if a call
 *   returned EINTR; then it waits for EOF and exits 0.
 *
 *   attach_work epoll OUT: one thread, waiting in epoll_wait (no timeout)
 *   on its standard input, the only call a borrowed thread can be in (the
 *   one whose EINTR at a stop the attach must turn into a restart);
 *   "ready" in OUT; on "release", "done ok" in OUT (exit 3 if epoll_wait
 *   returned EINTR); then it waits for EOF and exits 0.
 *
 * Every count comes from the threads' own CPU clocks, never from a wall
 * clock: the test compares the profiles with what was burnt, whatever the
 * machine's load. It fails (exit 3) if a call returns EINTR.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Burns ms of this thread's CPU time; returns the nanoseconds burnt.
 * (Each with its own constant: identical bodies would be folded into one.) */
#define BURN(name, k)                                                        \
	uint64_t name(unsigned ms);                                        \
	__attribute__((noinline)) uint64_t name(unsigned ms)               \
	{                                                                  \
		uint64_t t0 = thread_cpu_ns(), t;                          \
		do {                                                       \
			for (int i = 0; i < 100000; i++)                   \
				sink += (uint64_t)i * k;                   \
		} while ((t = thread_cpu_ns()) - t0 < ms * 1000000ull);    \
		return t - t0;                                             \
	}
BURN(attach_spin_a, 3)
BURN(attach_spin_b, 5)
BURN(attach_late_spin, 7)
BURN(attach_child_spin, 11)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;
static uint64_t burnt;

static void wait_go(void)
{
	pthread_mutex_lock(&mu);
	while (!go)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void add_burnt(uint64_t ns)
{
	pthread_mutex_lock(&mu);
	burnt += ns;
	pthread_mutex_unlock(&mu);
}

static void *thread_a(void *arg)
{
	(void)arg;
	wait_go();
	add_burnt(attach_spin_a(400));
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	wait_go();
	add_burnt(attach_spin_b(400));
	return NULL;
}

static void *thread_late(void *arg)
{
	(void)arg;
	add_burnt(attach_late_spin(300));
	return NULL;
}

/* Reads stdin up to a line (1) or EOF (0); EINTR is a failure. */
static int read_line(char *buf, size_t n)
{
	size_t k = 0;
	while (k + 1 < n) {
		ssize_t r = read(0, buf + k, 1);
		if (r < 0 && errno == EINTR) {
			fprintf(stderr, "attach_work: read returned EINTR\n");
			exit(3);
		}
		if (r <= 0)
			return 0;
		if (buf[k] == '\n')
			break;
		k++;
	}
	buf[k] = 0;
	return 1;
}

static void write_file(const char *path, const char *text)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
		perror(path);
		exit(1);
	}
}

/* ---- blocked ---- */

static int rel_pipe[2], rel_efd, epfd;
static volatile int released;
static const char *volatile eintr_in;

static void *blk_read(void *arg)
{
	(void)arg;
	char c;
	ssize_t r;
	while ((r = read(rel_pipe[0], &c, 1)) < 0)
		if (errno == EINTR) {
			eintr_in = "read";
			break;
		}
	return NULL;
}

/* One long sleep, never woken before "release" (then by SIGUSR2): a
 * thread that woke now and then would be, for an instant, a running
 * thread, which a wall-clock sample signals, and a signal that lands as it
 * enters nanosleep makes it return EINTR (the sampling's own race,
 * docs/design/limits.md), not the attach's, which is what this checks. */
static void on_wake(int sig)
{
	(void)sig;
}

static void *blk_sleep(void *arg)
{
	(void)arg;
	while (!released) {
		struct timespec ts = {3600, 0};
		if (nanosleep(&ts, NULL) != 0 && errno == EINTR && !released) {
			eintr_in = "nanosleep";
			break;
		}
	}
	return NULL;
}

static void *blk_epoll(void *arg)
{
	(void)arg;
	struct epoll_event ev;
	if (epoll_wait(epfd, &ev, 1, -1) < 0 && errno == EINTR)
		eintr_in = "epoll_wait";
	return NULL;
}

static void *blk_cond(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	while (!released) {
		int e = pthread_cond_wait(&cv, &mu);
		if (e == EINTR)
			eintr_in = "pthread_cond_wait";
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

static int blocked(const char *out)
{
	char line[256];
	pthread_t th[4];
	void *(*fns[4])(void *) = {blk_read, blk_sleep, blk_epoll, blk_cond};
	const char *names[4] = {"blk-read", "blk-sleep", "blk-epoll", "blk-cond"};
	if (pipe(rel_pipe) != 0 || (rel_efd = eventfd(0, 0)) < 0 || (epfd = epoll_create1(0)) < 0)
		return 1;
	struct epoll_event ev = {.events = EPOLLIN};
	epoll_ctl(epfd, EPOLL_CTL_ADD, rel_efd, &ev);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_wake; /* no SA_RESTART: the sleep returns EINTR */
	sigaction(SIGUSR2, &sa, NULL);
	for (int i = 0; i < 4; i++) {
		pthread_create(&th[i], NULL, fns[i], NULL);
		pthread_setname_np(th[i], names[i]);
	}
	write_file(out, "ready\n");
	while (read_line(line, sizeof(line)) && strcmp(line, "release"))
		;
	pthread_mutex_lock(&mu);
	released = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	uint64_t one = 1;
	(void)!write(rel_pipe[1], "x", 1);
	(void)!write(rel_efd, &one, 8);
	/* blk-sleep: a signal until it has ended (one sent just before
	 * its nanosleep would be lost) */
	while (pthread_kill(th[1], SIGUSR2) == 0 && pthread_tryjoin_np(th[1], NULL) == EBUSY)
		usleep(10000);
	for (int i = 0; i < 4; i++)
		if (i != 1)
			pthread_join(th[i], NULL);
	char text[128];
	snprintf(text, sizeof(text), "done %s%s\n", eintr_in ? "EINTR in " : "ok",
		 eintr_in ? eintr_in : "");
	write_file(out, text);
	while (read_line(line, sizeof(line)))
		;
	return eintr_in ? 3 : 0;
}

/* ---- epoll ---- */

static int epoll_only(const char *out)
{
	char line[256];
	struct epoll_event ev = {.events = EPOLLIN};
	int ep = epoll_create1(0);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev) != 0)
		return 1;
	write_file(out, "ready\n");
	for (;;) {
		int n = epoll_wait(ep, &ev, 1, -1);
		if (n < 0 && errno == EINTR) {
			write_file(out, "done EINTR in epoll_wait\n");
			return 3;
		}
		if (n < 0)
			return 1;
		if (!read_line(line, sizeof(line)))
			return 1;
		if (!strcmp(line, "release"))
			break;
	}
	write_file(out, "done ok\n");
	while (read_line(line, sizeof(line)))
		;
	return 0;
}

int main(int argc, char **argv)
{
	char line[256];
	if (argc != 3)
		return 2;
	if (!strcmp(argv[1], "idle")) {
		write_file(argv[2], "ready\n");
		while (read_line(line, sizeof(line)))
			;
		return 0;
	}
	if (!strcmp(argv[1], "blocked"))
		return blocked(argv[2]);
	if (!strcmp(argv[1], "epoll"))
		return epoll_only(argv[2]);
	if (strcmp(argv[1], "busy"))
		return 2;
	pthread_t a, b, late;
	pthread_create(&a, NULL, thread_a, NULL);
	pthread_create(&b, NULL, thread_b, NULL);
	write_file(argv[2], "ready\n");
	while (read_line(line, sizeof(line)) && strcmp(line, "go"))
		;
	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_create(&late, NULL, thread_late, NULL);
	int fds[2];
	if (pipe(fds) != 0)
		return 1;
	pid_t child = fork();
	if (child == 0) {
		uint64_t ns = attach_child_spin(400);
		(void)!write(fds[1], &ns, sizeof(ns));
		_exit(0);
	}
	uint64_t child_ns = 0;
	(void)!read(fds[0], &child_ns, sizeof(child_ns));
	int st;
	waitpid(child, &st, 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_join(late, NULL);
	char text[128];
	snprintf(text, sizeof(text), "done %llu %llu\n", (unsigned long long)burnt,
		 (unsigned long long)child_ns);
	write_file(argv[2], text);
	while (read_line(line, sizeof(line)))
		;
	return 0;
}
