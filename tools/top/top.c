/* SPDX-License-Identifier: Apache-2.0 */
/*
 * top.c - the "top functions" table (see top.h).
 *
 * Rows live in a growing array indexed by the encoders' intern table
 * (encode/intern.h) on "function\0module". Adding a profile first resolves every location's
 * lines to row numbers once, so the per-sample work is a walk over row
 * numbers; "counted once per sample" uses a per-row stamp set to the
 * current sample's serial number. After each profile the printing order
 * is recomputed, so reads (print, row) need no mutation.
 */
#include "top/top.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "encode/intern.h"
#include "util/error.h"

typedef struct row {
	const char *function, *module; /* in the key table's copy */
	int64_t flat, cum;
	uint64_t stamp; /* serial of the last sample that counted this row's cum */
} row;

struct ember__top {
	ember__arena arena;
	ember__intern keys; /* "function\0module" -> row index + 1 */
	row *rows;
	uint32_t nrows, cap;
	uint32_t *order; /* row indices in printing order */
	uint32_t nordered; /* rows in order[]: nrows unless sorting failed */
	int64_t total;
	uint64_t serial; /* samples seen, for the stamps */
	size_t nprofiles;
	const char *type, *unit; /* of the first profile, "" before */
};

ember__top *ember__top_new(void)
{
	ember__top *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (ember__intern_init(&t->keys, 256, 1)) {
		ember__intern_free(&t->keys);
		free(t);
		return NULL;
	}
	t->type = t->unit = "";
	return t;
}

void ember__top_free(ember__top *t)
{
	if (!t)
		return;
	ember__arena_release(&t->arena);
	ember__intern_free(&t->keys);
	free(t->rows);
	free(t->order);
	free(t);
}

/* Returns the row for (fn, mod), creating it; UINT32_MAX on OOM. */
static uint32_t find_row(ember__top *t, const char *fn, const char *mod)
{
	size_t lf = strlen(fn), lm = strlen(mod);
	char small[512];
	char *key = lf + lm + 1 <= sizeof(small) ? small : malloc(lf + lm + 1);
	if (!key)
		return UINT32_MAX;
	memcpy(key, fn, lf + 1); /* the separator: "ab","c" != "a","bc" */
	memcpy(key + lf + 1, mod, lm);
	int64_t k = ember__intern_bytes(&t->keys, key, lf + lm + 1);
	if (key != small)
		free(key);
	if (k < 1)
		return UINT32_MAX;
	uint32_t idx = (uint32_t)k - 1; /* the table's index 0 is "" */
	if (idx < t->nrows)
		return idx;
	if (idx > t->nrows) /* a row lost to an earlier failure */
		return UINT32_MAX;
	if (t->nrows == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 256;
		row *rows = ncap > t->cap ? realloc(t->rows, (size_t)ncap * sizeof(*rows)) : NULL;
		if (!rows)
			return UINT32_MAX;
		t->rows = rows;
		t->cap = ncap;
	}
	/* the key's bytes are not terminated after the module: keep a
	 * terminated copy of the module in the arena */
	const char *copy = (const char *)t->keys.ents[k].data;
	const char *m = ember__arena_strdup(&t->arena, mod);
	if (!m)
		return UINT32_MAX;
	t->rows[t->nrows] = (row){copy, m, 0, 0, 0};
	return t->nrows++;
}

/* The module of a location: its mapping file's basename, or "?". */
static const char *module_of(const ember__profile *p, const ember__location *l)
{
	if (l->mapping == 0 || l->mapping > p->nmappings)
		return "?";
	const char *f = p->mappings[l->mapping - 1].file;
	if (!f || !*f)
		return "?";
	const char *slash = strrchr(f, '/');
	return slash && slash[1] ? slash + 1 : f;
}

/* The display name of line k of a location (k == nlines: no line). */
static const char *name_of(const ember__profile *p, const ember__location *l, uint32_t k,
			   char *hex, size_t hexlen)
{
	if (k < l->nlines) {
		uint32_t fi = l->lines[k].function;
		if (fi && fi <= p->nfunctions) {
			const ember__function *f = &p->functions[fi - 1];
			if (f->name && *f->name)
				return f->name;
			if (f->system_name && *f->system_name)
				return f->system_name;
		}
	}
	snprintf(hex, hexlen, "0x%" PRIx64, l->address);
	return hex;
}

