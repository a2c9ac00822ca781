/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf_tree.c - inherited per-CPU perf events over a process tree, their
 * rings read and merged by time (perf_tree.h).
 */
#include "tree/perf_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"
#include "util/error.h"
#include "util/hashmap.h"

/* Records stamped later than the drain's start less this wait for the
 * next drain: the kernel takes a record's time before it writes it. */
#define WATERMARK_MARGIN_NS 20000000ull
#define STACK_MAX 65528u

/* The user registers asked for, in the kernel's order (ascending bit):
 * which ember__regs field each fills. */
#if defined(__x86_64__)
/* PERF_REG_X86_BX 1, BP 6, SP 7, IP 8 */
#define REGS_MASK ((1ull << 1) | (1ull << 6) | (1ull << 7) | (1ull << 8))
enum { R_AUX, R_FP, R_SP, R_PC, R_N };
#elif defined(__aarch64__)
/* PERF_REG_ARM64_X29 29, LR 30, SP 31, PC 32 */
#define REGS_MASK ((1ull << 29) | (1ull << 30) | (1ull << 31) | (1ull << 32))
enum { R_FP, R_AUX, R_SP, R_PC, R_N };
#else
#error "perf_tree.c: user registers of this architecture are not known"
#endif

typedef struct pend {
	uint64_t time, seq;
	uint8_t *rec; /* a copy of the record (malloc'd) */
	int cpu;      /* the ring it came from */
} pend;

struct ember__ptree {
	int ncpu;
	int *fd;
	void **ring;
	size_t map_len, data_len;
	pend *q;
	size_t nq, capq;
	uint64_t seq;
	ember__ptree_stats st;
	uint32_t stack_bytes;
	int kchain; /* samples carry PERF_SAMPLE_CALLCHAIN */
	/* In user mode only, samples also read their event's count (the
	 * thread's CPU time on that CPU, kernel time included): (tid << 16 |
	 * cpu) -> the count at its previous sample, 0 after its exit. */
	int sample_read;
	ember__u64map counts;
	size_t dead_counts; /* entries of exited threads (0) */
	ember__u64map holds; /* pid -> 1 + fd of its dummy event (0: released) */
	size_t nholds;       /* open dummy events */
	/* ember__ptree_open_task: the options, and the events of the threads
	 * added after the first (their output in fd[]'s rings) */
	ember__ptree_opts opts;
	int threads_only;
	int *xfd;
	size_t nxfd, capxfd;
};

/* Most dummy events held open at once (one descriptor each). */
#define HOLDS_MAX 2048

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void attr_init(struct perf_event_attr *a, const ember__ptree_opts *o, size_t data_len,
		      int exclude_kernel, int sample_read)
{
	int kchain = o->kernel_frames && !exclude_kernel;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = o->hz;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
			 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	if (sample_read)
		a->sample_type |= PERF_SAMPLE_READ; /* read_format 0: the count alone */
	if (kchain) {
		/* the kernel's part only: the user stack is walked here */
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_user = 1;
		a->sample_max_stack = EMBER_PTREE_KMAX;
	}
	a->sample_regs_user = REGS_MASK;
	a->sample_stack_user = o->stack_bytes;
	a->inherit = 1;
	/* each thread's count on each CPU as a READ record when it exits:
	 * what a process used, whether or not a sample stands for it */
	a->inherit_stat = 1;
	a->exclude_kernel = (unsigned)exclude_kernel;
	a->exclude_hv = 1;
	a->mmap = 1; /* with mmap2: the MMAP2 form */
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->disabled = 1;
	a->enable_on_exec = 1;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(data_len / 4);
}

int ember__ptree_probe(void)
{
	ember__ptree_opts o = {0, 0, 0, 0, 0};
	o.hz = 100;
	o.stack_bytes = 16384;
	/* kernel samples; else user-mode samples that read their count */
	for (int exclude_kernel = 0; exclude_kernel < 2; exclude_kernel++) {
		struct perf_event_attr a;
		attr_init(&a, &o, 16384, exclude_kernel, exclude_kernel);
		/* ourselves, any CPU: the same permission check as a child's
		 * per-CPU events, and never enabled */
		a.enable_on_exec = 0;
		int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			return exclude_kernel ? 1 : 2;
		}
		if (errno != EACCES && errno != EPERM)
			break;
	}
	return 0;
}

