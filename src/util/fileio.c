/*
 * fileio.c - small file helpers (fileio.h).
 */
#include "util/fileio.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

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
