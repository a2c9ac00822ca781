/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_profile.c - labels, unsampled time and the shared profile of a
 * window's short-lived processes (tree_profile.h).
 */
#include "tree/tree_profile.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/error.h"

int ember__tprof_label(ember__profile *p, pid_t pid, const char *comm)
{
	char pids[16];
	snprintf(pids, sizeof(pids), "%d", (int)pid);
	const char *kpid = ember__profile_strdup(p, "pid"), *vpid = ember__profile_strdup(p, pids);
	const char *kcomm = ember__profile_strdup(p, "comm");
	const char *vcomm = ember__profile_strdup(p, comm && *comm ? comm : "?");
	if (!kpid || !vpid || !kcomm || !vcomm)
		return ember__error_oom("tree profile labels");
	for (uint32_t i = 0; i < p->nsamples; i++) {
		ember__sample *s = &p->samples[i];
		ember__label *l = ember__arena_alloc(&p->arena, (s->nlabels + 2) * sizeof(*l));
		if (!l)
			return ember__error_oom("tree profile labels");
		if (s->nlabels)
			memcpy(l, s->labels, s->nlabels * sizeof(*l));
		l[s->nlabels] = (ember__label){kpid, vpid, 0, NULL};
		l[s->nlabels + 1] = (ember__label){kcomm, vcomm, 0, NULL};
		s->labels = l;
		s->nlabels += 2;
	}
	return 0;
}

int ember__tprof_unsampled(ember__profile *p, const char *exe, const char *comm, uint64_t ns,
			   const char *leaf)
{
	if (!ember__profile_add_pseudo(p, exe, comm, leaf, (int64_t)ns))
		return ember__error_oom("tree profile");
	return 0;
}

/* 1 when `path` is a symlink to the file of `st`. */
static int links_to(const char *path, const struct stat *st)
{
	struct stat l, t;
	return lstat(path, &l) == 0 && S_ISLNK(l.st_mode) && stat(path, &t) == 0 &&
	       t.st_dev == st->st_dev && t.st_ino == st->st_ino;
}

char *ember__tprof_exe_alias(const char *exe, const char *comm, pid_t pid)
{
	struct stat st;
	if (!exe || exe[0] != '/' || !comm || !*comm || stat(exe, &st) != 0)
		return NULL;
	const char *base = strrchr(exe, '/') + 1;
	char path[PATH_MAX];
	/* comm is the exec'd path's basename, cut to 15 characters */
	if (strcmp(base, comm) != 0 && strlen(comm) < 15 && !strchr(comm, '/')) {
		int n = snprintf(path, sizeof(path), "%.*s%s", (int)(base - exe), exe, comm);
		if (n > 0 && (size_t)n < sizeof(path) && links_to(path, &st))
			return strdup(path);
	}
	/* argv[0], when the process is still there and gave a full path */
	char file[64];
	snprintf(file, sizeof(file), "/proc/%d/cmdline", (int)pid);
	FILE *f = fopen(file, "re");
	if (!f)
		return NULL;
	size_t n = fread(path, 1, sizeof(path) - 1, f);
	fclose(f);
	path[n] = '\0';
	if (path[0] == '/' && strcmp(path, exe) != 0 && links_to(path, &st))
		return strdup(path);
	return NULL;
}

int ember__tprof_alias_main(ember__profile *p, const char *exe, const char *alias)
{
	const char *a = NULL;
	for (uint32_t i = 0; i < p->nmappings; i++) {
		if (strcmp(p->mappings[i].file, exe) != 0)
			continue;
		if (!a && !(a = ember__profile_strdup(p, alias)))
			return ember__error_oom("tree profile");
		p->mappings[i].file = a;
	}
	if (!a)
		return 0;
	size_t n = strlen(alias) + strlen(exe) + 16;
	char *c = ember__arena_alloc(&p->arena, n);
	if (!c)
		return ember__error_oom("tree profile");
	snprintf(c, n, "%s: the file %s", alias, exe);
	p->comment = c;
	return 0;
}

/* ---- the shared profile ---- */

static uint64_t hstr(const char *s, uint64_t seed)
{
	return ember__hash_bytes(s ? s : "", s ? strlen(s) + 1 : 1, seed);
}

static const char *dup(ember__profile *p, const char *s)
{
	return ember__profile_strdup(p, s ? s : "");
}

