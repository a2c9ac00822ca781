/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fileio.c - small file helpers (fileio.h).
 */
#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emberprof.h"
#include "util/error.h"

int ember__write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int ember__read_file(const char *path, size_t max, uint8_t **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot open %s", path);
	struct stat st;
	if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
		fclose(fp);
		return ember__error(EMBER_ERR_FORMAT, "%s: larger than %zu bytes", path, max);
	}
	size_t cap = 65536, n = 0;
	uint8_t *buf = malloc(cap);
	int err = buf ? 0 : ember__error_oom("file buffer");
	while (!err) {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				err = ember__error_oom("file buffer");
				break;
			}
			buf = nb;
			cap *= 2;
		}
		size_t got = fread(buf + n, 1, cap - n, fp);
		n += got;
		if (n > max) {
			err = ember__error(EMBER_ERR_FORMAT, "%s: larger than %zu bytes", path, max);
			break;
		}
		if (got == 0) {
			if (ferror(fp))
				err = ember__error_errno(EMBER_ERR_IO, errno, "cannot read %s", path);
			break;
		}
	}
	fclose(fp);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*len = n;
	return 0;
}

long ember__read_task_file(int32_t tid, const char *name, char *buf, size_t len)
{
	char path[64];
	if (len == 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return (long)n;
}

/* ---- a private output directory ---- */

/* mkdir that treats "already exists" as success. */
static int mkdir_one(const char *path)
{
	if (mkdir(path, 0700) == 0 || errno == EEXIST)
		return 0;
	return ember__error_errno(EMBER_ERR_IO, errno, "cannot create directory '%s'", path);
}

/* Creates every missing component of `path` (already without trailing '/'). */
static int mkdir_parents(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/' || p[-1] == '/')
			continue;
		*p = '\0';
		int rc = mkdir_one(path);
		*p = '/';
		if (rc < 0)
			return rc;
	}
	return mkdir_one(path);
}

char *ember__path_trim_slashes(const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, dir, n);
		s[n] = '\0';
	}
	return s;
}

static int open_dir_normalized(char *path)
{
	struct stat st;

	int rc = mkdir_parents(path);
	if (rc < 0)
		return rc;
	if (lstat(path, &st) < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot examine output directory '%s'",
					  path);
	if (S_ISLNK(st.st_mode))
		return ember__error(EMBER_ERR_INVALID,
				    "output directory '%s' is a symbolic link; refusing to follow it",
				    path);
	if (!S_ISDIR(st.st_mode))
		return ember__error(EMBER_ERR_INVALID, "output directory '%s' is not a directory",
				    path);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			return ember__error(EMBER_ERR_INVALID,
					    "output directory '%s' is a symbolic link; refusing to follow it",
					    path);
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot open output directory '%s'",
					  path);
	}
	if (faccessat(fd, ".", W_OK | X_OK, 0) < 0) {
		int e = errno;
		close(fd);
		return ember__error_errno(EMBER_ERR_IO, e, "output directory '%s' is not writable",
					  path);
	}
	return fd;
}

int ember__local_open_dir(const char *dir)
{
	if (!dir || !*dir)
		return ember__error(EMBER_ERR_INVALID, "output directory path is empty");
	if (strlen(dir) >= PATH_MAX)
		return ember__error(EMBER_ERR_INVALID, "output directory path is too long");
	char *path = ember__path_trim_slashes(dir);
	if (!path)
		return ember__error_oom("output directory path");
	int rc = open_dir_normalized(path);
	free(path);
	return rc;
}

int ember__read_int_file(const char *path, int dflt)
{
	FILE *f = fopen(path, "re");
	int v = dflt;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}
