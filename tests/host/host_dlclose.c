/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_dlclose.c - plugins loaded, used and unloaded before the agent
 * looks: the profile must still name their functions (the dlclose journal,
 * src/symbols/dlclosed.h).
 *
 *   host_dlclose [-u | -r FILE] SECONDS PLUGIN FUNCTION [PLUGIN FUNCTION]...
 *
 * For each plugin in turn: dlopen, FUNCTION(SECONDS) (that much of this
 * thread's CPU in the plugin), dlclose, then a check that the loader
 * really unloaded it (dlopen RTLD_NOLOAD finds nothing; else exit 3). Its
 * address range then gets an inaccessible anonymous mapping, so that the
 * next plugin is loaded elsewhere: a library loaded at the same addresses
 * within one window takes the old one's names (a documented limit), and
 * the test wants each function's own. Prints "PLUGIN LOW-HIGH" for each
 * on stderr. Exit 0, or 2 (usage), 3 (not unloaded), 4 (a load failed),
 * 5 (-u or -r failed).
 *
 * -u: each plugin's file is deleted after its run, before its dlclose; -r
 * FILE: FILE is renamed over it instead (another library at the same path:
 * its build id differs). The agent cannot name the old code then.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct range {
	const char *name; /* dlpi_name to find */
	uintptr_t lo, hi;
};

static int range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct range *r = data;
	if (strcmp(info->dlpi_name, r->name) != 0)
		return 0;
	r->lo = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
		uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
		if (lo < r->lo)
			r->lo = lo;
		if (hi > r->hi)
			r->hi = hi;
	}
	return 1;
}

int main(int argc, char **argv)
{
	int unlink_it = 0;
	const char *replace = NULL;
	if (argc > 1 && !strcmp(argv[1], "-u")) {
		unlink_it = 1;
		argv++;
		argc--;
	} else if (argc > 2 && !strcmp(argv[1], "-r")) {
		replace = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 4 || (argc - 2) % 2 != 0) {
		fprintf(stderr, "usage: host_dlclose [-u | -r FILE] SECONDS PLUGIN FUNCTION "
				"[PLUGIN FUNCTION]...\n");
		return 2;
	}
	double seconds = atof(argv[1]);
	for (int i = 2; i + 1 < argc; i += 2) {
		const char *path = argv[i], *fn = argv[i + 1];
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
			return 4;
		}
		unsigned long (*f)(double) = (unsigned long (*)(double))dlsym(h, fn);
		if (!f) {
			fprintf(stderr, "dlsym %s: %s\n", fn, dlerror());
			return 4;
		}
		struct link_map *lm = NULL;
		struct range r = {NULL, 0, 0};
		if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm)
			r.name = lm->l_name;
		if (r.name)
			dl_iterate_phdr(range_cb, &r);
		volatile unsigned long sink = f(seconds);
		(void)sink;
		if ((unlink_it && unlink(path) != 0) || (replace && rename(replace, path) != 0)) {
			fprintf(stderr, "cannot remove or replace %s: %s\n", path, strerror(errno));
			return 5;
		}
		if (dlclose(h) != 0) {
			fprintf(stderr, "dlclose %s: %s\n", path, dlerror());
			return 4;
		}
		if (dlopen(path, RTLD_NOW | RTLD_NOLOAD)) {
			fprintf(stderr, "%s is still loaded after its dlclose\n", path);
			return 3;
		}
		fprintf(stderr, "%s %#lx-%#lx\n", path, (unsigned long)r.lo, (unsigned long)r.hi);
		if (r.hi > r.lo && mmap((void *)r.lo, r.hi - r.lo, PROT_NONE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED)
			fprintf(stderr, "note: cannot reserve %s's old range: %s\n", path, strerror(errno));
	}
	return 0;
}