static int same_str(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

/* The index in s->p of src's mapping m (1-based; 0 stays 0), added when new. */
static uint32_t map_mapping(ember__tshared *s, const ember__profile *src, uint32_t m)
{
	if (!m || m > src->nmappings)
		return 0;
	const ember__mapping *x = &src->mappings[m - 1];
	uint64_t h = ember__hash64(x->start ^ ember__hash64(x->limit ^ ember__hash64(x->offset)));
	h = hstr(x->build_id, hstr(x->file, h));
	int inserted;
	uint64_t *v = ember__u64map_put(&s->maps, h, &inserted);
	if (v && !inserted && *v) {
		const ember__mapping *y = &s->p->mappings[*v - 1];
		if (y->start == x->start && y->limit == x->limit && y->offset == x->offset &&
		    same_str(y->file, x->file) && same_str(y->build_id, x->build_id))
			return (uint32_t)*v;
		v = NULL; /* another mapping of that hash: added apart */
	}
	ember__mapping c = *x;
	c.file = dup(s->p, x->file);
	c.build_id = dup(s->p, x->build_id);
	uint32_t idx = c.file && c.build_id ? ember__profile_add_mapping(s->p, &c) : 0;
	if (v && idx)
		*ember__u64map_get(&s->maps, h) = idx;
	return idx;
}

static uint32_t map_function(ember__tshared *s, const ember__profile *src, uint32_t f)
{
	if (!f || f > src->nfunctions)
		return 0;
	const ember__function *x = &src->functions[f - 1];
	uint64_t h = hstr(x->filename, hstr(x->system_name, hstr(x->name, (uint64_t)x->start_line)));
	int inserted;
	uint64_t *v = ember__u64map_put(&s->funcs, h, &inserted);
	if (v && !inserted && *v) {
		const ember__function *y = &s->p->functions[*v - 1];
		if (same_str(y->name, x->name) && same_str(y->system_name, x->system_name) &&
		    same_str(y->filename, x->filename) && y->start_line == x->start_line)
			return (uint32_t)*v;
		v = NULL;
	}
	ember__function c = {dup(s->p, x->name), dup(s->p, x->system_name), dup(s->p, x->filename),
			     x->start_line};
	uint32_t idx = c.name && c.system_name && c.filename ? ember__profile_add_function(s->p, &c) : 0;
	if (v && idx)
		*ember__u64map_get(&s->funcs, h) = idx;
	return idx;
}

static uint32_t map_location(ember__tshared *s, const ember__profile *src, uint32_t l)
{
	if (!l || l > src->nlocations)
		return 0;
	const ember__location *x = &src->locations[l - 1];
	ember__location c = {x->address, map_mapping(s, src, x->mapping), x->nlines, NULL};
	if (x->mapping && !c.mapping)
		return 0;
	if (x->nlines) {
		c.lines = ember__arena_alloc(&s->p->arena, x->nlines * sizeof(*c.lines));
		if (!c.lines)
			return 0;
	}
	uint64_t h = ember__hash64(c.address ^ ((uint64_t)c.mapping << 40) ^ c.nlines);
	for (uint32_t i = 0; i < x->nlines; i++) {
		c.lines[i].function = map_function(s, src, x->lines[i].function);
		c.lines[i].line = x->lines[i].line;
		if (!c.lines[i].function)
			return 0;
		h = ember__hash64(h ^ c.lines[i].function ^ ((uint64_t)c.lines[i].line << 32));
	}
	int inserted;
	uint64_t *v = ember__u64map_put(&s->locs, h, &inserted);
	if (v && !inserted && *v) {
		const ember__location *y = &s->p->locations[*v - 1];
		int same = y->address == c.address && y->mapping == c.mapping && y->nlines == c.nlines;
		for (uint32_t i = 0; same && i < c.nlines; i++)
			same = y->lines[i].function == c.lines[i].function &&
			       y->lines[i].line == c.lines[i].line;
		if (same)
			return (uint32_t)*v;
		v = NULL;
	}
	uint32_t idx = ember__profile_add_location(s->p, &c);
	if (v && idx)
		*ember__u64map_get(&s->locs, h) = idx;
	return idx;
}

static int start(ember__tshared *s, const ember__profile *src)
{
	if (!(s->p = ember__profile_new()))
		return -1;
	ember__profile *p = s->p;
	p->nvalues = src->nvalues;
	for (uint32_t i = 0; i < src->nvalues; i++)
		p->sample_type[i] = (ember__value_type){dup(p, src->sample_type[i].type),
							dup(p, src->sample_type[i].unit)};
	p->period_type = (ember__value_type){dup(p, src->period_type.type), dup(p, src->period_type.unit)};
	p->period = src->period;
	p->time_nanos = src->time_nanos;
	p->duration_nanos = src->duration_nanos;
	p->default_sample_type = src->default_sample_type ? dup(p, src->default_sample_type) : NULL;
	return 0;
}

int ember__tshared_add(ember__tshared *s, const ember__profile *src)
{
	if (!s->p && start(s, src) != 0)
		return ember__error_oom("shared profile");
	ember__profile *p = s->p;
	for (uint32_t i = 0; i < src->nsamples; i++) {
		const ember__sample *x = &src->samples[i];
		ember__sample c = *x;
		c.locs = ember__arena_alloc(&p->arena, (x->nlocs ? x->nlocs : 1) * sizeof(*c.locs));
		c.labels = ember__arena_alloc(&p->arena, (x->nlabels ? x->nlabels : 1) * sizeof(*c.labels));
		if (!c.locs || !c.labels)
			return ember__error_oom("shared profile");
		for (uint32_t d = 0; d < x->nlocs; d++)
			if (!(c.locs[d] = map_location(s, src, x->locs[d])))
				return ember__error_oom("shared profile");
		for (uint32_t k = 0; k < x->nlabels; k++) {
			const ember__label *l = &x->labels[k];
			c.labels[k] = (ember__label){dup(p, l->key), l->str ? dup(p, l->str) : NULL, l->num,
						     l->num_unit ? dup(p, l->num_unit) : NULL};
		}
		if (!ember__profile_add_sample(p, &c))
			return ember__error_oom("shared profile");
		s->samples += (uint64_t)x->values[0];
	}
	s->procs++;
	return 0;
}

ember__profile *ember__tshared_take(ember__tshared *s)
{
	ember__profile *p = s->p;
	s->p = NULL;
	ember__tshared_release(s);
	return p;
}

void ember__tshared_release(ember__tshared *s)
{
	ember__profile_free(s->p);
	ember__u64map_free(&s->maps);
	ember__u64map_free(&s->funcs);
	ember__u64map_free(&s->locs);
	*s = (ember__tshared)EMBER_TSHARED_INIT;
}
