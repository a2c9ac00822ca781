/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local.c - the local-directory reporter: one gzip'd pprof file per
 * reporting window and profile type, and/or one JFR recording per window
 * (ember_reporter_local_ex), written into a directory.
 *
 * Safety rules, because the directory may be shared or hostile:
 *   - the directory is opened once, with O_DIRECTORY|O_NOFOLLOW, and every
 *     later file operation is relative to that descriptor (openat,
 *     renameat2), so a symlink swapped in for the path later cannot
 *     redirect the writes;
 *   - each file is written under a hidden temporary name created with
 *     O_CREAT|O_EXCL|O_NOFOLLOW (mode 0600), fsync'd, and renamed into
 *     place without replacing anything: readers never see a partial file
 *     and an existing file is never overwritten (a numeric suffix is added
 *     on a name clash instead);
 *   - the directory's descriptor sits at 256 or above and is checked
 *     before each window (util/ownfd.h): a program that closed it (a daemon
 *     closing every descriptor at start) or reused its number for a file
 *     of its own gets its descriptor left alone, and the directory is
 *     reopened by path, logged and counted (ember_stats.fds_reopened).
 *
 * The reporter runs on the agent thread only, so its state needs no lock.
 * Nothing here is async-signal-safe.
 */
#include "report/local.h"

#include <ctype.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"
#include "encode/pprof.h"
#include "util/error.h"
#include "util/utctime.h"
#include "util/fileio.h"
#include "util/ownfd.h"
#include "upload/pipeline.h"

typedef struct local_state {
	char *dir;          /* the path as given (trailing slashes removed) */
	ember__ownfd dfd;   /* the directory; fd -1 after a failed reopen */
	unsigned tmp_count; /* makes temporary names unique within the process */
	ember__upload_log log;   /* from bind(); warnings on stderr before */
	_Atomic uint64_t reopens; /* descriptors the program took from us */
} local_state;

/* What one report writes: its bytes and the name's ending. */
typedef struct payload {
	const uint8_t *data;
	size_t len;
	const char *suffix; /* EMBER_LOCAL_SUFFIX or EMBER_LOCAL_JFR_SUFFIX */
} payload;

/* ---- file names ---- */

static void sanitize_app(char *out, size_t cap, const char *app)
{
	size_t n = 0;
	if (app) {
		for (const char *p = app; *p && n + 1 < cap && n < EMBER_LOCAL_APP_MAX; p++) {
			char c = *p;
			int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				 (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
			out[n++] = ok ? c : '_';
		}
	}
	if (n == 0 && cap > 3) {
		memcpy(out, "app", 3);
		n = 3;
	}
	out[n] = '\0';
}

int ember__local_filename(char *buf, size_t n, const char *app, int64_t start_ns, pid_t pid,
			  uint32_t seq, const char *type)
{
	return ember__local_filename_ext(buf, n, app, start_ns, pid, seq, type, EMBER_LOCAL_SUFFIX);
}

int ember__local_filename_ext(char *buf, size_t n, const char *app, int64_t start_ns, pid_t pid,
			      uint32_t seq, const char *type, const char *suffix)
{
	/* CPU profiles keep the plain name; other types say what they are. */
	char kind[24] = "";
	if (type && *type && strcmp(type, "cpu") != 0) {
		size_t k = 0;
		kind[k++] = '.';
		for (const char *p = type; *p && k < sizeof(kind) - 1; p++)
			if (isalnum((unsigned char)*p) || *p == '_')
				kind[k++] = *p;
		kind[k] = '\0';
	}
	char safe[EMBER_LOCAL_APP_MAX + 1];
	ember__utc tm;

	sanitize_app(safe, sizeof(safe), app);
	if (start_ns < 0)
		start_ns = 0;
	int ms = (int)((start_ns % 1000000000) / 1000000);
	/* not gmtime_r, which may read TZ with getenv here (util/utctime.h) */
	ember__utc_from_unix(start_ns / 1000000000, &tm);
	int w = snprintf(buf, n, "%s-%04d%02d%02dT%02d%02d%02d.%03dZ-%ld-%u%s%s", safe, (int)tm.year,
			 tm.mon, tm.mday, tm.hour, tm.min, tm.sec, ms, (long)pid, (unsigned)seq, kind,
			 suffix);
	if (w < 0 || (size_t)w >= n)
		return ember__error(EMBER_ERR_INVALID, "local reporter: file name buffer too small");
	return 0;
}

/* ---- writing one file ---- */

/* Creates a fresh hidden temporary file; its name goes into tmp. */
static int open_temp(local_state *st, char *tmp, size_t cap)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		snprintf(tmp, cap, ".emberprof-%ld-%u.tmp", (long)getpid(), st->tmp_count++);
		int fd = openat(st->dfd.fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0600);
		/* above the program's numbers while it is written: a write
		 * takes long on a loaded machine (host.test_fds under two CPU
		 * hogs found it at fd 4), and a program that closed and reused
		 * the number meanwhile would get our bytes */
		if (fd >= 0 || errno != EEXIST)
			return ember__ownfd_raise(fd);
	}
	errno = EEXIST;
	return -1;
}

