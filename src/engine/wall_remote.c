/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wall_remote.c - wall-clock samples of blocked threads without a signal
 * (wall_remote.h).
 */
#include "engine/wall_remote.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "sample/labels.h"
#include "sample/polltls.h"
#include "symbols/procmaps.h"
#include "unwind/arch.h"
#include "unwind/unwind.h"
#include "util/fileio.h"

#define COPY_MAX (512u << 10) /* live stack copied; deeper stacks are truncated */
#define FP_CANDIDATES 32

/* n bytes of this process at addr, code or data (process_vm_readv: an address
 * that is not mapped is a "no"). */
static int read_self(uintptr_t addr, void *buf, size_t n)
{
	struct iovec local = {buf, n}, remote = {(void *)addr, n};
	return addr >= 4096 && process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
}

int ember__wall_blocked_in(int32_t tid, long *nr, uintptr_t *sp, uintptr_t *pc)
{
	char buf[256];
	if (ember__read_task_file(tid, "syscall", buf, sizeof(buf)) < 0)
		return -1;
	/* "running", "-1 sp pc" (blocked, not in a call), or
	 * "nr a1 a2 a3 a4 a5 a6 sp pc" */
	char *end;
	long num = strtol(buf, &end, 10);
	if (end == buf || num < 0)
		return 0;
	unsigned long v[8];
	int k = 0;
	for (char *p = end; k < 8; k++) {
		v[k] = strtoul(p, &end, 16);
		if (end == p)
			break;
		p = end;
	}
	if (k != 8 || v[6] == 0 || v[7] == 0)
		return 0;
	/* Only the kernel's own record of a call: the pc follows the system-
	 * call instruction (under qemu-user the file holds the emulator's
	 * host registers; such a thread is left to the signal: 2, in a call
	 * we cannot read). */
	uint8_t c[8];
	if (v[7] < 4096 + sizeof(c) || !read_self(v[7] - sizeof(c), c, sizeof(c)) ||
	    !ember__regs_after_syscall(c))
		return 2;
	*nr = num;
	*sp = (uintptr_t)v[6];
	*pc = (uintptr_t)v[7];
	return 1;
}

