/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hook.c - the allocation hook: what the interposed malloc & co do
 * (hook.h).
 *
 * The real allocator. glibc exports its allocator under a second name
 * (__libc_malloc, __libc_free, ...), reachable without dlsym. But when
 * another allocator follows us in the symbol search order (jemalloc or
 * tcmalloc linked into the program, or preloaded after us), the
 * application's memory must come from it: a block jemalloc allocated (say
 * through its own mallocx) and then passed to free() would crash glibc's
 * free. So on the first call we ask the dynamic loader which malloc comes
 * next (dlsym(RTLD_NEXT, "malloc")): if it is __libc_malloc (glibc's own,
 * or tcmalloc's, which defines the __libc_* names too), we use the
 * __libc_* entry points; otherwise every call goes to the next allocator's
 * functions. (An allocator that also defines operator new and delete -
 * jemalloc, tcmalloc - serves C++ new itself, without passing through
 * malloc: only its C calls reach us.) dlsym itself may allocate: calls made while the lookup runs
 * (on this thread, or on another) are served from a small static arena
 * whose blocks free() recognises and ignores. An allocator preloaded
 * BEFORE us never reaches this code at all: its malloc wins the lookup,
 * and allocation profiling then has nothing to see (the agent logs it).
 *
 * Sampling. Each thread counts down the bytes to its next sample
 * (ember__heap_left). The unsampled path subtracts and compares; a result below
 * zero takes the slow path, which (profiling on) records the allocation and
 * draws the next exponential countdown (sampler.h), or (profiling off, an
 * internal thread, a re-entrant call) sets the countdown to 64 KiB, so an
 * idle hook looks at the global state once per 64 KiB allocated per
 * thread (a few nanoseconds each time).
 * A new agent run bumps an epoch, and each thread's first check after it
 * draws a fresh countdown as if the Poisson process started there.
 *
 * The sampled path runs between ember__sigpath_enter and leave (the
 * unwind snapshot and thread table are the signal handler's, and the
 * agent frees neither while anything is in flight). It claims a ring
 * slot, unwinds from its own registers with the handler's unwinder, cuts
 * the frames of this hook (section ember_hook_text), publishes the record
 * and then enters the pointer into the live table - in that order, so a
 * free() that finds the pointer comes after the record.
 */
#include "heap/hook.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heap/sampler.h"
#include "sample/handler.h"
#include "sample/threadtab.h"
#include "unwind/arch.h"
#include "unwind/unwind.h"
#include "util/hashmap.h"
#include "util/ticks.h"
#include "util/hotpage.h"

#define TLS __attribute__((tls_model("initial-exec")))
/* How often an idle hook looks at the global state: a new run starts
 * sampling within this many bytes of a thread's allocation, and this is
 * the only delay before its first sample can come. */
#define OFF_QUANTUM (INT64_C(64) << 10)

/* ---- the real allocator ---- */

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
extern void *__libc_stack_end;

static int glibc_posix_memalign(void **out, size_t align, size_t n);

static const ember__heap_next glibc_fns = {
	.malloc = __libc_malloc,
	.free = __libc_free,
	.calloc = __libc_calloc,
	.realloc = __libc_realloc,
	.memalign = __libc_memalign,
	.posix_memalign = glibc_posix_memalign,
	.aligned_alloc = __libc_memalign,
	.valloc = __libc_valloc,
	.pvalloc = __libc_pvalloc,
};

enum { REAL_NONE = 0, REAL_RESOLVING = 1, REAL_READY = 2 };
static _Atomic int g_real_state;
/* The real allocator (hook.h): valid once g_real_state is REAL_READY;
 * before that, malloc and free (the fields the fast paths read without
 * checking the state) are stubs that resolve first. Filled field by field
 * with atomic stores. */
static void *first_malloc(size_t n);
static void first_free(void *p);
ember__heap_next ember__heap_next_fns = {.malloc = first_malloc, .free = first_free};

/* The live table's filter (hook.h, livetab.h). */
_Atomic uint8_t ember__heap_filter[EMBER_LIVETAB_FILTER_SLOTS];

/* The bootstrap arena: blocks are [16-byte header: size][data]. */
unsigned char ember__heap_boot[EMBER_HEAP_BOOT_SIZE] __attribute__((aligned(64)));
static _Atomic size_t g_boot_used;

static int in_boot(const void *p)
{
	return (const unsigned char *)p >= ember__heap_boot && (const unsigned char *)p < ember__heap_boot + EMBER_HEAP_BOOT_SIZE;
}

static void *boot_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	if (n > EMBER_HEAP_BOOT_SIZE || (align & (align - 1)))
		return NULL;
	size_t old = atomic_load_explicit(&g_boot_used, memory_order_relaxed), start, end;
	do {
		start = (old + 16 + align - 1) & ~(align - 1);
		end = start + n;
		if (end > EMBER_HEAP_BOOT_SIZE)
			return NULL;
	} while (!atomic_compare_exchange_weak_explicit(&g_boot_used, &old, end, memory_order_seq_cst,
						       memory_order_relaxed));
	if (atomic_load_explicit(&g_real_state, memory_order_seq_cst) == REAL_READY) {
		/* Resolution finished meanwhile. The live table pins in its filter
		 * only the part of this arena used when resolution had finished
		 * (ember__heap_live_table), so this block comes from the real
		 * allocator, zeroed as boot blocks are (the reservation is lost).
		 * Sequentially consistent, as resolve's store: either that table
		 * sees the reservation, or this load sees READY. */
		void *q = align <= 16 ? ember__heap_next_fns.malloc(n)
				      : ember__heap_next_fns.memalign(align, n);
		if (q)
			memset(q, 0, n);
		return q;
	}
	memcpy(ember__heap_boot + start - 16, &n, sizeof(n));
	/* Its filter byte stuck at "maybe" before anyone has the block: free()
	 * then takes free_maybe, which knows the arena. */
	ember__livetab_filter_pin(ember__heap_filter, (uintptr_t)(ember__heap_boot + start));
	return ember__heap_boot + start; /* static storage: already zero */
}

