/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolize.c - naming the unnamed locations of a profile (symbolize.h):
 * the profile's mappings become the layout of an offline symbolizer
 * (symbols/symbolizer.h), whose files the hooks of symz_files.c choose,
 * and each location without a real name is looked up in it.
 */
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emberprof.h"
#include "encode/pprof.h"
#include "read/jfr_profile.h"
#include "read/pprof_read.h"
#include "symbols/procmaps.h"
#include "symbols/symbolizer.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/hashmap.h"
#include "util/sort.h"

int ember__symz_new(ember__symz **out, const ember__symz_opts *o)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return ember__error_oom("symbolizer");
	(*out)->o = *o;
	return 0;
}

void ember__symz_free(ember__symz *z)
{
	if (!z)
		return;
	ember__symz_modules_reset(z);
	for (size_t i = 0; i < z->nfetched; i++) {
		free(z->fetched[i].id);
		free(z->fetched[i].path);
	}
	free(z->fetched);
	ember__dbgd_free(z->dbgd);
	free(z);
}

const ember__symz_stats *ember__symz_get_stats(const ember__symz *z)
{
	return &z->st;
}

const ember__dbgd_stats *ember__symz_dbgd_stats(const ember__symz *z)
{
	return z->dbgd ? ember__dbgd_get_stats(z->dbgd) : NULL;
}

const char *ember__symz_dbgd_problem(const ember__symz *z)
{
	return z->dbgd_problem[0] ? z->dbgd_problem : NULL;
}

static int all_hex(const char *s)
{
	return *s && strspn(s, "0123456789abcdefABCDEF") == strlen(s);
}

/* A name that only stands for an address: "", "0x55ac93b6d883",
 * "libfoo.so+0x1a2b0" (a module and an offset, for stripped code). */
static int placeholder(const char *name)
{
	if (!name || !*name)
		return 1;
	if (!strncmp(name, "0x", 2))
		return all_hex(name + 2);
	const char *plus = strstr(name, "+0x");
	return plus && plus > name && all_hex(plus + 3) && !strpbrk(name, " (<");
}

static int needs_name(const ember__profile *p, const ember__location *l)
{
	for (uint32_t i = 0; i < l->nlines; i++) {
		uint32_t f = l->lines[i].function;
		if (f && f <= p->nfunctions && !placeholder(p->functions[f - 1].name))
			return 0;
	}
	return 1;
}

