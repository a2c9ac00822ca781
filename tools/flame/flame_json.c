/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flame_json.c - the tree of flame.h as the compact JSON the page reads:
 *
 *   {"v":1, "title":S, "program":S (mapping 1's base name, "" if unknown),
 *    "sets":1|2, "types":[[name,unit]...] (string ids),
 *    "dflt":T, "strings":[S...], "frames":[name,module,file,line, ...],
 *    "nodes":[frame,depth, ...]   the tree in depth-first order, depth 0 at
 *                                 the top level (a node's parent is the
 *                                 last node before it one level up),
 *    "labelsets":[[key,value,...]...] (string ids; 0 is the empty set),
 *    "samples":[dnode,labelset,v..., ...] with sets*types values each,
 *                                 value [set*types+type] times scale[type];
 *                                 a sample's node is the previous one's
 *                                 plus dnode (the first's: 0 plus); node
 *                                 -1 is the root (an empty stack), node
 *                                 <= -2 a frame elided by --min under node
 *                                 -node-2,
 *    "scale":[S...] per type, the greatest common divisor of its values,
 *    "files":[[path,set]...], "diff":{...} for a diff}
 *
 * Depth-first order with depths instead of parent ids, samples sorted by
 * node with deltas, and values divided by their common divisor (cpu
 * nanoseconds are multiples of the period) keep the numbers small: they
 * are most of the file's size.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "flame/flame.h"
#include "flame/flame_diff.h"
#include "util/error.h"

void ember__flame_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(out, "\\%c", *c);
		else if (*c < 0x20 || *c == '<' || *c == '>' || *c == '&' || *c == 0x7f)
			fprintf(out, "\\u%04x", *c);
		else
			fputc(*c, out);
	}
	fputc('"', out);
}

/* Writes v in decimal, faster than fprintf for the million numbers. */
static void put_int(FILE *out, int64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	fwrite(p, 1, (size_t)(buf + sizeof(buf) - p), out);
}

/* The depth-first order of the kept nodes: order[] lists node ids, dfs[]
 * gives each kept node's position (UINT32_MAX if elided). */
typedef struct layout {
	uint32_t *order, *dfs, *depth, n;
} layout;

static int make_layout(const ember__flame *fl, layout *L)
{
	uint32_t N = fl->nnodes;
	int64_t grand;
	int64_t *total = ember__flame_totals(fl, &grand);
	uint32_t *first = calloc((size_t)N + 2, sizeof(uint32_t));
	uint32_t *kids = malloc(((size_t)N + 1) * sizeof(uint32_t));
	uint32_t *stack = malloc(((size_t)N + 1) * sizeof(uint32_t));
	L->order = malloc(((size_t)N + 1) * sizeof(uint32_t));
	L->dfs = malloc(((size_t)N + 1) * sizeof(uint32_t));
	L->depth = malloc(((size_t)N + 1) * sizeof(uint32_t));
	L->n = 0;
	if (!total || !first || !kids || !stack || !L->order || !L->dfs || !L->depth) {
		free(total), free(first), free(kids), free(stack);
		return ember__error_oom("flame layout");
	}
	/* Children lists (index N stands for the root). */
	for (uint32_t n = 0; n < N; n++) {
		uint32_t p = fl->nodes[n].parent == UINT32_MAX ? N : fl->nodes[n].parent;
		first[p + 1]++;
	}
	for (uint32_t i = 1; i <= N + 1; i++)
		first[i] += first[i - 1];
	uint32_t *fill = calloc((size_t)N + 1, sizeof(uint32_t));
	if (!fill) {
		free(total), free(first), free(kids), free(stack);
		return ember__error_oom("flame layout");
	}
	for (uint32_t n = 0; n < N; n++) {
		uint32_t p = fl->nodes[n].parent == UINT32_MAX ? N : fl->nodes[n].parent;
		kids[first[p] + fill[p]++] = n;
	}
	free(fill);
	for (uint32_t n = 0; n < N; n++)
		L->dfs[n] = UINT32_MAX;
	/* Depth-first walk; children pushed in reverse keep their order. */
	uint32_t sp = 0;
	for (uint32_t k = first[N + 1]; k-- > first[N];)
		stack[sp++] = kids[k];
	while (sp) {
		uint32_t n = stack[--sp];
		if (ember__flame_elided(fl, total, grand, n))
			continue;
		uint32_t p = fl->nodes[n].parent;
		L->depth[n] = p == UINT32_MAX ? 0 : L->depth[p] + 1;
		L->dfs[n] = L->n;
		L->order[L->n++] = n;
		for (uint32_t k = first[n + 1]; k-- > first[n];)
			stack[sp++] = kids[k];
	}
	free(total), free(first), free(kids), free(stack);
	return 0;
}

static void free_layout(layout *L)
{
	free(L->order), free(L->dfs), free(L->depth);
}

/* The JSON node of a sample's node: its position, or its nearest kept
 * ancestor's encoded as elided. */
static int64_t sample_node(const ember__flame *fl, const layout *L, uint32_t n)
{
	if (n == UINT32_MAX)
		return -1;
	if (L->dfs[n] != UINT32_MAX)
		return L->dfs[n];
	while (n != UINT32_MAX && L->dfs[n] == UINT32_MAX)
		n = fl->nodes[n].parent;
	return n == UINT32_MAX ? -1 : -(int64_t)L->dfs[n] - 2;
}