static size_t boot_size(const void *p)
{
	size_t n;
	memcpy(&n, (const unsigned char *)p - 16, sizeof(n));
	return n;
}

/* A posix_memalign over glibc's memalign, with its argument checks. */
static int glibc_posix_memalign(void **out, size_t align, size_t n)
{
	if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0)
		return EINVAL;
	int saved = errno;
	void *p = __libc_memalign(align, n);
	errno = saved;
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

/* Publishes r as the allocator (g_real_state RESOLVING, by the caller). */
static void store_next(const ember__heap_next *r)
{
	__atomic_store_n(&ember__heap_next_fns.calloc, r->calloc, __ATOMIC_RELAXED);
	__atomic_store_n(&ember__heap_next_fns.realloc, r->realloc, __ATOMIC_RELAXED);
	__atomic_store_n(&ember__heap_next_fns.memalign, r->memalign, __ATOMIC_RELAXED);
	__atomic_store_n(&ember__heap_next_fns.posix_memalign, r->posix_memalign, __ATOMIC_RELAXED);
	__atomic_store_n(&ember__heap_next_fns.aligned_alloc, r->aligned_alloc, __ATOMIC_RELAXED);
	__atomic_store_n(&ember__heap_next_fns.valloc, r->valloc, __ATOMIC_RELAXED);
	__atomic_store_n(&ember__heap_next_fns.pvalloc, r->pvalloc, __ATOMIC_RELAXED);
	__atomic_store_n(&ember__heap_next_fns.malloc, r->malloc, __ATOMIC_RELAXED);
	__atomic_store_n(&ember__heap_next_fns.free, r->free, __ATOMIC_RELAXED);
	atomic_store_explicit(&g_real_state, REAL_READY, memory_order_seq_cst);
}