static int same(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static uint64_t fn_hash(const char *name, const char *sys, const char *file)
{
	uint64_t h = ember__hash_bytes(name, strlen(name), 1);
	h = ember__hash_bytes(sys, strlen(sys), h);
	return ember__hash_bytes(file, strlen(file), h);
}

/* The index of the function (name, sys, file), added if new; 0 on OOM.
 * `funcs`: hash (+ probe) -> index, of every function of p. */
static uint32_t function_for(ember__profile *p, ember__u64map *funcs, const char *name,
			     const char *sys, const char *file)
{
	for (uint64_t h = fn_hash(name, sys, file);; h++) {
		int inserted;
		uint64_t *v = ember__u64map_put(funcs, h, &inserted);
		if (!v)
			return 0;
		if (!inserted) {
			const ember__function *fn = &p->functions[*v - 1];
			if (same(fn->name, name) && same(fn->system_name, sys) &&
			    same(fn->filename, file))
				return (uint32_t)*v;
			continue;
		}
		ember__function fn = {
			.name = ember__profile_strdup(p, name),
			.system_name = ember__profile_strdup(p, sys),
			.filename = ember__profile_strdup(p, file),
		};
		*v = ember__profile_add_function(p, &fn);
		return (uint32_t)*v;
	}
}

/* The existing functions, for function_for. 0 or EMBER_ERR_NOMEM. */
static int index_functions(const ember__profile *p, ember__u64map *funcs)
{
	for (uint32_t i = 0; i < p->nfunctions; i++) {
		const ember__function *fn = &p->functions[i];
		const char *name = fn->name ? fn->name : "";
		const char *sys = fn->system_name ? fn->system_name : "";
		const char *file = fn->filename ? fn->filename : "";
		for (uint64_t h = fn_hash(name, sys, file);; h++) {
			int inserted;
			uint64_t *v = ember__u64map_put(funcs, h, &inserted);
			if (!v)
				return ember__error_oom("function index");
			if (inserted) {
				*v = i + 1;
				break;
			}
			const ember__function *o = &p->functions[*v - 1];
			if (same(o->name, name) && same(o->system_name, sys) &&
			    same(o->filename, file))
				break; /* a duplicate: the first stands for both */
		}
	}
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const ember__procmap *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The offline layout of the wanted modules' mappings (see symbolizer.h,
 * ember__symbolizer_new_offline). modix[i]: mapping i+1's module or -1. */
static int make_layout(ember__symz *z, const ember__profile *p, const ptrdiff_t *modix,
		       ember__procmaps *out)
{
	ember__procmap *v = ember__arena_alloc(&out->arena, (p->nmappings + 1) * sizeof(*v));
	if (!v)
		return ember__error_oom("layout");
	size_t n = 0;
	for (uint32_t i = 0; i < p->nmappings; i++) {
		const ember__mapping *mp = &p->mappings[i];
		if (modix[i] < 0 || !z->mods[modix[i]].elf[0])
			continue;
		uint64_t low;
		if (ember__symz_image(z->mods[modix[i]].elf, mp->start, mp->offset, &low) != 0 ||
		    low > mp->start || mp->limit <= mp->start)
			continue;
		size_t k = 0; /* another mapping of the same image: one module */
		while (k < n && !(v[k].start == low && !strcmp(v[k].path, mp->file)))
			k++;
		if (k < n) {
			if (mp->limit > v[k].end)
				v[k].end = mp->limit;
			continue;
		}
		v[n++] = (ember__procmap){.start = low, .end = mp->limit,
					  .perms = EMBER_MAP_READ | EMBER_MAP_EXEC | EMBER_MAP_PRIVATE,
					  .inode = i + 1, .path = mp->file};
	}
	ember__sort(v, n, sizeof(*v), by_start);
	size_t w = 0; /* overlapping images cannot both be right: the first stays */
	for (size_t i = 0; i < n; i++)
		if (!w || v[i].start >= v[w - 1].end)
			v[w++] = v[i];
	out->maps = v;
	out->n = w;
	return 0;
}

/* Are the lines of l those of frames? */
static int same_lines(const ember__location *l, const ember__line *lines, uint32_t n)
{
	if (l->nlines != n)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (l->lines[i].function != lines[i].function || l->lines[i].line != lines[i].line)
			return 0;
	return 1;
}

/* Names the locations that need it with s. */
static int name_locations(ember__symz *z, ember__profile *p, ember__symbolizer *s,
			  const ptrdiff_t *modix, int *changed)
{
	ember__u64map funcs = EMBER_U64MAP_INIT;
	int err = index_functions(p, &funcs);
	for (uint32_t i = 0; !err && i < p->nlocations; i++) {
		ember__location *l = &p->locations[i];
		if (!needs_name(p, l)) {
			z->st.kept++;
			continue;
		}
		ember__symbol_info si;
		if (!l->mapping || modix[l->mapping - 1] < 0 ||
		    ember__symbolizer_lookup(s, l->address, &si) != 0 || !si.module ||
		    si.nframes == 0) {
			z->st.unnamed++;
			continue;
		}
		if (placeholder(si.frames[si.nframes - 1].function)) {
			z->st.unnamed++;
			continue;
		}
		ember__line lines[EMBER_MAX_INLINE];
		for (uint32_t k = 0; k < si.nframes && !err; k++) {
			const ember__symbol_frame *f = &si.frames[k];
			const char *name = f->function ? f->function : "";
			lines[k].function = function_for(p, &funcs, name,
							  f->system_name ? f->system_name : name,
							  f->file ? f->file : "");
			lines[k].line = f->line;
			if (!lines[k].function)
				err = ember__error_oom("functions");
		}
		if (err)
			break;
		z->st.named++;
		ember__mapping *mp = &p->mappings[l->mapping - 1];
		if (!mp->has_functions || (si.frames[0].file && !mp->has_filenames)) {
			mp->has_functions = 1;
			if (si.frames[0].file)
				mp->has_filenames = mp->has_line_numbers = 1;
			*changed = 1;
		}
		if (same_lines(l, lines, si.nframes))
			continue;
		ember__line *copy = ember__arena_alloc(&p->arena, si.nframes * sizeof(*copy));
		if (!copy) {
			err = ember__error_oom("location lines");
			break;
		}
		memcpy(copy, lines, si.nframes * sizeof(*copy));
		l->lines = copy;
		l->nlines = si.nframes;
		*changed = 1;
	}
	ember__u64map_free(&funcs);
	return err;
}

size_t ember__symz_pending(const ember__symz *z)
{
	return z->pending;
}

int ember__symz_profile(ember__symz *z, ember__profile *p, int *changed)
{
	*changed = 0;
	z->pending = 0;
	ember__symz_modules_reset(z);
	ptrdiff_t *modix = calloc(p->nmappings + 1, sizeof(*modix));
	if (!modix)
		return ember__error_oom("mappings");
	for (uint32_t i = 0; i < p->nmappings; i++)
		modix[i] = -1;
	int err = 0;
	size_t wanted = 0;
	for (uint32_t i = 0; !err && i < p->nlocations; i++) {
		const ember__location *l = &p->locations[i];
		if (!l->mapping || !needs_name(p, l))
			continue;
		const ember__mapping *mp = &p->mappings[l->mapping - 1];
		if (modix[l->mapping - 1] < 0 && mp->file && mp->file[0] == '/') {
			symz_mod *m = ember__symz_module(z, mp->file, mp->build_id ? mp->build_id : "");
			if (!m) {
				err = ember__error_oom("modules");
				break;
			}
			m->wanted = 1;
			modix[l->mapping - 1] = m - z->mods;
			wanted++;
		}
	}
	if (!err && wanted)
		err = ember__symz_fetch(z);
	/* in the background, during a run: without a debug file that has
	 * arrived, the files read would be those that named p (the same
	 * code): nothing to add, and no symbolizer to make for each window */
	if (!err && wanted && z->o.bg && !ember__symz_any_fetched(z))
		wanted = 0;
	for (size_t i = 0; !err && i < z->nmods; i++)
		z->st.no_file += !z->mods[i].elf[0];
	ember__procmaps layout = EMBER_PROCMAPS_INIT;
	if (!err && wanted)
		err = make_layout(z, p, modix, &layout);
	ember__symbolizer *s = NULL;
	if (!err && layout.n) {
		ember__symz_hooks(z, 1);
		err = ember__symbolizer_new_offline(&s, &layout);
		if (!err) {
			ember__symbolizer_set_lines(s, z->o.lines);
			err = name_locations(z, p, s, modix, changed);
		}
		ember__symbolizer_free(s);
		ember__symz_hooks(z, 0);
	} else if (!err) {
		for (uint32_t i = 0; i < p->nlocations; i++)
			needs_name(p, &p->locations[i]) ? z->st.unnamed++ : z->st.kept++;
	}
	ember__procmaps_free(&layout);
	free(modix);
	return err;
}

/* Writes data to path through path's directory's temporary file, renamed
 * over it; the mode is `mode`. 0 or EMBER_ERR_IO. */
static int write_atomically(const char *path, const uint8_t *data, size_t len, mode_t mode)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.symbolize-XXXXXX", path) >= (int)sizeof(tmp))
		return ember__error(EMBER_ERR_IO, "%s: path too long", path);
	int fd = mkstemp(tmp);
	if (fd < 0)
		return ember__error(EMBER_ERR_IO, "cannot write next to %s: %s", path,
				    strerror(errno));
	int ok = ember__write_all(fd, data, len) == 0 && fchmod(fd, mode & 07777) == 0 &&
		 fsync(fd) == 0;
	int saved = errno;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		saved = ok ? errno : saved;
		unlink(tmp);
		return ember__error(EMBER_ERR_IO, "cannot write %s: %s", path, strerror(saved));
	}
	return 0;
}

