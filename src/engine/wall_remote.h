/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wall_remote.h - wall-clock samples of blocked threads taken without a
 * signal (engine_wall.h).
 *
 * A signal wakes a thread blocked in a system call: nanosleep, poll,
 * select, epoll_wait, sigwaitinfo and friends then return EINTR, which a
 * program that does not loop on EINTR sees (a sleep cut short, a thread
 * that exits early). So the wall-clock thread first asks the kernel
 * whether the thread is blocked in a system call
 * (/proc/self/task/<tid>/syscall: the call's number, its user stack
 * pointer and PC). If it is, the thread's stack is copied (process_vm_readv
 * on our own process: a thread that wakes and exits meanwhile makes the
 * copy fail, never a fault), the stack addresses it holds are moved into
 * the copy, and the copy is unwound with the handler's unwinder. The
 * syscall file gives no frame pointer: where the walk needs one (code
 * built with frame pointers above libc's wrappers, which keep the
 * caller's), candidates from the copy - a slot holding a higher stack
 * address followed by a code address - are tried, lowest first, and a
 * walk that reaches the thread's outermost frame is kept (else the
 * deepest); of two that both do and disagree, the one whose record's call
 * went nearer the frame below it (a stale chain in a big frame's unwritten
 * buffer also reaches it: wall_remote.c). The thread's CPU time is read before and after: if it moved,
 * the thread ran meanwhile and the sample is given up for this tick
 * (its time goes to its next sample: the weights tile the thread's time).
 *
 * What a signal takes from the thread itself - its dynamic labels and
 * pollcatch's poll, both thread-local - is read from the thread's TLS
 * (its TCB is known from the pthread_create hook or the bounds probe): a
 * thread with labels pushed or inside a poll is signalled as before (one
 * EINTR per blocking episode), so its samples keep them. Where the TCB is
 * not known (a thread blocked since before the agent started, adopted
 * without a probe), the sample has neither.
 *
 * Wall-clock thread only (it owns the copy buffer); not async-signal-safe.
 */
#ifndef EMBER_WALL_REMOTE_H
#define EMBER_WALL_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "sample/handler.h"

/*
 * What /proc/self/task/<tid>/syscall says: 1 and *sp, *pc (the user
 * registers at the call; pc just after the syscall instruction) and *nr
 * when the thread is blocked in a system call; 0 when it is running or
 * blocked elsewhere (a page fault); 2 when it is in a call whose pc does
 * not follow the system-call instruction (an emulator's registers:
 * qemu-user), which only a signal's handler can sample; -1 when the file
 * cannot be read (the thread is gone, or the kernel lacks the file).
 */
int ember__wall_blocked_in(int32_t tid, long *nr, uintptr_t *sp, uintptr_t *pc);

typedef struct ember__wall_remote {
	uint64_t *copy; /* the stack copy */
	size_t cap;     /* its size in bytes */
	uint64_t *pcs, *alt; /* walks, max_depth each */
	int max_depth;
} ember__wall_remote;

enum {
	EMBER_WALL_REMOTE_RUNNING = 0, /* not blocked in a call: running */
	EMBER_WALL_REMOTE_TAKEN = 1,   /* sample recorded; repeats may follow */
	EMBER_WALL_REMOTE_SKIP = 2,    /* it ran meanwhile or vanished: nothing this tick */
	EMBER_WALL_REMOTE_SIGNAL = 3   /* blocked, but labelled or in a poll (only the handler
					  reads those), or no memory for the copy: signal it */
};

/*
 * Samples thread `tid` (entry `e`) without a signal if it is blocked in a
 * system call: records a sleeping EMBER_SAMPLE_WALL record in st's ring,
 * weighing the time since the thread's previous wall sample, and
 * publishes it in the entry (wall_seq, wall_cpu_ns) as the handler does,
 * so that the following ticks repeat it while the thread stays asleep.
 * Returns EMBER_WALL_REMOTE_*. A sample that cannot be recorded (ring
 * full) is counted in st->dropped_full. If `*stopping` (may be NULL)
 * names the thread once its stack is read, nothing is recorded (SKIP): a
 * thread announces itself there before it runs the agent's stop code, so
 * a stack read while it did was never the program's.
 */
int ember__wall_remote_sample(ember__wall_remote *w, ember__sigstate *st, ember__thread_ent *e,
			      int32_t tid, const _Atomic int32_t *stopping);

void ember__wall_remote_free(ember__wall_remote *w);

#endif
