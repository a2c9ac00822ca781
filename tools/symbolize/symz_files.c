/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symz_files.c - which files `emberprof symbolize` reads for a module of a
 * profile: its ELF (under the sysroot, or at its path) when that is the
 * same build, else its debug file; and its debug file, from --debug-dir
 * trees, the sysroot's or this machine's /usr/lib/debug, or debuginfod.
 * Handed to the symbolizer through its file hooks (symbols/debugfile.h).
 */
#include "symbolize/symbolize_internal.h"

#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emberprof.h"
#include "symbols/debugfile.h"
#include "util/dep_elfutils.h"
#include "util/error.h"

/* What an ELF file holds: its build id (hex, "" none), whether it has a
 * symbol table and DWARF. 0, or -1 if it is not a readable ELF file. */
static int elf_info(const char *path, char *hex, size_t cap, int *symtab, int *dwarf)
{
	if (ember__lazydep_load(&ember__elfutils) < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -1;
	}
	hex[0] = '\0';
	const void *id = NULL;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
	for (ssize_t i = 0; i < n && (size_t)(2 * i + 2) < cap; i++)
		snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)id)[i]);
	*symtab = *dwarf = 0;
	size_t shstrndx = 0;
	if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
		for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
				continue;
			const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (sh.sh_type == SHT_SYMTAB)
				*symtab = 1;
			else if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
				*dwarf = 1;
		}
	}
	elf_end(elf);
	close(fd);
	return 0;
}

/* Is path a readable ELF file of build id `want` ("" : any)? */
static int is_build(const char *path, const char *want)
{
	char hex[130];
	int s, d;
	if (elf_info(path, hex, sizeof(hex), &s, &d) != 0)
		return 0;
	return !want[0] || !strcmp(hex, want);
}

/* path if it is that build (malloc'd), else NULL. */
static char *try_path(const char *path, const char *want)
{
	return path[0] && access(path, R_OK) == 0 && is_build(path, want) ? strdup(path) : NULL;
}

/* dir/.build-id/xx/rest.debug for build id id. */
static char *try_build_id_tree(const char *dir, const char *id)
{
	char p[PATH_MAX];
	if (strlen(id) < 4)
		return NULL;
	if (snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", dir, id, id + 2) >=
	    (int)sizeof(p))
		return NULL;
	return try_path(p, id);
}

static const char *fetched_path(const ember__symz *z, const char *id)
{
	for (size_t i = 0; id[0] && i < z->nfetched; i++)
		if (!strcmp(z->fetched[i].id, id))
			return z->fetched[i].path[0] ? z->fetched[i].path : NULL;
	return NULL;
}

/* The debug file of a module from our own sources, malloc'd, or NULL.
 * With `fetched`, debuginfod's answers too. */
static char *find_debug(const ember__symz *z, const char *path, const char *id, int fetched)
{
	char p[PATH_MAX], *r;
	for (size_t i = 0; i < z->o.ndebug_dirs; i++) {
		const char *dir = z->o.debug_dirs[i];
		if (id[0] && (r = try_build_id_tree(dir, id)))
			return r;
		if (path[0] == '/' && id[0]) { /* by path: DIR/usr/bin/x.debug, DIR/usr/bin/x */
			if (snprintf(p, sizeof(p), "%s%s.debug", dir, path) < (int)sizeof(p) &&
			    (r = try_path(p, id)))
				return r;
			if (snprintf(p, sizeof(p), "%s%s", dir, path) < (int)sizeof(p) &&
			    (r = try_path(p, id)))
				return r;
		}
	}
	if (z->o.sysroot && id[0]) {
		if (snprintf(p, sizeof(p), "%s/usr/lib/debug", z->o.sysroot) < (int)sizeof(p) &&
		    (r = try_build_id_tree(p, id)))
			return r;
	}
	if (id[0] && (r = try_build_id_tree("/usr/lib/debug", id)))
		return r;
	const char *f = fetched ? fetched_path(z, id) : NULL;
	return f ? strdup(f) : NULL;
}

/* The ELF to read for a module: its own file, else its debug file, else
 * "" (malloc'd; NULL out of memory). */
static char *choose_elf(const ember__symz *z, const char *path, const char *id)
{
	char p[PATH_MAX], *r = NULL;
	if (z->o.sysroot) {
		if (snprintf(p, sizeof(p), "%s%s", z->o.sysroot, path) < (int)sizeof(p))
			r = try_path(p, id);
	} else {
		r = try_path(path, id);
	}
	if (!r)
		r = find_debug(z, path, id, 1);
	return r ? r : strdup("");
}

