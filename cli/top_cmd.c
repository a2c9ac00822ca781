/* SPDX-License-Identifier: Apache-2.0 */
/*
 * top_cmd.c - `emberprof top [--n N] [--sample-index I|NAME] FILE...`:
 * the top-functions table of one or more pprof files (ours, Go's, or
 * anything profile.proto, gzip'd or not) or JFR recordings (ours or
 * async-profiler's), and the same table printed at the end of `emberprof
 * run`.
 *
 * The table itself is tools/top/top.c; this file reads the files, picks
 * the sample value to rank by in each of them, and handles errors.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "emberprof.h"
#include "read/jfr_profile.h"
#include "encode/pprof.h"
#include "read/pprof_read.h"
#include "top/top.h"
#include "top/unnamed.h"
#include "util/error.h"

#define DEFAULT_ROWS 20

void ember__cli_top_usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof top [--n N] [--sample-index I|NAME] FILE...\n"
		"\n"
		"Prints the functions with the most samples in the FILEs (summed): pprof\n"
		"profiles, or JFR recordings (sample types cpu, wall, alloc_space).\n"
		"  --n N, -n N             rows to print (default %d)\n"
		"  --sample-index I|NAME   the sample value to rank by: a 0-based index or a\n"
		"                          sample type such as cpu or samples (default: the\n"
		"                          profile's default sample type, else its last)\n",
		DEFAULT_ROWS);
}

/* Picks the value index in p named by spec (see ember__cli_print_top). */
static int resolve_index(const ember__profile *p, const char *spec, const char *path,
			 uint32_t *out)
{
	if (p->nvalues == 0)
		return ember__error(EMBER_ERR_FORMAT, "'%s' has no sample values", path);
	if (!spec) {
		*out = p->nvalues - 1;
		if (p->default_sample_type && *p->default_sample_type)
			for (uint32_t i = 0; i < p->nvalues; i++)
				if (p->sample_type[i].type &&
				    !strcmp(p->sample_type[i].type, p->default_sample_type))
					*out = i;
		return 0;
	}
	unsigned long n;
	if (ember__cli_parse_count(spec, 0, UINT32_MAX, &n) == 0) {
		if (n >= p->nvalues)
			return ember__error(EMBER_ERR_INVALID,
					    "sample index %lu is out of range: '%s' has %u sample "
					    "value%s",
					    n, path, p->nvalues, p->nvalues == 1 ? "" : "s");
		*out = (uint32_t)n;
		return 0;
	}
	char have[256] = "";
	for (uint32_t i = 0; i < p->nvalues; i++) {
		const char *t = p->sample_type[i].type ? p->sample_type[i].type : "";
		if (!strcmp(t, spec)) {
			*out = i;
			return 0;
		}
		size_t len = strlen(have);
		snprintf(have + len, sizeof(have) - len, "%s%s", i ? ", " : "", t);
	}
	return ember__error(EMBER_ERR_INVALID, "'%s' has no sample type '%s' (it has: %s)", path,
			    spec, have);
}

int ember__cli_read_profile(const char *path, ember__profile **out)
{
	uint8_t head[4];
	size_t n = 0;
	FILE *f = fopen(path, "rb");
	if (f) {
		n = fread(head, 1, sizeof(head), f);
		fclose(f);
	}
	if (ember__jfr_magic(head, n))
		return ember__jfr_read_profile_file(path, out);
	return ember__pprof_read_file(path, out); /* and its errors, if unreadable */
}

int ember__cli_read_profile_named(const char *path, ember__profile **out)
{
	int rc = ember__cli_read_profile(path, out);
	if (rc < 0) {
		char why[EMBER_ERROR_MAX];
		snprintf(why, sizeof(why), "%s", ember_last_error());
		/* The reader's message may or may not name the file: make sure. */
		if (strstr(why, path))
			return ember__error(rc, "%s", why);
		return ember__error(rc, "cannot read '%s': %s", path, why);
	}
	return 0;
}

/* Reads one file into the table (and u, if not NULL). */
static int add_file(ember__top *t, ember__unnamed *u, const char *path, const char *spec)
{
	ember__profile *p = NULL;
	int rc = ember__cli_read_profile_named(path, &p);
	if (rc < 0)
		return rc;
	uint32_t vi = 0;
	rc = resolve_index(p, spec, path, &vi);
	if (rc == 0 && (rc = ember__top_add(t, p, vi)) == 0 && u)
		rc = ember__unnamed_add(u, p, vi);
	if (rc < 0) {
		char why[EMBER_ERROR_MAX];
		snprintf(why, sizeof(why), "%s", ember_last_error());
		rc = ember__error(rc, "cannot add '%s': %s", path, why);
	}
	ember__profile_free(p);
	return rc;
}

