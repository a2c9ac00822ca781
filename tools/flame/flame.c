/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flame.c - merging profiles into the call tree of flame.h, and the folded
 * output. The page (flame_json.c, flame_page.c) and the diff table
 * (flame_diff.c) read the tree built here.
 */
#include "flame/flame.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/error.h"

/* Grows *arr (of elem bytes each) to hold n + 1 elements. 0 or -1. */
static int grow(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 64;
	if (nc <= n)
		return -1;
	void *p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

/* The id of string s (interned on first sight), or UINT32_MAX on OOM. */
static uint32_t intern(ember__flame *fl, const char *s)
{
	if (!s)
		s = "";
	size_t len = strlen(s);
	uint64_t h = ember__hash_bytes(s, len, 0x5eed);
	uint64_t *head = ember__u64map_get(&fl->string_ids, h);
	for (uint32_t id = head ? (uint32_t)*head : 0; id; id = fl->string_next[id - 1])
		if (!strcmp(fl->strings[id - 1], s))
			return id - 1;
	uint32_t cap = fl->cap_strings;
	if (grow((void **)&fl->strings, &fl->cap_strings, fl->nstrings, sizeof(char *)) < 0)
		return UINT32_MAX;
	if (cap != fl->cap_strings) {
		uint32_t *nx = realloc(fl->string_next, (size_t)fl->cap_strings * sizeof(*nx));
		if (!nx)
			return UINT32_MAX;
		fl->string_next = nx;
	}
	char *copy = strdup(s);
	int inserted;
	uint64_t *slot = copy ? ember__u64map_put(&fl->string_ids, h, &inserted) : NULL;
	if (!slot) {
		free(copy);
		return UINT32_MAX;
	}
	uint32_t id = fl->nstrings++;
	fl->strings[id] = copy;
	fl->string_next[id] = (uint32_t)*slot;
	*slot = id + 1;
	return id;
}

ember__flame *ember__flame_new(const ember__flame_opts *opts)
{
	ember__flame *fl = calloc(1, sizeof(*fl));
	if (!fl)
		return NULL;
	fl->opts = *opts;
	fl->nsets = opts->diff ? 2 : 1;
	uint32_t *empty = calloc(1, sizeof(uint32_t));
	if (!empty || intern(fl, "") != 0 ||
	    grow((void **)&fl->labelsets, &fl->cap_labelsets, 0, sizeof(uint32_t *)) < 0) {
		free(empty);
		ember__flame_free(fl);
		return NULL;
	}
	fl->labelset_next = calloc(fl->cap_labelsets, sizeof(uint32_t));
	if (!fl->labelset_next) {
		free(empty);
		ember__flame_free(fl);
		return NULL;
	}
	fl->labelsets[fl->nlabelsets++] = empty;
	return fl;
}

void ember__flame_free(ember__flame *fl)
{
	if (!fl)
		return;
	free(fl->program);
	for (uint32_t i = 0; i < fl->nstrings; i++)
		free(fl->strings[i]);
	free(fl->strings);
	free(fl->string_next);
	ember__u64map_free(&fl->string_ids);
	free(fl->frames);
	ember__u64map_free(&fl->frame_ids);
	free(fl->nodes);
	ember__u64map_free(&fl->node_ids);
	for (uint32_t i = 0; i < fl->nlabelsets; i++)
		free(fl->labelsets[i]);
	free(fl->labelsets);
	free(fl->labelset_next);
	ember__u64map_free(&fl->labelset_ids);
	for (uint32_t i = 0; i < fl->nsamples; i++)
		free(fl->samples[i].values);
	free(fl->samples);
	ember__u64map_free(&fl->sample_ids);
	for (uint32_t i = 0; i < fl->nfiles; i++)
		free(fl->files[i]);
	free(fl->files);
	free(fl->file_set);
	free(fl);
}

/* The frame of (name, module), created with file and line if new. */
static uint32_t frame_id(ember__flame *fl, const char *name, const char *module,
			 const char *file, int64_t line)
{
	uint32_t n = intern(fl, name), m = intern(fl, module);
	if (n == UINT32_MAX || m == UINT32_MAX)
		return UINT32_MAX;
	int inserted;
	uint64_t *slot = ember__u64map_put(&fl->frame_ids, ((uint64_t)n << 32) | m, &inserted);
	if (!slot)
		return UINT32_MAX;
	if (!inserted)
		return (uint32_t)*slot;
	uint32_t f = intern(fl, file);
	if (f == UINT32_MAX ||
	    grow((void **)&fl->frames, &fl->cap_frames, fl->nframes, sizeof(*fl->frames)) < 0)
		return UINT32_MAX; /* the map's 0 then names frame 0: harmless, we fail */
	ember__flame_frame *fr = &fl->frames[fl->nframes];
	memset(fr, 0, sizeof(*fr));
	fr->name = n;
	fr->module = m;
	fr->file = f;
	fr->line = line;
	*slot = fl->nframes;
	return fl->nframes++;
}

static uint32_t node_id(ember__flame *fl, uint32_t parent, uint32_t frame)
{
	int inserted;
	uint64_t key = ((uint64_t)parent << 32) | frame;
	uint64_t *slot = ember__u64map_put(&fl->node_ids, key, &inserted);
	if (!slot)
		return UINT32_MAX;
	if (!inserted)
		return (uint32_t)*slot;
	if (grow((void **)&fl->nodes, &fl->cap_nodes, fl->nnodes, sizeof(*fl->nodes)) < 0)
		return UINT32_MAX;
	fl->nodes[fl->nnodes].parent = parent;
	fl->nodes[fl->nnodes].frame = frame;
	*slot = fl->nnodes;
	return fl->nnodes++;
}

/* The module of a location: its mapping file's basename, or "". */
static const char *module_of(const ember__profile *p, const ember__location *l)
{
	if (l->mapping == 0 || l->mapping > p->nmappings)
		return "";
	const char *f = p->mappings[l->mapping - 1].file;
	if (!f)
		return "";
	const char *slash = strrchr(f, '/');
	return slash && slash[1] ? slash + 1 : f;
}

/* The frame of line k of location l (k == 0 when it has no lines). */
static uint32_t location_frame(ember__flame *fl, const ember__profile *p, const ember__location *l,
			       uint32_t k)
{
	char hex[24];
	const char *name = NULL, *file = "";
	int64_t line = 0;
	if (k < l->nlines) {
		uint32_t fi = l->lines[k].function;
		line = l->lines[k].line;
		if (fi && fi <= p->nfunctions) {
			const ember__function *f = &p->functions[fi - 1];
			name = f->name && *f->name ? f->name : f->system_name;
			file = f->filename ? f->filename : "";
		}
	}
	if (!name || !*name) {
		snprintf(hex, sizeof(hex), "0x%" PRIx64, l->address);
		name = hex;
	}
	return frame_id(fl, name, module_of(p, l), file, line);
}

static int cmp_u32pair(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Formats label l's value into buf. */
static const char *label_value(const ember__label *l, char *buf, size_t size)
{
	if (l->str)
		return l->str;
	snprintf(buf, size, "%" PRId64 "%s%s", l->num, l->num_unit && *l->num_unit ? " " : "",
		 l->num_unit ? l->num_unit : "");
	return buf;
}

/* The label set of sample s, or UINT32_MAX on OOM. */
static uint32_t labelset_id(ember__flame *fl, const ember__sample *s)
{
	if (s->nlabels == 0)
		return 0;
	uint32_t *pairs = malloc(((size_t)s->nlabels * 2 + 1) * sizeof(uint32_t));
	if (!pairs)
		return UINT32_MAX;
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->nlabels; i++) {
		char buf[64];
		uint32_t k = intern(fl, s->labels[i].key);
		uint32_t v = intern(fl, label_value(&s->labels[i], buf, sizeof(buf)));
		if (k == UINT32_MAX || v == UINT32_MAX) {
			free(pairs);
			return UINT32_MAX;
		}
		pairs[1 + 2 * n] = k;
		pairs[2 + 2 * n] = v;
		n++;
	}
	qsort(pairs + 1, n, 2 * sizeof(uint32_t), cmp_u32pair);
	pairs[0] = n;
	uint64_t h = ember__hash_bytes(pairs, (2 * (size_t)n + 1) * sizeof(uint32_t), 0x1abe1);
	uint64_t *head = ember__u64map_get(&fl->labelset_ids, h);
	for (uint32_t id = head ? (uint32_t)*head : 0; id; id = fl->labelset_next[id - 1]) {
		const uint32_t *q = fl->labelsets[id - 1];
		if (q[0] == n && !memcmp(q, pairs, (2 * (size_t)n + 1) * sizeof(uint32_t))) {
			free(pairs);
			return id - 1;
		}
	}
	uint32_t cap = fl->cap_labelsets;
	int inserted;
	uint64_t *slot;
	if (grow((void **)&fl->labelsets, &fl->cap_labelsets, fl->nlabelsets, sizeof(uint32_t *)) <
	    0) {
		free(pairs);
		return UINT32_MAX;
	}
	if (cap != fl->cap_labelsets) {
		uint32_t *nx = realloc(fl->labelset_next, (size_t)fl->cap_labelsets * sizeof(*nx));
		if (!nx) {
			free(pairs);
			return UINT32_MAX;
		}
		fl->labelset_next = nx;
	}
	if (!(slot = ember__u64map_put(&fl->labelset_ids, h, &inserted))) {
		free(pairs);
		return UINT32_MAX;
	}
	uint32_t id = fl->nlabelsets++;
	fl->labelsets[id] = pairs;
	fl->labelset_next[id] = (uint32_t)*slot;
	*slot = id + 1;
	return id;
}

/* Does sample s carry every --where label? */
static int sample_matches(const ember__flame *fl, const ember__sample *s)
{
	for (size_t w = 0; w < fl->opts.nwhere; w++) {
		int found = 0;
		for (uint32_t i = 0; i < s->nlabels && !found; i++) {
			char buf[64];
			found = s->labels[i].key && !strcmp(s->labels[i].key, fl->opts.where_key[w]) &&
				!strcmp(label_value(&s->labels[i], buf, sizeof(buf)),
					fl->opts.where_val[w]);
		}
		if (!found)
			return 0;
	}
	return 1;
}

/* The sample of (node, labelset), created with zero values if new. */
static ember__flame_sample *sample_of(ember__flame *fl, uint32_t node, uint32_t ls)
{
	int inserted;
	uint64_t *slot =
		ember__u64map_put(&fl->sample_ids, ((uint64_t)node << 32) | ls, &inserted);
	if (!slot)
		return NULL;
	if (!inserted)
		return &fl->samples[*slot];
	if (grow((void **)&fl->samples, &fl->cap_samples, fl->nsamples, sizeof(*fl->samples)) < 0)
		return NULL;
	ember__flame_sample *s = &fl->samples[fl->nsamples];
	s->node = node;
	s->labelset = ls;
	s->values = calloc((size_t)fl->nsets * EMBER_FLAME_MAX_TYPES, sizeof(int64_t));
	if (!s->values)
		return NULL;
	*slot = fl->nsamples++;
	return s;
}

/*
 * Maps p's sample types to the tree's: map[i] is the tree's type of p's
 * value i, or UINT32_MAX if not kept. Returns the number kept, or a
 * negative ember_err.
 */
static int map_types(ember__flame *fl, const ember__profile *p, const char *path, uint32_t *map)
{
	int kept = 0;
	for (uint32_t i = 0; i < p->nvalues; i++) {
		const char *name = p->sample_type[i].type ? p->sample_type[i].type : "";
		const char *unit = p->sample_type[i].unit ? p->sample_type[i].unit : "";
		map[i] = UINT32_MAX;
		if (fl->opts.type && strcmp(name, fl->opts.type))
			continue;
		uint32_t n = intern(fl, name), u = intern(fl, unit);
		if (n == UINT32_MAX || u == UINT32_MAX)
			return ember__error_oom("flame types");
		uint32_t t = 0;
		while (t < fl->ntypes && (fl->type_name[t] != n || fl->type_unit[t] != u))
			t++;
		if (t == fl->ntypes) {
			if (fl->ntypes == EMBER_FLAME_MAX_TYPES)
				continue;
			fl->type_name[t] = n;
			fl->type_unit[t] = u;
			fl->ntypes++;
		}
		map[i] = t;
		kept++;
		if (!fl->have_default && p->default_sample_type &&
		    !strcmp(p->default_sample_type, name)) {
			fl->default_type = t;
			fl->have_default = 1;
		}
	}
	if (kept == 0) {
		char have[256] = "";
		for (uint32_t i = 0; i < p->nvalues; i++) {
			size_t len = strlen(have);
			snprintf(have + len, sizeof(have) - len, "%s%s", i ? ", " : "",
				 p->sample_type[i].type ? p->sample_type[i].type : "");
		}
		if (p->nvalues == 0)
			return ember__error(EMBER_ERR_FORMAT, "'%s' has no sample types", path);
		return ember__error(EMBER_ERR_FORMAT, "'%s' has no sample type '%s' (it has: %s)",
				    path, fl->opts.type, have);
	}
	return kept;
}

/*
 * The index of p's value that counts samples for value vi (for the diff's
 * test): vi itself if its unit is a count, else X_objects for X_space,
 * else a value whose unit is "count", else UINT32_MAX (then the value is
 * divided by the period).
 */
static uint32_t count_index(const ember__profile *p, uint32_t vi)
{
	if (p->sample_type[vi].unit && !strcmp(p->sample_type[vi].unit, "count"))
		return vi;
	/* Go's and our memory profiles: inuse_space counts in inuse_objects */
	const char *t = p->sample_type[vi].type ? p->sample_type[vi].type : "";
	const char *us = strstr(t, "_space");
	if (us && !us[6]) {
		for (uint32_t i = 0; i < p->nvalues; i++) {
			const char *o = p->sample_type[i].type ? p->sample_type[i].type : "";
			if (!strncmp(o, t, (size_t)(us - t)) && !strcmp(o + (us - t), "_objects"))
				return i;
		}
	}
	for (uint32_t i = 0; i < p->nvalues; i++)
		if (p->sample_type[i].unit && !strcmp(p->sample_type[i].unit, "count"))
			return i;
	return UINT32_MAX;
}

static int add_sample(ember__flame *fl, const ember__profile *p, const ember__sample *s,
		      const uint32_t *map, uint32_t *path, int set, uint32_t dvi, uint32_t ci)
{
	/* The frames, leaf first: each location's lines innermost first. */
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->nlocs; i++) {
		const ember__location *l = &p->locations[s->locs[i] - 1];
		uint32_t k = l->nlines ? l->nlines : 1;
		for (uint32_t j = 0; j < k; j++) {
			uint32_t f = location_frame(fl, p, l, j);
			if (f == UINT32_MAX)
				return ember__error_oom("flame frames");
			path[n++] = f;
		}
	}
	uint32_t node = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t f = fl->opts.reverse ? path[i] : path[n - 1 - i];
		if ((node = node_id(fl, node, f)) == UINT32_MAX)
			return ember__error_oom("flame tree");
	}
	uint32_t ls = labelset_id(fl, s);
	ember__flame_sample *fs = ls == UINT32_MAX ? NULL : sample_of(fl, node, ls);
	if (!fs)
		return ember__error_oom("flame samples");
	for (uint32_t i = 0; i < p->nvalues; i++)
		if (map[i] != UINT32_MAX)
			fs->values[(uint32_t)set * EMBER_FLAME_MAX_TYPES + map[i]] += s->values[i];
	if (fl->opts.diff && dvi != UINT32_MAX) {
		double count = ci != UINT32_MAX ? (double)s->values[ci]
			       : p->period > 0	 ? (double)s->values[dvi] / (double)p->period
						 : (double)s->values[dvi];
		fl->total_count[set] += count;
		if (n > 0) {
			ember__flame_frame *leaf = &fl->frames[path[0]];
			leaf->self_value[set] += (double)s->values[dvi];
			leaf->self_count[set] += count;
		}
	}
	return 0;
}