void ember__ptree_free(ember__ptree *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->ncpu; i++) {
		if (t->ring && t->ring[i])
			munmap(t->ring[i], t->map_len);
		if (t->fd && t->fd[i] >= 0)
			close(t->fd[i]);
	}
	for (size_t i = 0; i < t->nxfd; i++)
		close(t->xfd[i]);
	free(t->xfd);
	for (size_t i = 0; i < t->nq; i++)
		free(t->q[i].rec);
	free(t->q);
	ember__u64map_free(&t->counts);
	for (size_t i = 0; i < t->holds.cap; i++)
		if (t->holds.slots[i].used && t->holds.slots[i].value)
			close((int)t->holds.slots[i].value - 1);
	ember__u64map_free(&t->holds);
	free(t->ring);
	free(t->fd);
	free(t);
}

int ember__ptree_open(ember__ptree **out, pid_t pid, const ember__ptree_opts *opts)
{
	if (!out || pid <= 0)
		return ember__error(EMBER_ERR_INVALID, "perf tree: no process given");
	*out = NULL;
	ember__ptree_opts o = opts ? *opts : (ember__ptree_opts){0, 0, 0, 0, 0};
	if (!o.hz)
		o.hz = 100;
	if (!o.stack_bytes)
		o.stack_bytes = 16384;
	long page = sysconf(_SC_PAGESIZE);
	int ring_given = o.ring_pages != 0;
	if (!o.ring_pages) {
		/* a quarter second of one CPU's samples, 64 to 1,024 pages */
		uint64_t want = (uint64_t)o.hz * (o.stack_bytes + 256) / 4 / (uint64_t)(page > 0 ? page : 4096);
		o.ring_pages = 64;
		while (o.ring_pages < want && o.ring_pages < 1024)
			o.ring_pages *= 2;
	}
	if (o.stack_bytes > STACK_MAX || (o.stack_bytes & 7) || o.hz > 100000 ||
	    (o.ring_pages & (o.ring_pages - 1)))
		return ember__error(EMBER_ERR_INVALID,
				    "perf tree: bad options (hz %u, stack %u bytes, %u ring pages)",
				    o.hz, o.stack_bytes, o.ring_pages);
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1 || page < 1)
		return ember__error(EMBER_ERR_UNSUPPORTED, "perf tree: cannot count the CPUs");
	ember__ptree *t = calloc(1, sizeof(*t));
	if (!t)
		return ember__error_oom("perf tree");
	t->ncpu = (int)ncpu;
	t->stack_bytes = o.stack_bytes;
	t->fd = malloc((size_t)ncpu * sizeof(int));
	t->ring = calloc((size_t)ncpu, sizeof(void *));
	if (!t->fd || !t->ring) {
		ember__ptree_free(t);
		return ember__error_oom("perf tree");
	}
	for (long i = 0; i < ncpu; i++)
		t->fd[i] = -1;
	t->data_len = (size_t)page * o.ring_pages;
	t->map_len = t->data_len + (size_t)page;

	int exclude_kernel = o.user_only ? 1 : 0, sample_read = exclude_kernel;
	/* Over the locked-memory allowance (perf_event_mlock_kb, then
	 * RLIMIT_MEMLOCK) the rings are made smaller, down to 16 pages: the
	 * events are opened again, their wakeup mark a quarter of the ring. */
	for (;;) {
		for (long i = 0; i < ncpu; i++) {
			struct perf_event_attr a;
			attr_init(&a, &o, t->data_len, exclude_kernel, sample_read);
			int fd = (int)syscall(SYS_perf_event_open, &a, pid, (int)i, -1,
					      PERF_FLAG_FD_CLOEXEC);
			if (fd < 0 && i == 0 && !exclude_kernel && (errno == EACCES || errno == EPERM)) {
				/* user mode only: each sample also reads the
				 * time it stands for, the kernel's included */
				exclude_kernel = sample_read = 1;
				attr_init(&a, &o, t->data_len, exclude_kernel, sample_read);
				fd = (int)syscall(SYS_perf_event_open, &a, pid, (int)i, -1,
						  PERF_FLAG_FD_CLOEXEC);
			}
			/* before Linux 6.12, inherit and PERF_SAMPLE_READ exclude
			 * each other: samples then weigh their user-mode period */
			if (fd < 0 && i == 0 && sample_read && errno == EINVAL) {
				sample_read = 0;
				attr_init(&a, &o, t->data_len, exclude_kernel, sample_read);
				fd = (int)syscall(SYS_perf_event_open, &a, pid, (int)i, -1,
						  PERF_FLAG_FD_CLOEXEC);
			}
			/* a CPU that is configured but offline takes no samples */
			if (fd < 0 && errno == ENODEV && i > 0)
				continue;
			if (fd < 0) {
				int e = errno;
				ember__ptree_free(t);
				return ember__error_errno(EMBER_ERR_UNSUPPORTED, e,
							  "perf tree: perf_event_open on CPU %ld", i);
			}
			t->fd[i] = fd;
		}
		int e = 0;
		for (long i = 0; i < ncpu && !e; i++) {
			if (t->fd[i] < 0)
				continue;
			void *r = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd[i], 0);
			if (r == MAP_FAILED)
				e = errno;
			else
				t->ring[i] = r;
		}
		if (!e)
			break;
		if ((e != EPERM && e != ENOMEM) || ring_given || t->data_len <= 16 * (size_t)page) {
			size_t kib = t->map_len / 1024;
			ember__ptree_free(t);
			return ember__error_errno(EMBER_ERR_UNSUPPORTED, e,
						  "perf tree: mapping the rings (%zu KiB each)", kib);
		}
		for (long i = 0; i < ncpu; i++) {
			if (t->ring[i])
				munmap(t->ring[i], t->map_len);
			t->ring[i] = NULL;
			if (t->fd[i] >= 0)
				close(t->fd[i]);
			t->fd[i] = -1;
		}
		t->data_len /= 2;
		t->map_len = t->data_len + (size_t)page;
	}
	t->st.exclude_kernel = exclude_kernel;
	t->st.kernel_weighed = sample_read;
	t->sample_read = sample_read;
	t->kchain = o.kernel_frames && !exclude_kernel;
	t->st.kernel_frames = t->kchain;
	/* the command's process forks first: a context of its own before
	 * it runs (a failure only costs the fork-heavy parent samples) */
	if (pid != getpid()) /* (not the ring holders of ember__ptree_open_rings) */
		(void)ember__ptree_hold(t, pid);
	t->opts = o;
	*out = t;
	return 0;
}