/* Thread tid's CPU time in ns (its CPU clock, as in threads.c), or -1. */
static int64_t thread_cpu_ns(int32_t tid)
{
	struct timespec ts;
	clockid_t clk = (clockid_t)((~(unsigned)tid << 3) | 6u);
	if (clock_gettime(clk, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The top of the stack holding sp, when the thread's bounds are not known
 * yet: the end of its mapping (the copy may include the thread's TCB above
 * the stack; the walk ends at the outermost frame anyway). */
static uintptr_t top_from_maps(uintptr_t sp)
{
	ember__procmap m;
	return ember__procmaps_self_find(sp, &m, NULL, 0) == 0 ? (uintptr_t)m.end : 0;
}

/*
 * Whether ra is a return address: the instruction before it is a call
 * (ember__regs_after_call, per architecture). The code is read with
 * process_vm_readv, so an address that is not mapped is only a "no". A
 * function's address held in a variable (a function pointer) is preceded
 * by padding or a return, not a call.
 */
static int called_from(uintptr_t ra)
{
	uint8_t c[8];
	ra &= EMBER_ARCH_PC_MASK; /* a PAC-signed return address (aarch64) */
	return ra >= 4096 + sizeof(c) && read_self(ra - sizeof(c), c, sizeof(c)) &&
	       ember__regs_after_call(c);
}

/* The module of the unwind snapshot whose range holds code address a, or
 * NULL. */
static const ember__unwind_module *module_of(const ember__unwind_snapshot *snap, uintptr_t a)
{
	const ember__unwind_module *m = NULL;
	(void)ember__unwind_find_row(snap, a, &m, NULL);
	return m;
}

/*
 * The call before return address ra, decoded: 0 when its code cannot
 * tell (a call through a register, an undecoded architecture, unreadable
 * code), else 1 with *first where the call instruction went (a direct
 * call's target; 0 for a call through memory) and *target where that led:
 * *first itself unless it is a PLT stub, else the code pointer the stub
 * or the call's memory operand reads (0 when that cannot be read).
 */
static int call_decode(uintptr_t ra, uintptr_t *first, uintptr_t *target)
{
	uint8_t c[16];
	uintptr_t dest;
	uint64_t to = 0;
	ra &= EMBER_ARCH_PC_MASK;
	*first = *target = 0;
	if (ra < 4096 + 8 || !read_self(ra - 8, c, 8))
		return 0;
	int kind = ember__regs_call_dest(c, ra, &dest);
	if (kind == 0)
		return 0;
	if (kind == 1) {
		*first = dest;
		if (!read_self(dest, c, sizeof(c)) || !ember__regs_plt_slot(c, dest, &dest)) {
			*target = dest; /* code, not a stub */
			return 1;
		}
	}
	if (read_self(dest, &to, sizeof(to)))
		*target = (uintptr_t)to & EMBER_ARCH_PC_MASK;
	return 1;
}

/*
 * Whether the call before return address ra can have entered the module
 * holding `callee` (the pc of the frame below ra's): 0 when its code says
 * it went elsewhere - a direct call into another module's code that is not
 * a PLT stub, or a stub or code pointer leading into another module - else
 * 1 (it went there, or the code cannot tell: a call through a register, a
 * lazy slot not bound yet, an unknown module, an undecoded architecture).
 * A frame record guessed from the stack is a stale one when its return
 * address called something else.
 */
static int call_reaches(const ember__unwind_snapshot *snap, uintptr_t ra, uintptr_t callee)
{
	const ember__unwind_module *want = module_of(snap, callee);
	uintptr_t first, target;
	if (!want || !call_decode(ra, &first, &target))
		return 1;
	if (first) {
		const ember__unwind_module *m = module_of(snap, first);
		if (m == want)
			return 1;
		if (target == first) /* code, not a stub */
			return m == NULL;
	}
	if (!target)
		return 1;
	const ember__unwind_module *tm = module_of(snap, target);
	/* a lazy slot still points back into the caller's own module */
	return tm == want || tm == NULL || tm == module_of(snap, ra & EMBER_ARCH_PC_MASK);
}

/* How a walk ended, from least to most trusted: cut short; at a zero
 * return address or frame pointer (any zero word read through a stale
 * frame record ends a walk so); at the thread's outermost frame, as its
 * unwind table marks it (clone's, _start's undefined return address). */
enum { WALK_TRUNCATED, WALK_ENDED, WALK_OUTERMOST };

static int walk_end(const ember__unwind_snapshot *snap, const uint64_t *pcs, int n, unsigned flags)
{
	if (flags & EMBER_UNWIND_TRUNCATED)
		return WALK_TRUNCATED;
	ember__cfi_row row;
	uintptr_t last = (uintptr_t)pcs[n - 1] - (n > 1); /* a return address: its call */
	if (snap && ember__unwind_find_row(snap, last, NULL, &row) &&
	    (row.kind & EMBER_CFI_F_RA_UNDEF))
		return WALK_OUTERMOST;
	return WALK_ENDED;
}

/*
 * Where the call before return address ra went, when its code says so
 * (call_decode's target); 0 when it cannot tell.
 */
static uintptr_t call_target(uintptr_t ra)
{
	uintptr_t first, target;
	return call_decode(ra, &first, &target) ? target : 0;
}

/*
 * How near the call before a frame record's return address ra went to
 * callee (the pc of the frame below it): the distance between its target
 * and callee when the target lies in callee's module, else UINTPTR_MAX
 * (the code does not say: a call through a register, another module).
 * The call that made the frame below went to the start of the function
 * holding callee, or to a stub beside it that jumps there (ASan's read()
 * into its read.part.0 just below): of two records whose walks disagree,
 * the one whose call went nearer is the true one.
 */
static uintptr_t call_distance(const ember__unwind_snapshot *snap, uintptr_t ra, uintptr_t callee)
{
	uintptr_t t = call_target(ra);
	callee &= EMBER_ARCH_PC_MASK;
	const ember__unwind_module *m = module_of(snap, callee);
	if (!t || !m || module_of(snap, t) != m)
		return UINTPTR_MAX;
	return t > callee ? t - callee : callee - t;
}

/* Whether hi[0..nh) is the end of lo[0..nl). */
static int walk_suffix(const uint64_t *hi, int nh, const uint64_t *lo, int nl)
{
	if (nh <= 0 || nh > nl)
		return 0;
	return memcmp(hi, lo + (nl - nh), (size_t)nh * sizeof(uint64_t)) == 0;
}

/* Whether every caller in a walk (pcs[1..n)) was reached by a call. */
static int walk_plausible(const uint64_t *pcs, int n)
{
	for (int i = 1; i < n; i++)
		if (!called_from((uintptr_t)pcs[i]))
			return 0;
	return 1;
}

/* Whether a word looks like a return address: outside the stack, and
 * covered by unwind tables when there are any. */
static int code_like(const ember__unwind_snapshot *snap, uint64_t v, uintptr_t lo, uintptr_t hi)
{
	if (v < 4096 || (v >= lo && v < hi))
		return 0;
	if (snap && !ember__unwind_find_row(snap, (uintptr_t)v - 1, NULL, NULL))
		return 0;
	return called_from((uintptr_t)v);
}

/*
 * Whether the thread whose TCB is `self` has what only its own handler
 * can record: it is inside a pollcatch poll, or has dynamic labels pushed
 * (both thread-local; initial-exec, so at the same offset from every
 * thread's TCB as from ours). 1 yes, 0 no, -1 cannot tell (TCB unknown or
 * unreadable).
 */
static int needs_handler(uintptr_t self)
{
	if (!self)
		return -1;
	uintptr_t me = (uintptr_t)pthread_self();
	ember__polltls poll;
	ember__tlabels *labels = NULL;
	struct iovec local[2] = {{&poll, sizeof(poll)}, {&labels, sizeof(labels)}};
	struct iovec remote[2] = {
		{(void *)(self + ((uintptr_t)&ember__tls_poll - me)), sizeof(poll)},
		{(void *)(self + ((uintptr_t)&ember__tls_labels - me)), sizeof(labels)}};
	if (process_vm_readv(getpid(), local, 2, remote, 2, 0) !=
	    (ssize_t)(sizeof(poll) + sizeof(labels)))
		return -1;
	if (poll.depth)
		return 1;
	if (!labels)
		return 0;
	uint32_t n = 0;
	struct iovec ln = {&n, sizeof(n)}, rn = {(void *)&labels->n, sizeof(n)};
	if (process_vm_readv(getpid(), &ln, 1, &rn, 1, 0) != (ssize_t)sizeof(n))
		return -1;
	return n > 0;
}

int ember__wall_remote_sample(ember__wall_remote *w, ember__sigstate *st, ember__thread_ent *e,
			      int32_t tid, const _Atomic int32_t *stopping)
{
	long nr;
	uintptr_t sp, pc;
	int64_t cpu0 = thread_cpu_ns(tid);
	if (cpu0 < 0)
		return EMBER_WALL_REMOTE_SKIP;
	int b = ember__wall_blocked_in(tid, &nr, &sp, &pc);
	if (b < 0)
		return EMBER_WALL_REMOTE_SKIP;
	if (b == 0)
		return EMBER_WALL_REMOTE_RUNNING;
	if (b == 2) /* in a call we cannot read (qemu-user): the handler's sample */
		return EMBER_WALL_REMOTE_SIGNAL;
	/* in a pollcatch poll or labelled: the handler's sample (one EINTR) */
	if (needs_handler(atomic_load_explicit(&e->probe_self, memory_order_relaxed)) == 1)
		return EMBER_WALL_REMOTE_SIGNAL;
	if (!w->copy || w->max_depth != st->max_depth) {
		ember__wall_remote_free(w);
		w->copy = malloc(COPY_MAX);
		w->pcs = malloc(2 * (size_t)(st->max_depth > 0 ? st->max_depth : 1) * sizeof(uint64_t));
		if (!w->copy || !w->pcs) {
			ember__wall_remote_free(w);
			return EMBER_WALL_REMOTE_SIGNAL;
		}
		w->alt = w->pcs + st->max_depth;
		w->max_depth = st->max_depth;
		w->cap = COPY_MAX;
	}
	ember__threadtab *tab = atomic_load_explicit(&st->tab, memory_order_acquire);
	ember__stack_bounds bounds = {0, 0};
	if (!tab || !ember__threadtab_bounds(tab, tid, &bounds) || sp < bounds.lo || sp >= bounds.hi)
		bounds.hi = top_from_maps(sp);
	size_t len = 0;
	if (bounds.hi > sp) {
		len = bounds.hi - sp;
		if (len > w->cap)
			len = w->cap;
		len &= ~(size_t)7;
		struct iovec local = {w->copy, len}, remote = {(void *)sp, len};
		ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		len = got > 0 ? (size_t)got & ~(size_t)7 : 0;
	}
	/* Stack addresses held in the stack (saved frame pointers, signal
	 * frames' registers) now point into the copy. */
	uintptr_t base = (uintptr_t)w->copy;
	size_t nw = len / 8;
	ember__unwind_relocate_copy(w->copy, nw, sp, base);

	/* As a handler: the unwind snapshot stays valid while we count as
	 * one running (unwind_tables.c frees old ones only when none runs). */
	ember__sigpath_enter();
	const ember__unwind_snapshot *snap =
		st->unwind_mode == EMBER_UNWIND_MODE_FP
			? NULL
			: atomic_load_explicit(&st->unwind_snap, memory_order_seq_cst);
	ember__stack_bounds cb = {base, base + len};
	ember__regs regs = {pc, base, 0, 0};
	unsigned flags = 0;
	int n = 1;
	w->pcs[0] = pc;
	if (!len)
		flags = EMBER_UNWIND_NO_BOUNDS;
	else
		n = ember__unwind(st->unwind_mode, snap, &regs, &cb, w->pcs, w->max_depth, &flags);
	/* frame pointers only: fp 0 ends the walk at once, as complete */
	if (len && ((flags & EMBER_UNWIND_TRUNCATED) || n <= 1 ||
		    st->unwind_mode == EMBER_UNWIND_MODE_FP)) {
		/* The frame pointer is not in the syscall file: try the likely
		 * frame records. The walk without one stopped at the first
		 * frame that needs it (n0 frames), so a record's return
		 * address is the caller of pcs[n0 - 1] and must have called
		 * into its module (call_reaches). Frames below a big frame
		 * (ASan's interceptors keep 2 KiB of buffers) leave stale
		 * records in it whose walks end early at a zero word, or at
		 * the outermost frame through callers long returned. With
		 * unwind tables, of the walks that pass both checks the best
		 * ended wins (the outermost frame a table marks, then a zero
		 * word); among equals, records are tried lowest first and a
		 * lower one is kept when the higher one's walk is the end of
		 * its own (the lower is a deeper record of the same chain),
		 * else the record whose call went nearer the frame below it
		 * (call_distance: ASan's ppoll interceptor keeps, below its own
		 * record, a stale chain of free()'s callees whose walk also
		 * reaches clone3; only the true record's call went to the
		 * interceptor), else the lower for walks that reached the
		 * outermost frame and the deeper for the others.
		 * Without tables, the first that ends, as before. */
		int n0 = n > 0 ? n : 1, best = WALK_TRUNCATED, tried = 0;
		int taken = 0;
		uintptr_t best_dist = UINTPTR_MAX;
		for (size_t i = 0; i + 1 < nw && tried < FP_CANDIDATES; i++) {
			uint64_t saved = w->copy[i], ra = w->copy[i + 1];
			/* the caller's saved fp: 0, garbage (code without frame
			 * pointers above), or a higher frame of this stack */
			if ((saved >= base && saved <= base + i * 8) ||
			    !code_like(snap, ra, base, base + len))
				continue;
			tried++;
			unsigned f = 0;
			regs.fp = base + i * 8;
			int m = ember__unwind(st->unwind_mode, snap, &regs, &cb, w->alt, w->max_depth,
					      &f);
			int end = walk_end(snap, w->alt, m, f);
			if (end < best || !walk_plausible(w->alt, m) ||
			    (snap && m > n0 && !call_reaches(snap, (uintptr_t)w->alt[n0],
							     (uintptr_t)w->alt[n0 - 1])))
				continue;
			uintptr_t dist = snap && m > n0 ? call_distance(snap, (uintptr_t)w->alt[n0],
									(uintptr_t)w->alt[n0 - 1])
							: UINTPTR_MAX;
			if (end == best) {
				int take;
				if (!taken || !snap)
					take = m > n;
				else if (m > n0 && walk_suffix(w->alt + n0, m - n0, w->pcs, n))
					take = 0; /* the kept record is a deeper one of this chain */
				else if (dist != best_dist)
					take = dist < best_dist;
				else
					take = end != WALK_OUTERMOST && m > n;
				if (!take)
					continue;
			}
			memcpy(w->pcs, w->alt, (size_t)m * sizeof(uint64_t));
			n = m;
			flags = f;
			best = end;
			taken = 1;
			best_dist = dist;
			if (!snap && end == WALK_ENDED)
				break;
		}
	}
	ember__sigpath_leave();
	if (thread_cpu_ns(tid) != cpu0)
		return EMBER_WALL_REMOTE_SKIP; /* it ran: the copy may be torn */
	/* It has not run since the read: if it is the stopper now, it was then
	 * (it announces itself before the stop code), and the stack is ours. */
	if (stopping && atomic_load(stopping) == tid)
		return EMBER_WALL_REMOTE_SKIP;
	ember__sample_rec *r = ember__sampbuf_claim(&st->buf);
	if (!r) {
		atomic_fetch_add_explicit(&st->dropped_full, 1, memory_order_relaxed);
		return EMBER_WALL_REMOTE_SKIP;
	}
	memcpy(r->pcs, w->pcs, (size_t)n * sizeof(uint64_t));
	int64_t now = mono_ns(), last = atomic_exchange(&e->wall_last_ns, now);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint32_t seq = atomic_fetch_add_explicit(&st->wall_seq, 1, memory_order_relaxed) + 1;
	if (!seq)
		seq = atomic_fetch_add_explicit(&st->wall_seq, 1, memory_order_relaxed) + 1;
	r->depth = (uint32_t)n;
	r->tid = tid;
	r->flags = flags | EMBER_SAMPLE_WALL | EMBER_SAMPLE_SLEEPING;
	r->label_len = 0;
	r->reserved = seq;
	r->poll_start = 0;
	r->weight = last > 0 && now > last ? (uint64_t)(now - last) : 0;
	r->time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	ember__sampbuf_commit(r);
	/* after the commit, as the handler: repeats follow this sample */
	atomic_store_explicit(&e->wall_cpu_ns, (uint64_t)cpu0, memory_order_relaxed);
	atomic_store_explicit(&e->wall_seq, seq, memory_order_release);
	atomic_store_explicit(&e->wall_last_seq, seq, memory_order_release);
	atomic_fetch_add_explicit(&st->wall_samples, 1, memory_order_relaxed);
	if (flags & EMBER_UNWIND_NO_BOUNDS)
		atomic_fetch_add_explicit(&st->no_bounds, 1, memory_order_relaxed);
	else if (flags & EMBER_UNWIND_TRUNCATED)
		atomic_fetch_add_explicit(&st->truncated, 1, memory_order_relaxed);
	(void)nr;
	return EMBER_WALL_REMOTE_TAKEN;
}

void ember__wall_remote_free(ember__wall_remote *w)
{
	free(w->copy);
	free(w->pcs);
	memset(w, 0, sizeof(*w));
}
