/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flame.h - profiles merged into one call tree for `emberprof flame` and
 * `emberprof diff`, written as a self-contained HTML page (flame_page.c)
 * or in Brendan Gregg's folded format.
 *
 * Frames are keyed by (function name, module basename); a frame keeps the
 * source file and line of its first occurrence for the page's hover. The
 * tree is a trie of frames, root first (leaf first with `reverse`); every
 * sample is attached to its trie node together with its label set, and
 * samples with the same node and label set are summed. Sample types are
 * the union, by name and unit, of those of the profiles added (or only
 * the one asked for). A diff has two sets of values, 0 = new, 1 = base,
 * of one sample type; each frame also sums its self value and self sample
 * count per set, for the significance test (flame_diff.c).
 *
 * The tree copies every string it keeps: profiles may be freed once added.
 * Not async-signal-safe; one thread at a time.
 */
#ifndef EMBER_FLAME_H
#define EMBER_FLAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "util/hashmap.h"

#define EMBER_FLAME_MAX_TYPES 16
#define EMBER_FLAME_MAX_WHERE 16

typedef struct ember__flame_opts {
	const char *type;  /* only this sample type; NULL: all (a diff needs one) */
	const char *title; /* page title; NULL: "emberprof" */
	int reverse;       /* leaf-rooted tree */
	double min_pct;    /* frames below this share of the total are elided */
	int diff;          /* two sets: new (0) and base (1) */
	size_t nwhere;     /* keep only samples with all these labels */
	const char *where_key[EMBER_FLAME_MAX_WHERE], *where_val[EMBER_FLAME_MAX_WHERE];
} ember__flame_opts;

typedef struct ember__flame_frame {
	uint32_t name, module, file; /* string ids */
	int64_t line;
	double self_value[2], self_count[2]; /* per set; for the diff table */
} ember__flame_frame;

typedef struct ember__flame_node {
	uint32_t parent; /* UINT32_MAX for a top-level frame */
	uint32_t frame;
} ember__flame_node;

typedef struct ember__flame_sample {
	uint32_t node, labelset;
	int64_t *values; /* [set * EMBER_FLAME_MAX_TYPES + type] */
} ember__flame_sample;

typedef struct ember__flame {
	ember__flame_opts opts;
	int nsets;

	char **strings; /* interned; id 0 is "" */
	uint32_t nstrings, cap_strings;
	ember__u64map string_ids; /* hash -> chain head (id + 1); chains via string_next */
	uint32_t *string_next;

	ember__flame_frame *frames;
	uint32_t nframes, cap_frames;
	ember__u64map frame_ids; /* (name, module) -> id */

	ember__flame_node *nodes;
	uint32_t nnodes, cap_nodes;
	ember__u64map node_ids; /* (parent, frame) -> id */

	uint32_t **labelsets; /* each: [n, k0, v0, k1, v1...] string ids; 0 is empty */
	uint32_t nlabelsets, cap_labelsets;
	ember__u64map labelset_ids; /* hash -> chain head, via labelset_next */
	uint32_t *labelset_next;

	ember__flame_sample *samples;
	uint32_t nsamples, cap_samples;
	ember__u64map sample_ids; /* (node, labelset) -> id */

	uint32_t ntypes;
	uint32_t type_name[EMBER_FLAME_MAX_TYPES], type_unit[EMBER_FLAME_MAX_TYPES];
	uint32_t default_type; /* index into the types */
	int have_default;
	double total_count[2]; /* sample counts per set, for the diff */

	char **files; /* the inputs per set, for the page */
	uint32_t nfiles;
	int *file_set;

	/* The program: the base name of mapping 1's file (the main
	 * executable, as our profiles and pprof make it) of the first profile
	 * added with one; malloc'd, NULL before. The page's title says it. */
	char *program;
} ember__flame;

/* Creates an empty tree with the options (copied; strings borrowed until
 * ember__flame_free). NULL on out-of-memory. */
ember__flame *ember__flame_new(const ember__flame_opts *opts);
void ember__flame_free(ember__flame *fl);

/*
 * Adds profile `p` read from `path` (for messages) to set `set` (0, or 1
 * for a diff's base). Only reads p. Returns 0; EMBER_ERR_FORMAT with a
 * message naming the file when it lacks the type asked for, has no
 * samples at all, or its unit differs from the same type's in the
 * profiles before; EMBER_ERR_NOMEM.
 */
int ember__flame_add(ember__flame *fl, const ember__profile *p, const char *path, int set);

/* Sum of the values of type t in set `set`. */
int64_t ember__flame_total(const ember__flame *fl, int set, uint32_t t);

/*
 * Writes the page: flame_page.c's HTML with the tree as JSON inside.
 * diff_rows (may be NULL) is the diff table (flame_diff.h) to show beside
 * the graph. Returns 0, EMBER_ERR_IO or EMBER_ERR_NOMEM.
 */
struct ember__flame_diff;
int ember__flame_write_html(const ember__flame *fl, const struct ember__flame_diff *d, FILE *out);

/*
 * The total of every node (the default type, set 0; a malloc'd array the
 * caller frees, NULL on OOM) and in *grand the sum of all samples.
 */
int64_t *ember__flame_totals(const ember__flame *fl, int64_t *grand);

/* Is node n below opts.min_pct of grand (left out of the outputs)? */
int ember__flame_elided(const ember__flame *fl, const int64_t *total, int64_t grand, uint32_t n);

/* Writes "root;...;leaf value\n" lines of the default type (set 0); a
 * frame left out by --min gives its value to its nearest kept caller. */
int ember__flame_write_folded(const ember__flame *fl, FILE *out);

/* Writes the JSON the page reads (flame_json.c). */
int ember__flame_write_json(const ember__flame *fl, const struct ember__flame_diff *d, FILE *out);

/* Writes s as a JSON string, '<' escaped so it may sit in a <script>. */
void ember__flame_json_string(FILE *out, const char *s);

#endif