int ember__flame_add(ember__flame *fl, const ember__profile *p, const char *path, int set)
{
	uint32_t map[EMBER_PROFILE_MAX_VALUES];
	int rc = map_types(fl, p, path, map);
	if (rc < 0)
		return rc;
	rc = 0;
	if (fl->opts.diff && fl->ntypes != 1)
		return ember__error(EMBER_ERR_FORMAT,
				    "'%s': sample type '%s' is in %s here but in %s in the files "
				    "before: a diff compares one sample type in one unit",
				    path, fl->strings[fl->type_name[1]], fl->strings[fl->type_unit[1]],
				    fl->strings[fl->type_unit[0]]);
	if (p->nsamples == 0)
		return ember__error(EMBER_ERR_FORMAT, "'%s' is empty: it has no samples", path);
	if (!fl->program && p->nmappings && p->mappings[0].file && *p->mappings[0].file) {
		const char *slash = strrchr(p->mappings[0].file, '/');
		fl->program = strdup(slash ? slash + 1 : p->mappings[0].file);
		if (!fl->program)
			return ember__error_oom("program name");
	}
	uint32_t dvi = UINT32_MAX;
	for (uint32_t i = 0; i < p->nvalues; i++)
		if (map[i] == 0)
			dvi = i;
	uint32_t ci = dvi == UINT32_MAX ? UINT32_MAX : count_index(p, dvi);

	/* The longest stack, for the path buffer. */
	size_t longest = 1;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		size_t k = 0;
		for (uint32_t j = 0; j < p->samples[i].nlocs; j++) {
			uint32_t li = p->samples[i].locs[j];
			if (li == 0 || li > p->nlocations)
				return ember__error(EMBER_ERR_FORMAT,
						    "'%s': sample %u refers to a missing location",
						    path, i);
			uint32_t nl = p->locations[li - 1].nlines;
			k += nl ? nl : 1;
		}
		if (k > longest)
			longest = k;
	}
	uint32_t *buf = malloc(longest * sizeof(uint32_t));
	if (!buf)
		return ember__error_oom("flame path");
	for (uint32_t i = 0; i < p->nsamples && rc == 0; i++)
		if (sample_matches(fl, &p->samples[i]))
			rc = add_sample(fl, p, &p->samples[i], map, buf, set, dvi, ci);
	free(buf);
	if (rc < 0)
		return rc;
	uint32_t cap = fl->nfiles;
	char *copy = strdup(path);
	if (!copy || grow((void **)&fl->files, &cap, fl->nfiles, sizeof(char *)) < 0) {
		free(copy);
		return ember__error_oom("flame files");
	}
	int *fs = realloc(fl->file_set, ((size_t)fl->nfiles + 1) * sizeof(int));
	if (!fs) {
		free(copy);
		return ember__error_oom("flame files");
	}
	fl->file_set = fs;
	fl->file_set[fl->nfiles] = set;
	fl->files[fl->nfiles++] = copy;
	return 0;
}

