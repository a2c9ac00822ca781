/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_perf.c - per-thread task-clock perf events that signal their own
 * thread on overflow (engine_perf.h).
 *
 * Each overflow queues an irq_work that sends the F_SETSIG signal to the
 * descriptor's owner; with F_OWNER_TID that is the sampled thread itself,
 * which gets it on its way back to user mode, so the signal's ucontext is
 * the thread's own interrupted state. The kernel sends the signal on
 * every overflow whether or not samples are recorded (wakeup_events = 1
 * keeps that true on kernels that tie it to wakeups), and the handler
 * reads the count with read(2).
 *
 * Kernel frames (kernel_chain): each overflow also writes a sample record
 * holding the kernel's callchain only (exclude_callchain_user; the user
 * stack is the handler's to unwind) into a ring of one data page mapped
 * per thread (ember__perf_map_ring), which the handler reads
 * (sample/kring.h).
 */
#include "engine/engine_perf.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/fileio.h"

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t tid)
{
	return (int)syscall(SYS_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int ember__perf_paranoid(void)
{
	return ember__read_int_file("/proc/sys/kernel/perf_event_paranoid", -100);
}

int ember__perf_open(int32_t tid, int signo, int64_t period_ns, int exclude_kernel,
		     int kernel_chain)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.sample_period = (uint64_t)period_ns;
	attr.disabled = 1;
	attr.exclude_kernel = exclude_kernel ? 1 : 0;
	attr.exclude_hv = 1;
	attr.wakeup_events = 1;
	if (kernel_chain && !exclude_kernel) {
		attr.sample_type = PERF_SAMPLE_CALLCHAIN;
		attr.exclude_callchain_user = 1;
		attr.sample_max_stack = EMBER_KRING_MAX_FRAMES;
	}
	int fd = sys_perf_event_open(&attr, (pid_t)tid);
	if (fd < 0)
		return -errno;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 256);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = (pid_t)tid};
	if (fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, signo) != 0 ||
	    fcntl(fd, F_SETFL, O_ASYNC) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int ember__perf_enable(int fd)
{
	if (ioctl(fd, PERF_EVENT_IOC_RESET, 0) != 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0)
		return -errno;
	return 0;
}

void ember__perf_disable(int fd)
{
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
}

uint64_t ember__perf_id(int fd)
{
	uint64_t id = 0;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0)
		return 0;
	return id;
}

int ember__perf_is_ours(int fd, int signo, uint64_t id)
{
	/* F_GETSIG first: harmless on any descriptor, and only ours (or one
	 * the program set up the same way) answers our signal. */
	return id != 0 && fcntl(fd, F_GETSIG) == signo && ember__perf_id(fd) == id;
}

int ember__perf_probe(int signo, int64_t period_ns, int refuse, int *exclude_kernel, char *why,
		      size_t whylen)
{
	*exclude_kernel = 0;
	if (refuse) {
		snprintf(why, whylen, "perf_event_open refused (simulated by "
				      "EMBERPROF_ENGINE_PERF_DISABLE)");
		return -EACCES;
	}
	int32_t self = (int32_t)gettid();
	int fd = ember__perf_open(self, signo, period_ns, 0, 0);
	if (fd == -EACCES || fd == -EPERM) {
		*exclude_kernel = 1;
		fd = ember__perf_open(self, signo, period_ns, 1, 0);
	}
	if (fd < 0) {
		int par = ember__perf_paranoid();
		char ptxt[48] = "";
		if (par != -100)
			snprintf(ptxt, sizeof(ptxt), ", perf_event_paranoid=%d", par);
		snprintf(why, whylen, "perf_event_open(task-clock) on our own thread failed: %s%s%s",
			 strerror(-fd), ptxt,
			 fd == -ENOSYS ? " (no perf_events in this kernel, or a seccomp filter)"
			 : fd == -EACCES || fd == -EPERM
				 ? " (a seccomp filter, a container policy or perf_event_paranoid "
				   "forbids it)"
				 : "");
		return fd;
	}
	close(fd);
	return 0;
}

size_t ember__perf_ring_len(void)
{
	return 2 * (size_t)sysconf(_SC_PAGESIZE);
}

void *ember__perf_map_ring(int fd, int *err)
{
	void *m = mmap(NULL, ember__perf_ring_len(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		*err = errno;
		return NULL;
	}
	return m;
}

void ember__perf_unmap_ring(void *ring)
{
	if (ring)
		munmap(ring, ember__perf_ring_len());
}