static int print_top(char *const *paths, size_t npaths, const char *index_spec, size_t n,
		     FILE *out, int skip_bad, size_t *nread, const char *what)
{
	size_t good = 0;
	if (nread)
		*nread = 0;
	ember__top *t = ember__top_new();
	ember__unnamed *u = what ? ember__unnamed_new() : NULL;
	if (!t || (what && !u)) {
		ember__top_free(t);
		return ember__error_oom("top table");
	}
	for (size_t i = 0; i < npaths; i++) {
		int rc = add_file(t, u, paths[i], index_spec);
		if (rc < 0) {
			if (!skip_bad) {
				ember__top_free(t);
				ember__unnamed_free(u);
				return rc;
			}
			ember__cli_error("skipping: %s", ember_last_error());
			continue;
		}
		good++;
	}
	if (nread)
		*nread = good;
	int rc = 0;
	if (good > 0 && ember__top_print(t, out, n, NULL) < 0)
		rc = ember__error(EMBER_ERR_IO, "cannot print the table");
	if (good > 0 && u && rc == 0)
		ember__cli_print_missing_names(u, what, out);
	ember__top_free(t);
	ember__unnamed_free(u);
	return rc;
}

int ember__cli_print_top(char *const *paths, size_t npaths, const char *index_spec, size_t n,
			 FILE *out, int skip_bad, size_t *nread)
{
	return print_top(paths, npaths, index_spec, n, out, skip_bad, nread, NULL);
}

int ember__cli_print_top_names(char *const *paths, size_t npaths, const char *index_spec,
			       size_t n, FILE *out, int skip_bad, size_t *nread, const char *what)
{
	return print_top(paths, npaths, index_spec, n, out, skip_bad, nread, what ? what : "the samples");
}

/* Parses the options of `top`; files go to files[0..*nfiles). */
static int parse_top_args(int argc, char **argv, char **files, size_t *nfiles,
			  unsigned long *rows, const char **spec)
{
	int only_files = 0;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (only_files || arg[0] != '-' || arg[1] == '\0') {
			files[(*nfiles)++] = argv[i];
		} else if (!strcmp(arg, "--")) {
			only_files = 1;
		} else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			ember__cli_top_usage(stdout);
			return 0;
		} else if (ember__cli_is_opt(arg, "--n") || ember__cli_is_opt(arg, "-n")) {
			const char *v = ember__cli_opt_value("top", argc, argv, &i, "--n");
			if (!v)
				return EMBER_EXIT_USAGE;
			if (ember__cli_parse_count(v, 1, 1000000, rows) < 0) {
				ember__cli_error("top: --n \"%s\" is invalid: expected a number of rows, "
						 "1..1000000",
						 v);
				return EMBER_EXIT_USAGE;
			}
		} else if (ember__cli_is_opt(arg, "--sample-index")) {
			if (!(*spec = ember__cli_opt_value("top", argc, argv, &i, "--sample-index")))
				return EMBER_EXIT_USAGE;
			if (!**spec) {
				ember__cli_error("top: --sample-index needs an index or a type name");
				return EMBER_EXIT_USAGE;
			}
		} else {
			ember__cli_error("top: unknown option '%s'", arg);
			ember__cli_top_usage(stderr);
			return EMBER_EXIT_USAGE;
		}
	}
	if (*nfiles == 0) {
		ember__cli_error("top: no profile files given");
		ember__cli_top_usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	return -1; /* go on */
}

int ember__cli_top(int argc, char **argv)
{
	unsigned long rows = DEFAULT_ROWS;
	const char *spec = NULL;
	size_t nfiles = 0;
	char **files = calloc((size_t)argc, sizeof(*files));
	if (!files) {
		ember__cli_error("out of memory");
		return EMBER_EXIT_INTERNAL;
	}
	int code = parse_top_args(argc, argv, files, &nfiles, &rows, &spec);
	if (code >= 0) {
		free(files);
		return code;
	}
	int rc = ember__cli_print_top_names(files, nfiles, spec, rows, stdout, 0, NULL,
					    spec ? spec : NULL);
	free(files);
	if (rc < 0) {
		ember__cli_error("%s", ember_last_error());
		return 1;
	}
	if (fflush(stdout) != 0) {
		ember__cli_error("cannot write the table");
		return 1;
	}
	return 0;
}
