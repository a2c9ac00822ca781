/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ownfd.c - descriptors the agent keeps for long (ownfd.h).
 */
#include "util/ownfd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int ember__ownfd_raise(int fd)
{
	if (fd < 0)
		return -1;
	if (fd < EMBER_OWNFD_MIN) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, EMBER_OWNFD_MIN);
		if (high >= 0) {
			close(fd);
			fd = high;
		}
	}
	int fl = fcntl(fd, F_GETFD);
	if (fl >= 0 && !(fl & FD_CLOEXEC))
		fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
	return fd;
}

int ember__ownfd_adopt(ember__ownfd *o, int fd)
{
	o->fd = -1;
	if (fd < 0)
		return -1;
	fd = ember__ownfd_raise(fd);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	o->fd = fd;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	return fd;
}

int ember__ownfd_check(ember__ownfd *o)
{
	if (o->fd < 0)
		return 0;
	struct stat st;
	int fl = fcntl(o->fd, F_GETFD);
	if (fl >= 0 && (fl & FD_CLOEXEC) && fstat(o->fd, &st) == 0 && st.st_dev == o->dev &&
	    st.st_ino == o->ino)
		return 1;
	o->fd = -1;
	return 0;
}

void ember__ownfd_close(ember__ownfd *o)
{
	if (ember__ownfd_check(o))
		close(o->fd);
	o->fd = -1;
}

int ember__ownfd_is_path(int fd, const char *path)
{
	struct stat a, b;
	int fl = fcntl(fd, F_GETFD);
	return fl >= 0 && (fl & FD_CLOEXEC) && fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void ember__ownfd_abandon_dir(DIR *d)
{
	if (d && fcntl(dirfd(d), F_GETFD) < 0 && errno == EBADF)
		closedir(d);
	/* else: the number is the program's now; the stream stays allocated */
}
