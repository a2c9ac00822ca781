/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf_tree_floor.c - what sampling a process tree from outside costs the
 * tree, before any unwinding or symbolization: the kernel's
 * share of the design `perf record` has, which an out-of-process engine
 * for `emberprof run` would build on.
 *
 *   ember_bench_perf_tree_floor STACK_BYTES CMD [ARGS...]
 *
 * Starts CMD with one CPU-clock perf event per CPU (100 Hz, user space
 * only, as perf_event_paranoid 2 allows), inherited by every process and
 * thread CMD starts and kept across exec; each sample carries the IP, the
 * thread, the time and, with STACK_BYTES > 0, the user registers the
 * unwinder needs and a copy of that many bytes of the user stack. mmap,
 * comm and task records are asked for too (what a symbolizer would track).
 * This process reads the ring buffers every 50 ms and only counts what it
 * finds (printed on stderr); exits with CMD's status. Run by
 * bench/startcost.sh's loop case ("tree-floor"); docs/BENCHMARKS.md
 * section 13.
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define RING_PAGES 64 /* data pages per CPU, a power of two */
#define MAX_CPUS 256

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ember_bench_perf_tree_floor STACK_BYTES CMD [ARGS...]\n");
		return 2;
	}
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1 || ncpu > MAX_CPUS)
		return 2;
	unsigned stack = (unsigned)strtoul(argv[1], NULL, 10);
	long page = sysconf(_SC_PAGESIZE);
	int go[2];
	if (pipe2(go, O_CLOEXEC) != 0)
		return 1;
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		char b;
		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(126);
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	close(go[0]);
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.freq = 1;
	a.sample_freq = 100;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	if (stack) {
		a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
#if defined(__x86_64__)
		a.sample_regs_user = (1ull << 6) | (1ull << 7) | (1ull << 8); /* bp, sp, ip */
#elif defined(__aarch64__)
		a.sample_regs_user = (1ull << 29) | (1ull << 30) | (1ull << 31) | (1ull << 32);
#endif
		a.sample_stack_user = stack;
	}
	a.inherit = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.mmap = a.mmap2 = a.comm = a.task = 1;
	a.sample_id_all = 1;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.watermark = 1;
	a.wakeup_watermark = (unsigned)(page * RING_PAGES / 2);
	static int fd[MAX_CPUS];
	static struct perf_event_mmap_page *rb[MAX_CPUS];
	size_t len = (size_t)page * (RING_PAGES + 1);
	for (long i = 0; i < ncpu; i++) {
		fd[i] = (int)syscall(SYS_perf_event_open, &a, child, (int)i, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd[i] < 0) {
			perror("perf_tree_floor: perf_event_open");
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			return 77;
		}
		rb[i] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd[i], 0);
		if (rb[i] == MAP_FAILED) {
			perror("perf_tree_floor: mmap");
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			return 77;
		}
	}
	if (write(go[1], "g", 1) != 1)
		return 1;
	close(go[1]);
	unsigned long long samples = 0, records = 0, bytes = 0;
	int status = 0, done = 0;
	static struct pollfd pfd[MAX_CPUS];
	while (!done) {
		for (long i = 0; i < ncpu; i++)
			pfd[i] = (struct pollfd){.fd = fd[i], .events = POLLIN};
		poll(pfd, (nfds_t)ncpu, 50);
		done = waitpid(child, &status, WNOHANG) == child;
		for (long i = 0; i < ncpu; i++) {
			const char *data = (const char *)rb[i] + page;
			uint64_t head = __atomic_load_n(&rb[i]->data_head, __ATOMIC_ACQUIRE);
			uint64_t tail = rb[i]->data_tail;
			while (tail < head) {
				const struct perf_event_header *h =
					(const void *)(data + tail % ((uint64_t)page * RING_PAGES));
				samples += h->type == PERF_RECORD_SAMPLE;
				records++;
				bytes += h->size;
				tail += h->size;
			}
			__atomic_store_n(&rb[i]->data_tail, tail, __ATOMIC_RELEASE);
		}
	}
	fprintf(stderr, "perf_tree_floor: %llu samples, %llu records, %llu bytes\n", samples, records,
		bytes);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