symz_mod *ember__symz_module(ember__symz *z, const char *path, const char *build_id)
{
	for (size_t i = 0; i < z->nmods; i++)
		if (!strcmp(z->mods[i].path, path) && !strcmp(z->mods[i].build_id, build_id))
			return &z->mods[i];
	symz_mod *v = realloc(z->mods, (z->nmods + 1) * sizeof(*v));
	if (!v)
		return NULL;
	z->mods = v;
	symz_mod *m = &v[z->nmods];
	*m = (symz_mod){.path = strdup(path), .build_id = strdup(build_id)};
	if (m->path && m->build_id)
		m->elf = choose_elf(z, path, build_id);
	if (!m->elf) {
		free(m->path);
		free(m->build_id);
		return NULL;
	}
	char hex[130];
	int symtab = 0, dwarf = 0;
	int readable = m->elf[0] && elf_info(m->elf, hex, sizeof(hex), &symtab, &dwarf) == 0;
	char *dbg = NULL;
	if (build_id[0] && (!readable || !symtab || !dwarf) && !(dbg = find_debug(z, path, build_id, 0)))
		m->need_debug = 1;
	free(dbg);
	z->nmods++;
	return m;
}

void ember__symz_modules_reset(ember__symz *z)
{
	for (size_t i = 0; i < z->nmods; i++) {
		free(z->mods[i].path);
		free(z->mods[i].build_id);
		free(z->mods[i].elf);
	}
	free(z->mods);
	z->mods = NULL;
	z->nmods = 0;
}

/* The answer for id in the fetched list (path "" for none). 0 or OOM. */
static int add_fetched(ember__symz *z, const char *id, char *path)
{
	symz_fetched *v = realloc(z->fetched, (z->nfetched + 1) * sizeof(*v));
	char *c = strdup(id), *p = path ? path : strdup("");
	if (!v || !c || !p) {
		if (v)
			z->fetched = v;
		free(c);
		free(p);
		return ember__error_oom("debuginfod answers");
	}
	z->fetched = v;
	v[z->nfetched++] = (symz_fetched){c, p};
	return 0;
}

/* ember__symz_fetch through the background fetcher: what has arrived is
 * kept, the rest asked for and counted in z->pending. */
static int fetch_bg(ember__symz *z)
{
	int err = 0;
	z->pending = 0;
	for (size_t i = 0; !err && i < z->nmods; i++) {
		symz_mod *m = &z->mods[i];
		if (!m->wanted || !m->need_debug || !m->build_id[0])
			continue;
		int asked = 0;
		for (size_t k = 0; k < z->nfetched && !asked; k++)
			asked = !strcmp(z->fetched[k].id, m->build_id);
		if (asked)
			continue;
		char *path = NULL;
		int rc = ember__dbgd_bg_get(z->o.bg, m->build_id, &path);
		if (rc < 0)
			err = rc;
		else if (rc == 0)
			z->pending++;
		else
			err = add_fetched(z, m->build_id, path);
	}
	return err;
}

/* ember__symz_fetch now, in one parallel batch. */
static int fetch_now(ember__symz *z)
{
	if (!z->o.debuginfod || !ember__dbgd_configured(z->o.dbgd.urls))
		return 0;
	const char **ids = calloc(z->nmods + 1, sizeof(*ids));
	char **paths = calloc(z->nmods + 1, sizeof(*paths));
	if (!ids || !paths) {
		free(ids);
		free(paths);
		return ember__error_oom("debuginfod requests");
	}
	size_t n = 0;
	for (size_t i = 0; i < z->nmods; i++) {
		const symz_mod *m = &z->mods[i];
		int asked = 0;
		for (size_t k = 0; k < z->nfetched && !asked; k++)
			asked = !strcmp(z->fetched[k].id, m->build_id);
		for (size_t k = 0; k < n && !asked; k++)
			asked = !strcmp(ids[k], m->build_id);
		if (m->wanted && m->need_debug && !asked)
			ids[n++] = m->build_id;
	}
	int err = 0;
	if (n && !z->dbgd && !z->dbgd_tried) {
		z->dbgd_tried = 1;
		if (ember__dbgd_new(&z->dbgd, &z->o.dbgd) != 0)
			snprintf(z->dbgd_problem, sizeof(z->dbgd_problem), "debuginfod: %s",
				 ember_last_error());
	}
	if (n && z->dbgd) {
		err = ember__dbgd_fetch(z->dbgd, ids, n, paths);
		symz_fetched *v = err ? NULL : realloc(z->fetched, (z->nfetched + n) * sizeof(*v));
		if (!err && !v)
			err = ember__error_oom("debuginfod answers");
		for (size_t i = 0; !err && i < n; i++) {
			v[z->nfetched] = (symz_fetched){strdup(ids[i]), paths[i] ? paths[i] : strdup("")};
			paths[i] = NULL;
			if (!v[z->nfetched].id || !v[z->nfetched].path) {
				free(v[z->nfetched].id);
				free(v[z->nfetched].path);
				err = ember__error_oom("debuginfod answers");
				break;
			}
			z->nfetched++;
		}
		if (v)
			z->fetched = v;
		const ember__dbgd_stats *st = ember__dbgd_get_stats(z->dbgd);
		int len = 0;
		z->dbgd_problem[0] = '\0';
		if (st->last_error[0])
			len = snprintf(z->dbgd_problem, sizeof(z->dbgd_problem),
				       "debuginfod: %llu debug file(s) not fetched (%llu timed out); "
				       "last: %s",
				       (unsigned long long)(st->missing + st->failed + st->timed_out),
				       (unsigned long long)st->timed_out, st->last_error);
		if (st->remembered && len >= 0 && (size_t)len < sizeof(z->dbgd_problem))
			snprintf(z->dbgd_problem + len, sizeof(z->dbgd_problem) - (size_t)len,
				 "%sdebuginfod: %llu build id(s) not asked: they failed within the "
				 "last %lld s (emberprof symbolize asks again)",
				 len ? "; " : "", (unsigned long long)st->remembered,
				 (long long)(z->o.dbgd.miss_ttl_s ? z->o.dbgd.miss_ttl_s : 600));
	}
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(ids);
	free(paths);
	return err;
}