/* Finds or creates the rows of location li's lines, into out[]. */
static int resolve(ember__top *t, const ember__profile *p, uint32_t li, uint32_t *out)
{
	const ember__location *l = &p->locations[li];
	const char *mod = module_of(p, l);
	uint32_t n = l->nlines ? l->nlines : 1;
	for (uint32_t k = 0; k < n; k++) {
		char hex[24];
		uint32_t r = find_row(t, name_of(p, l, l->nlines ? k : 0, hex, sizeof(hex)), mod);
		if (r == UINT32_MAX)
			return ember__error_oom("top rows");
		out[k] = r;
	}
	return 0;
}

static int cmp_rows(const void *a, const void *b)
{
	const row *x = *(const row *const *)a, *y = *(const row *const *)b;
	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	int c = strcmp(x->function, y->function);
	return c ? c : strcmp(x->module, y->module);
}

/* Recomputes the printing order. */
static int sort_rows(ember__top *t)
{
	row **tmp = malloc(((size_t)t->nrows + 1) * sizeof(*tmp));
	uint32_t *order = realloc(t->order, ((size_t)t->nrows + 1) * sizeof(*order));
	if (order)
		t->order = order;
	if (!tmp || !order) {
		free(tmp);
		return ember__error_oom("top table order");
	}
	for (uint32_t i = 0; i < t->nrows; i++)
		tmp[i] = &t->rows[i];
	if (t->nrows > 1)
		qsort(tmp, t->nrows, sizeof(*tmp), cmp_rows);
	for (uint32_t i = 0; i < t->nrows; i++)
		t->order[i] = (uint32_t)(tmp[i] - t->rows);
	t->nordered = t->nrows;
	free(tmp);
	return 0;
}

static int same(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Checks that the profile can be added without partial effects. */
static int check_profile(const ember__top *t, const ember__profile *p, uint32_t vi)
{
	if (vi >= p->nvalues || vi >= EMBER_PROFILE_MAX_VALUES)
		return ember__error(EMBER_ERR_INVALID, "top: value %u requested, profile has %u", vi,
				    p->nvalues);
	const char *unit = p->sample_type[vi].unit;
	if (t->nprofiles && !same(t->unit, unit))
		return ember__error(EMBER_ERR_INVALID, "top: cannot add %s to %s",
				    unit && *unit ? unit : "(no unit)",
				    *t->unit ? t->unit : "(no unit)");
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const ember__sample *s = &p->samples[i];
		for (uint32_t k = 0; k < s->nlocs; k++)
			if (s->locs[k] == 0 || s->locs[k] > p->nlocations)
				return ember__error(EMBER_ERR_INVALID,
						    "top: sample %u refers to location %u of %u",
						    i + 1, s->locs[k], p->nlocations);
	}
	return 0;
}

