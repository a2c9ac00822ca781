/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_names.c - the queue of profiles held for names on their way
 * (tree_names.h).
 */
#include "tree/tree_names.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* Names e's profile with what has arrived: > 0 while something for it is
 * still under way. A failure counts and lets it go as it is. */
static int name_now(ember__tnames *tn, ember__theld *e)
{
	e->answered = tn->h.answered(tn->h.arg);
	int rc = tn->h.name(tn->h.arg, e->prof);
	if (rc < 0)
		tn->failures++;
	e->under_way = rc > 0;
	return e->under_way;
}

int ember__tnames_submit(ember__tnames *tn, ember__theld *e, ember__tnames_send_fn send,
			 void *ctx)
{
	if (!tn->h.name) {
		send(ctx, e);
		return 0;
	}
	int under_way = name_now(tn, e);
	if (!under_way && tn->n == 0) {
		send(ctx, e);
		return 0;
	}
	if (tn->n == tn->cap) {
		size_t cap = tn->cap ? tn->cap * 2 : 8;
		ember__theld *v = realloc(tn->q, cap * sizeof(*v));
		if (!v) {
			send(ctx, e); /* out of order rather than lost */
			return ember__error_oom("held profiles");
		}
		tn->q = v;
		tn->cap = cap;
	}
	tn->held += under_way > 0;
	tn->q[tn->n++] = *e;
	return 0;
}

void ember__tnames_flush(ember__tnames *tn, int64_t now_mono, int force,
			 ember__tnames_send_fn send, void *ctx)
{
	size_t k = 0;
	while (k < tn->n) {
		ember__theld *e = &tn->q[k];
		int waiting = !force && now_mono < e->deadline;
		if (waiting && e->under_way && tn->h.answered(tn->h.arg) == e->answered)
			break; /* nothing new for it */
		int under_way = !e->under_way ? 0 : name_now(tn, e);
		if (under_way && waiting)
			break;
		tn->expired += under_way > 0;
		send(ctx, e);
		k++;
	}
	if (k) {
		memmove(tn->q, tn->q + k, (tn->n - k) * sizeof(*tn->q));
		tn->n -= k;
	}
}

int64_t ember__tnames_last_deadline(const ember__tnames *tn)
{
	return tn->n ? tn->q[tn->n - 1].deadline : 0;
}

void ember__tnames_release(ember__tnames *tn)
{
	for (size_t i = 0; i < tn->n; i++)
		ember__profile_free(tn->q[i].prof);
	free(tn->q);
	tn->q = NULL;
	tn->n = tn->cap = 0;
}
