/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asprof_run.c - the async-profiler backend's thread and the rotation of
 * its JFR output (see asprof_run.h for the sequence).
 *
 * Unlike async-profiler's Rust agent, the last window is reported at stop
 * (its agent restarts the profiler at the final tick and drops that data),
 * and an async-profiler error never ends the run: a failed `stop` loses
 * that window (its file may be incomplete), a failed `start` leaves the
 * next window unprofiled and is retried at the following boundary; each
 * is logged with async-profiler's message and counted.
 */
#include "asprof/asprof_run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "asprof/asprof.h"
#include "engine/thread_start.h"
#include "util/error.h"
#include "util/envsnap.h"

/* A recording larger than this is not read into memory (counted, logged). */
#define MAX_JFR_BYTES (256ull << 20)
/* Restart (stop/start) instead of dumping once the recording file has
 * grown this much, or async-profiler has run this long since its start. */
#define RESTART_BYTES (1ull << 30)
#define RESTART_NS (3600ll * 1000000000)

struct ember__asprof_run {
	ember__asprof_run_cfg cfg;
	const ember__asprof_api *api;
	ember__asprof_deliver_fn deliver;
	void *ctx;
	char tmpdir[256]; /* $TMPDIR, read by the thread that started the run */
	int fd[2];
	int active;  /* index of the file async-profiler writes to */
	int running; /* the last start succeeded and no stop followed */
	int dump;    /* rotate with `dump` (0: stop/start at every boundary) */
	uint64_t off; /* where the active file's first unreported chunk starts */
	int64_t started; /* when the active recording started (monotonic ns) */
	uint32_t seq;
	int64_t win_start; /* when the active recording started (realtime ns) */

	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop_req;
	int start_rc; /* 1 while pending */
	char start_err[EMBER_ERROR_MAX];
	int final_rc;
	char final_err[EMBER_ERROR_MAX];
	_Atomic uint64_t errors;
};

static int64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ember__asprof_check_reporters(const ember_reporter *reporters, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(reporters[i].formats & EMBER_FORMAT_JFR))
			return ember__error(EMBER_ERR_INVALID, "reporter %s does not take JFR, the only "
					    "format the async-profiler backend produces (for local "
					    "files use ember_reporter_local_ex with EMBER_FORMAT_JFR)",
					    reporters[i].name);
	return 0;
}

/* An unlinked temporary file, moved to a descriptor >= 256. */
static int make_temp(const char *tmpdir)
{
	const char *dir = tmpdir[0] == '/' ? tmpdir : "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && strcmp(dir, "/tmp") != 0)
		fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = memfd_create("emberprof-asprof", MFD_CLOEXEC);
	if (fd < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot create a temporary file for "
					  "async-profiler's recording (O_TMPFILE in %s, memfd)", dir);
	/* Out of the low range a program may close and re-dup (threads.c). */
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 256);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	return fd;
}

static void close_files(ember__asprof_run *r)
{
	for (int i = 0; i < 2; i++)
		if (r->fd[i] >= 0) {
			close(r->fd[i]);
			r->fd[i] = -1;
		}
}

/* Reads the file from `from` to its end. 0 (*buf is the caller's, NULL
 * when empty) or ember_err. */