int ember__top_add(ember__top *t, const ember__profile *p, uint32_t value_index)
{
	if (!t || !p)
		return ember__error(EMBER_ERR_INVALID, "top: NULL argument");
	int err = check_profile(t, p, value_index);
	if (err)
		return err;
	if (!t->nprofiles) {
		const ember__value_type *vt = &p->sample_type[value_index];
		t->type = ember__arena_strdup(&t->arena, vt->type);
		t->unit = ember__arena_strdup(&t->arena, vt->unit);
		if (!t->type || !t->unit) {
			t->type = t->unit = "";
			return ember__error_oom("top unit");
		}
	}
	t->nprofiles++;

	/* Each location's lines resolve to rows once, when first sampled (so
	 * unsampled code makes no rows): first[i] is where location i's rows
	 * start in rows_of (a location without lines has one row, its
	 * address), and done[i] says whether they have been filled in. */
	size_t nrefs = 0;
	for (uint32_t i = 0; i < p->nlocations; i++)
		nrefs += p->locations[i].nlines ? p->locations[i].nlines : 1;
	size_t *first = malloc(((size_t)p->nlocations + 1) * sizeof(*first));
	uint32_t *rows_of = malloc((nrefs ? nrefs : 1) * sizeof(*rows_of));
	unsigned char *done = calloc((size_t)p->nlocations + 1, 1);
	if (!first || !rows_of || !done) {
		err = ember__error_oom("top location rows");
		goto out;
	}
	size_t at = 0;
	for (uint32_t i = 0; i < p->nlocations; i++) {
		first[i] = at;
		at += p->locations[i].nlines ? p->locations[i].nlines : 1;
	}
	first[p->nlocations] = at;

	for (uint32_t i = 0; i < p->nsamples; i++) {
		const ember__sample *s = &p->samples[i];
		for (uint32_t k = 0; k < s->nlocs; k++) {
			uint32_t li = s->locs[k] - 1;
			if (!done[li] && (err = resolve(t, p, li, rows_of + first[li])))
				goto out;
			done[li] = 1;
		}
		int64_t v = s->values[value_index];
		uint64_t serial = ++t->serial;
		t->total += v;
		if (!s->nlocs)
			continue;
		/* The leaf: innermost line of the first location. */
		t->rows[rows_of[first[s->locs[0] - 1]]].flat += v;
		for (uint32_t k = 0; k < s->nlocs; k++) {
			uint32_t li = s->locs[k] - 1;
			for (size_t j = first[li]; j < first[li + 1]; j++) {
				row *r = &t->rows[rows_of[j]];
				if (r->stamp != serial) {
					r->stamp = serial;
					r->cum += v;
				}
			}
		}
	}
out:
	free(first);
	free(rows_of);
	free(done);
	/* Sort even after a failure, so that order[] covers every row. */
	int serr = sort_rows(t);
	return err ? err : serr;
}

size_t ember__top_count(const ember__top *t)
{
	return t->nordered;
}

int64_t ember__top_total(const ember__top *t)
{
	return t->total;
}

const char *ember__top_unit(const ember__top *t)
{
	return t->unit;
}

int ember__top_row(const ember__top *t, size_t i, ember__top_entry *out)
{
	if (i >= t->nordered)
		return ember__error(EMBER_ERR_INVALID, "top: row %zu of %u", i, t->nordered);
	const row *r = &t->rows[t->order[i]];
	out->function = r->function;
	out->module = r->module;
	out->flat = r->flat;
	out->cum = r->cum;
	return 0;
}

char *ember__top_format(const ember__top *t, int64_t v, char *buf, size_t size)
{
	if (strcmp(t->unit, "nanoseconds") == 0)
		snprintf(buf, size, "%.2fs", (double)v / 1e9);
	else
		snprintf(buf, size, "%" PRId64, v);
	return buf;
}

static double percent(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

int ember__top_print(const ember__top *t, FILE *out, size_t n, const char *value_label)
{
	char a[32], b[32];
	const char *label = value_label ? value_label : *t->type ? t->type : "value";
	size_t shown = n < t->nordered ? n : t->nordered;
	fprintf(out, "Total %s: %s in %zu profile%s\n", label,
		ember__top_format(t, t->total, a, sizeof(a)), t->nprofiles,
		t->nprofiles == 1 ? "" : "s");
	fprintf(out, "Showing top %zu of %u functions\n", shown, t->nordered);
	/* Pad the function column to the longest shown name, within reason. */
	int width = (int)strlen("function");
	for (size_t i = 0; i < shown; i++) {
		size_t len = strlen(t->rows[t->order[i]].function);
		if (len > (size_t)width)
			width = len > 60 ? 60 : (int)len;
	}
	fprintf(out, "%10s %7s %10s %7s  %-*s  %s\n", "flat", "flat%", "cum", "cum%", width,
		"function", "module");
	for (size_t i = 0; i < shown; i++) {
		const row *r = &t->rows[t->order[i]];
		fprintf(out, "%10s %6.2f%% %10s %6.2f%%  %-*s  %s\n",
			ember__top_format(t, r->flat, a, sizeof(a)), percent(r->flat, t->total),
			ember__top_format(t, r->cum, b, sizeof(b)), percent(r->cum, t->total), width,
			r->function, r->module);
	}
	if (fflush(out) != 0 || ferror(out))
		return ember__error(EMBER_ERR_IO, "top: writing the table failed");
	return 0;
}