#define NEXT(T, name) ((T)dlsym(RTLD_NEXT, name))

/* Decides once where calls go. Returns with g_real_state READY, or
 * RESOLVING when another thread (or this one, re-entered from dlsym) is
 * deciding. */
static int resolve(void)
{
	int st = atomic_load_explicit(&g_real_state, memory_order_acquire);
	if (st != REAL_NONE)
		return st;
	if (!atomic_compare_exchange_strong_explicit(&g_real_state, &st, REAL_RESOLVING,
						     memory_order_acq_rel, memory_order_acquire))
		return st;
	int saved = errno;
	ember__heap_next r = glibc_fns;
	void *next = dlsym(RTLD_NEXT, "malloc");
	if (next && next != (void *)__libc_malloc) {
		ember__heap_next n = {
			.malloc = NEXT(void *(*)(size_t), "malloc"),
			.free = NEXT(void (*)(void *), "free"),
			.calloc = NEXT(void *(*)(size_t, size_t), "calloc"),
			.realloc = NEXT(void *(*)(void *, size_t), "realloc"),
			.memalign = NEXT(void *(*)(size_t, size_t), "memalign"),
			.posix_memalign = NEXT(int (*)(void **, size_t, size_t), "posix_memalign"),
			.aligned_alloc = NEXT(void *(*)(size_t, size_t), "aligned_alloc"),
			.valloc = NEXT(void *(*)(size_t), "valloc"),
			.pvalloc = NEXT(void *(*)(size_t), "pvalloc"),
		};
		/* The four every allocator has; the rest fall back on memalign. */
		if (n.malloc && n.free && n.calloc && n.realloc && n.memalign) {
			if (!n.aligned_alloc)
				n.aligned_alloc = n.memalign;
			r = n;
		}
	}
	store_next(&r);
	errno = saved;
	return REAL_READY;
}

int ember__heap_use_next(const ember__heap_next *next)
{
	ember__heap_next r = glibc_fns;
	if (next) {
		r = *next;
		if (!r.aligned_alloc)
			r.aligned_alloc = r.memalign;
	}
	int st = REAL_NONE;
	if (!atomic_compare_exchange_strong_explicit(&g_real_state, &st, REAL_RESOLVING,
						     memory_order_acq_rel, memory_order_acquire))
		/* resolved already: fine if to the same allocator */
		return st == REAL_READY && ember__heap_next_fns.malloc == r.malloc &&
			       ember__heap_next_fns.free == r.free
			       ? 0
			       : -1;
	store_next(&r);
	return 0;
}

static inline const ember__heap_next *real(void)
{
	if (__builtin_expect(atomic_load_explicit(&g_real_state, memory_order_acquire) == REAL_READY, 1))
		return &ember__heap_next_fns;
	return resolve() == REAL_READY ? &ember__heap_next_fns : NULL;
}

void *ember__heap_real_malloc(void)
{
	const ember__heap_next *r = real();
	return r ? (void *)r->malloc : NULL;
}

/* ---- thread-local state ---- */

__thread int64_t ember__heap_left TLS;  /* bytes until the next check (hook.h) */
static __thread uint32_t tls_epoch TLS;   /* the run this thread's countdown belongs to */
static __thread uint64_t tls_rng TLS;
static __thread int32_t tls_tid TLS;
static __thread uint8_t tls_internal TLS; /* emberprof's own thread: never sampled */
static __thread uint8_t tls_busy TLS;     /* inside the sampled path */
/* This thread's stack bounds as the thread table gave them (a thread
 * keeps its stack for life): the table's lookup is a cold cache line per
 * sample. 0/0: not known yet. */
static __thread uintptr_t tls_stack_lo TLS, tls_stack_hi TLS;

int ember__heap_internal(void)
{
	return tls_internal;
}

void ember__heap_set_internal(int on)
{
	tls_internal = on ? 1 : 0;
}