/*
 * Moves tmp to `name` without replacing an existing file. renameat2's
 * RENAME_NOREPLACE does that atomically; where the filesystem lacks it,
 * link()+unlink() gives the same guarantee. Returns 0 or -1 with errno.
 */
static int publish_noreplace(int dirfd, const char *tmp, const char *name)
{
	if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	if (linkat(dirfd, tmp, dirfd, name, 0) < 0)
		return -1;
	unlinkat(dirfd, tmp, 0);
	return 0;
}

/* Publishes tmp as `name`, or name_1, name_2... if taken. */
static int publish(local_state *st, const char *tmp, const char *name, const char *suffix,
		   char *final, size_t cap)
{
	size_t base = strlen(name) - strlen(suffix);
	for (unsigned k = 0; k < 1000; k++) {
		if (k == 0)
			snprintf(final, cap, "%s", name);
		else
			snprintf(final, cap, "%.*s_%u%s", (int)base, name, k, suffix);
		if (publish_noreplace(st->dfd.fd, tmp, final) == 0)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

/*
 * Writes the bytes under a temporary name; on failure nothing is left and
 * *os_err is the errno that caused it.
 */
static int write_temp(local_state *st, const payload *pl, char *tmp, size_t cap, int *os_err)
{
	int fd = open_temp(st, tmp, cap);
	*os_err = errno;
	if (fd < 0)
		return ember__error_errno(EMBER_ERR_IO, *os_err,
					  "local reporter: cannot create a temporary file in '%s'",
					  st->dir);
	int failed = ember__write_all(fd, pl->data, pl->len) < 0 || fsync(fd) < 0;
	int e = errno;
	if (close(fd) < 0 && !failed) {
		failed = 1;
		e = errno;
	}
	if (failed) {
		*os_err = e;
		unlinkat(st->dfd.fd, tmp, 0);
		return ember__error_errno(EMBER_ERR_IO, e, "local reporter: cannot write '%s/%s'",
					  st->dir, tmp);
	}
	return 0;
}

/* Reopens (and recreates) the directory, e.g. after it was removed. */
static int reopen_dir(local_state *st)
{
	int fd = ember__local_open_dir(st->dir);
	if (fd < 0)
		return fd;
	ember__ownfd_close(&st->dfd);
	if (ember__ownfd_adopt(&st->dfd, fd) < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot open output directory '%s'",
					  st->dir);
	return 0;
}

/*
 * Makes sure st->dfd is still our directory: a program that closed every
 * descriptor (or dup2'd over ours) leaves it alone, and we reopen by path.
 */
static int check_dir(local_state *st)
{
	if (st->dfd.fd < 0) /* an earlier reopen failed: try again */
		return reopen_dir(st);
	if (ember__ownfd_check(&st->dfd))
		return 0;
	int rc = reopen_dir(st);
	atomic_fetch_add(&st->reopens, 1);
	ember__upload_logf(&st->log, rc < 0 ? EMBER_LOG_WARN : EMBER_LOG_INFO,
			   "the program closed or reused the output directory's descriptor; %s",
			   rc < 0 ? ember_last_error() : "reopened it by path");
	return rc;
}

static int local_report(void *userdata, const ember_report *r)
{
	local_state *st = userdata;
	char name[NAME_MAX + 1], final[NAME_MAX + 1], tmp[64];

	if (!r)
		return ember__error(EMBER_ERR_INVALID, "local reporter: no report");
	int jfr = r->format == EMBER_FORMAT_JFR;
	payload pl = {jfr ? r->jfr : r->pprof, jfr ? r->jfr_len : r->pprof_len,
		      jfr ? EMBER_LOCAL_JFR_SUFFIX : EMBER_LOCAL_SUFFIX};
	if (!pl.data && pl.len)
		return ember__error(EMBER_ERR_INVALID, "local reporter: no profile data");
	if (r->format && r->format != EMBER_FORMAT_PPROF && !jfr) /* 0: pprof, as before 0.2 */
		return ember__error(EMBER_ERR_INVALID, "local reporter: unknown report format %u",
				    r->format);
	/* A window without samples (the final window of a long run, say) is
	 * no file: a directory of empty profiles only hides the real ones.
	 * Same rule as the Pyroscope reporter. */
	if (r->samples == 0 && (jfr ? !r->jfr_len : ember__pprof_is_empty(pl.data, pl.len))) {
		ember__upload_logf(&st->log, EMBER_LOG_DEBUG, "window %" PRIu32 " (%s) has no samples: "
				   "not written", r->seq, jfr ? "jfr" : r->profile_type ? r->profile_type : "");
		return 0;
	}
	/* A JFR recording holds every profile type: no type in its name. */
	int rc = ember__local_filename_ext(name, sizeof(name), r->app_name, r->start_ns,
					   r->pid > 0 ? (pid_t)r->pid : getpid(),
					   r->seq, jfr ? NULL : r->profile_type, pl.suffix);
	if (rc < 0)
		return rc;
	if ((rc = check_dir(st)) < 0)
		return rc;
	int os_err = 0;
	rc = write_temp(st, &pl, tmp, sizeof(tmp), &os_err);
	if (rc < 0 && os_err == ENOENT) {
		/* The directory was removed under us: make it again, once. */
		if ((rc = reopen_dir(st)) < 0)
			return rc;
		rc = write_temp(st, &pl, tmp, sizeof(tmp), &os_err);
	}
	if (rc < 0)
		return rc;
	if (publish(st, tmp, name, pl.suffix, final, sizeof(final)) < 0) {
		int e = errno;
		unlinkat(st->dfd.fd, tmp, 0);
		return ember__error_errno(EMBER_ERR_IO, e, "local reporter: cannot rename '%s/%s' to '%s'",
					  st->dir, tmp, name);
	}
	/* Make the new directory entry durable too; a failure here loses
	 * nothing that the rename did not already make visible. */
	(void)fsync(st->dfd.fd);
	return 0;
}

static void local_destroy(void *userdata)
{
	local_state *st = userdata;
	if (!st)
		return;
	ember__ownfd_close(&st->dfd);
	free(st->dir);
	free(st);
}

static int local_bind(void *userdata, const ember_agent_info *info)
{
	local_state *st = userdata;
	st->log.fn = info->log_fn;
	st->log.ud = info->log_userdata;
	st->log.level = (int)info->log_level;
	return 0;
}

static void local_stats(void *userdata, ember_stats *acc)
{
	local_state *st = userdata;
	acc->fds_reopened += atomic_load(&st->reopens);
}

EMBER_API int ember_reporter_local(ember_reporter *out, const char *dir)
{
	return ember_reporter_local_ex(out, dir, 0);
}

EMBER_API int ember_reporter_local_ex(ember_reporter *out, const char *dir, unsigned formats)
{
	if (!out)
		return ember__error(EMBER_ERR_INVALID, "ember_reporter_local: out is NULL");
	if (formats & ~(EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR))
		return ember__error(EMBER_ERR_INVALID,
				    "ember_reporter_local: unknown formats 0x%x (EMBER_FORMAT_PPROF, "
				    "EMBER_FORMAT_JFR)", formats);
	if (!dir || !*dir)
		return ember__error(EMBER_ERR_INVALID, "ember_reporter_local: empty directory path");
	if (strlen(dir) >= PATH_MAX)
		return ember__error(EMBER_ERR_INVALID, "ember_reporter_local: directory path too long");

	local_state *st = calloc(1, sizeof(*st));
	if (!st)
		return ember__error_oom("local reporter");
	st->dir = ember__path_trim_slashes(dir);
	if (!st->dir) {
		free(st);
		return ember__error_oom("local reporter directory");
	}
	int fd = ember__local_open_dir(st->dir);
	if (fd < 0) {
		free(st->dir);
		free(st);
		return fd;
	}
	if (ember__ownfd_adopt(&st->dfd, fd) < 0) {
		int e = errno;
		free(st->dir);
		free(st);
		return ember__error_errno(EMBER_ERR_IO, e, "cannot open output directory '%s'", dir);
	}
	st->log.level = EMBER_LOG_WARN;
	st->log.who = "local";

	memset(out, 0, sizeof(*out));
	out->name = "local";
	out->report = local_report;
	out->destroy = local_destroy;
	out->bind = local_bind;
	out->stats = local_stats;
	out->userdata = st;
	out->formats = formats ? formats : EMBER_FORMAT_PPROF;
	return 0;
}
