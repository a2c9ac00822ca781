/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfod.c - the debuginfod fetcher of debuginfod.h: libdebuginfod
 * loaded with dlopen, a few threads with a client each, a deadline per
 * file and per call enforced through the progress callback, and the
 * failures remembered in files of our own cache directory.
 */
#include "debuginfod/debuginfod.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"
#include "util/error.h"
#include "util/lazydep.h"

/* libdebuginfod's API (elfutils/debuginfod.h), declared here: the library
 * is loaded at run time, so building needs no -dev package. Stable since
 * elfutils 0.178. */
typedef struct debuginfod_client debuginfod_client;
typedef int (*debuginfod_progressfn_t)(debuginfod_client *c, long a, long b);

struct dbgd_fns {
	debuginfod_client *(*p_debuginfod_begin)(void);
	void (*p_debuginfod_end)(debuginfod_client *c);
	int (*p_debuginfod_find_debuginfo)(debuginfod_client *c, const unsigned char *build_id,
					   int build_id_len, char **path);
	void (*p_debuginfod_set_progressfn)(debuginfod_client *c, debuginfod_progressfn_t fn);
	void (*p_debuginfod_set_user_data)(debuginfod_client *c, void *data);
	void *(*p_debuginfod_get_user_data)(const debuginfod_client *c);
};

static const char *const dbgd_sonames[] = {"libdebuginfod.so.1", NULL};
static const char *const dbgd_names[] = {
	"debuginfod_begin",	      "debuginfod_end",		    "debuginfod_find_debuginfo",
	"debuginfod_set_progressfn", "debuginfod_set_user_data", "debuginfod_get_user_data",
	NULL};
static struct dbgd_fns fn;
_Static_assert(sizeof(fn) == sizeof(void *) * (sizeof(dbgd_names) / sizeof(char *) - 1),
	       "one slot per name");
static struct ember__lazydep dbgd_lib = {
	.what = "libdebuginfod (elfutils' debuginfod client)",
	.package = "libdebuginfod1",
	.sonames = dbgd_sonames,
	.names = dbgd_names,
	.slots = &fn,
};