static int read_file(int fd, uint64_t from, uint8_t **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot stat the recording");
	uint64_t size = (uint64_t)st.st_size > from ? (uint64_t)st.st_size - from : 0;
	if (size > MAX_JFR_BYTES)
		return ember__error(EMBER_ERR_IO, "the recording has %" PRIu64 " bytes, more than the "
				    "%llu MiB emberprof reads; use a shorter interval",
				    size, MAX_JFR_BYTES >> 20);
	size_t n = (size_t)size, got = 0;
	if (n == 0)
		return 0;
	uint8_t *b = malloc(n);
	if (!b)
		return ember__error_oom("JFR recording");
	while (got < n) {
		ssize_t k = pread(fd, b + got, n - got, (off_t)(from + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? errno : 0;
			free(b);
			return e ? ember__error_errno(EMBER_ERR_IO, e, "cannot read the recording")
				 : ember__error(EMBER_ERR_IO, "the recording shrank while read");
		}
		got += (size_t)k;
	}
	*buf = b;
	*len = n;
	return 0;
}

static void count_error(ember__asprof_run *r)
{
	atomic_fetch_add(&r->errors, 1);
}

/* Runs a command; what async-profiler printed goes to the debug log. */
static int exec_cmd(ember__asprof_run *r, const char *cmd)
{
	int rc = ember__asprof_exec(r->api, cmd);
	const char *out = ember__asprof_last_output();
	if (*out)
		ember__logf(r->cfg.log, EMBER_LOG_DEBUG, "async-profiler (%.*s): %.*s", (int)strcspn(cmd, ","),
			   cmd, (int)strcspn(out, "\n"), out);
	return rc;
}

/* Sends `start` for the active file. */
static int start_recording(ember__asprof_run *r)
{
	char cmd[256];
	int rc = ember__asprof_start_command(cmd, sizeof(cmd), r->cfg.asprof, r->fd[r->active]);
	int64_t t = now_ns(CLOCK_REALTIME);
	if (rc == 0)
		rc = exec_cmd(r, cmd);
	if (rc == 0) {
		r->running = 1;
		r->off = 0;
		r->started = now_ns(CLOCK_MONOTONIC);
		r->win_start = t;
		ember__logf(r->cfg.log, EMBER_LOG_DEBUG, "async-profiler: %s", cmd);
	}
	return rc;
}

/*
 * The finished chunks at the start of b[0..len): a chunk's header holds
 * its size and, once async-profiler has finished it, the offset of its
 * constant pool (0 while it is being written, when the size reads 1 GiB:
 * flightRecorder.cpp writeHeader/finishChunk). Returns the bytes they span.
 */
static size_t finished_chunks(const uint8_t *b, size_t len)
{
	size_t at = 0;
	while (len - at >= 68 && memcmp(b + at, "FLR", 4) == 0) {
		uint64_t size = 0, cpool = 0;
		for (int i = 0; i < 8; i++) {
			size = size << 8 | b[at + 8 + (size_t)i];
			cpool = cpool << 8 | b[at + 16 + (size_t)i];
		}
		if (!cpool || size < 68 || size > len - at)
			break;
		at += (size_t)size;
	}
	return at;
}

/*
 * Reports what file `idx` holds from `from` on, covering [start, end):
 * everything (`whole`: async-profiler has stopped), or only its finished
 * chunks (after a dump; the chunk it goes on writing stays). *used
 * receives the bytes reported.
 */
static int report_file(ember__asprof_run *r, int idx, uint64_t from, int whole, uint64_t *used,
		       int64_t start, int64_t end, int final)
{
	uint8_t *jfr;
	size_t len;
	*used = 0;
	int rc = read_file(r->fd[idx], from, &jfr, &len);
	if (rc == 0 && !whole)
		len = finished_chunks(jfr, len);
	if (rc == 0 && (len < 4 || memcmp(jfr, "FLR", 4) != 0))
		rc = ember__error(EMBER_ERR_FORMAT, "async-profiler left %s in the recording, not a JFR",
				  len ? "something else" : "nothing");
	if (rc) {
		count_error(r);
		ember__logf(r->cfg.log, EMBER_LOG_ERROR, "window %" PRIu32 " lost: %s", r->seq,
			   ember_last_error());
		free(jfr);
		return rc;
	}
	*used = len;
	ember_report rep = {
		.app_name = r->cfg.app_name,
		.profile_type = "jfr",
		.start_ns = start,
		.end_ns = end,
		.samples = 0, /* not counted: that would mean parsing the recording */
		.seq = r->seq,
		.final = final,
		.format = EMBER_FORMAT_JFR,
		.jfr = jfr,
		.jfr_len = len,
		.interval_ms = r->cfg.interval_ms,
	};
	rc = r->deliver(r->ctx, &rep);
	free(jfr);
	return rc;
}

/*
 * A boundary without stopping: `dump` makes async-profiler finish the
 * chunk it writes and start the next one in the same file, its sampling
 * untouched; the finished chunk is the window. The bytes read are freed
 * from the file (a hole punched where the file system allows). 1 if the
 * boundary is done, 0 if async-profiler refused the dump (then the caller
 * rotates with stop/start, and so does every later boundary).
 */
static int rotate_dump(ember__asprof_run *r, int64_t start, int64_t end, int *rc)
{
	if (exec_cmd(r, "dump,jfr") != 0) {
		count_error(r);
		ember__logf(r->cfg.log, EMBER_LOG_WARN, "async-profiler refused to dump (%s); rotating "
			   "with stop/start from now on", ember_last_error());
		r->dump = 0;
		return 0;
	}
	uint64_t used;
	*rc = report_file(r, r->active, r->off, 0, &used, start, end, 0);
	if (used &&
	    fallocate(r->fd[r->active], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)r->off,
		      (off_t)used) != 0 && errno != EOPNOTSUPP)
		ember__logf(r->cfg.log, EMBER_LOG_DEBUG, "cannot free the recording's read part: %s",
			   strerror(errno));
	r->off += used;
	r->win_start = end;
	r->seq++;
	return 1;
}

