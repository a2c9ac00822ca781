/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbgd_bg.c - the background fetcher of dbgd_bg.h: a list of build ids
 * (queued, under way, answered) and one thread that takes the queued ones
 * as a batch and hands them to ember__dbgd_fetch.
 */
#include "debuginfod/dbgd_bg.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/error.h"

enum { QUEUED, RUNNING, DONE };

typedef struct bg_id {
	char *id;
	char *path; /* DONE: the debug file, NULL if none */
	int state;
} bg_id;

struct ember__dbgd_bg {
	ember__dbgd *d;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int joined; /* the thread was (or is being) joined */
	bg_id *ids;
	size_t n, cap;
	uint64_t arrived, answered, under_way;
	ember__dbgd_stats st; /* copied after each batch */
};

static void *bg_main(void *arg)
{
	ember__dbgd_bg *b = arg;
	pthread_setname_np(pthread_self(), "emberprof-dbgd"); /* ours, as every thread */
	pthread_mutex_lock(&b->mu);
	for (;;) {
		size_t k = 0;
		for (size_t i = 0; i < b->n; i++)
			k += b->ids[i].state == QUEUED;
		if (b->stop)
			break;
		if (!k) {
			pthread_cond_wait(&b->cv, &b->mu);
			continue;
		}
		const char **batch = calloc(k, sizeof(*batch));
		char **paths = calloc(k, sizeof(*paths));
		size_t *which = calloc(k, sizeof(*which));
		if (!batch || !paths || !which) {
			/* out of memory: answered as not fetched, said in the stats */
			for (size_t i = 0; i < b->n; i++)
				if (b->ids[i].state == QUEUED) {
					b->ids[i].state = DONE;
					b->answered++;
					b->under_way--;
				}
			snprintf(b->st.last_error, sizeof(b->st.last_error),
				 "out of memory for a batch of debuginfod fetches");
			b->st.failed += k;
			free(batch);
			free(paths);
			free(which);
			continue;
		}
		size_t m = 0;
		for (size_t i = 0; i < b->n; i++)
			if (b->ids[i].state == QUEUED) {
				b->ids[i].state = RUNNING;
				which[m] = i;
				batch[m++] = b->ids[i].id; /* (never freed while RUNNING) */
			}
		pthread_mutex_unlock(&b->mu);
		(void)ember__dbgd_fetch(b->d, batch, m, paths); /* bounded; paths NULL on error */
		pthread_mutex_lock(&b->mu);
		for (size_t j = 0; j < m; j++) {
			bg_id *e = &b->ids[which[j]];
			e->path = paths[j];
			e->state = DONE;
			b->arrived += paths[j] != NULL;
			b->answered++;
			b->under_way--;
		}
		b->st = *ember__dbgd_get_stats(b->d);
		pthread_cond_broadcast(&b->cv);
		free(batch);
		free(paths);
		free(which);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

int ember__dbgd_bg_new(ember__dbgd_bg **out, const ember__dbgd_opts *opts)
{
	*out = NULL;
	if (opts && opts->urls)
		return ember__error(EMBER_ERR_INVALID,
				    "debuginfod in the background: set DEBUGINFOD_URLS first");
	ember__dbgd_bg *b = calloc(1, sizeof(*b));
	if (!b)
		return ember__error_oom("debuginfod fetcher");
	int err = ember__dbgd_new(&b->d, opts);
	if (err) {
		free(b);
		return err;
	}
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	if (pthread_create(&b->thread, NULL, bg_main, b) != 0) {
		pthread_mutex_destroy(&b->mu);
		pthread_cond_destroy(&b->cv);
		ember__dbgd_free(b->d);
		free(b);
		return ember__error(EMBER_ERR_INVALID, "debuginfod: no thread for the fetches");
	}
	*out = b;
	return 0;
}

void ember__dbgd_bg_stop(ember__dbgd_bg *b)
{
	pthread_mutex_lock(&b->mu);
	int joined = b->joined;
	b->stop = b->joined = 1;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	if (!joined)
		pthread_join(b->thread, NULL);
}

void ember__dbgd_bg_free(ember__dbgd_bg *b)
{
	if (!b)
		return;
	ember__dbgd_bg_stop(b);
	for (size_t i = 0; i < b->n; i++) {
		free(b->ids[i].id);
		free(b->ids[i].path);
	}
	free(b->ids);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	ember__dbgd_free(b->d);
	free(b);
}

/* ember__dbgd_bg_get; asking for it only with `ask`. */
static int lookup(ember__dbgd_bg *b, const char *build_id, char **path, int ask)
{
	*path = NULL;
	int rc = 0;
	pthread_mutex_lock(&b->mu);
	size_t i = 0;
	while (i < b->n && strcmp(b->ids[i].id, build_id) != 0)
		i++;
	if (i < b->n) {
		if (b->ids[i].state == DONE) {
			rc = 1;
			if (b->ids[i].path && !(*path = strdup(b->ids[i].path)))
				rc = ember__error_oom("debug file path");
		}
	} else if (!ask || b->stop) {
		rc = !ask ? 0 : 1; /* not asked; stopping: nothing more is asked */
	} else {
		if (b->n == b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 16;
			bg_id *v = realloc(b->ids, cap * sizeof(*v));
			if (!v) {
				pthread_mutex_unlock(&b->mu);
				return ember__error_oom("debuginfod requests");
			}
			b->ids = v;
			b->cap = cap;
		}
		char *id = strdup(build_id);
		if (!id) {
			rc = ember__error_oom("debuginfod requests");
		} else {
			b->ids[b->n++] = (bg_id){id, NULL, QUEUED};
			b->under_way++;
			pthread_cond_broadcast(&b->cv);
		}
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int ember__dbgd_bg_get(ember__dbgd_bg *b, const char *build_id, char **path)
{
	return lookup(b, build_id, path, 1);
}

int ember__dbgd_bg_peek(ember__dbgd_bg *b, const char *build_id, char **path)
{
	return lookup(b, build_id, path, 0);
}

uint64_t ember__dbgd_bg_arrived(ember__dbgd_bg *b)
{
	pthread_mutex_lock(&b->mu);
	uint64_t n = b->arrived;
	pthread_mutex_unlock(&b->mu);
	return n;
}

uint64_t ember__dbgd_bg_answered(ember__dbgd_bg *b)
{
	pthread_mutex_lock(&b->mu);
	uint64_t n = b->answered;
	pthread_mutex_unlock(&b->mu);
	return n;
}

uint64_t ember__dbgd_bg_under_way(ember__dbgd_bg *b)
{
	pthread_mutex_lock(&b->mu);
	uint64_t n = b->under_way;
	pthread_mutex_unlock(&b->mu);
	return n;
}

void ember__dbgd_bg_stats(ember__dbgd_bg *b, ember__dbgd_stats *out)
{
	pthread_mutex_lock(&b->mu);
	*out = b->st;
	pthread_mutex_unlock(&b->mu);
}