static int64_t gcd64(int64_t a, int64_t b)
{
	if (a < 0)
		a = -a;
	if (b < 0)
		b = -b;
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* For sorting samples by their JSON node. */
typedef struct keyed {
	int64_t node;
	uint32_t i;
} keyed;

static int by_node(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static void write_diff(const ember__flame *fl, const ember__flame_diff *d, FILE *out)
{
	fprintf(out, ",\"diff\":{\"z\":%.4f,\"baseCount\":%.0f,\"newCount\":%.0f,\"rows\":[",
		d->z_threshold, d->base_count, d->new_count);
	for (size_t i = 0; i < d->nrows; i++) {
		const ember__flame_diff_row *r = &d->rows[i];
		fprintf(out, "%s[%u,%.4f,%.4f,%.4f,%.3f,%d]", i ? "," : "", r->frame, r->base_pct,
			r->new_pct, r->delta, r->z, r->significant);
	}
	fputs("]}", out);
}

int ember__flame_write_json(const ember__flame *fl, const ember__flame_diff *d, FILE *out)
{
	layout L;
	int rc = make_layout(fl, &L);
	if (rc < 0)
		return rc;
	fputs("{\"v\":1,\"title\":", out);
	ember__flame_json_string(out, fl->opts.title ? fl->opts.title : "emberprof");
	fputs(",\"program\":", out);
	ember__flame_json_string(out, fl->program ? fl->program : "");
	fprintf(out, ",\"sets\":%d,\"reverse\":%d,\"dflt\":%u,\"types\":[", fl->nsets,
		fl->opts.reverse ? 1 : 0, fl->default_type);
	for (uint32_t t = 0; t < fl->ntypes; t++)
		fprintf(out, "%s[%u,%u]", t ? "," : "", fl->type_name[t], fl->type_unit[t]);
	fputs("],\"strings\":[", out);
	for (uint32_t i = 0; i < fl->nstrings; i++) {
		if (i)
			fputc(',', out);
		ember__flame_json_string(out, fl->strings[i]);
	}
	fputs("],\n\"frames\":[", out);
	for (uint32_t i = 0; i < fl->nframes; i++) {
		const ember__flame_frame *f = &fl->frames[i];
		fprintf(out, "%s%u,%u,%u,%" PRId64, i ? "," : "", f->name, f->module, f->file,
			f->line);
	}
	fputs("],\n\"nodes\":[", out);
	for (uint32_t i = 0; i < L.n; i++) {
		uint32_t n = L.order[i];
		if (i)
			fputc(',', out);
		put_int(out, fl->nodes[n].frame);
		fputc(',', out);
		put_int(out, L.depth[n]);
	}
	fputs("],\n\"labelsets\":[", out);
	for (uint32_t i = 0; i < fl->nlabelsets; i++) {
		const uint32_t *q = fl->labelsets[i];
		fputs(i ? ",[" : "[", out);
		for (uint32_t k = 0; k < 2 * q[0]; k++)
			fprintf(out, "%s%u", k ? "," : "", q[1 + k]);
		fputc(']', out);
	}
	int64_t scale[EMBER_FLAME_MAX_TYPES];
	fputs("],\n\"scale\":[", out);
	for (uint32_t t = 0; t < fl->ntypes; t++) {
		scale[t] = 0;
		for (uint32_t i = 0; i < fl->nsamples; i++)
			for (int set = 0; set < fl->nsets; set++)
				scale[t] = gcd64(scale[t],
						 fl->samples[i].values[set * EMBER_FLAME_MAX_TYPES + t]);
		if (scale[t] <= 0)
			scale[t] = 1;
		if (t)
			fputc(',', out);
		put_int(out, scale[t]);
	}
	keyed *order = malloc(((size_t)fl->nsamples + 1) * sizeof(*order));
	if (!order) {
		free_layout(&L);
		return ember__error_oom("flame samples");
	}
	for (uint32_t i = 0; i < fl->nsamples; i++) {
		order[i].node = sample_node(fl, &L, fl->samples[i].node);
		order[i].i = i;
	}
	qsort(order, fl->nsamples, sizeof(*order), by_node);
	fputs("],\n\"samples\":[", out);
	int64_t prev = 0;
	for (uint32_t k = 0; k < fl->nsamples; k++) {
		const ember__flame_sample *s = &fl->samples[order[k].i];
		if (k)
			fputc(',', out);
		put_int(out, order[k].node - prev);
		prev = order[k].node;
		fputc(',', out);
		put_int(out, s->labelset);
		for (int set = 0; set < fl->nsets; set++)
			for (uint32_t t = 0; t < fl->ntypes; t++) {
				fputc(',', out);
				put_int(out, s->values[set * EMBER_FLAME_MAX_TYPES + t] / scale[t]);
			}
	}
	free(order);
	fputs("],\n\"files\":[", out);
	for (uint32_t i = 0; i < fl->nfiles; i++) {
		fputs(i ? ",[" : "[", out);
		ember__flame_json_string(out, fl->files[i]);
		fprintf(out, ",%d]", fl->file_set[i]);
	}
	fputc(']', out);
	if (d)
		write_diff(fl, d, out);
	fputs("}", out);
	free_layout(&L);
	return ferror(out) ? ember__error(EMBER_ERR_IO, "cannot write the page's data") : 0;
}