int ember__symz_any_fetched(const ember__symz *z)
{
	for (size_t i = 0; i < z->nmods; i++)
		if (z->mods[i].wanted && fetched_path(z, z->mods[i].build_id))
			return 1;
	return 0;
}

int ember__symz_fetch(ember__symz *z)
{
	int err = z->o.bg ? fetch_bg(z) : fetch_now(z);
	/* modules with no file of their own read the debug file fetched */
	for (size_t i = 0; !err && i < z->nmods; i++) {
		symz_mod *m = &z->mods[i];
		const char *f = m->elf[0] ? NULL : fetched_path(z, m->build_id);
		char *c = f ? strdup(f) : NULL;
		if (c) {
			free(m->elf);
			m->elf = c;
		}
	}
	return err;
}

int ember__symz_image(const char *elf_path, uint64_t start, uint64_t offset, uint64_t *low)
{
	if (ember__lazydep_load(&ember__elfutils) < 0)
		return -1;
	int fd = open(elf_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t nph = 0;
	int rc = -1;
	GElf_Ehdr eh;
	if (elf && gelf_getehdr(elf, &eh) && elf_getphdrnum(elf, &nph) == 0) {
		/* the segment the mapping was made from: in a file with the
		 * code (p_filesz > 0), the one holding `offset`, executable
		 * preferred; in a debug file (code sections NOBITS, offsets
		 * meaningless), its first executable segment */
		uint64_t first = 0, bias = 0, pg = 4096;
		int have_first = 0, have_bias = 0; /* 3 best .. 1 */
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			uint64_t align = ph.p_align > 1 ? ph.p_align : 1;
			if (!have_first) {
				first = ph.p_vaddr & ~(align - 1);
				have_first = 1;
			}
			int x = (ph.p_flags & PF_X) != 0;
			int holds = ph.p_filesz > 0 && offset >= (ph.p_offset & ~(pg - 1)) &&
				    offset < ph.p_offset + ph.p_filesz;
			int rank = holds ? 2 + x : x && ph.p_filesz == 0 ? 1 : 0;
			if (rank > have_bias) {
				bias = holds ? start - offset - (ph.p_vaddr - ph.p_offset)
					     : start - (ph.p_vaddr & ~(pg - 1));
				have_bias = rank;
			}
		}
		if (have_first && have_bias) {
			*low = (eh.e_type == ET_EXEC ? 0 : bias) + first;
			rc = 0;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

static char *hook_find_elf(void *arg, const char *path)
{
	ember__symz *z = arg;
	for (size_t i = 0; i < z->nmods; i++)
		if (!strcmp(z->mods[i].path, path))
			return strdup(z->mods[i].elf);
	return NULL;
}

static char *hook_find_debug(void *arg, const char *path, const char *build_id)
{
	ember__symz *z = arg;
	/* path may be the file read (under the sysroot): ours by build id */
	for (size_t i = 0; i < z->nmods; i++)
		if (!strcmp(z->mods[i].build_id, build_id) && build_id[0])
			path = z->mods[i].path;
	return find_debug(z, path, build_id, 1);
}

void ember__symz_hooks(ember__symz *z, int on)
{
	ember__debugfile_hooks h = {hook_find_debug, hook_find_elf, z};
	ember__debugfile_set_hooks(on ? &h : NULL);
}