/* ---- global state ---- */

static _Atomic(ember__heap_hook *) g_hook;
static _Atomic uint32_t g_epoch;
static _Atomic int g_tsc; /* ember__heap_set_tsc */
ember__livetab ember__heap_live; /* hook.h: free() reads its count */
static pthread_mutex_t g_live_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_atfork_once EMBER_HOT_DATA = PTHREAD_ONCE_INIT;

/* A fork child has no agent: stop sampling there, and its only thread has
 * a new id. The live table stays (the child's own copy), so frees of
 * blocks sampled before the fork still find their entries. */
EMBER_HOT_TEXT static void atfork_child(void)
{
	atomic_store_explicit(&g_hook, NULL, memory_order_relaxed);
	tls_tid = 0;
	tls_busy = 0; /* the stack bounds stay: the child runs on the same stack */
}

EMBER_HOT_TEXT static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

ember__livetab *ember__heap_live_table(void)
{
	pthread_mutex_lock(&g_live_mu);
	/* The filter is ember__heap_filter, which free() reads from the start
	 * (bootstrap blocks are stuck in it already). */
	if (!ember__heap_live.keys && ember__livetab_init_filter(&ember__heap_live, 1u << 16, ember__heap_filter) != 0)
		ember__heap_live.keys = NULL;
	pthread_mutex_unlock(&g_live_mu);
	return ember__heap_live.keys ? &ember__heap_live : NULL;
}

EMBER_HOT_TEXT void ember__heap_atfork_init(void)
{
	pthread_once(&g_atfork_once, register_atfork);
}

int ember__heap_hook_attach(ember__heap_hook *h)
{
	pthread_once(&g_atfork_once, register_atfork);
	ember__heap_hook *expect = NULL;
	atomic_fetch_add_explicit(&g_epoch, 1, memory_order_relaxed);
	/* From now on malloc counts (a thread that never did starts at 0 and
	 * checks at its next call). */
	__atomic_store_n(&ember__heap_next_fns.armed, 1, __ATOMIC_RELEASE);
	return atomic_compare_exchange_strong_explicit(&g_hook, &expect, h, memory_order_acq_rel,
						       memory_order_relaxed) ? 0 : -1;
}

void ember__heap_set_tsc(int on)
{
	atomic_store_explicit(&g_tsc, on ? 1 : 0, memory_order_relaxed);
}

