/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_names.h - a window's profile held back a bounded while for names
 * that are on their way (debug files fetched from debuginfod in the
 * background: docs/design/debuginfod.md, "Per window"), in the tree
 * engine's queue of profiles to report. Profiles leave the queue in the
 * order they entered it (a process's windows stay in order), each once
 * nothing is under way for it any more or at its deadline, named with
 * whatever has arrived by then. Nothing here waits for the network: the
 * engine's drain goes on while a profile is held.
 *
 * Owned by one tree engine (tree_engine.c); one thread; nothing here is
 * async-signal-safe.
 */
#ifndef EMBER_TREE_NAMES_H
#define EMBER_TREE_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "tree/tree_engine.h"

/* A profile on its way to the reporters, with what its report says. */
typedef struct ember__theld {
	ember__profile *prof; /* owned by the queue while held */
	int32_t pid;
	uint32_t seq;
	int64_t start, end;   /* the window, epoch ns */
	uint64_t samples;
	int final;
	int64_t deadline;     /* CLOCK_MONOTONIC ns: reported then at the latest */
	int under_way;        /* its last naming left something under way */
	uint64_t answered;    /* h.answered() at its last naming */
} ember__theld;

/* Hands e (and e->prof, which it then owns) to the reporters. */
typedef void (*ember__tnames_send_fn)(void *ctx, ember__theld *e);

typedef struct ember__tnames {
	ember__tree_names h;  /* the hooks; h.name NULL: none (every profile sent at once) */
	ember__theld *q;      /* the queue, oldest first */
	size_t n, cap;
	uint64_t held;        /* profiles that waited for something under way */
	uint64_t expired;     /* ... of them, reported at their deadline with some still under way */
	uint64_t failures;    /* naming calls that failed (the profile went as it was) */
} ember__tnames;

/*
 * A profile ready to report: named now with what has arrived and sent at
 * once when nothing is under way for it and nothing is queued before it,
 * else queued until ember__tnames_flush lets it go. Takes e->prof either
 * way. 0 or EMBER_ERR_NOMEM (then it was sent at once).
 */
int ember__tnames_submit(ember__tnames *tn, ember__theld *e, ember__tnames_send_fn send,
			 void *ctx);

/*
 * Sends the queued profiles that may go, oldest first: each once nothing
 * is under way for it, or its deadline (now_mono, CLOCK_MONOTONIC ns) has
 * come, or `force`; stops at the first that must still wait. A held
 * profile is named again only when something was answered since its last
 * naming (h.answered), and at its end.
 */
void ember__tnames_flush(ember__tnames *tn, int64_t now_mono, int force,
			 ember__tnames_send_fn send, void *ctx);

/* The latest deadline queued (0: the queue is empty). */
int64_t ember__tnames_last_deadline(const ember__tnames *tn);

/* Frees the queued profiles unsent (a fork child's copy) and the queue. */
void ember__tnames_release(ember__tnames *tn);

#endif