/* err again, its message (ember_last_error(), the buffer it is written
 * to) prefixed with the file's name. */
static int name_error(int err, const char *in)
{
	char why[512];
	snprintf(why, sizeof(why), "%s", ember_last_error());
	return ember__error(err, "%s: %s", in, why);
}

int ember__symz_file(ember__symz *z, const char *in, const char *out, int *changed)
{
	*changed = 0;
	uint8_t *data = NULL;
	size_t len = 0;
	int err = ember__read_file(in, EMBER_PPROF_MAX_RAW, &data, &len);
	if (err)
		return err;
	struct stat st;
	mode_t mode = stat(in, &st) == 0 ? st.st_mode : 0644;
	if (ember__jfr_magic(data, len)) {
		uint8_t *named = NULL;
		size_t nlen = 0;
		z->st.files++;
		err = ember__symz_jfr(z, data, len, &named, &nlen, changed);
		if (err)
			err = name_error(err, in);
		else if (*changed || (out && strcmp(out, in) != 0))
			err = write_atomically(out ? out : in, named ? named : data,
					       named ? nlen : len, mode);
		if (!err && *changed)
			z->st.rewritten++;
		free(named);
		free(data);
		return err;
	}
	int gz = len >= 2 && data[0] == 0x1f && data[1] == 0x8b;
	ember__profile *p = NULL;
	err = ember__pprof_read(data, len, &p);
	free(data);
	if (err)
		return name_error(err, in);
	z->st.files++;
	err = ember__symz_profile(z, p, changed);
	int write = !err && (*changed || (out && strcmp(out, in) != 0));
	uint8_t *enc = NULL;
	size_t enclen = 0;
	if (write)
		err = gz ? ember__pprof_encode(p, &enc, &enclen)
			 : ember__pprof_encode_raw(p, &enc, &enclen);
	if (write && !err) {
		err = write_atomically(out ? out : in, enc, enclen, mode);
		if (!err && *changed)
			z->st.rewritten++;
	}
	free(enc);
	ember__profile_free(p);
	return err;
}