void ember__heap_hook_detach(void)
{
	/* Sequentially consistent, as the sampled path's in-flight increment
	 * and its load of g_hook after it: a quiesce that then reads the count
	 * zero knows every later sampled path sees NULL. */
	atomic_store_explicit(&g_hook, NULL, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
}

/* ---- the sampled path ---- */

static int32_t current_tid(void)
{
	if (__builtin_expect(tls_tid == 0, 0))
		tls_tid = (int32_t)gettid();
	return tls_tid;
}

extern const unsigned char __start_ember_hook_text[], __stop_ember_hook_text[];

static int in_hook(uint64_t pc)
{
	return pc >= (uintptr_t)__start_ember_hook_text && pc < (uintptr_t)__stop_ember_hook_text;
}

/* The registers of the calling point. Inline: the frame they describe
 * must be live while the unwinder walks from it. */
#define CURRENT_REGS(r) EMBER_ARCH_CURRENT_REGS(r) /* unwind/arch.h */

/* Writes the record of p. `from`: the registers of malloc's caller (the
 * return address - 1 as pc), where the unwind starts; NULL: it starts
 * here, and the hook's own frames are cut. */
EMBER_HEAP_HOOK_SECTION __attribute__((noinline)) static void
write_record(ember__sigstate *st, ember__heap_hook *h, void *p, size_t n, const ember__regs *from)
{
	ember__sample_rec *r = ember__sampbuf_claim(&h->buf);
	if (!r) {
		atomic_fetch_add_explicit(&h->dropped_full, 1, memory_order_relaxed);
		return;
	}
	int32_t tid = current_tid();
	ember__stack_bounds bounds = {tls_stack_lo, tls_stack_hi};
	if (!bounds.hi) {
		ember__threadtab *tab = atomic_load_explicit(&st->tab, memory_order_acquire);
		if (tab && ember__threadtab_bounds(tab, tid, &bounds) && bounds.hi) {
			tls_stack_lo = bounds.lo;
			tls_stack_hi = bounds.hi;
		} else if (tid == getpid() && __libc_stack_end) { /* the main thread, not yet probed */
			bounds = (ember__stack_bounds){0, (uintptr_t)__libc_stack_end};
		}
	}
	ember__regs regs;
	if (from)
		regs = *from;
	else
		CURRENT_REGS(regs);
	regs.aux = 0; /* unknown here: a frame whose CFA needs it ends the walk */
	unsigned flags = 0;
	const ember__unwind_snapshot *snap =
		st->unwind_mode == EMBER_UNWIND_MODE_FP
			? NULL
			: atomic_load_explicit(&st->unwind_snap, memory_order_seq_cst);
	int d = ember__unwind(st->unwind_mode, snap, &regs, &bounds, r->pcs, (int)h->buf.max_depth,
			      &flags);
	int skip = 0;
	while (skip < d && in_hook(r->pcs[skip]))
		skip++;
	if (skip == d && (flags & EMBER_UNWIND_NO_BOUNDS))
		atomic_fetch_add_explicit(&h->no_bounds, 1, memory_order_relaxed);
	d -= skip;
	if (skip && d > 0)
		memmove(r->pcs, r->pcs + skip, (size_t)d * sizeof(r->pcs[0]));
	if (!from && d > 0 && r->pcs[0])
		r->pcs[0] -= 1; /* a return address: name the call instruction */
	if (atomic_load_explicit(&g_tsc, memory_order_relaxed)) {
		/* A register instead of the vDSO's cold page (tsclock.h). */
		r->time_ns = (int64_t)ember__ticks_now();
		flags |= EMBER_HEAP_REC_TSC;
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		r->time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	r->depth = (uint32_t)d;
	r->tid = tid;
	r->flags = flags | EMBER_HEAP_REC_ALLOC;
	r->label_len = 0;
	r->addr = (uintptr_t)p;
	r->weight = n;
	uint64_t hash = ember__heap_stack_hash(r->pcs, r->depth);
	ember__sampbuf_commit(r);
	if (h->live && ember__livetab_insert(h->live, (uintptr_t)p, n, hash) != 0)
		atomic_fetch_add_explicit(&h->live_overflow, 1, memory_order_relaxed);
}

static uint64_t seed(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t s = ember__hash64((uint64_t)(uintptr_t)&ember__heap_left ^
				   ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec);
	return s ? s : 0x9e3779b97f4a7c15ULL;
}

/* The countdown ran out: decide, maybe record, set the next countdown.
 * `from`: as write_record's. */
EMBER_HEAP_HOOK_SECTION __attribute__((noinline)) static void *slow(void *p, size_t n,
								     const ember__regs *from)
{
	ember__heap_left = OFF_QUANTUM;
	if (!p || tls_internal || tls_busy ||
	    !atomic_load_explicit(&g_hook, memory_order_relaxed))
		return p;
	int saved = errno;
	tls_busy = 1;
	ember__sigstate *st = ember__sigpath_enter();
	ember__heap_hook *h = atomic_load_explicit(&g_hook, memory_order_seq_cst);
	if (st && h) {
		uint32_t ep = atomic_load_explicit(&g_epoch, memory_order_relaxed);
		int take = 1;
		if (!tls_rng)
			tls_rng = seed();
		if (tls_epoch != ep) {
			/* First look in this run: start the process here. */
			tls_epoch = ep;
			int64_t c = ember__heap_draw(&tls_rng, h->mean);
			if (c >= (int64_t)n) {
				ember__heap_left = c - (int64_t)n;
				take = 0;
			}
		}
		if (take) {
			/* The table's lines for p travel while we unwind. */
			if (h->live)
				ember__livetab_prefetch(h->live, (uintptr_t)p);
			ember__heap_left = ember__heap_draw(&tls_rng, h->mean);
			write_record(st, h, p, n, from);
		}
	}
	ember__sigpath_leave();
	tls_busy = 0;
	errno = saved;
	return p;
}

static inline void *account(void *p, size_t n)
{
	if (__builtin_expect((ember__heap_left -= (int64_t)n) >= 0, 1))
		return p;
	return slow(p, n, NULL);
}

/* Forgets p if it was sampled: before the real free or realloc, so the
 * address cannot have been handed out (and sampled) again meanwhile. The
 * filter answers for almost every unsampled block (livetab.h). */
static inline void forget(void *p)
{
	if (__builtin_expect(ember__livetab_filter_maybe(ember__heap_filter, (uintptr_t)p), 0) &&
	    ember__livetab_filter(&ember__heap_live))
		ember__livetab_remove(&ember__heap_live, (uintptr_t)p);
}

/* ---- the entry points ---- */

/*
 * The two hot ones, malloc and free, are built to cost the fewest
 * instructions (docs/BENCHMARKS.md section 7): their fast paths
 * (ember__heap_malloc_fast and _free_fast in hook.h) are written out in
 * the exported functions, with no frame, no check of the resolution
 * state, and a tail jump to the real allocator through
 * ember__heap_next_fns, whose malloc and free start as the first_* stubs
 * below and are replaced by resolve(). malloc counts the requested bytes
 * down BEFORE the real call, so that its common case is a subtraction, a
 * branch and the jump; the countdown running out takes
 * ember__heap_malloc_slow, which calls the real malloc and then slow().
 * Every frame that remains on a sampled path (malloc_slow, slow,
 * write_record) has a frame pointer, and the fast paths only ever jump,
 * so the frame-pointer chain stays intact.
 */
EMBER_HEAP_HOOK_SECTION __attribute__((noinline)) static void *first_malloc(size_t n)
{
	const ember__heap_next *r = real();
	if (!r)
		return boot_alloc(n, 16);
	return r->malloc(n);
}

EMBER_HEAP_HOOK_SECTION __attribute__((noinline)) static void first_free(void *p)
{
	const ember__heap_next *r = real();
	if (r)
		r->free(p);
}

EMBER_HEAP_HOOK_SECTION __attribute__((noinline)) void *ember__heap_malloc_slow(size_t n)
{
	void *(*m)(size_t) = __atomic_load_n(&ember__heap_next_fns.malloc, __ATOMIC_RELAXED);
	void *p = m(n);
	if (in_boot(p))
		return p; /* first_malloc during the lookup: never sampled */
	/*
	 * malloc jumped here: this frame's return address is the
	 * application's call, and the caller's frame starts above it. The
	 * unwind starts there rather than walking this hook's own frames
	 * (half the frames of a short stack, each a table lookup in cold
	 * memory). Should malloc ever have called instead (the return
	 * address inside the hook), the unwind starts in write_record.
	 */
	uintptr_t *fr = __builtin_frame_address(0);
	uintptr_t ret = (uintptr_t)__builtin_return_address(0);
	if (in_hook(ret))
		return slow(p, n, NULL);
	/* The caller's sp is this frame's CFA (x86-64: fr + 2; aarch64,
	 * whose frame record may sit below locals: not always). */
	ember__regs from = {.pc = ret - 1, .sp = (uintptr_t)__builtin_dwarf_cfa(), .fp = fr[0]};
	return slow(p, n, &from);
}

/* The filter said "maybe": a bootstrap block (its byte is stuck), a
 * sampled one, or a false positive. */
EMBER_HEAP_HOOK_SECTION __attribute__((noinline)) void ember__heap_free_maybe(void *p)
{
	if (in_boot(p))
		return;
	if (ember__livetab_filter(&ember__heap_live))
		ember__livetab_remove(&ember__heap_live, (uintptr_t)p);
	void (*f)(void *) = __atomic_load_n(&ember__heap_next_fns.free, __ATOMIC_RELAXED);
	f(p);
}

EMBER_HEAP_HOOK_SECTION void *ember__heap_calloc(size_t n, size_t size)
{
	const ember__heap_next *r = real();
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		total = SIZE_MAX;
	if (__builtin_expect(!r, 0))
		return total == SIZE_MAX ? NULL : boot_alloc(total, 16);
	return account(r->calloc(n, size), total);
}

EMBER_HEAP_HOOK_SECTION void *ember__heap_realloc(void *p, size_t n)
{
	const ember__heap_next *r = real();
	if (p && in_boot(p)) {
		/* A bootstrap block: move it to the real allocator. */
		void *q = r ? r->malloc(n) : boot_alloc(n, 16);
		if (q) {
			size_t old = boot_size(p);
			memcpy(q, p, old < n ? old : n);
		}
		return q;
	}
	if (__builtin_expect(!r, 0))
		return p ? NULL : boot_alloc(n, 16);
	if (p)
		forget(p);
	void *q = r->realloc(p, n);
	if (!q || n == 0)
		return q;
	return account(q, n);
}

EMBER_HEAP_HOOK_SECTION void *ember__heap_reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return ember__heap_realloc(p, total);
}

EMBER_HEAP_HOOK_SECTION int ember__heap_posix_memalign(void **out, size_t align, size_t n)
{
	const ember__heap_next *r = real();
	if (__builtin_expect(!r, 0)) {
		void *q = boot_alloc(n, align);
		if (!q)
			return ENOMEM;
		*out = q;
		return 0;
	}
	int rc;
	if (r->posix_memalign) {
		rc = r->posix_memalign(out, align, n);
	} else {
		if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0)
			return EINVAL;
		void *q = r->memalign(align, n);
		if (!q)
			return ENOMEM;
		*out = q;
		rc = 0;
	}
	if (rc == 0)
		account(*out, n);
	return rc;
}