struct ember__dbgd {
	ember__dbgd_opts o;
	char miss_dir[PATH_MAX];
	ember__dbgd_stats st;
	pthread_mutex_t mu; /* st, during a fetch */
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ember__dbgd_configured(const char *urls)
{
	const char *u = urls ? urls : getenv("DEBUGINFOD_URLS");
	return u && u[strspn(u, " \t")] != '\0';
}

/* mkdir -p of path (its every prefix). 0 or -1. */
static int mkdirs(const char *path)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -1;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

int ember__dbgd_new(ember__dbgd **out, const ember__dbgd_opts *opts)
{
	*out = NULL;
	ember__dbgd_opts o = opts ? *opts : (ember__dbgd_opts){0};
	if (!ember__dbgd_configured(o.urls))
		return ember__error(EMBER_ERR_INVALID,
				    "debuginfod: no server (set DEBUGINFOD_URLS or --debuginfod)");
	int rc = ember__lazydep_load(&dbgd_lib);
	if (rc < 0)
		return rc;
	if (o.urls && setenv("DEBUGINFOD_URLS", o.urls, 1) != 0)
		return ember__error_oom("DEBUGINFOD_URLS");
	ember__dbgd *d = calloc(1, sizeof(*d));
	if (!d)
		return ember__error_oom("debuginfod client");
	o.per_file_ms = o.per_file_ms > 0 ? o.per_file_ms : 30000;
	o.total_ms = o.total_ms > 0 ? o.total_ms : 60000;
	o.threads = o.threads ? o.threads : 4;
	o.miss_ttl_s = o.miss_ttl_s > 0 ? o.miss_ttl_s : 600;
	if (o.miss_dir) {
		snprintf(d->miss_dir, sizeof(d->miss_dir), "%s", o.miss_dir);
	} else {
		const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
		if (x && x[0] == '/')
			snprintf(d->miss_dir, sizeof(d->miss_dir), "%s/emberprof/debuginfod-miss", x);
		else if (home && home[0] == '/')
			snprintf(d->miss_dir, sizeof(d->miss_dir),
				 "%s/.cache/emberprof/debuginfod-miss", home);
	}
	o.urls = NULL;
	o.miss_dir = NULL;
	d->o = o;
	pthread_mutex_init(&d->mu, NULL);
	*out = d;
	return 0;
}

void ember__dbgd_free(ember__dbgd *d)
{
	if (!d)
		return;
	pthread_mutex_destroy(&d->mu);
	free(d);
}

const ember__dbgd_stats *ember__dbgd_get_stats(const ember__dbgd *d)
{
	return &d->st;
}

static int valid_build_id(const char *id)
{
	size_t n = strlen(id);
	return n >= 2 && n <= 128 && n % 2 == 0 && strspn(id, "0123456789abcdef") == n;
}

/* Failed recently (a miss file younger than the TTL)? */
static int remembered(const ember__dbgd *d, const char *id)
{
	char p[PATH_MAX + 160];
	struct stat st;
	if (!d->miss_dir[0] || d->o.retry)
		return 0;
	snprintf(p, sizeof(p), "%s/%s", d->miss_dir, id);
	if (stat(p, &st) != 0)
		return 0;
	time_t now = time(NULL);
	return st.st_mtime <= now && now - st.st_mtime < d->o.miss_ttl_s;
}

/* Writes the miss file of id (atomically: a temporary file renamed). */
static void remember(const ember__dbgd *d, const char *id, const char *why)
{
	if (!d->miss_dir[0] || mkdirs(d->miss_dir) != 0)
		return;
	char tmp[PATH_MAX + 200], p[PATH_MAX + 160];
	snprintf(p, sizeof(p), "%s/%s", d->miss_dir, id);
	static atomic_uint seq;
	snprintf(tmp, sizeof(tmp), "%s/.%s.%ld.%u.tmp", d->miss_dir, id, (long)getpid(),
		 atomic_fetch_add(&seq, 1));
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%lld %s\n", (long long)time(NULL), why);
	if (fclose(f) != 0 || rename(tmp, p) != 0)
		unlink(tmp);
}

static void forget(const ember__dbgd *d, const char *id)
{
	char p[PATH_MAX + 160];
	if (d->miss_dir[0] && snprintf(p, sizeof(p), "%s/%s", d->miss_dir, id) < (int)sizeof(p))
		unlink(p);
}

/*
 * libdebuginfod's cache directory, as it chooses it (elfutils 0.188,
 * debuginfod-client.c): $DEBUGINFOD_CACHE_PATH, else the legacy
 * ~/.debuginfod_client_cache if it exists, else
 * $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client.
 * 0, or -1 if none can be told.
 */
static int client_cache_dir(char *out, size_t cap)
{
	const char *p = getenv("DEBUGINFOD_CACHE_PATH"), *home = getenv("HOME");
	const char *x = getenv("XDG_CACHE_HOME");
	struct stat st;
	int n;
	if (p && *p)
		n = snprintf(out, cap, "%s", p);
	else if (home && (n = snprintf(out, cap, "%s/.debuginfod_client_cache", home)) > 0 &&
		 (size_t)n < cap && stat(out, &st) == 0)
		return 0;
	else if (x && *x)
		n = snprintf(out, cap, "%s/debuginfod_client", x);
	else if (home)
		n = snprintf(out, cap, "%s/.cache/debuginfod_client", home);
	else
		return -1;
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/*
 * After a fetch we aborted (our deadline) or one that failed other than
 * by "not found": libdebuginfod 0.188 leaves an empty file where the
 * debug file would be, its negative cache, honoured for cache_miss_s (600
 * s by default), so the server would not be asked again even once it
 * answers. That is right for a 404, wrong for our own time bound and for
 * a server that was down: the empty file is removed then (our own miss
 * file, with its shorter meaning, remembers the failure for `run`).
 */
static void drop_client_negative(const char *id)
{
	char dir[PATH_MAX], p[PATH_MAX + 160];
	struct stat st;
	if (client_cache_dir(dir, sizeof(dir)) != 0)
		return;
	if (snprintf(p, sizeof(p), "%s/%s/debuginfo", dir, id) >= (int)sizeof(p))
		return;
	if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
		unlink(p);
}

/* One fetch call's shared state. */
typedef struct job {
	ember__dbgd *d;
	const char *const *ids;
	char **paths;
	size_t n;
	atomic_size_t next;
	int64_t end_ms; /* the whole call's deadline */
} job;

/* A worker's, reachable from its client's progress callback. */
typedef struct worker {
	job *j;
	int64_t file_end_ms;
	int aborted;
} worker;

static int progress(debuginfod_client *c, long a, long b)
{
	(void)a;
	(void)b;
	worker *w = fn.p_debuginfod_get_user_data(c);
	int64_t now = now_ms();
	if (w && (now >= w->file_end_ms || now >= w->j->end_ms)) {
		w->aborted = 1;
		return 1; /* nonzero: libdebuginfod stops the transfer */
	}
	return 0;
}

static void fetch_one(worker *w, debuginfod_client *c, size_t i)
{
	job *j = w->j;
	ember__dbgd *d = j->d;
	const char *id = j->ids[i];
	char why[200];
	if (!valid_build_id(id))
		return;
	if (remembered(d, id)) {
		pthread_mutex_lock(&d->mu);
		d->st.remembered++;
		pthread_mutex_unlock(&d->mu);
		return;
	}
	int64_t now = now_ms();
	if (now >= j->end_ms) {
		w->aborted = 1;
	} else {
		w->aborted = 0;
		w->file_end_ms = now + d->o.per_file_ms;
		char *path = NULL;
		int fd = fn.p_debuginfod_find_debuginfo(c, (const unsigned char *)id, 0, &path);
		if (fd >= 0) {
			close(fd);
			j->paths[i] = path;
			forget(d, id);
			pthread_mutex_lock(&d->mu);
			d->st.found++;
			pthread_mutex_unlock(&d->mu);
			return;
		}
		free(path);
		if (w->aborted || fd != -ENOENT)
			drop_client_negative(id);
		pthread_mutex_lock(&d->mu);
		if (w->aborted) {
			d->st.timed_out++;
			snprintf(why, sizeof(why), "no answer within %lld ms",
				 (long long)(now_ms() >= j->end_ms ? j->end_ms - now
								   : d->o.per_file_ms));
		} else if (fd == -ETIME || fd == -ETIMEDOUT) {
			d->st.timed_out++;
			snprintf(why, sizeof(why), "timed out (DEBUGINFOD_TIMEOUT)");
		} else if (fd == -ENOENT) {
			d->st.missing++;
			snprintf(why, sizeof(why), "not on any server");
		} else {
			d->st.failed++;
			snprintf(why, sizeof(why), "%s", strerror(-fd));
		}
		snprintf(d->st.last_error, sizeof(d->st.last_error), "%s: %s", id, why);
		pthread_mutex_unlock(&d->mu);
		remember(d, id, why);
		return;
	}
	/* out of time before asking: counted, not remembered (never asked) */
	pthread_mutex_lock(&d->mu);
	d->st.timed_out++;
	snprintf(d->st.last_error, sizeof(d->st.last_error), "%s: not asked, the %lld ms for all "
		 "fetches had passed", id, (long long)d->o.total_ms);
	pthread_mutex_unlock(&d->mu);
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	job *j = w->j;
	debuginfod_client *c = fn.p_debuginfod_begin();
	if (!c)
		return NULL;
	fn.p_debuginfod_set_user_data(c, w);
	fn.p_debuginfod_set_progressfn(c, progress);
	for (;;) {
		size_t i = atomic_fetch_add(&j->next, 1);
		if (i >= j->n)
			break;
		fetch_one(w, c, i);
	}
	fn.p_debuginfod_end(c);
	return NULL;
}

int ember__dbgd_fetch(ember__dbgd *d, const char *const *build_ids, size_t n, char **paths)
{
	for (size_t i = 0; i < n; i++)
		paths[i] = NULL;
	/* each id once: the first of equal ones is fetched, the rest copy it */
	const char **uniq = calloc(n + 1, sizeof(*uniq));
	size_t *which = calloc(n + 1, sizeof(*which));
	char **upaths = calloc(n + 1, sizeof(*upaths));
	if (!uniq || !which || !upaths) {
		free(uniq);
		free(which);
		free(upaths);
		return ember__error_oom("debuginfod fetch");
	}
	size_t nu = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < nu && strcmp(uniq[k], build_ids[i]) != 0)
			k++;
		if (k == nu)
			uniq[nu++] = build_ids[i];
		which[i] = k;
	}
	job j = {.d = d, .ids = uniq, .paths = upaths, .n = nu, .end_ms = now_ms() + d->o.total_ms};
	atomic_init(&j.next, 0);
	unsigned nt = d->o.threads < nu ? d->o.threads : (unsigned)nu;
	worker w[16];
	pthread_t tid[16];
	if (nt > 16)
		nt = 16;
	unsigned started = 0;
	for (unsigned t = 0; t < nt; t++) {
		w[t] = (worker){.j = &j};
		if (pthread_create(&tid[t], NULL, worker_main, &w[t]) == 0)
			started++;
		else
			break;
	}
	if (started == 0 && nu) { /* no thread: do it here, one by one */
		w[0] = (worker){.j = &j};
		worker_main(&w[0]);
	}
	for (unsigned t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const char *p = upaths[which[i]];
		if (p && !(paths[i] = strdup(p)))
			err = ember__error_oom("debuginfod path");
	}
	if (err)
		for (size_t i = 0; i < n; i++) {
			free(paths[i]);
			paths[i] = NULL;
		}
	for (size_t k = 0; k < nu; k++)
		free(upaths[k]);
	free(uniq);
	free(which);
	free(upaths);
	return err;
}