int64_t ember__flame_total(const ember__flame *fl, int set, uint32_t t)
{
	int64_t sum = 0;
	for (uint32_t i = 0; i < fl->nsamples; i++)
		sum += fl->samples[i].values[(uint32_t)set * EMBER_FLAME_MAX_TYPES + t];
	return sum;
}

/* Writes the path of node n, root first, separated by ';'. */
static void write_path(const ember__flame *fl, uint32_t n, FILE *out)
{
	uint32_t parent = fl->nodes[n].parent;
	if (parent != UINT32_MAX) {
		write_path(fl, parent, out);
		fputc(';', out);
	}
	/* ';' and newlines would break the format's fields. */
	for (const char *c = fl->strings[fl->frames[fl->nodes[n].frame].name]; *c; c++)
		fputc(*c == ';' ? ':' : *c == '\n' ? ' ' : *c, out);
}

int64_t *ember__flame_totals(const ember__flame *fl, int64_t *grand)
{
	int64_t *total = calloc((size_t)fl->nnodes + 1, sizeof(int64_t));
	if (!total) {
		ember__error_oom("flame totals");
		return NULL;
	}
	*grand = 0;
	for (uint32_t i = 0; i < fl->nsamples; i++) {
		int64_t v = fl->samples[i].values[fl->default_type];
		*grand += v;
		if (fl->samples[i].node != UINT32_MAX) /* an empty stack has no node */
			total[fl->samples[i].node] += v;
	}
	for (uint32_t n = fl->nnodes; n-- > 0;) /* a child's id is above its parent's */
		if (fl->nodes[n].parent != UINT32_MAX)
			total[fl->nodes[n].parent] += total[n];
	return total;
}

