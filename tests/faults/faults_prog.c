/* SPDX-License-Identifier: Apache-2.0 */
/*
 * faults_prog.c - the workload of tests/faults: two threads burn a fixed
 * amount of arithmetic (burn_faults, about 0.4 s of CPU each on an idle
 * machine) while allocating, writing and reading back files of their own
 * in DIR and mapping memory. The output is a checksum that depends only on
 * the work, never on timing: profiled or not, with a fault injected into
 * the agent or not, stdout must be the same. Every call of the program's
 * own that fails is a sign the fault reached the program: it says which on
 * stderr and exits 3.
 *
 * usage: faults_prog DIR
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROUNDS 40
#define WORK 3000000u

static const char *dir;

static void die(const char *what)
{
	perror(what);
	exit(3);
}

__attribute__((noinline, noipa)) static uint64_t burn_faults(uint64_t x)
{
	for (unsigned i = 0; i < WORK; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull + (x >> 29);
	return x;
}

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uint64_t x = id + 1;
	char path[4096];
	snprintf(path, sizeof(path), "%s/w%lu", dir, (unsigned long)id);
	for (int r = 0; r < ROUNDS; r++) {
		x = burn_faults(x);
		size_t n = 1000 + (size_t)(x % 50000);
		unsigned char *buf = malloc(n);
		if (!buf)
			die("malloc");
		for (size_t i = 0; i < n; i++)
			buf[i] = (unsigned char)(x >> (i % 56));
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			die("open for writing");
		if (write(fd, buf, n) != (ssize_t)n)
			die("write");
		close(fd);
		void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			die("mmap");
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("open for reading");
		if (read(fd, m, n) != (ssize_t)n)
			die("read");
		close(fd);
		if (memcmp(m, buf, n))
			die("read back");
		for (size_t i = 0; i < n; i += 97)
			x ^= ((unsigned char *)m)[i];
		munmap(m, n);
		free(buf);
	}
	unlink(path);
	return (void *)(uintptr_t)x;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: faults_prog DIR\n");
		return 2;
	}
	dir = argv[1];
	pthread_t t[2];
	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			die("pthread_create");
	uint64_t sum = 0;
	for (int i = 0; i < 2; i++) {
		void *v;
		pthread_join(t[i], &v);
		sum = sum * 31 + (uintptr_t)v;
	}
	printf("faults_prog: checksum %016llx\n", (unsigned long long)sum);
	return 0;
}