/* Rebuilds m without its entries of value 0. 0, or -1 (out of memory: m
 * kept as it is). */
static int drop_zeros(ember__u64map *m)
{
	ember__u64map live = EMBER_U64MAP_INIT;
	for (size_t i = 0; i < m->cap; i++) {
		ember__u64map_slot *sl = &m->slots[i];
		if (!sl->used || !sl->value)
			continue;
		uint64_t *v = ember__u64map_put(&live, sl->key, NULL);
		if (!v) {
			ember__u64map_free(&live);
			return -1;
		}
		*v = sl->value;
	}
	ember__u64map_free(m);
	*m = live;
	return 0;
}

int ember__ptree_hold(ember__ptree *t, pid_t pid)
{
	uint64_t *v = ember__u64map_get(&t->holds, (uint64_t)pid);
	if (v && *v)
		return 0;
	if (t->nholds >= HOLDS_MAX) {
		t->st.hold_failures++;
		return ember__error(EMBER_ERR_UNSUPPORTED, "perf tree: %d dummy events held already",
				    HOLDS_MAX);
	}
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.disabled = 1;
	a.exclude_kernel = 1; /* permitted at any perf_event_paranoid below 3 */
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		t->st.hold_failures += errno != ESRCH; /* gone already: nothing to hold */
		return ember__error_errno(EMBER_ERR_UNSUPPORTED, errno,
					  "perf tree: a dummy event on process %d", (int)pid);
	}
	v = ember__u64map_put(&t->holds, (uint64_t)pid, NULL);
	if (!v) {
		close(fd);
		t->st.hold_failures++;
		return ember__error_oom("perf tree");
	}
	*v = (uint64_t)fd + 1;
	t->nholds++;
	t->st.holds++;
	return 0;
}

