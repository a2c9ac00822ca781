/*
 * fileio.c - small file helpers (fileio.h).
 */
#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
