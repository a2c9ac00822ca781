/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfopen.c - an ELF file read with no descriptor kept (elfopen.h).
 */
#include "util/elfopen.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

Elf *ember__elf_open_detached(const char *path, const char **why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*why = strerror(errno);
		return NULL;
	}
	return ember__elf_begin_detached(fd, why);
}

Elf *ember__elf_begin_detached(int fd, const char **why)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	/* FDREAD reads the file whole unless it is mapped, then marks the
	 * descriptor unused as FDDONE does (a second call would fail: the
	 * Elf has no descriptor any more) */
	if (e && elf_cntl(e, ELF_C_FDREAD) != 0) {
		elf_end(e);
		e = NULL;
	}
	if (!e)
		*why = elf_errmsg(-1);
	close(fd);
	return e;
}