int ember__flame_elided(const ember__flame *fl, const int64_t *total, int64_t grand, uint32_t n)
{
	return fl->opts.min_pct > 0 && (double)total[n] < fl->opts.min_pct / 100.0 * (double)grand;
}

int ember__flame_write_folded(const ember__flame *fl, FILE *out)
{
	int64_t grand;
	int64_t *total = ember__flame_totals(fl, &grand);
	int64_t *self = calloc((size_t)fl->nnodes + 1, sizeof(int64_t));
	if (!total || !self) {
		free(total);
		free(self);
		return ember__error_oom("folded output");
	}
	/* A frame under --min gives its value to its nearest kept caller. */
	for (uint32_t i = 0; i < fl->nsamples; i++) {
		uint32_t n = fl->samples[i].node;
		while (n != UINT32_MAX && ember__flame_elided(fl, total, grand, n))
			n = fl->nodes[n].parent;
		if (n != UINT32_MAX) /* an empty stack has no line */
			self[n] += fl->samples[i].values[fl->default_type];
	}
	for (uint32_t n = 0; n < fl->nnodes; n++) {
		if (self[n] <= 0)
			continue;
		write_path(fl, n, out);
		fprintf(out, " %" PRId64 "\n", self[n]);
	}
	free(total);
	free(self);
	return ferror(out) ? ember__error(EMBER_ERR_IO, "cannot write the folded stacks") : 0;
}
