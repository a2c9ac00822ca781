/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debugfile.c - the local-disk search for a module's separate debug file:
 * by build id through libdwfl, then by the .gnu_debuglink name in the
 * usual places, each candidate verified by build id or CRC-32.
 */
#include "symbols/debugfile.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/dep_zlib.h"

/*
 * Checks that fd is the debug file of mod: by build id when the module has
 * one, else by the CRC-32 that .gnu_debuglink records (zlib's crc32 is the
 * same function). Leaves the file offset at 0.
 */
static int debug_file_matches(Dwfl_Module *mod, int fd, GElf_Word crc)
{
	const unsigned char *want;
	GElf_Addr vaddr;
	int wlen = dwfl_module_build_id(mod, &want, &vaddr);
	if (wlen > 0) {
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *got = NULL;
		ssize_t glen = elf ? dwelf_elf_gnu_build_id(elf, &got) : -1;
		int ok = glen == wlen && memcmp(got, want, (size_t)wlen) == 0;
		elf_end(elf);
		return ok;
	}
	unsigned char buf[16384];
	uLong c = crc32(0L, Z_NULL, 0);
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)r);
	if (lseek(fd, 0, SEEK_SET) != 0)
		return 0;
	return r == 0 && (GElf_Word)c == crc;
}

/* Opens dir/sub/name if it exists, is not the main file and matches. */
static int try_debug_file(Dwfl_Module *mod, const struct stat *main_st, const char *dir,
			  const char *sub, const char *name, GElf_Word crc, char **found)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s%s/%s", dir, sub, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || (st.st_dev == main_st->st_dev && st.st_ino == main_st->st_ino) ||
	    !debug_file_matches(mod, fd, crc) || !(*found = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

static ember__debugfile_hooks hooks;
static int hooks_set;

void ember__debugfile_set_hooks(const ember__debugfile_hooks *h)
{
	hooks_set = h != NULL;
	hooks = h ? *h : (ember__debugfile_hooks){0};
}

const ember__debugfile_hooks *ember__debugfile_get_hooks(void)
{
	return hooks_set ? &hooks : NULL;
}

/* The debug file the tools' hook names for mod, if it matches: an open
 * descriptor (and *found, malloc'd), or -1. */
static int try_hook(Dwfl_Module *mod, const char *modname, const char *file_name,
		    char **found)
{
	if (!hooks_set || !hooks.find_debug)
		return -1;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	char hex[2 * 64 + 1] = "";
	for (int i = 0; i < n && i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", bits[i]);
	char *path = hooks.find_debug(hooks.arg, file_name ? file_name : modname, hex);
	if (!path)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && n > 0 && debug_file_matches(mod, fd, 0)) {
		*found = path;
		return fd;
	}
	if (fd >= 0)
		close(fd);
	free(path);
	return -1;
}

static int find_by_link(Dwfl_Module *mod, const char *file_name, const char *debuglink_file,
			GElf_Word debuglink_crc, char **debuginfo_file_name);

/*
 * The build-id tree goes through dwfl_build_id_find_debuginfo; the
 * .gnu_debuglink places (next to the file, in its .debug subdirectory,
 * under /usr/lib/debug/<dir>) are tried here. Never
 * dwfl_standard_find_debuginfo: see debugfile.h.
 */
int ember__debugfile_find(Dwfl_Module *mod, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
					      debuglink_file, debuglink_crc,
					      debuginfo_file_name);
	if (fd < 0)
		fd = find_by_link(mod, file_name, debuglink_file, debuglink_crc,
				  debuginfo_file_name);
	if (fd < 0)
		fd = try_hook(mod, modname, file_name, debuginfo_file_name);
	return fd;
}

static int find_by_link(Dwfl_Module *mod, const char *file_name, const char *debuglink_file,
			GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	int fd;
	if (!debuglink_file || !file_name || file_name[0] != '/')
		return -1;
	struct stat main_st;
	if (stat(file_name, &main_st) != 0)
		return -1;
	const char *slash = strrchr(file_name, '/');
	char dir[PATH_MAX];
	size_t dlen = (size_t)(slash - file_name);
	if (dlen >= sizeof(dir))
		return -1;
	memcpy(dir, file_name, dlen);
	dir[dlen] = '\0';
	const char *link = strchr(debuglink_file, '/') ? strrchr(debuglink_file, '/') + 1
						    : debuglink_file;
	char global[PATH_MAX];
	int n = snprintf(global, sizeof(global), "/usr/lib/debug%s", dir);
	const char *places[3][2] = {{dir, ""}, {dir, "/.debug"}, {global, ""}};
	for (int i = 0; i < 3; i++) {
		if (i == 2 && (n < 0 || (size_t)n >= sizeof(global)))
			break;
		fd = try_debug_file(mod, &main_st, places[i][0], places[i][1], link,
				    debuglink_crc, debuginfo_file_name);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