/*
 * One window boundary. Normally a dump (rotate_dump). Else, and at the
 * final one, and when the recording has grown past RESTART_BYTES or run
 * RESTART_NS (async-profiler's stack table only shrinks at a start):
 * stop, and unless final, truncate the other file, swap, start on it;
 * then report the rest of the finished recording.
 */
static int rotate(ember__asprof_run *r, int final)
{
	int stopped = 0, rc = 0;
	int64_t start = r->win_start, end = now_ns(CLOCK_REALTIME);
	if (!final && r->running && r->dump && r->off < RESTART_BYTES &&
	    now_ns(CLOCK_MONOTONIC) - r->started < RESTART_NS && rotate_dump(r, start, end, &rc))
		return rc;
	if (r->running) {
		r->running = 0;
		rc = exec_cmd(r, "stop");
		if (rc == 0) {
			stopped = 1;
		} else {
			count_error(r);
			ember__logf(r->cfg.log, EMBER_LOG_ERROR, "window %" PRIu32 " lost: %s", r->seq,
				   ember_last_error());
		}
	} else {
		rc = ember__error(EMBER_ERR_SYS, "async-profiler was not running in window %" PRIu32
				  " (its start failed)", r->seq);
	}
	int done = r->active;
	uint64_t from = r->off, used;
	if (!final) {
		int next = !r->active;
		if (ftruncate(r->fd[next], 0) != 0)
			ember__logf(r->cfg.log, EMBER_LOG_WARN, "cannot truncate the next recording file: %s "
				   "(async-profiler truncates it too)", strerror(errno));
		r->active = next;
		if (start_recording(r) != 0) {
			count_error(r);
			ember__logf(r->cfg.log, EMBER_LOG_ERROR, "window %" PRIu32 " not profiled, retrying "
				   "at the next boundary: %s", r->seq + 1, ember_last_error());
		}
	}
	if (stopped)
		rc = report_file(r, done, from, 1, &used, start, end, final);
	r->seq++;
	return rc;
}

