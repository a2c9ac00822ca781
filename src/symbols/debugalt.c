/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debugalt.c - a module's dwz alt file, named by .gnu_debugaltlink, found
 * on the local disk and checked by its build id (debugalt.h).
 */
#include "symbols/debugalt.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/dep_elfutils.h"
#include "util/elfdebug.h"

size_t ember__debugalt_id(const char *file_name, const char *link, uint8_t *id, size_t cap)
{
	if (!file_name || !link)
		return 0;
	int fd = open(file_name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Shdr sh;
	Elf_Scn *scn = e && elf_kind(e) == ELF_K_ELF
			       ? ember__elf_find_section(e, ".gnu_debugaltlink", &sh)
			       : NULL;
	Elf_Data *d = scn && sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;
	if (d && d->d_buf) {
		/* the name, NUL-ended, then the build id to the section's end */
		const char *s = d->d_buf;
		size_t nlen = strnlen(s, d->d_size);
		size_t idlen = nlen < d->d_size ? d->d_size - nlen - 1 : 0;
		if (idlen > 0 && idlen <= cap && !strcmp(s, link)) {
			memcpy(id, s + nlen + 1, idlen);
			n = idlen;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return n;
}

/* path, opened if its build id is id[0..id_len). */
static int try_alt(const char *path, const uint8_t *id, size_t id_len, char **found)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!ember__elf_debug_matches(fd, id, id_len, 0) || !(*found = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* link, relative to the directory of the file at file_name. */
static int try_relative(const char *file_name, const char *link, const uint8_t *id,
			size_t id_len, char **found)
{
	const char *slash = strrchr(file_name, '/');
	char path[PATH_MAX];
	int n = slash ? snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - file_name), file_name,
				 link)
		      : snprintf(path, sizeof(path), "%s", link);
	return n > 0 && (size_t)n < sizeof(path) ? try_alt(path, id, id_len, found) : -1;
}

int ember__debugalt_open(const char *file_name, const char *link, const uint8_t *id,
			 size_t id_len, char **found)
{
	if (!file_name || !link || !link[0] || id_len == 0)
		return -1;
	int fd = -1;
	if (link[0] == '/') {
		fd = try_alt(link, id, id_len, found);
	} else {
		fd = try_relative(file_name, link, id, id_len, found);
		/* libdw resolves it from the file it has open, symbolic links
		 * followed (a build-id tree's link to the debug file) */
		char *real = fd < 0 ? realpath(file_name, NULL) : NULL;
		if (real && strcmp(real, file_name) != 0)
			fd = try_relative(real, link, id, id_len, found);
		free(real);
	}
	/* the build-id tree alone (no main file, no debuglink) */
	if (fd < 0)
		fd = ember__elf_debug_open(NULL, id, id_len, NULL, 0, found);
	return fd;
}