EMBER_HEAP_HOOK_SECTION void *ember__heap_aligned_alloc(size_t align, size_t n)
{
	const ember__heap_next *r = real();
	if (__builtin_expect(!r, 0))
		return boot_alloc(n, align);
	return account(r->aligned_alloc(align, n), n);
}

EMBER_HEAP_HOOK_SECTION void *ember__heap_memalign(size_t align, size_t n)
{
	const ember__heap_next *r = real();
	if (__builtin_expect(!r, 0))
		return boot_alloc(n, align);
	return account(r->memalign(align, n), n);
}

EMBER_HEAP_HOOK_SECTION void *ember__heap_valloc(size_t n)
{
	const ember__heap_next *r = real();
	if (__builtin_expect(!r, 0))
		return boot_alloc(n, 4096);
	if (r->valloc)
		return account(r->valloc(n), n);
	return account(r->memalign((size_t)sysconf(_SC_PAGESIZE), n), n);
}

EMBER_HEAP_HOOK_SECTION void *ember__heap_pvalloc(size_t n)
{
	const ember__heap_next *r = real();
	size_t page = 4096;
	size_t rounded = (n + page - 1) & ~(page - 1);
	if (rounded == 0)
		rounded = page;
	if (__builtin_expect(!r, 0))
		return boot_alloc(rounded, page);
	if (r->pvalloc)
		return account(r->pvalloc(n), rounded);
	return account(r->memalign(page, rounded), rounded);
}

__attribute__((weak)) void *ember__heap_malloc_entry(void)
{
	return NULL;
}

__attribute__((weak)) const struct ember__got_fn *ember__heap_wrappers(size_t *n)
{
	*n = 0;
	return NULL;
}