void ember__ptree_release(ember__ptree *t, pid_t pid)
{
	uint64_t *v = ember__u64map_get(&t->holds, (uint64_t)pid);
	if (!v || !*v)
		return;
	close((int)*v - 1);
	*v = 0;
	t->nholds--;
	/* the map keeps the pid (0) until it is rebuilt, when mostly released */
	if (t->holds.n > 4096 && t->nholds * 2 < t->holds.n)
		(void)drop_zeros(&t->holds);
}

int ember__ptree_open_rings(ember__ptree **out, const ember__ptree_opts *opts, int threads_only)
{
	/* disabled until an exec this process never does: ring holders */
	int rc = ember__ptree_open(out, getpid(), opts);
	if (rc == 0)
		(*out)->threads_only = threads_only;
	return rc;
}

int ember__ptree_add_task(ember__ptree *t, pid_t tid)
{
	size_t first = t->nxfd;
	for (int i = 0; i < t->ncpu; i++) {
		if (t->fd[i] < 0)
			continue;
		if (t->nxfd == t->capxfd) {
			size_t cap = t->capxfd ? 2 * t->capxfd : 64;
			int *n = realloc(t->xfd, cap * sizeof(*n));
			if (!n)
				return ember__error_oom("perf tree");
			t->xfd = n;
			t->capxfd = cap;
		}
		struct perf_event_attr a;
		attr_init(&a, &t->opts, t->data_len, t->st.exclude_kernel, t->sample_read);
		a.enable_on_exec = 0;
		a.disabled = 0;
		a.inherit_thread = t->threads_only ? 1u : 0u;
		int fd = (int)syscall(SYS_perf_event_open, &a, tid, i, -1, PERF_FLAG_FD_CLOEXEC);
		int e = errno;
		if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, t->fd[i]) != 0) {
			e = errno;
			close(fd);
			fd = -1;
		}
		if (fd < 0) {
			while (t->nxfd > first)
				close(t->xfd[--t->nxfd]);
			if (e == ESRCH)
				return -ESRCH;
			return ember__error_errno(EMBER_ERR_UNSUPPORTED, e,
						  "perf tree: perf_event_open on thread %d, CPU %d",
						  (int)tid, i);
		}
		t->xfd[t->nxfd++] = fd;
	}
	return 0;
}

int ember__ptree_after_fork(ember__ptree *t)
{
	for (int i = 0; i < t->ncpu; i++) {
		if (t->fd[i] < 0)
			continue;
		t->ring[i] = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd[i], 0);
		if (t->ring[i] == MAP_FAILED) {
			int e = errno;
			t->ring[i] = NULL;
			return ember__error_errno(EMBER_ERR_SYS, e, "perf tree: mapping CPU %d's ring again", i);
		}
	}
	return 0;
}

int ember__ptree_wait(ember__ptree *t, int timeout_ms)
{
	struct pollfd pfd[256];
	nfds_t n = 0;
	for (int i = 0; i < t->ncpu && n < 256; i++)
		if (t->fd[i] >= 0)
			pfd[n++] = (struct pollfd){.fd = t->fd[i], .events = POLLIN};
	return poll(pfd, n, timeout_ms) < 0 ? -errno : 0;
}

/* The trailing sample_id of a non-sample record: {pid, tid, time}. */
#define SAMPLE_ID_SIZE 16

static int queue_push(ember__ptree *t, uint8_t *rec, uint64_t time, int cpu)
{
	if (t->nq == t->capq) {
		size_t cap = t->capq ? 2 * t->capq : 256;
		pend *q = realloc(t->q, cap * sizeof(*q));
		if (!q)
			return -1;
		t->q = q;
		t->capq = cap;
	}
	t->q[t->nq++] = (pend){time, t->seq++, rec, cpu};
	return 0;
}

/* A record's time: samples have it third (after IP and TID), the others
 * in their trailing sample_id. 0 when the record is too short. */