static void *run_main(void *arg)
{
	ember__asprof_run *r = arg;

	int rc = ember__asprof_load(r->cfg.asprof->library, &r->api);
	if (rc == 0) {
		ember__asprof_init_once(r->api);
		for (int i = 0; rc == 0 && i < 2; i++) {
			int fd = make_temp(r->tmpdir);
			if (fd < 0)
				rc = fd;
			else
				r->fd[i] = fd;
		}
	}
	if (rc == 0)
		rc = start_recording(r);
	pthread_mutex_lock(&r->mu);
	r->start_rc = rc;
	if (rc)
		snprintf(r->start_err, sizeof(r->start_err), "%s", ember_last_error());
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (rc)
		return NULL;
	ember__logf(r->cfg.log, EMBER_LOG_INFO, "async-profiler backend (%s): windows of %u ms",
		   ember__asprof_api_path(r->api), r->cfg.interval_ms);

	int64_t interval = (int64_t)r->cfg.interval_ms * 1000000;
	int64_t win_end = (now_ns(CLOCK_REALTIME) / interval + 1) * interval; /* wall-clock aligned */
	pthread_mutex_lock(&r->mu);
	while (!r->stop_req) {
		int64_t rt = now_ns(CLOCK_REALTIME);
		if (rt < win_end) {
			int64_t wait = win_end - rt;
			if (wait > 1000000000) /* re-read the clock now and then: it may be set */
				wait = 1000000000;
			int64_t dl = now_ns(CLOCK_MONOTONIC) + wait;
			struct timespec ts = {dl / 1000000000, dl % 1000000000};
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
			continue;
		}
		pthread_mutex_unlock(&r->mu);
		rotate(r, 0);
		win_end = (now_ns(CLOCK_REALTIME) / interval + 1) * interval;
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	r->final_rc = rotate(r, 1);
	if (r->final_rc)
		snprintf(r->final_err, sizeof(r->final_err), "%s", ember_last_error());
	close_files(r);
	return NULL;
}

int ember__asprof_run_start(ember__asprof_run **out, const ember__asprof_run_cfg *cfg,
			    uint32_t first_seq, ember__asprof_deliver_fn deliver, void *ctx)
{
	*out = NULL;
	ember__asprof_run *r = calloc(1, sizeof(*r));
	if (!r)
		return ember__error_oom("async-profiler backend");
	r->cfg = *cfg;
	r->deliver = deliver;
	r->ctx = ctx;
	r->fd[0] = r->fd[1] = -1;
	r->seq = first_seq;
	r->start_rc = 1;
	r->dump = !cfg->asprof->stop_start;
	/* The environment is read here, on the caller's thread, not later on
	 * ours, where it could race with the application's setenv(). */
	const char *tmp = ember__secure_getenv("TMPDIR");
	if (tmp && strlen(tmp) < sizeof(r->tmpdir))
		snprintf(r->tmpdir, sizeof(r->tmpdir), "%s", tmp);
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);

	int rc = ember__thread_start(&r->thread, 1u << 20, run_main, r, "emberprof");
	if (rc != 0) {
		rc = ember__error_errno(EMBER_ERR_SYS, rc, "cannot start the agent thread");
		goto fail;
	}
	pthread_mutex_lock(&r->mu);
	while (r->start_rc == 1)
		pthread_cond_wait(&r->cv, &r->mu);
	rc = r->start_rc;
	pthread_mutex_unlock(&r->mu);
	if (rc) {
		pthread_join(r->thread, NULL);
		rc = ember__error(rc, "%s", r->start_err);
		close_files(r);
		goto fail;
	}
	*out = r;
	return 0;
fail:
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
	return rc;
}

int ember__asprof_run_stop(ember__asprof_run *r, uint32_t *next_seq, uint64_t *errors)
{
	pthread_mutex_lock(&r->mu);
	r->stop_req = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	int rc = r->final_rc;
	if (rc)
		ember__error(rc, "%s", r->final_err);
	*next_seq = r->seq;
	*errors = atomic_load(&r->errors);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
	return rc;
}

uint64_t ember__asprof_run_errors(const ember__asprof_run *r)
{
	return atomic_load(&((ember__asprof_run *)r)->errors);
}
