/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_forklock.c - a fork while another thread holds the dynamic loader's
 * list lock (CI's soak saw a fork child's exec wait 10 s).
 *
 *   host_forklock exec|exit
 *   host_forklock burn          (what `exec` execs: burns 0.3 s, status 0)
 *
 * A thread sits in a dl_iterate_phdr callback (which holds glibc's
 * dl_load_write_lock, as a dlopen or dlclose does briefly) while the main
 * thread forks; glibc does not reset that lock in the child, so it stays
 * held there for good. The child lives 60 ms (long enough for its agent's
 * lazy start to begin), then execs `burn` or burns 0.3 s and exits with
 * status 3. The parent releases the lock only after the child has ended,
 * so anything in the child that waits for the lock waits to the end.
 * Prints "child status N" (exit status, or 128+signal).
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_common.h"

static atomic_int inside, release_lock;

static int hold_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info;
	(void)size;
	(void)data;
	atomic_store(&inside, 1);
	while (!atomic_load(&release_lock))
		usleep(1000);
	return 1;
}

static void *holder(void *arg)
{
	(void)arg;
	dl_iterate_phdr(hold_cb, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: host_forklock exec|exit|burn\n");
		return 2;
	}
	if (!strcmp(argv[1], "burn")) {
		burn_thread_cpu(0.3);
		return 0;
	}
	int do_exec = !strcmp(argv[1], "exec");
	pthread_t th;
	if (pthread_create(&th, NULL, holder, NULL))
		return 2;
	while (!atomic_load(&inside))
		usleep(100);
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		struct timespec nap = {0, 60000000};
		nanosleep(&nap, NULL);
		if (do_exec) {
			execl("/proc/self/exe", "host_forklock", "burn", (char *)NULL);
			_exit(127);
		}
		burn_cpu(0.3);
		_exit(3);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return 2;
	atomic_store(&release_lock, 1);
	pthread_join(th, NULL);
	printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}