static uint64_t record_time(const uint8_t *rec, uint16_t size)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t v = 0;
	if (h->type == PERF_RECORD_SAMPLE) {
		if (size >= sizeof(*h) + 24)
			memcpy(&v, rec + sizeof(*h) + 16, 8);
	} else if (size >= sizeof(*h) + SAMPLE_ID_SIZE) {
		memcpy(&v, rec + size - 8, 8);
	}
	return v;
}

/* Copies the records of one ring into the queue. */
static void read_ring(ember__ptree *t, int cpu)
{
	struct perf_event_mmap_page *mp = t->ring[cpu];
	const uint8_t *data = (const uint8_t *)mp + (t->map_len - t->data_len);
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	const uint64_t mask = t->data_len - 1;
	while (tail < head) {
		struct perf_event_header h;
		for (size_t k = 0; k < sizeof(h); k++)
			((uint8_t *)&h)[k] = data[(tail + k) & mask];
		if (h.size < sizeof(h) || h.size > head - tail) {
			t->st.malformed++;
			tail = head;
			break;
		}
		uint8_t *rec = malloc(h.size);
		if (rec) {
			uint64_t off = tail & mask;
			size_t first = t->data_len - off < h.size ? t->data_len - off : h.size;
			memcpy(rec, data + off, first);
			memcpy(rec + first, data, h.size - first);
			if (queue_push(t, rec, record_time(rec, h.size), cpu) != 0)
				free(rec);
		}
		t->st.bytes += h.size;
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

static int cmp_pend(const void *a, const void *b)
{
	const pend *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int64_t get_u64(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	if (end - *p < 8)
		return -1;
	memcpy(v, *p, 8);
	*p += 8;
	return 0;
}

/* The count keys of a thread: one per CPU its events run on. */
static uint64_t count_key(int32_t tid, int cpu)
{
	return (uint64_t)(uint32_t)tid << 16 | (uint64_t)(uint16_t)cpu;
}

/* What a user-mode sample stands for: its thread's CPU time on that CPU
 * since its previous sample there (the kernel's included, which took no
 * sample), from the count it read. The first sample of a thread stands
 * for its time since it started (an inherited event counts from 0). */
static void weigh_by_count(ember__ptree *t, ember__ptree_rec *r, int cpu, uint64_t count)
{
	uint64_t *last = ember__u64map_put(&t->counts, count_key(r->tid, cpu), NULL);
	if (!last)
		return; /* out of memory: the sample keeps its period */
	r->u.sample.period = count > *last ? count - *last : count;
	*last = count;
}

/* A thread exited: its counts start again from 0 should its tid come
 * back. The map is rebuilt without them once they are most of it. */
static void forget_counts(ember__ptree *t, int32_t tid)
{
	for (int i = 0; i < t->ncpu; i++) {
		uint64_t *v = ember__u64map_get(&t->counts, count_key(tid, i));
		if (v && *v) {
			*v = 0;
			t->dead_counts++;
		}
	}
	if (t->dead_counts < 4096 || t->dead_counts * 2 < t->counts.n)
		return;
	if (drop_zeros(&t->counts) == 0)
		t->dead_counts = 0;
}

/* Decodes a sample record (IP, TID, TIME, PERIOD, [READ], [CALLCHAIN],
 * REGS_USER, STACK_USER) from the ring of `cpu`. */
static int decode_sample(ember__ptree *t, const uint8_t *rec, uint16_t size, int cpu,
			 ember__ptree_rec *r)
{
	const uint8_t *p = rec + sizeof(struct perf_event_header), *end = rec + size;
	uint64_t ip, pidtid, v;
	if (get_u64(&p, end, &ip) || get_u64(&p, end, &pidtid) || get_u64(&p, end, &r->time) ||
	    get_u64(&p, end, &r->u.sample.period))
		return -1;
	r->pid = (int32_t)(uint32_t)pidtid;
	r->tid = (int32_t)(uint32_t)(pidtid >> 32);
	if (t->sample_read) {
		uint64_t count;
		if (get_u64(&p, end, &count))
			return -1;
		weigh_by_count(t, r, cpu, count);
	}
	r->u.sample.nkips = 0;
	if (t->kchain) {
		/* nr, then the IPs: context markers (PERF_CONTEXT_KERNEL...)
		 * among them are not frames */
		uint64_t nr;
		if (get_u64(&p, end, &nr) || nr > (uint64_t)(end - p) / 8)
			return -1;
		for (uint64_t i = 0; i < nr; i++) {
			uint64_t kip = 0;
			(void)get_u64(&p, end, &kip);
			if (kip >= (uint64_t)PERF_CONTEXT_MAX)
				continue;
			if (r->u.sample.nkips < EMBER_PTREE_KMAX)
				r->u.sample.kips[r->u.sample.nkips++] = kip;
		}
	}
	uint64_t abi;
	if (get_u64(&p, end, &abi))
		return -1;
	memset(&r->u.sample.regs, 0, sizeof(r->u.sample.regs));
	r->u.sample.regs_ok = abi != PERF_SAMPLE_REGS_ABI_NONE;
	if (r->u.sample.regs_ok) {
		uint64_t regs[R_N];
		for (int i = 0; i < R_N; i++)
			if (get_u64(&p, end, &regs[i]))
				return -1;
		r->u.sample.regs.pc = (uintptr_t)regs[R_PC];
		r->u.sample.regs.sp = (uintptr_t)regs[R_SP];
		r->u.sample.regs.fp = (uintptr_t)regs[R_FP];
		r->u.sample.regs.aux = (uintptr_t)regs[R_AUX];
	} else {
		r->u.sample.regs.pc = (uintptr_t)ip;
	}
	uint64_t ssize;
	if (get_u64(&p, end, &ssize))
		return -1;
	r->u.sample.stack = NULL;
	r->u.sample.stack_len = 0;
	if (ssize) {
		if (ssize > (uint64_t)(end - p) || (uint64_t)(end - p) - ssize < 8)
			return -1;
		const uint8_t *stack = p;
		p += ssize;
		if (get_u64(&p, end, &v)) /* dyn_size: the bytes actually copied */
			return -1;
		r->u.sample.stack = stack;
		r->u.sample.stack_len = v < ssize ? v : ssize;
	}
	return 0;
}

static int decode(ember__ptree *t, const uint8_t *rec, int cpu, ember__ptree_rec *r)
{
	const struct perf_event_header *h = (const void *)rec;
	const uint8_t *body = rec + sizeof(*h);
	size_t blen = h->size - sizeof(*h);
	memset(r, 0, sizeof(*r));
	if (h->type == PERF_RECORD_SAMPLE) {
		r->type = EMBER_PTREE_SAMPLE;
		return decode_sample(t, rec, h->size, cpu, r);
	}
	if (blen < SAMPLE_ID_SIZE)
		return -1;
	r->time = record_time(rec, h->size);
	size_t fixed = blen - SAMPLE_ID_SIZE; /* the record's own fields */
	uint32_t u32[4];
	switch (h->type) {
	case PERF_RECORD_MMAP2: {
		/* pid, tid; addr, len, pgoff; maj, min; ino; ino_generation;
		 * prot, flags; filename (NUL-padded) */
		const size_t head = 8 + 24 + 8 + 16 + 8;
		if (fixed <= head || (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
			return -1;
		memcpy(u32, body, 8);
		r->type = EMBER_PTREE_MMAP;
		r->pid = (int32_t)u32[0];
		r->tid = (int32_t)u32[1];
		memcpy(&r->u.mmap.start, body + 8, 8);
		memcpy(&r->u.mmap.len, body + 16, 8);
		memcpy(&r->u.mmap.pgoff, body + 24, 8);
		memcpy(&r->u.mmap.maj, body + 32, 4);
		memcpy(&r->u.mmap.min, body + 36, 4);
		memcpy(&r->u.mmap.ino, body + 40, 8);
		memcpy(&r->u.mmap.prot, body + 56, 4);
		const char *name = (const char *)body + head;
		if (!memchr(name, 0, fixed - head))
			return -1;
		r->u.mmap.path = name;
		return 0;
	}
	case PERF_RECORD_COMM: {
		if (fixed <= 8)
			return -1;
		memcpy(u32, body, 8);
		r->type = EMBER_PTREE_COMM;
		r->pid = (int32_t)u32[0];
		r->tid = (int32_t)u32[1];
		const char *name = (const char *)body + 8;
		if (!memchr(name, 0, fixed - 8))
			return -1;
		r->u.comm.comm = name;
		r->u.comm.exec = (h->misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
		return 0;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (fixed < 24)
			return -1;
		memcpy(u32, body, 16);
		r->type = h->type == PERF_RECORD_FORK ? EMBER_PTREE_FORK : EMBER_PTREE_EXIT;
		r->pid = (int32_t)u32[0];
		r->u.task.ppid = (int32_t)u32[1];
		r->tid = (int32_t)u32[2];
		r->u.task.ptid = (int32_t)u32[3];
		return 0;
	case PERF_RECORD_LOST:
		if (fixed < 16)
			return -1;
		r->type = EMBER_PTREE_LOST;
		memcpy(&r->u.lost.lost, body + 8, 8);
		return 0;
	case PERF_RECORD_READ:
		/* pid, tid, the count (read_format 0) */
		if (fixed < 16)
			return -1;
		memcpy(u32, body, 8);
		r->type = EMBER_PTREE_READ;
		r->pid = (int32_t)u32[0];
		r->tid = (int32_t)u32[1];
		memcpy(&r->u.read.value, body + 8, 8);
		return 0;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		t->st.throttles += h->type == PERF_RECORD_THROTTLE;
		return 1;
	default:
		t->st.unknown++;
		return 1;
	}
}

/* What each CPU's event counted: its own thread's time and, summed in by
 * the kernel, that of every inherited event whose thread has exited, and
 * of those still running (read_format 0: the count alone). */
static void read_counts(ember__ptree *t)
{
	uint64_t sum = 0;
	for (int i = 0; i < t->ncpu; i++) {
		uint64_t v;
		if (t->fd[i] < 0)
			continue;
		if (read(t->fd[i], &v, sizeof(v)) != (ssize_t)sizeof(v))
			return; /* counted_ns stays as it was */
		sum += v;
	}
	for (size_t i = 0; i < t->nxfd; i++) {
		uint64_t v;
		if (read(t->xfd[i], &v, sizeof(v)) != (ssize_t)sizeof(v))
			return;
		sum += v;
	}
	t->st.counted_ns = sum;
}

size_t ember__ptree_drain(ember__ptree *t, int final, ember__ptree_cb cb, void *arg)
{
	uint64_t limit = final ? UINT64_MAX : now_ns() - WATERMARK_MARGIN_NS;
	for (int i = 0; i < t->ncpu; i++)
		if (t->fd[i] >= 0 && t->ring[i])
			read_ring(t, i);
	if (t->nq > 1)
		qsort(t->q, t->nq, sizeof(*t->q), cmp_pend);
	size_t n = 0;
	while (n < t->nq && t->q[n].time <= limit)
		n++;
	for (size_t i = 0; i < n; i++) {
		ember__ptree_rec r;
		int rc = decode(t, t->q[i].rec, t->q[i].cpu, &r);
		t->st.records++;
		if (rc < 0) {
			t->st.malformed++;
		} else if (rc == 0) {
			if (r.type == EMBER_PTREE_SAMPLE) {
				t->st.samples++;
				t->st.sample_ns += r.u.sample.period;
			} else if (r.type == EMBER_PTREE_LOST)
				t->st.lost += r.u.lost.lost;
			else if (r.type == EMBER_PTREE_READ)
				t->st.read_ns += r.u.read.value;
			else if (r.type == EMBER_PTREE_EXIT && t->sample_read)
				forget_counts(t, r.tid);
			cb(arg, &r);
		}
		free(t->q[i].rec);
	}
	if (n > 0) { /* t->q may still be NULL when nothing was ever queued */
		memmove(t->q, t->q + n, (t->nq - n) * sizeof(*t->q));
		t->nq -= n;
	}
	if (final)
		read_counts(t);
	return n;
}

void ember__ptree_get_stats(const ember__ptree *t, ember__ptree_stats *out)
{
	*out = t->st;
}
